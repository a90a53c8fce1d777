/// @file optimizer.h
/// Everything in magmadnn::optimizer: the Optimizer base, GradientDescent
/// (momentum, Nesterov), Adam / AdamW, AdaGrad, RMSProp, weight decay and
/// learning-rate schedules, and optimizer::make (building one from settings).
#pragma once

#include "magmadnn/optimizer/adaptive.h"
#include "magmadnn/optimizer/factory.h"
#include "magmadnn/optimizer/gradient_descent.h"
#include "magmadnn/optimizer/optimizer_base.h"
#include "magmadnn/optimizer/schedule.h"
