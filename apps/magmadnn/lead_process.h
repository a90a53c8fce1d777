// Commands that do their work once (evaluate, predict) under an MPI launcher:
// rank 0 works, prints and writes; every other rank returns at once.
#pragma once

namespace magmadnn::cli {

/// True for a process that no MPI launcher started (MPI is then never
/// initialised) and for rank 0 of a launched job; false for the job's other
/// ranks. Initialises MPI only when launched_by_mpi() says a launcher
/// started this process (comm/communicator_factory.h).
bool lead_process();

}  // namespace magmadnn::cli
