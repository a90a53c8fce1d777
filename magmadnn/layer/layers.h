/// @file layers.h
/// Every built-in layer and its MagmaDNN v1 factory (namespace
/// magmadnn::layer): input, fullyconnected, activation, conv2d, pooling,
/// dropout, flatten, batchnorm, residual, add, concat, output. Factories
/// return layer::Ref<L> (see layer.h), which v1 code may store as
/// `layer::Layer<T>*`. The model-parallel layers (column_parallel_fc,
/// row_parallel_fc, channel_parallel_conv2d) are the parallel layer's
/// (parallel/layers/); the umbrella header magmadnn.h includes them too.
#pragma once

#include "magmadnn/layer/activation_layer.h"
#include "magmadnn/layer/batchnorm_layer.h"
#include "magmadnn/layer/conv2d_layer.h"
#include "magmadnn/layer/dropout_layer.h"
#include "magmadnn/layer/flatten_layer.h"
#include "magmadnn/layer/fully_connected.h"
#include "magmadnn/layer/input_layer.h"
#include "magmadnn/layer/layer.h"
#include "magmadnn/layer/merge_layers.h"
#include "magmadnn/layer/output_layer.h"
#include "magmadnn/layer/pooling_layer.h"
#include "magmadnn/layer/residual_layer.h"
