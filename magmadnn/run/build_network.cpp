#include "magmadnn/run/build_network.h"

#include <cmath>

#include <unordered_map>

#include "magmadnn/core/random.h"
#include "magmadnn/parallel/model_parallel/batch_ops.h"
#include "magmadnn/layer/layers.h"
#include "magmadnn/parallel/layers/parallel_conv2d.h"
#include "magmadnn/parallel/layers/parallel_fully_connected.h"
#include "magmadnn/optimizer/optimizer.h"
#include "magmadnn/run/layer_kinds.h"

namespace magmadnn::run {
namespace {

using LayerPtr = std::shared_ptr<layer::Layer<float>>;


std::shared_ptr<const optimizer::LRSchedule> make_schedule(const TrainSpec& spec, std::int64_t spe,
                                                           std::int64_t world_size) {
  const auto& c = spec.schedule;
  const auto steps = [spe](double epochs) { return std::max<std::int64_t>(1, std::llround(epochs * spe)); };
  std::shared_ptr<const optimizer::LRSchedule> s;
  if (c.type == "step") {
    s = std::make_shared<optimizer::StepLR>(steps(c.step_epochs), c.gamma);
  } else if (c.type == "exponential") {
    s = std::make_shared<optimizer::ExponentialLR>(std::pow(c.gamma, 1.0 / static_cast<double>(spe)));
  } else if (c.type == "cosine") {
    s = std::make_shared<optimizer::CosineLR>(steps(static_cast<double>(spec.epochs) - c.warmup_epochs), c.min_lr);
  }
  const auto rule = optimizer::lr_scaling_from_name(c.lr_scaling);
  if (rule != optimizer::LRScaling::None) {
    // Goyal et al.: the warm-up climbs from the unscaled rate to the scaled one.
    const std::int64_t warmup = c.warmup_epochs > 0 ? steps(c.warmup_epochs) : 0;
    const std::int64_t base = c.base_batch > 0 ? c.base_batch : spec.batch_size;  // 0: a spec built in code
    return std::make_shared<optimizer::LargeBatchLR>(rule, spec.batch_size, base, world_size, warmup, s);
  }
  if (c.warmup_epochs > 0) s = std::make_shared<optimizer::WarmupLR>(steps(c.warmup_epochs), s);
  return s;
}

optimizer::OptimizerSettings optimizer_settings(const OptimizerSpec& p) {
  optimizer::OptimizerSettings s;
  s.kind = optimizer::kind_from_name(p.type);
  s.learning_rate = p.learning_rate;
  s.momentum = p.momentum;
  s.nesterov = p.nesterov;
  s.weight_decay = p.weight_decay;
  s.beta1 = p.beta1;
  s.beta2 = p.beta2;
  s.epsilon = p.epsilon;
  s.rho = p.rho;
  s.trust_coefficient = p.trust_coefficient;
  s.exclude_vectors = p.exclude_vectors;
  return s;
}

// A layer's weight elements on this rank and in the whole model.
std::pair<std::int64_t, std::int64_t> weight_counts(const layer::Layer<float>& l) {
  std::int64_t here = 0;
  for (const auto& w : l.get_weights()) here += w->output().size();
  if (const auto* p = dynamic_cast<const layer::ParallelFullyConnectedLayer<float>*>(&l)) {
    return {here, p->full_weight_shape().numel() + (p->has_bias() ? p->units() : 0)};
  }
  if (const auto* c = dynamic_cast<const layer::ParallelConv2DLayer<float>*>(&l)) {
    const bool bias = c->get_bias() && c->get_bias()->output().size() > 0;
    return {here, c->full_filter_shape().numel() + (bias ? c->out_channels() : 0)};
  }
  return {here, here};
}

// The classes the network's output has, refused when the data has others.
std::int64_t output_classes(const layer::Layer<float>& last, std::int64_t classes) {
  const Shape out = last.get_output_shape();
  const std::int64_t got = out.ndim() == 2 ? out[1] : 0;
  if (classes > 0 && got != classes) {
    std::ostringstream os;
    os << "the network's output is " << out << " per batch, but the data has " << classes
       << " classes (the last dense layer needs \"units\": " << classes << ")";
    throw ConfigError("layers", os.str());
  }
  return got;
}

// The weights each rank holds against the whole model's, and which
// parameters a strategy exchanges.
void count_weights(NetworkBuild& b, const std::vector<LayerPtr>& chain, const std::vector<Placement>& placed,
                   bool split) {
  // Which parameters a strategy exchanges: those of the layers on batch
  // shards. A split layer's slice differs from rank to rank, and a layer on
  // the whole batch has the same, whole gradient on every rank already.
  std::unordered_map<const void*, bool> exchanged;
  for (std::size_t k = 0; k < chain.size(); ++k) {
    const auto [here, all] = weight_counts(*chain[k]);
    b.rank_weights += here;
    b.whole_weights += all;
    if (is_model_parallel(placed[k])) {
      b.rank_split_weights += here;
      b.whole_split_weights += all;
    }
    for (const auto& w : chain[k]->get_weights()) exchanged[w.get()] = placed[k] == Placement::data;
  }
  if (split) {
    for (const auto& p : b.model->parameters()) b.exchange.push_back(exchanged.at(p.get()));
  }
}

}  // namespace

std::shared_ptr<optimizer::Optimizer<float>> make_optimizer(const TrainSpec& spec, std::int64_t steps_per_epoch,
                                                            std::int64_t world_size) {
  auto opt = optimizer::make<float>(optimizer_settings(spec.optimizer));
  if (auto sched = make_schedule(spec, std::max<std::int64_t>(1, steps_per_epoch), world_size)) {
    opt->set_schedule(std::move(sched));
  }
  return opt;
}

op::Expr<float> push_activation(std::vector<LayerPtr>& chain, op::Expr<float> x, const std::string& name) {
  if (name == "none") return x;
  auto a = layer::activation(x, layer::activation_from_name(name));
  chain.push_back(a.ptr());
  return a->out();
}

model::nn_params_t training_params(const TrainSpec& spec) {
  model::nn_params_t params(spec.batch_size, spec.epochs);
  params.set_optimizer_settings(optimizer_settings(spec.optimizer));
  params.shuffle = true;
  params.loss = spec.loss == "mse" ? optimizer::MSE : optimizer::CROSS_ENTROPY;
  return params;
}

NetworkBuild build_network(const TrainSpec& spec, const std::vector<std::int64_t>& sample_shape,
                           std::int64_t steps_per_epoch, std::int64_t classes, std::int64_t world_size,
                           std::shared_ptr<distributed::Communicator> group) {
  set_seed(spec.seed);
  // Default layer names count per process; restarting them makes the names
  // (and so the checkpoint's tensor names) depend on the config alone, so a
  // network rebuilt to load a checkpoint matches it in any process.
  layer::reset_layer_names();
  std::vector<std::int64_t> pattern{-1};
  pattern.insert(pattern.end(), sample_shape.begin(), sample_shape.end());

  NetworkBuild b;
  b.plan = plan_parallel(spec);
  const bool split = group != nullptr && group->size() > 1 && b.plan.hybrid();
  b.split = split;

  std::vector<LayerPtr> chain;
  std::vector<Placement> placed;  // chain[k]'s placement
  const auto input = layer::input<float>(pattern);
  if (split) {
    // Layers read their input's shape when built: give the placeholder a
    // batch that every rank's shard has a row of.
    std::vector<std::int64_t> first = pattern;
    first[0] = group->size();
    const op::Var<float>& ph = input->placeholder();
    ph->set_value(Tensor<float>(Shape(first), {ZERO}, ph->output().get_memory_type()));
  }
  const op::Expr<float> whole = input->out();
  chain.push_back(input.ptr());
  placed.push_back(Placement::replicated);
  // The hybrid plan's transitions; none in a network that is not split.
  const auto transition = [&](Transition t, const op::Expr<float>& in) -> op::Expr<float> {
    if (!split || t == Transition::none) return in;
    return t == Transition::gather_batch ? distributed::mp::gather_batch(in, whole, group)
                                         : distributed::mp::scatter_batch(in, group);
  };
  const op::Expr<float> network_input = transition(b.plan.before_input, whole);
  // An activation that ends a network on batch shards runs after the gather
  // before the loss (it acts row by row, so the result is the same), for the
  // network to see it last: a softmax or sigmoid there decides the loss
  // (fused softmax cross-entropy, or cross-entropy of probabilities).
  bool gathered = false;
  std::vector<op::Expr<float>> outs(spec.layers.size());  // each layer's output, as later layers read it
  for (std::size_t i = 0; i < spec.layers.size(); ++i) {
    const LayerSpec& l = spec.layers[i];
    const std::string where = "layers[" + std::to_string(i) + "]";
    LayerBuild lb{chain, l, b.plan.layers[i], where, split, group, {}, {}, {}};
    for (std::int64_t j : layer_inputs(spec.layers, i)) {
      lb.inputs.push_back(j < 0 ? network_input : outs[static_cast<std::size_t>(j)]);
      const LayerSpec* from = j < 0 ? nullptr : &spec.layers[static_cast<std::size_t>(j)];
      lb.input_names.push_back(!from                ? std::string(kNetworkInputName)
                               : from->name.empty() ? "layers[" + std::to_string(j) + "]"
                                                    : from->name);
    }
    lb.inputs[0] = transition(lb.plan.before, lb.inputs[0]);  // a chain's only: graphs are not split (parallel_plan.h)
    lb.activate = [&](op::Expr<float> in, const std::string& name) {
      if (i + 1 == spec.layers.size() && name != "none" && b.plan.before_loss == Transition::gather_batch) {
        in = transition(Transition::gather_batch, in);
        gathered = true;
      }
      return push_activation(chain, in, name);
    };
    const std::size_t first = chain.size();
    try {
      outs[i] = find_layer_kind(l.type)->build(lb);
    } catch (const ConfigError&) {
      throw;
    } catch (const Error& e) {
      throw ConfigError(where, "cannot build this " + l.type + " layer" +
                                   (l.name.empty() ? std::string() : " " + Json(l.name).dump()) + ": " + e.what());
    }
    // The config's name on what the layer built (summaries show it).
    for (std::size_t k = first; !l.name.empty() && k < chain.size(); ++k) {
      chain[k]->set_name(k == first ? l.name : l.name + "_" + std::to_string(k - first));
    }
    placed.resize(chain.size(), lb.plan.placement);
  }
  op::Expr<float> x = outs.back();
  if (!gathered) x = transition(b.plan.before_loss, x);
  auto out_layer = layer::output<float>(x);
  chain.push_back(out_layer.ptr());
  placed.resize(chain.size(), Placement::replicated);

  b.sample_shape = sample_shape;
  b.classes = output_classes(*chain.back(), classes);

  // Every optimizer field goes into the params and the network builds its
  // optimizer by kind (optimizer::make), so its checkpoint records the kind
  // and all the settings the run used.
  const model::nn_params_t params = training_params(spec);
  b.model = std::make_unique<model::NeuralNetwork<float>>(chain, params.loss, params.optimizer, params);
  MAGMADNN_CHECK(world_size >= 1, ValueError, "build_network: world_size must be >= 1, got " << world_size);
  if (auto sched = make_schedule(spec, std::max<std::int64_t>(1, steps_per_epoch), world_size)) {
    b.model->optimizer().set_schedule(std::move(sched));
  }

  count_weights(b, chain, placed, split);
  return b;
}

}  // namespace magmadnn::run
