// NeuralNetwork::save / load: the model's side of the checkpoint format
// (docs/checkpoint_format.md lists every header key and tensor name).
#include <cstdio>
#include <cmath>
#include <set>
#include <sstream>

#include "magmadnn/core/errors.h"
#include "magmadnn/core/random.h"
#include "magmadnn/io/checkpoint.h"
#include "magmadnn/model/neural_network.h"

#include <utility>

namespace magmadnn::model {

namespace {

// Header entries per epoch record: history.<i>.epoch, train_loss, ...
constexpr std::uint64_t kHistoryFields = 8;

std::string indexed(const char* prefix, std::size_t i, const char* field = nullptr) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04zu", i);
  return std::string(prefix) + buf + (field ? std::string(".") + field : std::string());
}

std::string shape_text(const Shape& s) {
  std::ostringstream os;
  os << s;
  return os.str();
}

}  // namespace

template <typename T>
bool NeuralNetwork<T>::has_split_parameters() const noexcept {
  for (const ParamSplit& s : splits_) {
    if (s.group) return true;
  }
  return false;
}

// How tensor `key` of parameter `param` (the parameter or one of its
// optimizer slots, which share its shape and so its split) is split over a
// group; null when it is whole on this rank.
template <typename T>
const typename NeuralNetwork<T>::ParamSplit* NeuralNetwork<T>::split_of(std::size_t param, const Tensor<T>& t,
                                                                        const std::string& key) const {
  const ParamSplit& s = splits_[param];
  if (!s.group) return nullptr;
  MAGMADNN_CHECK(t.shape() == params_[param]->value().shape(), ShapeError,
                 "checkpoint: '" << key << "' belongs to '" << param_names_[param] << "', split over "
                                 << s.group->size() << " ranks, but is " << t.shape() << ", not "
                                 << params_[param]->value().shape()
                                 << " (an optimizer slot of another shape than its parameter cannot be split)");
  return &s;
}

template <typename T>
void NeuralNetwork<T>::set_progress(History history, std::int64_t data_size) {
  history_ = std::move(history);
  epoch_ = static_cast<unsigned int>(history_.size());
  batch_ = 0;
  partial_ = {};
  data_size_ = data_size;
}

template <typename T>
void NeuralNetwork<T>::save(const std::string& path) {
  write_checkpoint(path, data_size_);
}

template <typename T>
void NeuralNetwork<T>::write_checkpoint(const std::string& path, std::int64_t data_size) {
  io::Checkpoint ck;
  for (const auto& [key, value] : checkpoint_entries_) ck.set(key, value);
  ck.set("producer", "magmadnn");
  ck.set("model.dtype", dtype_name(dtype_v<T>));
  ck.set("model.loss", loss_kind_ == optimizer::MSE ? "mse" : "cross_entropy");
  ck.set_uint("model.layers", layers_.size());
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const auto& l = layers_[i];
    std::string shape = "?";
    try {
      shape = shape_text(l->get_output_shape());
    } catch (const Error&) {
      // shape not known (input without a value): informational only
    }
    ck.set(indexed("model.layer.", i), l->type_name() + " " + l->get_name() + " " + shape);
  }
  std::int64_t whole_params = 0;  // a split parameter counted whole
  for (std::size_t i = 0; i < params_.size(); ++i) {
    whole_params += splits_[i].group ? splits_[i].weight.whole.numel() : params_[i]->value().size();
  }
  ck.set_int("model.params", whole_params);
  ck.set("optimizer.kind", optimizer_name_);
  ck.set_double("optimizer.learning_rate", opt_->base_learning_rate());
  ck.set_int("optimizer.step_count", opt_->step_count());
  ck.set_double("optimizer.momentum", nn_params_.momentum);
  ck.set_double("optimizer.weight_decay", nn_params_.weight_decay);
  ck.set_double("optimizer.beta1", nn_params_.beta1);
  ck.set_double("optimizer.beta2", nn_params_.beta2);
  ck.set_double("optimizer.epsilon", nn_params_.epsilon);
  ck.set_double("optimizer.rho", nn_params_.decaying_factor);
  ck.set_int("optimizer.nesterov", nn_params_.nesterov ? 1 : 0);
  ck.set_double("optimizer.trust_coefficient", nn_params_.trust_coefficient);
  ck.set_int("optimizer.exclude_vectors", nn_params_.exclude_vectors ? 1 : 0);
  // The size the cursor's batches were trained in, which a batch-growth
  // callback may have changed from nn_params_'s starting value.
  ck.set_uint("train.batch_size", cursor_batch_size_ > 0 ? static_cast<std::uint64_t>(cursor_batch_size_)
                                                         : nn_params_.batch_size);
  ck.set_uint("train.epoch", epoch_);
  ck.set_int("train.batch", batch_);
  ck.set_uint("train.data_seed", data_seed_);
  ck.set_int("train.data_size", data_size);
  ck.set_int("train.shuffle", nn_params_.shuffle ? 1 : 0);
  ck.set_double("train.partial_loss", partial_.loss);
  ck.set_int("train.partial_correct", partial_.correct);
  ck.set_int("train.partial_samples", partial_.samples);
  ck.set_double("train.partial_seconds", partial_.seconds);
  const RngState rng = get_rng_state();
  ck.set_uint("rng.seed", rng.seed);
  ck.set_uint("rng.next_stream", rng.next_stream);
  ck.set_uint("history.count", history_.size());
  for (std::size_t i = 0; i < history_.size(); ++i) {
    const EpochRecord& r = history_[i];
    ck.set_uint(indexed("history.", i, "epoch"), r.epoch);
    ck.set_double(indexed("history.", i, "train_loss"), r.train_loss);
    ck.set_double(indexed("history.", i, "train_accuracy"), r.train_accuracy);
    ck.set_double(indexed("history.", i, "val_loss"), r.val_loss);
    ck.set_double(indexed("history.", i, "val_accuracy"), r.val_accuracy);
    ck.set_double(indexed("history.", i, "seconds"), r.seconds);
    ck.set_double(indexed("history.", i, "samples_per_second"), r.samples_per_second);
    ck.set_double(indexed("history.", i, "learning_rate"), r.learning_rate);
  }
  // Every rank of a split layer's group gathers, in this order; its rank 0 writes.
  const auto add = [&](const std::string& key, std::size_t i, const Tensor<T>& t) {
    if (const ParamSplit* split = split_of(i, t, key)) {
      ck.add_tensor(key, split->group->gather(t, split->weight.whole, split->weight.axis));
    } else {
      ck.add_tensor(key, t);
    }
  };
  bool writes = true;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    add("param/" + param_names_[i], i, params_[i]->value());
    if (splits_[i].group && splits_[i].group->rank() != 0) writes = false;
  }
  for (const auto& [name, t] : state_) ck.add_tensor("state/" + name, *t);
  for (std::size_t i = 0; i < params_.size(); ++i) {
    for (const auto& [slot, t] : opt_->slots_of(params_[i])) add("optim/" + param_names_[i] + "/" + slot, i, *t);
  }
  if (writes) io::write_checkpoint(path, ck);
  last_checkpoint_ = path;
}

namespace {

// A tensor load() restores: its key, where it goes and, for a split
// parameter or slot, its group and where this rank's part sits in the
// whole tensor the file holds.
template <typename T>
struct Target {
  std::string key;
  Tensor<T>* t = nullptr;
  const layer::WeightGroup* group = nullptr;  // null: held whole on this rank
  layer::WeightSplit weight;
  Shape in_file() const { return group ? weight.whole : t->shape(); }
};

// A dense layer written with the other bias form (layer::BiasForm) than the
// model's: W and b apart, or folded into one "Wb". Said as such rather than
// as a missing tensor.
void check_bias_form(const io::Checkpoint& ck, const std::string& key, const std::string& path) {
  const std::string prefix = "param/";
  const auto slash = key.rfind('/');
  if (ck.find(key) != nullptr || key.rfind(prefix, 0) != 0 || slash <= prefix.size()) return;
  const std::string stem = key.substr(0, slash + 1), leaf = key.substr(slash + 1);
  const std::string layer = key.substr(prefix.size(), slash - prefix.size());
  MAGMADNN_CHECK(!(leaf == "Wb" && ck.find(stem + "W") != nullptr), ShapeError,
                 "checkpoint " << path << ": layer '" << layer << "' folds its bias into its weights ('" << key
                               << "', fold_bias: true), but the checkpoint holds W and b apart ('" << stem << "W', '"
                               << stem << "b': written with fold_bias: false); build the network with the form "
                               << "the checkpoint was written with");
  MAGMADNN_CHECK(!((leaf == "W" || leaf == "b") && ck.find(stem + "Wb") != nullptr), ShapeError,
                 "checkpoint " << path << ": layer '" << layer << "' keeps W and b apart (fold_bias: false), but "
                               << "the checkpoint holds them folded into one matrix ('" << stem
                               << "Wb': written with fold_bias: true); build the network with the form the "
                               << "checkpoint was written with");
}

// Every target is in the file with its shape (a split one compared whole),
// and every tensor of the file is a target.
template <typename T>
void check_targets(const io::Checkpoint& ck, const std::vector<Target<T>>& targets, const std::string& path) {
  for (const Target<T>& g : targets) check_bias_form(ck, g.key, path);
  std::set<std::string> expected;
  for (const Target<T>& g : targets) {
    if (g.group) {
      try {
        ck.check_tensor(g.key, Tensor<T>(g.weight.whole, HOST));
      } catch (const ShapeError& e) {
        MAGMADNN_THROW(ShapeError, "checkpoint " << path << ": " << e.what() << " (the whole tensor of a layer split "
                                                 << "over " << g.group->size() << " ranks, compared whole)");
      }
    } else {
      ck.check_tensor(g.key, *g.t);
    }
    expected.insert(g.key);
  }
  for (const auto& rec : ck.tensors()) {
    MAGMADNN_CHECK(expected.count(rec.name), ShapeError,
                   "checkpoint " << path << ": tensor '" << rec.name << "' " << Shape(rec.shape)
                                 << " has no counterpart in this model (it was written for another model)");
  }
}

// The epoch records, one per epoch done, in order.
History read_history(const io::Checkpoint& ck, const std::string& path) {
  // Every history record is 8 header entries, so a count the header cannot
  // hold is refused before the records are allocated.
  const std::uint64_t history_count = ck.get_uint("history.count");
  const std::uint64_t history_room = ck.meta().size() / kHistoryFields;
  MAGMADNN_CHECK(history_count <= history_room, IOError,
                 "checkpoint " << path << ": header entry history.count claims " << history_count
                               << " epoch records, but the file holds " << ck.meta().size()
                               << " header entries, room for at most " << history_room << " ("
                               << kHistoryFields << " entries each)");
  History hist(static_cast<std::size_t>(history_count));
  for (std::size_t i = 0; i < hist.size(); ++i) {
    EpochRecord& r = hist[i];
    r.epoch = static_cast<unsigned int>(ck.get_uint(indexed("history.", i, "epoch")));
    r.train_loss = ck.get_double(indexed("history.", i, "train_loss"));
    r.train_accuracy = ck.get_double(indexed("history.", i, "train_accuracy"));
    r.val_loss = ck.get_double(indexed("history.", i, "val_loss"));
    r.val_accuracy = ck.get_double(indexed("history.", i, "val_accuracy"));
    r.seconds = ck.get_double(indexed("history.", i, "seconds"));
    r.samples_per_second = ck.get_double(indexed("history.", i, "samples_per_second"));
    r.learning_rate = ck.get_double(indexed("history.", i, "learning_rate"));
  }
  return hist;
}

// The cursor: a crafted batch count past the epoch's end would close the
// epoch without training it; the history must hold one record per epoch done.
void check_cursor(const io::Checkpoint& ck, const std::string& path, const History& hist) {
  const auto epoch = ck.get_uint("train.epoch");
  const auto batch = ck.get_int("train.batch");
  const auto data_size = ck.get_int("train.data_size");
  const auto batch_size = ck.get_uint("train.batch_size");
  MAGMADNN_CHECK(batch >= 0 && batch_size > 0 && (batch == 0 || data_size > 0), ValueError,
                 "checkpoint " << path << ": cursor batch " << batch << " of an epoch over " << data_size
                               << " samples in batches of " << batch_size << " is not a position in an epoch");
  if (batch > 0) {
    const std::int64_t batches = (data_size + static_cast<std::int64_t>(batch_size) - 1) /
                                 static_cast<std::int64_t>(batch_size);
    MAGMADNN_CHECK(batch < batches, ValueError,
                   "checkpoint " << path << ": cursor at batch " << batch << " of epoch " << epoch + 1
                                 << ", but an epoch over " << data_size << " samples in batches of " << batch_size
                                 << " has " << batches << " batches");
  }
  MAGMADNN_CHECK(hist.size() == epoch, ValueError,
                 "checkpoint " << path << ": " << epoch << " epochs done but " << hist.size()
                               << " records in its history");
  for (std::size_t i = 0; i < hist.size(); ++i) {
    MAGMADNN_CHECK(hist[i].epoch == i + 1, ValueError,
                   "checkpoint " << path << ": history record " << i << " is of epoch " << hist[i].epoch
                                 << ", expected " << i + 1);
  }
}

// Weights and optimizer state must be numbers: a NaN would only surface as
// a NaN loss, far from the file that holds it.
template <typename T>
void check_finite(const io::Checkpoint& ck, const std::vector<Target<T>>& targets, const std::string& path) {
  for (const Target<T>& g : targets) {
    Tensor<T> tmp(g.in_file(), HOST);
    ck.copy_tensor(g.key, tmp);
    const T* v = tmp.host_data();
    for (std::int64_t k = 0; k < tmp.size(); ++k) {
      MAGMADNN_CHECK(std::isfinite(static_cast<double>(v[k])), ValueError,
                     "checkpoint " << path << ": tensor '" << g.key << "' " << g.in_file() << " holds " << v[k]
                                   << " at element " << k << " (parameters must be finite)");
    }
  }
}

// Nothing here can fail on a validated checkpoint.
template <typename T>
void restore(const io::Checkpoint& ck, const std::vector<Target<T>>& targets) {
  for (const Target<T>& g : targets) {
    if (g.group) {
      Tensor<T> whole(g.weight.whole, HOST);
      ck.copy_tensor(g.key, whole);
      g.t->copy_from(g.group->cut(whole, g.weight.axis, g.weight.shard));
    } else {
      ck.copy_tensor(g.key, *g.t);
    }
  }
}

}  // namespace

template <typename T>
void NeuralNetwork<T>::load(const std::string& path) {
  const io::Checkpoint ck = io::read_checkpoint(path);  // the whole file is validated here

  // Everything is checked before anything changes.
  const std::string dt = ck.get("model.dtype");
  MAGMADNN_CHECK(dt == dtype_name(dtype_v<T>), ValueError,
                 "checkpoint " << path << " holds a " << dt << " model, this model is " << dtype_name(dtype_v<T>));
  std::vector<Target<T>> targets;
  const auto target = [&](const std::string& key, std::size_t i, Tensor<T>* t) {
    const ParamSplit* split = split_of(i, *t, key);
    targets.push_back(split ? Target<T>{key, t, split->group.get(), split->weight} : Target<T>{key, t});
  };
  for (std::size_t i = 0; i < params_.size(); ++i) target("param/" + param_names_[i], i, &params_[i]->value());
  for (const auto& [name, t] : state_) targets.push_back({"state/" + name, t});
  for (std::size_t i = 0; i < params_.size(); ++i) {
    for (const auto& [slot, t] : opt_->slots_of(params_[i])) target("optim/" + param_names_[i] + "/" + slot, i, t);
  }
  check_targets(ck, targets, path);
  const auto step_count = ck.get_int("optimizer.step_count");
  const auto data_seed = ck.get_uint("train.data_seed");
  const EpochTotals partial{ck.get_double("train.partial_loss"), ck.get_int("train.partial_correct"),
                            ck.get_int("train.partial_samples"), ck.get_double("train.partial_seconds")};
  const RngState rng{ck.get_uint("rng.seed"), ck.get_uint("rng.next_stream")};
  History hist = read_history(ck, path);
  check_cursor(ck, path, hist);
  check_finite(ck, targets, path);

  // Commit.
  restore(ck, targets);
  opt_->set_step_count(step_count);
  set_rng_state(rng);
  epoch_ = static_cast<unsigned int>(ck.get_uint("train.epoch"));
  batch_ = ck.get_int("train.batch");
  data_seed_ = data_seed;
  data_size_ = ck.get_int("train.data_size");
  cursor_batch_size_ = static_cast<std::int64_t>(ck.get_uint("train.batch_size"));
  partial_ = partial;
  history_ = std::move(hist);
  last_checkpoint_ = path;
  // Nodes computed from the old weights must recompute.
  out_->invalidate();
  loss_->invalidate();
}

#define MAGMADNN_CKPT_INSTANTIATE(T)                                                     \
  template void NeuralNetwork<T>::save(const std::string&);                             \
  template void NeuralNetwork<T>::set_progress(History, std::int64_t);                  \
  template void NeuralNetwork<T>::write_checkpoint(const std::string&, std::int64_t);   \
  template void NeuralNetwork<T>::load(const std::string&);                             \
  template bool NeuralNetwork<T>::has_split_parameters() const noexcept;                \
  template const NeuralNetwork<T>::ParamSplit* NeuralNetwork<T>::split_of(std::size_t, const Tensor<T>&,   \
                                                                          const std::string&) const;
MAGMADNN_CKPT_INSTANTIATE(float)
MAGMADNN_CKPT_INSTANTIATE(double)
#undef MAGMADNN_CKPT_INSTANTIATE

}  // namespace magmadnn::model
