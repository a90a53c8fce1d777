/// @file optimizer.h
/// Everything in magmadnn::optimizer: the Optimizer base, GradientDescent
/// (momentum, Nesterov), Adam / AdamW, AdaGrad, RMSProp, LARS, LAMB, weight
/// decay, learning-rate schedules (large-batch scaling and warm-up included)
/// and optimizer::make (building one from settings).
#pragma once

#include "magmadnn/optimizer/adaptive.h"
#include "magmadnn/optimizer/factory.h"
#include "magmadnn/optimizer/gradient_descent.h"
#include "magmadnn/optimizer/lamb.h"
#include "magmadnn/optimizer/large_batch_lr.h"
#include "magmadnn/optimizer/lars.h"
#include "magmadnn/optimizer/optimizer_base.h"
#include "magmadnn/optimizer/schedule.h"
