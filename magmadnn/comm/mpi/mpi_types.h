/// @file mpi_types.h
/// The MPI datatypes and reductions behind magmadnn's dtypes and ReduceOps.
///
/// float, double, int32 and int64 map to MPI's own types and MPI_SUM /
/// MPI_MAX / MPI_MIN. half and bfloat16 have no portable MPI type, so they
/// travel as a committed contiguous type of two bytes with user-defined
/// reductions that convert each element to float, combine, and round back
/// (one rounding per combination, as a half-precision sum does anyway).
/// ReduceOp::avg maps to the sum; the caller divides by the number of ranks
/// afterwards (divide_in_place).
///
/// Requires MPI to be initialised while a TypeTable exists; the
/// MpiEnvironment owns the one table of the process.
#pragma once

#include <mpi.h>

#include <cstddef>

#include "magmadnn/core/types.h"
#include "magmadnn/comm/communicator.h"

namespace magmadnn::distributed::mpi_detail {

class TypeTable {
 public:
  TypeTable();   // creates the 2-byte types and their reductions
  ~TypeTable();  // frees them unless MPI is already finalized
  TypeTable(const TypeTable&) = delete;
  TypeTable& operator=(const TypeTable&) = delete;

  MPI_Datatype datatype(dtype t) const;
  /// The reduction for `op` over `t` (avg gives the sum).
  MPI_Op op(ReduceOp op, dtype t) const;

 private:
  MPI_Datatype f16_ = MPI_DATATYPE_NULL;
  MPI_Datatype bf16_ = MPI_DATATYPE_NULL;
  MPI_Op f16_ops_[3] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};   // sum, max, min
  MPI_Op bf16_ops_[3] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};  // sum, max, min
};

/// Divides each of `count` elements of `t` at host address `data` by `n`:
/// the second half of ReduceOp::avg. Integers divide as C++ does
/// (truncation toward zero), as NCCL's ncclAvg does for integer types.
void divide_in_place(void* data, std::size_t count, dtype t, int n);

}  // namespace magmadnn::distributed::mpi_detail
