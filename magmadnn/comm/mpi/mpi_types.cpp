#include "magmadnn/comm/mpi/mpi_types.h"

#include <algorithm>
#include <cstdint>

#include "magmadnn/core/half.h"
#include "magmadnn/comm/mpi/mpi_check.h"

namespace magmadnn::distributed::mpi_detail {

namespace {

struct Sum { float operator()(float a, float b) const { return a + b; } };
struct Max { float operator()(float a, float b) const { return std::max(a, b); } };
struct Min { float operator()(float a, float b) const { return std::min(a, b); } };

// MPI's user-function signature; `len` counts elements of the 2-byte type.
template <typename H, typename F>
void combine(void* in, void* inout, int* len, MPI_Datatype*) {
  const H* a = static_cast<const H*>(in);
  H* b = static_cast<H*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = H(F{}(static_cast<float>(a[i]), static_cast<float>(b[i])));
}

int op_index(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg: return 0;
    case ReduceOp::max: return 1;
    case ReduceOp::min: return 2;
  }
  MAGMADNN_THROW(ValueError, "unknown ReduceOp " << static_cast<int>(op));
}

template <typename T>
void divide(void* data, std::size_t count, int n) {
  T* p = static_cast<T*>(data);
  for (std::size_t i = 0; i < count; ++i) p[i] = static_cast<T>(p[i] / static_cast<T>(n));
}

template <typename H>
void divide_narrow(void* data, std::size_t count, int n) {
  H* p = static_cast<H*>(data);
  const float fn = static_cast<float>(n);
  for (std::size_t i = 0; i < count; ++i) p[i] = H(static_cast<float>(p[i]) / fn);
}

}  // namespace

TypeTable::TypeTable() {
  for (MPI_Datatype* t : {&f16_, &bf16_}) {
    MAGMADNN_MPI_CHECK(MPI_Type_contiguous(2, MPI_BYTE, t), "creating the 2-byte type of half/bfloat16");
    MAGMADNN_MPI_CHECK(MPI_Type_commit(t), "committing the 2-byte type of half/bfloat16");
  }
  MPI_User_function* f16_fns[3] = {&combine<half, Sum>, &combine<half, Max>, &combine<half, Min>};
  MPI_User_function* bf16_fns[3] = {&combine<bfloat16, Sum>, &combine<bfloat16, Max>, &combine<bfloat16, Min>};
  for (int i = 0; i < 3; ++i) {
    MAGMADNN_MPI_CHECK(MPI_Op_create(f16_fns[i], /*commute=*/1, &f16_ops_[i]), "creating a half reduction");
    MAGMADNN_MPI_CHECK(MPI_Op_create(bf16_fns[i], /*commute=*/1, &bf16_ops_[i]), "creating a bfloat16 reduction");
  }
}

TypeTable::~TypeTable() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;  // MPI_Finalize has released them already
  for (MPI_Op* op : {&f16_ops_[0], &f16_ops_[1], &f16_ops_[2], &bf16_ops_[0], &bf16_ops_[1], &bf16_ops_[2]})
    if (*op != MPI_OP_NULL) MPI_Op_free(op);
  for (MPI_Datatype* t : {&f16_, &bf16_})
    if (*t != MPI_DATATYPE_NULL) MPI_Type_free(t);
}

MPI_Datatype TypeTable::datatype(dtype t) const {
  switch (t) {
    case dtype::f32: return MPI_FLOAT;
    case dtype::f64: return MPI_DOUBLE;
    case dtype::i32: return MPI_INT32_T;
    case dtype::i64: return MPI_INT64_T;
    case dtype::f16: return f16_;
    case dtype::bf16: return bf16_;
  }
  MAGMADNN_THROW(ValueError, "MpiCommunicator: unknown dtype " << static_cast<int>(t));
}

MPI_Op TypeTable::op(ReduceOp op, dtype t) const {
  const int i = op_index(op);
  if (t == dtype::f16) return f16_ops_[i];
  if (t == dtype::bf16) return bf16_ops_[i];
  static const MPI_Op native[3] = {MPI_SUM, MPI_MAX, MPI_MIN};
  return native[i];
}

void divide_in_place(void* data, std::size_t count, dtype t, int n) {
  switch (t) {
    case dtype::f32: return divide<float>(data, count, n);
    case dtype::f64: return divide<double>(data, count, n);
    case dtype::i32: return divide<std::int32_t>(data, count, n);
    case dtype::i64: return divide<std::int64_t>(data, count, n);
    case dtype::f16: return divide_narrow<half>(data, count, n);
    case dtype::bf16: return divide_narrow<bfloat16>(data, count, n);
  }
}

}  // namespace magmadnn::distributed::mpi_detail
