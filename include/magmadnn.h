/// @file magmadnn.h
/// The umbrella header: `#include <magmadnn.h>` and `using namespace magmadnn;`
/// give the whole public API, as in the MagmaDNN slides and v1 programs.
#pragma once

// MagmaDNN v1 programs use std::fabs, std::atoi, printf and std::string
// through this header without including them; keep that working.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "magmadnn/core/config.h"

// MagmaDNN v1's umbrella header brought in MPI when the library was built
// with it, and v1 programs call MPI_Init / MPI_Comm_rank / MPI_Finalize under
// `#if defined(MAGMADNN_HAVE_MPI)` without including <mpi.h> themselves. The
// library links MPI publicly, so the include path is there for consumers too.
#if defined(MAGMADNN_HAVE_MPI)
#include <mpi.h>
#endif

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
#include "magmadnn/layer/layers.h"
#include "magmadnn/parallel/layers/parallel_conv2d.h"
#include "magmadnn/parallel/layers/parallel_fully_connected.h"
#include "magmadnn/optimizer/optimizer.h"
#include "magmadnn/model/model.h"
#include "magmadnn/parallel/dist_momentum_sgd.h"  // v1: optimizer::DistMomentumSGD
#include "magmadnn/data/mnist.h"
#include "magmadnn/data/dataloader.h"
#include "magmadnn/data/transforms.h"
#include "magmadnn/io/csv.h"
#include "magmadnn/io/idx.h"
#include "magmadnn/io/cifar.h"
