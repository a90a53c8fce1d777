#include "magmadnn/backend/kernels.h"

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
  switch (op) {
    case UnaryOp::Identity: return "identity";
    case UnaryOp::Neg: return "neg";
    case UnaryOp::Exp: return "exp";
    case UnaryOp::Log: return "log";
    case UnaryOp::Sigmoid: return "sigmoid";
    case UnaryOp::Relu: return "relu";
    case UnaryOp::Tanh: return "tanh";
    case UnaryOp::Abs: return "abs";
    case UnaryOp::Sqrt: return "sqrt";
    case UnaryOp::Square: return "square";
    case UnaryOp::Reciprocal: return "reciprocal";
    case UnaryOp::Pow: return "pow";
    case UnaryOp::Scale: return "scale";
    case UnaryOp::AddScalar: return "add_scalar";
    case UnaryOp::LeakyRelu: return "leaky_relu";
    case UnaryOp::Gelu: return "gelu";
    case UnaryOp::Softplus: return "softplus";
  }
  return "unary";
}

}  // namespace magmadnn
