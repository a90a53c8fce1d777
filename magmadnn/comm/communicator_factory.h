/// @file communicator_factory.h
/// Choosing a Communicator at run time, and ending a distributed job.
///
/// Includes no MPI or NCCL header, so any part of magmadnn (and any
/// application) can ask for a communicator whatever the build has.
#pragma once

#include <memory>
#include <string>

#include "magmadnn/comm/communicator.h"

namespace magmadnn::distributed {

/// A communicator of `kind`:
///  - "auto":  "mpi" when launched_by_mpi(), else "local" (so a single
///             process needs no MPI, and no MPI_Init happens);
///  - "local": LocalCommunicator (one process, rank 0 of 1);
///  - "mpi":   MpiCommunicator over MPI_COMM_WORLD (initialises MPI if the
///             program has not); NotSupportedError in a build without MPI;
///  - "nccl":  NcclCommunicator over MPI_COMM_WORLD (initialises MPI if the
///             program has not), one GPU per rank; DeviceError naming the
///             reason when no GPU is usable at run time, NotSupportedError in
///             a build without NCCL (CUDA, NCCL and MPI are all needed).
/// Any other kind raises ValueError listing the known ones. Collective for
/// "mpi" and "nccl": every rank must call it.
std::unique_ptr<Communicator> make_communicator(const std::string& kind = "auto");

/// `comm` split as MPI_Comm_split: the ranks passing the same `color` form a
/// new communicator, ordered by `key`; a negative color leaves this rank out
/// (nullptr). The new one inherits timeout() and step(). Collective over
/// `comm`. An MPI communicator splits (MpiCommunicator::split); a one-rank
/// communicator gives a LocalCommunicator; any other raises NotSupportedError.
std::unique_ptr<Communicator> split_communicator(Communicator& comm, int color, int key);

/// `comm` split by shared memory, as MPI_Comm_split_type(MPI_COMM_TYPE_SHARED):
/// the ranks of this rank's node (as the MPI library sees nodes), ordered
/// by rank, failing as split_communicator's. Collective over `comm`. An MPI
/// communicator splits (MpiCommunicator::split_shared); a one-rank
/// communicator gives a LocalCommunicator; any other raises NotSupportedError.
std::unique_ptr<Communicator> split_shared_memory(Communicator& comm);

/// A new communicator of `comm`'s ranks, independent of it: a failure of
/// either does not reach the other (unlike split_communicator's, which
/// hears of its parent's), so another thread may drive it while this one
/// drives `comm` (see concurrent_communicators). Collective over `comm`. An
/// MPI communicator is duplicated; a one-rank one gives a LocalCommunicator;
/// any other raises NotSupportedError.
std::unique_ptr<Communicator> duplicate_communicator(Communicator& comm);

/// Whether `comm` and another communicator may be driven from two threads
/// at once: an MPI communicator when MPI provides MPI_THREAD_MULTIPLE, a
/// one-rank communicator always; any other false.
bool concurrent_communicators(const Communicator& comm) noexcept;

/// Whether this process was started by an MPI launcher (mpirun, mpiexec,
/// srun with several tasks): the launchers' environment variables
/// (OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMI_RANK, PMIX_RANK, MPI_LOCALNRANKS,
/// or SLURM_STEP_NUM_TASKS > 1) are present. Reads the environment only.
bool launched_by_mpi() noexcept;

/// Which launcher started this process, read from the environment it set:
/// "mpirun" (Open MPI's mpirun or mpiexec, also inside a Slurm allocation:
/// OMPI_COMM_WORLD_SIZE), "srun" (Slurm's srun starting the ranks itself,
/// through PMIx: SLURM_STEP_NUM_TASKS > 1), "mpi" (another MPI launcher:
/// PMI_SIZE, PMI_RANK, PMIX_RANK or MPI_LOCALNRANKS) or "none". Written into
/// a run's summary, so a result says how it was started.
std::string launcher_name();

/// Ends the whole job with exit status `code`: MPI_Abort on MPI_COMM_WORLD
/// when MPI is initialised (after half a second, so that ranks told of a
/// failure can print their own report; the launcher then stops every rank), else
/// std::exit(code). For applications, after printing a CommError; the
/// library itself never calls it. First writes this rank's flight record
/// (flight_recorder.h) when it is one of several.
[[noreturn]] void abort_job(int code);

}  // namespace magmadnn::distributed
