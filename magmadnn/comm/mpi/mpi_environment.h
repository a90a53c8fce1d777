/// @file mpi_environment.h
/// MpiEnvironment: MPI's lifetime in a magmadnn process.
///
/// The first MpiCommunicator (or an explicit acquire()) initialises MPI,
/// asking for MPI_THREAD_MULTIPLE. If the program has already called
/// MPI_Init itself (MagmaDNN v1 programs do), that initialisation is used
/// as it is and the program stays responsible for MPI_Finalize.
///
/// Guarantees:
///  - MPI_Finalize is called only when this environment called MPI_Init,
///    once, after the last communicator and the process's own reference
///    (released at exit) are gone;
///  - objects created on top of MPI (datatypes, reductions, communicators)
///    are freed before that finalize, and skipped when the program has
///    finalized MPI itself already;
///  - thread level: with MPI_THREAD_MULTIPLE, different communicators may
///    be driven from different threads. Any one communicator is always
///    driven by one thread at a time (its collectives are numbered in call
///    order). When MPI provides less than MULTIPLE (thread_multiple() is
///    false), all MPI communicators of the process must be driven by one
///    thread at a time.
///
/// When it starts MPI for a job of 2 or 3 Open MPI ranks, it asks Open MPI's
/// non-blocking allreduce for its ring algorithm unless the user chose one
/// (OMPI_MCA_coll_libnbc_iallreduce_algorithm); see docs/notes/open-mpi-behaviour.md.
#pragma once

#include <memory>

#include "magmadnn/comm/mpi/mpi_types.h"

namespace magmadnn::distributed {

class MpiEnvironment {
 public:
  /// The process's environment, initialising MPI if nobody has. Throws
  /// CommError if MPI was finalized already (MPI cannot start twice).
  static std::shared_ptr<MpiEnvironment> acquire();
  /// Whether MPI is initialised and not yet finalized, whoever did it.
  static bool mpi_active() noexcept;

  ~MpiEnvironment();
  MpiEnvironment(const MpiEnvironment&) = delete;
  MpiEnvironment& operator=(const MpiEnvironment&) = delete;

  /// Whether this environment called MPI_Init (and will call MPI_Finalize).
  bool initialised_here() const noexcept { return initialised_here_; }
  /// The thread level MPI provides (MPI_THREAD_SINGLE ... MPI_THREAD_MULTIPLE).
  int thread_level() const noexcept { return thread_level_; }
  bool thread_multiple() const noexcept { return thread_level_ == MPI_THREAD_MULTIPLE; }
  /// Whether MPI accepts device pointers (CUDA-aware Open MPI, asked through
  /// MPIX_Query_cuda_support at run time; false when it cannot be asked).
  bool cuda_aware() const noexcept { return cuda_aware_; }

  const mpi_detail::TypeTable& types() const noexcept { return *types_; }

 private:
  MpiEnvironment();
  bool initialised_here_ = false;
  int thread_level_ = MPI_THREAD_SINGLE;
  bool cuda_aware_ = false;
  std::unique_ptr<mpi_detail::TypeTable> types_;
};

}  // namespace magmadnn::distributed
