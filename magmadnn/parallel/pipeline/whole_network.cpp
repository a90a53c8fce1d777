#include "magmadnn/parallel/pipeline/whole_network.h"

#include <cstdint>
#include <vector>

#include "magmadnn/parallel/pipeline/cuts.h"

namespace magmadnn::distributed::pipeline {

namespace {

// One kind of tensor (weights, optimizer slots, layer state) on both sides,
// in the network's order: the network's tensor, the stage holding it, and
// on that stage's rank its own tensor (null elsewhere).
template <typename T>
struct Pairs {
  std::vector<Tensor<T>*> whole, mine;
  std::vector<int> owner;
};

// The stage of each of the network's tensors of a kind, from how many each
// factory layer has (`count`), checked against the network's `total`.
template <typename T, class Count>
std::vector<int> owners(const Pipeline<T>& pipe, Count count, std::size_t total, const char* what) {
  std::vector<int> owner;
  for (int i = 0; i < static_cast<int>(pipe.facts().size()); ++i)
    owner.insert(owner.end(), static_cast<std::size_t>(count(pipe.facts()[i])), stage_of(pipe.first(), i));
  MAGMADNN_CHECK(owner.size() == total, ValueError,
                 "pipeline: the network has " << total << " " << what << ", the pipeline's layers "
                                              << owner.size() << ": not the same layers");
  return owner;
}

template <typename T>
Pairs<T> weight_pairs(Pipeline<T>& pipe, model::NeuralNetwork<T>& net) {
  Pairs<T> p;
  p.owner = owners(pipe, [](const LayerFacts& f) { return f.weights; }, net.parameters().size(), "weights");
  std::size_t next = 0;  // this stage's next weight
  for (std::size_t k = 0; k < p.owner.size(); ++k) {
    p.whole.push_back(&net.parameters()[k]->value());
    p.mine.push_back(p.owner[k] == pipe.stage() ? &pipe.local().parameters()[next++]->value() : nullptr);
  }
  return p;
}

// The optimizer slots of every weight, slot by slot.
template <typename T>
Pairs<T> slot_pairs(Pipeline<T>& pipe, model::NeuralNetwork<T>& net, const Pairs<T>& weights) {
  Pairs<T> p;
  std::size_t next = 0;
  for (std::size_t k = 0; k < weights.whole.size(); ++k) {
    const auto whole = net.optimizer().slots_of(net.parameters()[k]);
    std::vector<std::pair<std::string, Tensor<T>*>> mine;
    if (weights.mine[k]) mine = pipe.optimizer().slots_of(pipe.local().parameters()[next++]);
    for (std::size_t j = 0; j < whole.size(); ++j) {
      p.whole.push_back(whole[j].second);
      p.owner.push_back(weights.owner[k]);
      p.mine.push_back(weights.mine[k] ? mine.at(j).second : nullptr);
    }
  }
  return p;
}

template <typename T>
Pairs<T> state_pairs(Pipeline<T>& pipe, model::NeuralNetwork<T>& net) {
  Pairs<T> p;
  for (const auto& l : net.layers())
    for (auto& [name, t] : l->get_state()) p.whole.push_back(t);
  p.owner = owners(pipe, [](const LayerFacts& f) { return f.states; }, p.whole.size(), "state tensors");
  std::vector<Tensor<T>*> own;
  for (const auto& l : pipe.local().layers())
    for (auto& [name, t] : l->get_state()) own.push_back(t);
  std::size_t next = 0;
  for (int o : p.owner) p.mine.push_back(o == pipe.stage() ? own.at(next++) : nullptr);
  return p;
}

template <typename T>
void gather(Communicator& comm, const Pairs<T>& p) {
  for (std::size_t k = 0; k < p.whole.size(); ++k) {
    Tensor<T>& w = *p.whole[k];
    if (p.mine[k]) w.copy_from(*p.mine[k]);
    comm.broadcast(host_buffer(w.mutable_host_data(), static_cast<std::size_t>(w.size())), p.owner[k]);
  }
}

template <typename T>
void take(const Pairs<T>& p) {
  for (std::size_t k = 0; k < p.whole.size(); ++k)
    if (p.mine[k]) p.mine[k]->copy_from(*p.whole[k]);
}

}  // namespace

template <typename T>
void gather_whole(Pipeline<T>& pipe, model::NeuralNetwork<T>& net) {
  const Pairs<T> weights = weight_pairs(pipe, net);
  gather(pipe.communicator(), weights);
  gather(pipe.communicator(), slot_pairs(pipe, net, weights));
  gather(pipe.communicator(), state_pairs(pipe, net));
  // Every stage counts every step (Pipeline::train_step); the largest is taken all the same.
  std::int64_t steps = pipe.optimizer().step_count();
  pipe.communicator().allreduce(host_buffer(&steps, 1), ReduceOp::max);
  net.optimizer().set_step_count(steps);
  for (const auto& v : net.parameters()) v->mark_changed();
}

template <typename T>
void take_from_whole(Pipeline<T>& pipe, model::NeuralNetwork<T>& net) {
  const Pairs<T> weights = weight_pairs(pipe, net);
  take(weights);
  take(slot_pairs(pipe, net, weights));
  take(state_pairs(pipe, net));
  pipe.optimizer().set_step_count(net.optimizer().step_count());
  for (const auto& v : pipe.local().parameters()) v->mark_changed();
}

template void gather_whole(Pipeline<float>&, model::NeuralNetwork<float>&);
template void gather_whole(Pipeline<double>&, model::NeuralNetwork<double>&);
template void take_from_whole(Pipeline<float>&, model::NeuralNetwork<float>&);
template void take_from_whole(Pipeline<double>&, model::NeuralNetwork<double>&);

}  // namespace magmadnn::distributed::pipeline
