/// @file blocked_output.h
/// op::BlockedOutput<T>: the part of a graph node that can hold its output
/// in oneDNN's channel-blocked layout (conv/layout.h) for consumers that
/// read that layout, so that a convolutional network reorders its
/// activations only at its edges instead of around every convolution.
///
/// Conv2dNode and BatchNormNode have it. Such a node
///  - reads inputs in any layout (output_block_of() tells which), reordering
///    an input only where its own computation needs another;
///  - produces the blocked layout only when op::keep_blocked_layouts
///    (passes.h) allowed it, which it does only when every consumer of the
///    node inside the graph is such a node (or a global average pooling,
///    which reads it too) and the node is not the root;
///    and then only for float host tensors whose channels fill whole blocks,
///    with convolution algorithms left to the chooser (or oneDNN); under
///    autocast's bf16 convolutions the layout is channels last
///    (conv::low_precision_layout), or NCHW where that is 0;
///  - gives and takes gradients in the layout of the forward value they
///    belong to: d(output) in the output's layout, d(input i) in input i's.
/// Values read from outside the graph go through Operation::eval(), which
/// returns NCHW (a copy kept on the node) for a blocked node; output() and
/// get_output_tensor() hand out the stored elements as they are.
#pragma once

#include "magmadnn/compute/operation.h"

namespace magmadnn::op {

template <typename T>
class BlockedOutput {
 public:
  virtual ~BlockedOutput() = default;
  /// The channel block of the output as last computed (0: NCHW).
  int output_block() const noexcept { return block_; }
  /// Whether the node may produce the blocked layout (keep_blocked_layouts).
  bool blocked_output_allowed() const noexcept { return allowed_; }
  void allow_blocked_output(bool allow) noexcept { allowed_ = allow; }
  /// `output` (this node's) in NCHW: itself when it is, else a copy kept
  /// on the node until the next call.
  Tensor<T>* plain_output(Tensor<T>& output);

 protected:
  BlockedOutput() = default;
  /// The block this node's next output of shape `s` takes, if computed
  /// where `like` lives: blocked_layout_block() when allowed, float, on the
  /// host and blockable, else 0. A node that cannot read or write the
  /// blocked layout this step passes `possible` false.
  int output_block_for(const Shape& s, const Tensor<T>& like, bool possible = true) const;

  int block_ = 0;

 private:
  bool allowed_ = false;
  Tensor<T> plain_;
};

/// `t`, in layout `from`, in layout `to`: conv::in_layout for float (t
/// itself when from == to, else `scratch` filled); other element types are
/// never blocked, so for them t.
template <typename T>
const Tensor<T>& in_layout(const Tensor<T>& t, int from, int to, Tensor<T>& scratch);

/// The layout of n's output: its block when n is a BlockedOutput, else 0.
template <typename T>
int output_block_of(const Operation<T>& n) {
  const auto* b = dynamic_cast<const BlockedOutput<T>*>(&n);
  return b ? b->output_block() : 0;
}

}  // namespace magmadnn::op
