/// @file model.h
/// Everything in magmadnn::model: NeuralNetwork (fit / evaluate / predict,
/// checkpoints), Model (the paper's params + layers form), their parameters
/// and results, callbacks, fit options and classification metrics.
#pragma once

#include "magmadnn/io/checkpoint.h"
#include "magmadnn/model/batch_growth.h"
#include "magmadnn/model/callbacks.h"
#include "magmadnn/model/fit_options.h"
#include "magmadnn/model/metrics.h"
#include "magmadnn/model/model_class.h"
#include "magmadnn/model/neural_network.h"
#include "magmadnn/model/params.h"
#include "magmadnn/model/training_plugin.h"
