#include "magmadnn/compute/blocked_output.h"

#include <type_traits>

#include "magmadnn/compute/autocast.h"
#include "magmadnn/conv/layout.h"
#include "magmadnn/core/errors.h"

namespace magmadnn::op {

template <typename T>
Tensor<T>* BlockedOutput<T>::plain_output(Tensor<T>& output) {
  if constexpr (std::is_same_v<T, float>) {
    if (block_ != 0) {
      (void)conv::in_layout(output, block_, 0, plain_);
      return &plain_;
    }
  }
  return &output;
}

template <typename T>
int BlockedOutput<T>::output_block_for(const Shape& s, const Tensor<T>& like, bool possible) const {
  if constexpr (std::is_same_v<T, float>) {
    if (!possible || !allowed_ || like.on_device()) return 0;
    // Autocast's convolutions read their inputs' low-precision copies, cast
    // from the stored elements (so in their layout): under it, the layout
    // its convolutions read, channels last where oneDNN's bf16 kernels run.
    const int b = autocast::compute_dtype(autocast::OpKind::Conv, autocast::current()) != dtype::f32
                      ? conv::low_precision_layout()
                      : conv::blocked_layout_block();
    return b != 0 && conv::blockable(s, b) ? b : 0;
  } else {
    (void)s, (void)like, (void)possible;
    return 0;
  }
}

template <typename T>
const Tensor<T>& in_layout(const Tensor<T>& t, int from, int to, Tensor<T>& scratch) {
  if constexpr (std::is_same_v<T, float>) {
    return conv::in_layout(t, from, to, scratch);
  } else {
    MAGMADNN_CHECK(from == to, ValueError, "blocked layout: only float tensors are blocked");
    (void)scratch;
    return t;
  }
}

template const Tensor<float>& in_layout(const Tensor<float>&, int, int, Tensor<float>&);
template const Tensor<double>& in_layout(const Tensor<double>&, int, int, Tensor<double>&);
template class BlockedOutput<float>;
template class BlockedOutput<double>;

}  // namespace magmadnn::op
