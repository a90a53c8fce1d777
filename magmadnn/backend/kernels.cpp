#include "magmadnn/backend/kernels.h"

#include "magmadnn/backend/unary_op_table.h"
#include "magmadnn/core/errors.h"

namespace magmadnn {

const char* op_name(BinaryOp op) noexcept {
  switch (op) {
    case BinaryOp::Add: return "add";
    case BinaryOp::Sub: return "sub";
    case BinaryOp::Mul: return "product";
    case BinaryOp::Div: return "div";
    case BinaryOp::Pow: return "pow";
    case BinaryOp::Max: return "max";
    case BinaryOp::Min: return "min";
  }
  return "binary";
}

const char* op_name(UnaryOp op) noexcept {
  const auto i = static_cast<std::size_t>(op);
  return i < kUnaryOpTable.size() ? kUnaryOpTable[i].name : "unary";
}

const char* op_name(ReduceOp op) noexcept {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Mean: return "mean";
    case ReduceOp::Max: return "max";
    case ReduceOp::Min: return "min";
  }
  return "reduce";
}

void no_mixed_gemm(dtype operands) {
  MAGMADNN_THROW(NotSupportedError,
                 "gemm: this backend has no GEMM with " << dtype_name(operands)
                     << " operands (bf16 GEMMs exist on the CPU and CUDA backends, f16 ones on CUDA, all with float "
                        "outputs); run with precision fp32");
}

}  // namespace magmadnn
