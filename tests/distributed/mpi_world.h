// The world communicator of the MPI tests (mpi_test_main.cpp) and the
// rank-dependent values they exchange.
#pragma once

#include <cstddef>

#include "magmadnn/comm/mpi/mpi_communicator.h"

magmadnn::distributed::MpiCommunicator& world();

namespace mpitest {

/// Element i of rank r: small integers, exact in every dtype (bfloat16 too).
inline double value(int r, std::size_t i) { return static_cast<double>(r + 1) + static_cast<double>(i % 7); }

}  // namespace mpitest
