#include "magmadnn/parallel/pipeline/stage.h"

#include <cctype>
#include <utility>

#include "magmadnn/compute/arithmetic.h"
#include "magmadnn/compute/gradients.h"
#include "magmadnn/compute/passes.h"
#include "magmadnn/model/loss_graph.h"
#include "magmadnn/tensor/math.h"

namespace magmadnn::distributed::pipeline {

namespace {
// A placeholder {-1, sample...} holding one zero sample, so that the layers
// built on it know their shapes.
template <typename T>
op::Var<T> sample_placeholder(const std::string& name, const std::vector<std::int64_t>& sample, memory_t mem) {
  std::vector<std::int64_t> pattern{-1}, one{1};
  pattern.insert(pattern.end(), sample.begin(), sample.end());
  one.insert(one.end(), sample.begin(), sample.end());
  auto ph = op::placeholder<T>(name, pattern, mem);
  ph->set_value(Tensor<T>(Shape(one), {ZERO}, mem));
  return ph;
}
}  // namespace

template <typename T>
void check_recomputable(const layer::Layer<T>& l, int index) {
  std::string type = l.type_name();
  for (char& c : type) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  MAGMADNN_CHECK(type != "dropout", ValueError,
                 "pipeline: layer " << index << " ('" << l.get_name()
                                    << "') is a dropout layer, which a pipeline cannot serve yet: the forward a "
                                       "stage runs again before a backward would draw another mask");
}
template void check_recomputable(const layer::Layer<float>&, int);
template void check_recomputable(const layer::Layer<double>&, int);

template <typename T>
Stage<T>::Stage(const std::vector<LayerFactory<T>>& factories, int begin, int end, std::vector<std::int64_t> in_sample,
                bool last, optimizer::loss_t loss, memory_t mem)
    : begin_(static_cast<std::size_t>(begin)), last_(last) {
  MAGMADNN_CHECK(0 <= begin && begin < end && end <= static_cast<int>(factories.size()), ValueError,
                 "pipeline stage: layers [" << begin << ", " << end << ") of " << factories.size());
  x_ph_ = sample_placeholder<T>("stage_input", in_sample, mem);
  op::Expr<T> cur = x_ph_;
  for (int i = begin; i < end; ++i) {
    LayerPtr l = factories[i](cur);
    MAGMADNN_CHECK(l != nullptr && l->out(), ValueError, "pipeline stage: layer " << i << "'s factory built nothing");
    check_recomputable(*l, i);
    cur = l->out();
    layers_.push_back(std::move(l));
    for (const auto& w : layers_.back()->get_weights()) params_.push_back(w);
  }
  out_ = op::optimize(cur);
  score_ = out_;
  if (last_) {
    std::vector<std::int64_t> out_sample = out_->get_output_shape().dims();
    out_sample.erase(out_sample.begin());
    y_ph_ = sample_placeholder<T>("stage_labels", out_sample, mem);
    const model::LossGraph<T> lg = model::make_loss_graph<T>(out_, y_ph_, loss);
    score_ = lg.score;
    loss_ = root_ = lg.loss;
  } else {
    std::vector<std::int64_t> out_sample = out_->get_output_shape().dims();
    out_sample.erase(out_sample.begin());
    g_ph_ = sample_placeholder<T>("stage_output_gradient", out_sample, mem);
    root_ = op::product(out_, g_ph_);  // its gradient w.r.t. out_ is g: the incoming gradient
  }
}

template <typename T>
void Stage<T>::copy_weights_from(const std::vector<LayerPtr>& whole) {
  MAGMADNN_CHECK(begin_ + layers_.size() <= whole.size(), ValueError,
                 "pipeline stage: the whole network has " << whole.size() << " layers, the stage holds layers ["
                                                          << begin_ << ", " << begin_ + layers_.size() << ")");
  for (std::size_t k = 0; k < layers_.size(); ++k) {
    const auto& from = whole[begin_ + k]->get_weights();
    const auto& to = layers_[k]->get_weights();
    MAGMADNN_CHECK(from.size() == to.size(), ValueError,
                   "pipeline stage: layer " << begin_ + k << " has " << to.size() << " weights, the whole network's "
                                            << from.size());
    for (std::size_t j = 0; j < to.size(); ++j) {
      MAGMADNN_CHECK(from[j]->value().shape() == to[j]->value().shape(), ShapeError,
                     "pipeline stage: layer " << begin_ + k << " weight " << j << " is " << to[j]->value().shape()
                                              << ", the whole network's " << from[j]->value().shape());
      to[j]->value().copy_from(from[j]->value());
    }
  }
}

template <typename T>
const Tensor<T>& Stage<T>::forward(int micro, const Tensor<T>& x, const Tensor<T>* labels) {
  MAGMADNN_CHECK(!last_ || labels != nullptr, ValueError, "pipeline stage: the last stage needs the labels");
  x_ph_->set_value(x);
  auto [it, fresh] = inputs_.insert_or_assign(micro, Tensor<T>(x));
  (void)fresh;
  stash_bytes_ += static_cast<std::int64_t>(it->second.size() * sizeof(T));
  if (last_) {
    y_ph_->set_value(*labels);
    labels_.insert_or_assign(micro, Tensor<T>(*labels));
  }
  current_ = micro;
  return *(last_ ? loss_ : out_)->eval();
}

template <typename T>
const Tensor<T>& Stage<T>::infer(const Tensor<T>& x, const Tensor<T>* labels) {
  MAGMADNN_CHECK(!last_ || labels != nullptr, ValueError, "pipeline stage: the last stage needs the labels");
  x_ph_->set_value(x);
  if (last_) y_ph_->set_value(*labels);
  current_ = -1;
  return *(last_ ? loss_ : out_)->eval();
}

template <typename T>
void Stage<T>::rematerialise(int micro) {
  auto it = inputs_.find(micro);
  MAGMADNN_CHECK(it != inputs_.end(), ValueError,
                 "pipeline stage: the backward of micro-batch " << micro << " comes before its forward");
  // The forward runs again on the kept input; layer state (BatchNorm's running
  // statistics) is put back as the first forward left it.
  std::vector<std::pair<Tensor<T>*, Tensor<T>>> saved;
  for (const auto& l : layers_)
    for (auto& [name, t] : l->get_state()) saved.emplace_back(t, Tensor<T>(*t));
  x_ph_->set_value(it->second);
  if (last_) y_ph_->set_value(labels_.at(micro));
  (last_ ? loss_ : out_)->eval();
  for (auto& [t, copy] : saved) t->copy_from(copy);
  current_ = micro;
  ++recomputes_;
}

template <typename T>
void Stage<T>::accumulate(op::GradTable<T>& table) {
  if (!have_grads_) {
    grads_.clear();
    for (const auto& p : params_) grads_.push_back(*table.get(p));
    have_grads_ = true;
    return;
  }
  for (std::size_t i = 0; i < params_.size(); ++i) math::axpy(T(1), *table.get(params_[i]), grads_[i]);
}

template <typename T>
Tensor<T> Stage<T>::backward(int micro, const Tensor<T>* grad_out, T seed, bool input_grad) {
  MAGMADNN_CHECK(last_ || grad_out != nullptr, ValueError, "pipeline stage: a backward needs its output's gradient");
  if (current_ != micro) rematerialise(micro);
  if (!last_) g_ph_->set_value(*grad_out);
  std::vector<op::Expr<T>> vars(params_.begin(), params_.end());
  if (input_grad) vars.push_back(x_ph_);
  op::GradTable<T> table = op::compute_gradients<T>(root_, vars, {}, seed);
  accumulate(table);
  Tensor<T> dx = input_grad ? std::move(*table.get(x_ph_)) : Tensor<T>();
  auto it = inputs_.find(micro);
  stash_bytes_ -= static_cast<std::int64_t>(it->second.size() * sizeof(T));
  inputs_.erase(it);
  labels_.erase(micro);
  return dx;
}

template <typename T>
void Stage<T>::zero_gradients() {
  have_grads_ = false;
  grads_.clear();
}

template <typename T>
void Stage<T>::set_training(bool training) {
  for (const auto& l : layers_) l->set_training(training);
}

template class Stage<float>;
template class Stage<double>;

}  // namespace magmadnn::distributed::pipeline
