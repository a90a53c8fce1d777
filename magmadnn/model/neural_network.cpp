// NeuralNetwork: construction, graph building, inference and the summary.
// The training loop is in neural_network_fit.cpp, checkpoints in
// neural_network_checkpoint.cpp.
#include "magmadnn/model/neural_network.h"

#include <algorithm>
#include <iomanip>
#include <sstream>
#include <unordered_set>

#include "magmadnn/compute/loss.h"
#include "magmadnn/model/loss_graph.h"
#include "magmadnn/compute/passes.h"
#include "magmadnn/core/errors.h"
#include "magmadnn/core/random.h"
#include "magmadnn/model/network_detail.h"
#include "magmadnn/optimizer/optimizer.h"
#include "magmadnn/tensor/math.h"

namespace magmadnn::model {

namespace {

template <typename T>
std::vector<std::shared_ptr<layer::Layer<T>>> share_all(const std::vector<layer::Layer<T>*>& raw) {
  std::vector<std::shared_ptr<layer::Layer<T>>> out;
  out.reserve(raw.size());
  for (auto* p : raw) out.push_back(layer::share(p));
  return out;
}

// The single placeholder feeding `root` (the input layer's).
template <typename T>
op::Var<T> find_input(const op::Expr<T>& root) {
  std::vector<op::Var<T>> found;
  for (op::Operation<T>* n : op::topological_order(root.get())) {
    auto* v = dynamic_cast<op::Variable<T>*>(n);
    if (v != nullptr && v->role() == op::Variable<T>::Role::Placeholder) {
      found.emplace_back(std::static_pointer_cast<op::Variable<T>>(v->shared_from_this()));
    }
  }
  if (found.size() != 1) {
    std::ostringstream names;
    for (const auto& f : found) names << " '" << f->get_name() << "'";
    MAGMADNN_THROW(ValueError, "NeuralNetwork: the network must be fed by exactly one placeholder (an InputLayer), "
                                   << "found " << found.size() << (found.empty() ? "" : ":") << names.str());
  }
  return found.front();
}

}  // namespace

// ---- construction -----------------------------------------------------------------

template <typename T>
NeuralNetwork<T>::NeuralNetwork(std::vector<layer::Layer<T>*> layers, optimizer::loss_t loss,
                                optimizer::optimizer_t opt, nn_params_t params)
    : NeuralNetwork(share_all(layers), loss, opt, params) {}

template <typename T>
NeuralNetwork<T>::NeuralNetwork(std::vector<layer::Layer<T>*> layers, optimizer::loss_t loss,
                                optimizer::Optimizer<T>* opt, nn_params_t params)
    : NeuralNetwork(share_all(layers), loss,
                    // v1 passes an optimizer it owns: alias it without taking ownership.
                    std::shared_ptr<optimizer::Optimizer<T>>(std::shared_ptr<void>(), opt), params) {
  MAGMADNN_CHECK(opt != nullptr, ValueError, "NeuralNetwork: null optimizer pointer");
}

template <typename T>
NeuralNetwork<T>::NeuralNetwork(std::vector<LayerPtr> layers, optimizer::loss_t loss, optimizer::optimizer_t opt,
                                nn_params_t params)
    : layers_(std::move(layers)), loss_kind_(loss), nn_params_(params) {
  // params() then tells what this network really uses, whatever the caller's
  // params said (they matter only to Model).
  nn_params_.loss = loss;
  nn_params_.optimizer = opt;
  make_optimizer(opt);
  build(loss);
}

template <typename T>
NeuralNetwork<T>::NeuralNetwork(std::vector<LayerPtr> layers, optimizer::loss_t loss,
                                std::shared_ptr<optimizer::Optimizer<T>> opt, nn_params_t params)
    : layers_(std::move(layers)), loss_kind_(loss), nn_params_(params), opt_(std::move(opt)) {
  nn_params_.loss = loss;
  MAGMADNN_CHECK(opt_ != nullptr, ValueError, "NeuralNetwork: null optimizer");
  build(loss);
  opt_->attached_to(*this);
}

template <typename T>
NeuralNetwork<T>::~NeuralNetwork() = default;

template <typename T>
void NeuralNetwork<T>::make_optimizer(optimizer::optimizer_t kind) {
  optimizer::OptimizerSettings s = nn_params_.optimizer_settings();
  s.kind = kind;
  opt_ = optimizer::make<T>(s);
  optimizer_name_ = optimizer::name_of(kind);
}

template <typename T>
void NeuralNetwork<T>::build(optimizer::loss_t loss) {
  MAGMADNN_CHECK(!layers_.empty(), ValueError, "NeuralNetwork: no layers");
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    MAGMADNN_CHECK(layers_[i] != nullptr, ValueError, "NeuralNetwork: layer " << i << " is null");
  }
  MAGMADNN_CHECK(nn_params_.batch_size > 0, ValueError, "NeuralNetwork: batch_size must be > 0");
  op::Expr<T> raw_out = layers_.back()->out();
  MAGMADNN_CHECK(raw_out, ValueError, "NeuralNetwork: the last layer '" << layers_.back()->get_name()
                                                                         << "' has no output");
  x_ph_ = find_input(raw_out);

  // Parameters in layer order; a layer (or variable) listed twice counts once.
  std::unordered_set<const void*> seen;
  std::vector<std::string> names;
  // Checkpoint names follow the network's structure ("3_fullyconnected/W":
  // position, kind, key), not the layers' names, which count up per process
  // and can be changed: the same architecture built twice, in any process,
  // reads the same checkpoint.
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const auto& l = layers_[i];
    // A split layer's parameters carry the names of the layer it stands for.
    const std::optional<layer::Sharding> sharding = l->sharding();
    const std::string prefix = detail::structural_prefix(i, sharding ? sharding->whole_type : l->type_name());
    const auto named = l->named_weights();
    MAGMADNN_CHECK(!sharding || sharding->weights.size() == named.size(), ValueError,
                   "NeuralNetwork: layer '" << l->get_name() << "' describes the split of "
                                            << sharding->weights.size() << " weights but has " << named.size());
    for (std::size_t j = 0; j < named.size(); ++j) {
      const auto& [name, v] = named[j];
      if (!seen.insert(v.get()).second) continue;
      splits_.push_back(sharding && sharding->weights[j].split() ? ParamSplit{sharding->group, sharding->weights[j]}
                                                                 : ParamSplit{});
      params_.push_back(v);
      param_exprs_.push_back(v);
      names.push_back(prefix + detail::layer_key(l->get_name(), name));
    }
    for (auto& [name, t] : l->get_state()) state_.emplace_back(prefix + detail::layer_key(l->get_name(), name), t);
  }
  param_names_ = detail::unique_names(names);
  grad_ptrs_.assign(params_.size(), nullptr);
  // A split weight is a slice: an optimizer that reads a whole-tensor norm
  // (LARS, LAMB) sums the slices' parts over the group (one allreduce of two
  // doubles per split weight and step), so the step is the one-process one.
  for (std::size_t i = 0; i < params_.size(); ++i) {
    if (!splits_[i].group || splits_[i].group->size() == 1) continue;
    opt_->set_slice_sum(param_exprs_[i], [group = splits_[i].group](double* partial, std::size_t n) {
      group->sum(partial, n);
    });
  }

  // Label placeholder: {-1, <prediction without the batch axis>}, where the input lives.
  std::vector<std::int64_t> pattern = raw_out->get_output_shape().dims();
  MAGMADNN_CHECK(!pattern.empty(), ShapeError, "NeuralNetwork: the prediction has no batch axis");
  pattern[0] = -1;
  y_ph_ = op::placeholder<T>("labels", pattern, x_ph_->output().get_memory_type(), x_ph_->output().get_device_id());

  // Fusion passes once, on the prediction; the loss is built on the result.
  out_ = op::optimize(raw_out);
  const LossGraph<T> lg = make_loss_graph<T>(out_, y_ph_, loss);
  score_ = lg.score;
  loss_ = lg.loss;
  // Optimizer slots now, so that their names (and a checkpoint's) do not
  // depend on when the first step happens.
  opt_->init_state(param_exprs_);
  data_seed_ = get_seed() != 0 ? get_seed() : kDefaultSeed;
}

template <typename T>
std::int64_t NeuralNetwork<T>::num_params() const {
  std::int64_t n = 0;
  for (const auto& p : params_) n += p->value().size();
  return n;
}

template <typename T>
void NeuralNetwork<T>::set_mode(bool training) {
  for (const auto& l : layers_) l->set_training(training);
  op::set_training(loss_, training);
  op::set_training(out_, training);
  training_mode_ = training;
}

// ---- data plumbing -----------------------------------------------------------------

template <typename T>
void NeuralNetwork<T>::check_data(const data::Samples<T>& x, const Tensor<T>* y, const char* what) const {
  MAGMADNN_CHECK(x.ndim() >= 1 && x.shape()[0] > 0, ShapeError,
                 "NeuralNetwork::" << what << ": x of shape " << x.shape() << " has no samples");
  if (y != nullptr) {
    MAGMADNN_CHECK(y->ndim() >= 1 && y->shape()[0] == x.shape()[0], ShapeError,
                   "NeuralNetwork::" << what << ": x " << x.shape() << " and y " << y->shape()
                                     << " have different numbers of samples");
  }
}

template <typename T>
void NeuralNetwork<T>::feed(const data::Samples<T>& x, const Tensor<T>& y, const std::int64_t* rows,
                            std::int64_t begin, std::int64_t n) {
  detail::feed_placeholder(x_ph_, x, rows, begin, n);
  if (!y.empty()) detail::feed_placeholder<T>(y_ph_, y, rows, begin, n);
}

template <typename T>
double NeuralNetwork<T>::read_loss() const {
  return static_cast<double>(loss_->output().get(0));
}

template <typename T>
std::int64_t NeuralNetwork<T>::count_correct(const Tensor<T>& pred, const Tensor<T>& y) const {
  return detail::count_correct(pred, y);
}

template <typename T>
Evaluation NeuralNetwork<T>::evaluate_batches(const data::Samples<T>& x, const Tensor<T>& y) {
  set_mode(false);
  const std::int64_t n = x.shape()[0];
  const std::int64_t bs = nn_params_.batch_size;
  double loss_sum = 0.0;
  std::int64_t correct = 0;
  for (std::int64_t begin = 0; begin < n; begin += bs) {
    const std::int64_t m = std::min(bs, n - begin);
    feed(x, y, nullptr, begin, m);
    loss_->eval();
    loss_sum += read_loss() * static_cast<double>(m);
    correct += count_correct(score_->output(), y_ph_->output());
  }
  Evaluation e;
  e.samples = n;
  e.loss = loss_sum / static_cast<double>(n);
  e.accuracy = static_cast<double>(correct) / static_cast<double>(n);
  return e;
}

template <typename T>
Evaluation NeuralNetwork<T>::evaluate(const data::Samples<T>& x, const Tensor<T>& y) {
  check_data(x, &y, "evaluate");
  return evaluate_batches(x, y);
}

template <typename T>
Tensor<T> NeuralNetwork<T>::predict(const data::Samples<T>& x) {
  check_data(x, nullptr, "predict");
  set_mode(false);
  const std::int64_t n = x.shape()[0];
  const std::int64_t bs = nn_params_.batch_size;
  Tensor<T> result;
  for (std::int64_t begin = 0; begin < n; begin += bs) {
    const std::int64_t m = std::min(bs, n - begin);
    detail::feed_placeholder(x_ph_, x, nullptr, begin, m);
    const Tensor<T>* o = out_->eval();
    if (begin == 0) {
      std::vector<std::int64_t> dims = o->shape().dims();
      dims[0] = n;
      result = Tensor<T>(Shape(dims), o->get_memory_type(), o->get_device_id());
    }
    result.slice(begin, begin + m).copy_from(*o);
  }
  return result;
}

template <typename T>
Tensor<T>* NeuralNetwork<T>::predict(Tensor<T>* sample) {
  MAGMADNN_CHECK(sample != nullptr, ValueError, "NeuralNetwork::predict: null sample");
  set_mode(false);
  detail::feed_sample(x_ph_, *sample);
  predict_out_ = *out_->eval();
  return &predict_out_;
}

template <typename T>
unsigned int NeuralNetwork<T>::predict_class(Tensor<T>* sample) {
  MAGMADNN_CHECK(sample != nullptr, ValueError, "NeuralNetwork::predict_class: null sample");
  return predict_class(*sample);
}

template <typename T>
unsigned int NeuralNetwork<T>::predict_class(const Tensor<T>& sample) {
  set_mode(false);
  detail::feed_sample(x_ph_, sample);
  const Tensor<T>* o = out_->eval();
  MAGMADNN_CHECK(o->shape()[0] == 1, ShapeError,
                 "NeuralNetwork::predict_class: takes one sample, got " << sample.shape()
                                                                        << "; use predict_classes for a batch");
  return static_cast<unsigned int>(detail::row_classes(*o).at(0));
}

template <typename T>
std::vector<std::int64_t> NeuralNetwork<T>::predict_classes(const data::Samples<T>& x) {
  return detail::row_classes(predict(x));
}

// ---- summary --------------------------------------------------------------------

template <typename T>
std::string NeuralNetwork<T>::summary() const {
  std::ostringstream os;
  const int w1 = 34, w2 = 20, w3 = 12;
  const std::string rule(w1 + w2 + w3, '-');
  os << std::left << std::setw(w1) << "Layer (type)" << std::setw(w2) << "Output shape" << std::right
     << std::setw(w3) << "Params" << '\n'
     << rule << '\n';
  for (const auto& l : layers_) {
    std::string shape = "?";
    try {
      auto d = l->get_output_shape().dims();
      std::ostringstream s;
      s << "(N";
      for (std::size_t i = 1; i < d.size(); ++i) s << ", " << d[i];
      s << ")";
      shape = s.str();
    } catch (const Error&) {
      // the input has no value yet: the shape is not known
    }
    os << std::left << std::setw(w1) << (l->get_name() + " (" + l->type_name() + ")") << std::setw(w2) << shape
       << std::right << std::setw(w3) << l->num_params() << '\n';
  }
  os << rule << '\n'
     << "Trainable params: " << num_params() << '\n'
     << "Loss: " << (loss_kind_ == optimizer::MSE ? "mse" : "cross_entropy")
     << ", optimizer: " << optimizer_name_ << '\n';
  return os.str();
}

template class NeuralNetwork<float>;
template class NeuralNetwork<double>;

}  // namespace magmadnn::model
