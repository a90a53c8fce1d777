// The matrix products of one training step of the MagmaDNN paper's MLP
// (batch 100, 784 -> N x 528 -> 10), in training order, as the GEMM floors
// time them on the CPU (gemm_floor.cpp) and on the GPU (gemm_floor_cuda.cpp):
// one definition, so that both floors time the same products. Per layer l
// with W_l of shape (out, in), all row-major:
//   forward   Y  = X  W^T   (m = batch, n = out, k = in)
//   backward  dW = dY^T X   (m = out,   n = in,  k = batch)
//             dX = dY W     (m = batch, n = in,  k = out), skipped for the
//                                input layer (no gradient w.r.t. the data)
// forward up the layers, then backward down. Each product names its operands
// by buffer kind and layer; a bench allocates one buffer per (kind, layer) of
// buffer_elements() and binds them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mlp_step {

constexpr std::int64_t kBatch = 100, kIn = 784, kHidden = 528, kOut = 10;
constexpr std::int64_t kStepsPerEpoch = 60000 / kBatch, kEpochs = 5;

/// activations (layers + 1 of them, the input first), weights, the
/// gradients w.r.t. each layer's output, its weights and its input.
enum class Buffer { act, weight, grad_out, grad_w, grad_in };

struct Operand {
  Buffer buffer;
  int layer;
};

/// C = op(A) op(B), row-major, beta = 0; A is m x k (k x m when ta), B is
/// k x n (n x k when tb).
struct Product {
  std::string name;  // "fwd0", "dW1", "dX1", ...
  bool ta, tb;
  std::int64_t m, n, k;
  Operand a, b, c;
  double flops() const { return 2.0 * double(m) * double(n) * double(k); }
};

/// The layers' widths: 784, 528 x hidden_layers, 10.
inline std::vector<std::int64_t> widths(int hidden_layers) {
  std::vector<std::int64_t> dims{kIn};
  for (int i = 0; i < hidden_layers; ++i) dims.push_back(kHidden);
  dims.push_back(kOut);
  return dims;
}

/// Weight layers (dense layers) of the step: hidden_layers + 1.
inline int weight_layers(int hidden_layers) { return hidden_layers + 1; }

/// Elements of the buffer of `kind` at `layer` (layer <= weight_layers for
/// act, < weight_layers for the others).
inline std::int64_t buffer_elements(const std::vector<std::int64_t>& dims, Buffer kind, int layer) {
  const auto l = static_cast<std::size_t>(layer);
  switch (kind) {
    case Buffer::act: return kBatch * dims[l];
    case Buffer::weight:
    case Buffer::grad_w: return dims[l + 1] * dims[l];
    case Buffer::grad_out: return kBatch * dims[l + 1];
    case Buffer::grad_in: return kBatch * dims[l];
  }
  return 0;
}

/// The products of one step, in training order.
inline std::vector<Product> products(int hidden_layers) {
  const std::vector<std::int64_t> dims = widths(hidden_layers);
  const int L = weight_layers(hidden_layers);
  std::vector<Product> out;
  for (int l = 0; l < L; ++l) {
    const auto i = static_cast<std::size_t>(l);
    out.push_back({"fwd" + std::to_string(l), false, true, kBatch, dims[i + 1], dims[i],
                   {Buffer::act, l}, {Buffer::weight, l}, {Buffer::act, l + 1}});
  }
  for (int l = L - 1; l >= 0; --l) {
    const auto i = static_cast<std::size_t>(l);
    out.push_back({"dW" + std::to_string(l), true, false, dims[i + 1], dims[i], kBatch,
                   {Buffer::grad_out, l}, {Buffer::act, l}, {Buffer::grad_w, l}});
    if (l > 0) {
      out.push_back({"dX" + std::to_string(l), false, false, kBatch, dims[i], dims[i + 1],
                     {Buffer::grad_out, l}, {Buffer::weight, l}, {Buffer::grad_in, l}});
    }
  }
  return out;
}

}  // namespace mlp_step
