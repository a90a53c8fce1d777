#include "magmadnn/model/loss_graph.h"

#include <string>

#include "magmadnn/compute/loss.h"

namespace magmadnn::model {

// Whether a node's values are probabilities in [0, 1] (so v1's
// cross-entropy of probabilities applies to it directly).
template <typename T>
static bool produces_probabilities(const op::Operation<T>& node) {
  const std::string k = node.kind();
  return k == "sigmoid" || k == "linear_sigmoid" || k == "softmax";
}

template <typename T>
LossGraph<T> make_loss_graph(const op::Expr<T>& out, const op::Expr<T>& y, optimizer::loss_t loss) {
  if (loss == optimizer::CROSS_ENTROPY && out->kind() == "softmax") {
    op::Expr<T> logits(out->get_inputs()[0]);  // fused, stable loss
    return {logits, op::softmax_crossentropy(logits, y)};
  }
  if (loss == optimizer::CROSS_ENTROPY && produces_probabilities(*out)) return {out, op::crossentropy(y, out)};
  // An unbounded output (a FullyConnected layer last) is taken as logits, as
  // PyTorch's CrossEntropyLoss does; log of a raw score would be NaN.
  if (loss == optimizer::CROSS_ENTROPY) return {out, op::softmax_crossentropy(out, y)};
  if (loss == optimizer::MSE) return {out, op::mse(out, y)};
  MAGMADNN_THROW(ValueError, "NeuralNetwork: unknown loss_t value " << static_cast<int>(loss));
}

template LossGraph<float> make_loss_graph(const op::Expr<float>&, const op::Expr<float>&, optimizer::loss_t);
template LossGraph<double> make_loss_graph(const op::Expr<double>&, const op::Expr<double>&, optimizer::loss_t);

}  // namespace magmadnn::model
