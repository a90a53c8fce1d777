/// @file magmadnn.h
/// The umbrella header: `#include <magmadnn.h>` and `using namespace magmadnn;`
/// give the whole public API, as in the MagmaDNN slides and v1 programs.
#pragma once

#include "magmadnn/core/config.h"
#include "magmadnn/core/errors.h"
#include "magmadnn/core/half.h"
#include "magmadnn/core/init.h"
#include "magmadnn/core/random.h"
#include "magmadnn/core/shape.h"
#include "magmadnn/core/types.h"
#include "magmadnn/backend/registry.h"
#include "magmadnn/memory/memory_manager.h"
#include "magmadnn/tensor/filler.h"
#include "magmadnn/tensor/tensor.h"
#include "magmadnn/tensor/math.h"
#include "magmadnn/compute/compute.h"
#include "magmadnn/optimizer/optimizer.h"
