/// @file compute.h
/// Everything in magmadnn::op: graph nodes and handles, the ops, automatic
/// differentiation and graph passes.
#pragma once

#include "magmadnn/compute/activation.h"
#include "magmadnn/compute/arithmetic.h"
#include "magmadnn/compute/buffer_pool.h"
#include "magmadnn/compute/conv.h"
#include "magmadnn/compute/expr.h"
#include "magmadnn/compute/folded_linear.h"
#include "magmadnn/compute/gradients.h"
#include "magmadnn/compute/inference_plan.h"
#include "magmadnn/compute/linalg.h"
#include "magmadnn/compute/nodes.h"
#include "magmadnn/compute/operation.h"
#include "magmadnn/compute/passes.h"
#include "magmadnn/compute/reduce.h"
#include "magmadnn/compute/variable.h"
#include "magmadnn/compute/loss.h"
#include "magmadnn/compute/regularization.h"
#include "magmadnn/compute/shape_ops.h"
