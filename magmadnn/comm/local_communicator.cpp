#include "magmadnn/comm/local_communicator.h"

#include <cstring>

namespace magmadnn::distributed {

namespace {

// Everything a single process does completes at the call.
class DoneRequest final : public Request {
 public:
  bool test() override { return true; }
  void wait() override {}
};

// A receive that found no matching send: with one process nothing can send
// it later, so waiting would hang forever. Fail loudly instead.
class UnmatchedRecv final : public Request {
 public:
  UnmatchedRecv(int tag, std::size_t bytes) : tag_(tag), bytes_(bytes) {}
  bool test() override { fail(); }
  void wait() override { fail(); }

 private:
  [[noreturn]] void fail() const {
    MAGMADNN_THROW(CommError, "LocalCommunicator: irecv from rank 0 with tag " << tag_ << " (" << bytes_
                                  << " bytes) has no matching isend; with one process it can never complete");
  }
  int tag_;
  std::size_t bytes_;
};

void check_host(Place p, const char* what) {
  MAGMADNN_CHECK(p == Place::host, NotSupportedError,
                 "LocalCommunicator::" << what << ": device buffers need the MPI or NCCL communicator");
}

void check_root(int root, const char* what) {
  MAGMADNN_CHECK(root == 0, ValueError,
                 "LocalCommunicator::" << what << ": rank " << root << " does not exist (1 rank)");
}

void copy_into(const ConstBuffer& from, const Buffer& to, const char* what) {
  check_host(from.place, what);
  check_host(to.place, what);
  MAGMADNN_CHECK(from.type == to.type, CommError,
                 "LocalCommunicator::" << what << ": send dtype " << dtype_name(from.type) << " but receive dtype "
                                       << dtype_name(to.type));
  MAGMADNN_CHECK(from.count == to.count, CommError,
                 "LocalCommunicator::" << what << ": send of " << from.count << " elements into a receive of "
                                       << to.count);
  if (from.count > 0 && from.data != to.data) std::memmove(to.data, from.data, from.bytes());
}


}  // namespace

RequestPtr LocalCommunicator::iallreduce(Buffer buf, ReduceOp) {
  check_host(buf.place, "iallreduce");
  return std::make_unique<DoneRequest>();
}

RequestPtr LocalCommunicator::ibroadcast(Buffer buf, int root) {
  check_host(buf.place, "ibroadcast");
  check_root(root, "ibroadcast");
  return std::make_unique<DoneRequest>();
}

RequestPtr LocalCommunicator::ireduce_scatter(ConstBuffer send, Buffer recv, ReduceOp) {
  copy_into(send, recv, "ireduce_scatter");
  return std::make_unique<DoneRequest>();
}

RequestPtr LocalCommunicator::iallgather(ConstBuffer send, Buffer recv) {
  copy_into(send, recv, "iallgather");
  return std::make_unique<DoneRequest>();
}

RequestPtr LocalCommunicator::igather(ConstBuffer send, Buffer recv, int root) {
  check_root(root, "igather");
  copy_into(send, recv, "igather");
  return std::make_unique<DoneRequest>();
}

RequestPtr LocalCommunicator::iscatter(ConstBuffer send, Buffer recv, int root) {
  check_root(root, "iscatter");
  copy_into(send, recv, "iscatter");
  return std::make_unique<DoneRequest>();
}

RequestPtr LocalCommunicator::ireduce(Buffer buf, ReduceOp, int root) {
  check_host(buf.place, "ireduce");
  check_root(root, "ireduce");
  return std::make_unique<DoneRequest>();
}

RequestPtr LocalCommunicator::isend(ConstBuffer buf, int dest, int tag) {
  check_host(buf.place, "isend");
  check_root(dest, "isend");
  const auto* p = static_cast<const unsigned char*>(buf.data);
  sent_.push_back({tag, buf.type, std::vector<unsigned char>(p, p + buf.bytes())});
  return std::make_unique<DoneRequest>();
}

RequestPtr LocalCommunicator::irecv(Buffer buf, int source, int tag) {
  check_host(buf.place, "irecv");
  check_root(source, "irecv");
  for (auto it = sent_.begin(); it != sent_.end(); ++it) {
    if (it->tag != tag) continue;
    const std::vector<unsigned char> bytes = std::move(it->bytes);
    const dtype type = it->type;
    sent_.erase(it);
    copy_into({bytes.data(), bytes.size() / dtype_size(type), type, Place::host}, buf, "irecv");
    return std::make_unique<DoneRequest>();
  }
  return std::make_unique<UnmatchedRecv>(tag, buf.bytes());
}

}  // namespace magmadnn::distributed
