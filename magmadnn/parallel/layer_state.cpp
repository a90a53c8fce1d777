#include "magmadnn/parallel/layer_state.h"

#include <vector>

namespace magmadnn::distributed {

template <typename T>
void broadcast_layer_state(Communicator& comm, model::NeuralNetwork<T>& net, int root) {
  if (comm.size() == 1) return;
  // In one fixed order on every rank: the layers', each layer's own.
  std::vector<Tensor<T>*> tensors;
  for (const auto& l : net.layers()) {
    for (auto& [name, s] : l->get_state()) tensors.push_back(s);
  }
  std::vector<RequestPtr> pending;
  std::vector<Tensor<T>> staged;  // tensors outside host memory travel through a host copy
  staged.reserve(tensors.size());
  for (Tensor<T>* t : tensors) {
    if (t->get_memory_type() != DEVICE) {  // host-readable: HOST or managed
      pending.push_back(comm.ibroadcast(host_buffer(t->mutable_host_data(), static_cast<std::size_t>(t->size())), root));
    } else {
      staged.push_back(t->to(HOST));
      pending.push_back(comm.ibroadcast(
          host_buffer(staged.back().mutable_host_data(), static_cast<std::size_t>(staged.back().size())), root));
    }
  }
  wait_all(pending);
  std::size_t k = 0;
  for (Tensor<T>* t : tensors) {
    if (t->get_memory_type() == DEVICE) t->copy_from(staged[k++]);
  }
}

template void broadcast_layer_state<float>(Communicator&, model::NeuralNetwork<float>&, int);
template void broadcast_layer_state<double>(Communicator&, model::NeuralNetwork<double>&, int);

}  // namespace magmadnn::distributed
