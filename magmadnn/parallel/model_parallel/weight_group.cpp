#include "magmadnn/parallel/model_parallel/weight_group.h"

#include "magmadnn/core/errors.h"
#include "magmadnn/parallel/model_parallel/group_tensor.h"

namespace magmadnn::distributed::mp {

namespace {

class CommWeightGroup final : public layer::WeightGroup {
 public:
  explicit CommWeightGroup(std::shared_ptr<Communicator> comm) : comm_(std::move(comm)) {}
  int size() const noexcept override { return comm_->size(); }
  int rank() const noexcept override { return comm_->rank(); }
  void sum(double* values, std::size_t n) override {
    sum_over_group(*comm_, values, static_cast<std::int64_t>(n));
  }
  Tensor<float> gather(const Tensor<float>& part, const Shape& whole, std::int64_t axis) override {
    return allgather_axis(*comm_, part, whole, axis);
  }
  Tensor<double> gather(const Tensor<double>& part, const Shape& whole, std::int64_t axis) override {
    return allgather_axis(*comm_, part, whole, axis);
  }
  Tensor<float> cut(const Tensor<float>& whole, std::int64_t axis, Shard shard) const override {
    return take_axis(whole, axis, shard);
  }
  Tensor<double> cut(const Tensor<double>& whole, std::int64_t axis, Shard shard) const override {
    return take_axis(whole, axis, shard);
  }

 private:
  std::shared_ptr<Communicator> comm_;
};

}  // namespace

std::shared_ptr<layer::WeightGroup> weight_group(std::shared_ptr<Communicator> comm) {
  MAGMADNN_CHECK(comm, ValueError, "weight_group: no communicator");
  return std::make_shared<CommWeightGroup>(std::move(comm));
}

}  // namespace magmadnn::distributed::mp
