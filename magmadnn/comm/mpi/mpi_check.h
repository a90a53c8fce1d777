/// @file mpi_check.h
/// MAGMADNN_MPI_CHECK: every MPI call of the library goes through it, so a
/// failing call throws CommError naming the call, MPI's own error text and
/// the file:line (communicators are set to MPI_ERRORS_RETURN, so errors come
/// back as codes instead of aborting the job).
#pragma once

#include <mpi.h>

#include <string>

#include "magmadnn/core/errors.h"

namespace magmadnn::distributed::mpi_detail {

/// MPI's text for an error code ("MPI_ERR_TRUNCATE: message truncated").
std::string mpi_error_text(int code);

}  // namespace magmadnn::distributed::mpi_detail

/// Throws CommError unless the MPI call `call` returned MPI_SUCCESS;
/// `context` is streamed into the message (what was being done).
#define MAGMADNN_MPI_CHECK(call, context)                                                           \
  do {                                                                                               \
    const int magmadnn_mpi_rc_ = (call);                                                             \
    if (magmadnn_mpi_rc_ != MPI_SUCCESS)                                                             \
      MAGMADNN_THROW(CommError, #call << " failed: "                                                 \
                                      << ::magmadnn::distributed::mpi_detail::mpi_error_text(magmadnn_mpi_rc_) \
                                      << " (" << context << ")");                                    \
  } while (0)
