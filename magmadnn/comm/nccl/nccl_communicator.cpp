// NcclCommunicator's operations: check the arguments on this rank, queue
// the NCCL calls as one group on the communicator's stream, settle the
// launch (bounded), record the completion event.
#include "magmadnn/comm/nccl/nccl_communicator.h"

#include <utility>

#include "magmadnn/backend/cuda/cuda_check.h"
#include "magmadnn/comm/nccl/nccl_check.h"
#include "magmadnn/comm/nccl/nccl_request.h"
#include "magmadnn/comm/nccl/nccl_state.h"

namespace magmadnn::distributed {

namespace {

using nccl_detail::Clock;
using nccl_detail::nccl_op;
using nccl_detail::nccl_type;
using nccl_detail::OpInfo;
using State = NcclCommunicator::State;

// A buffer this rank hands to NCCL: marked device, and really device (or
// managed) memory of this rank's GPU, so a wrong pointer fails here with
// its name rather than inside a kernel.
void check_buffer(const void* data, std::size_t count, Place place, int device, const char* op, const char* role) {
  MAGMADNN_CHECK(place == Place::device, NotSupportedError,
                 "NcclCommunicator::" << op << ": the " << role
                                      << " buffer is host memory; NCCL moves device buffers only. Use the MPI "
                                         "communicator (make_communicator(\"mpi\")) for host buffers");
  if (count == 0) return;
  MAGMADNN_CHECK(data != nullptr, ValueError,
                 "NcclCommunicator::" << op << ": the " << role << " buffer of " << count << " elements is null");
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, data) != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky; keep it from surfacing in an unrelated check
    attr.type = cudaMemoryTypeUnregistered;
  }
  MAGMADNN_CHECK(
      attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged, ValueError,
      "NcclCommunicator::" << op << ": the " << role << " buffer is marked Place::device but is host memory");
  MAGMADNN_CHECK(attr.type == cudaMemoryTypeManaged || attr.device == device, ValueError,
                 "NcclCommunicator::" << op << ": the " << role << " buffer is on GPU " << attr.device
                                      << ", but this rank communicates on GPU " << device);
}

void check_rank(int r, int size, const char* op, const char* role) {
  MAGMADNN_CHECK(r >= 0 && r < size, ValueError,
                 "NcclCommunicator::" << op << ": " << role << " " << r << " does not exist (" << size << " ranks)");
}

void check_same_type(dtype send, dtype recv, const char* op) {
  MAGMADNN_CHECK(
      send == recv, ValueError,
      "NcclCommunicator::" << op << ": send dtype " << dtype_name(send) << " but receive dtype " << dtype_name(recv));
}

std::string call(const char* op, std::size_t count, dtype t, const std::string& extra = {}) {
  std::ostringstream os;
  os << op << "(" << count << " x " << dtype_name(t) << (extra.empty() ? "" : ", ") << extra << ")";
  return os.str();
}

const void* at(const void* base, std::size_t block, std::size_t bytes) {
  return static_cast<const char*>(base) + block * bytes;
}
void* at(void* base, std::size_t block, std::size_t bytes) { return static_cast<char*>(base) + block * bytes; }

// What the collective check compares between ranks (seq and step are
// filled in by run()).
mpi_detail::Descriptor descriptor(mpi_detail::OpKind kind, std::size_t count, dtype t, int root = -1, int reduce = -1) {
  mpi_detail::Descriptor d;
  d.kind = kind;
  d.count = static_cast<std::int64_t>(count);
  d.type = static_cast<std::int32_t>(t);
  d.root = root;
  d.reduce = reduce;
  return d;
}

// Launches a collective: after the sends and receives issued before it
// (issue order is NCCL's matching order), as its own group, with its
// descriptor exchange posted first.
RequestPtr run(const std::shared_ptr<State>& s, OpInfo op, mpi_detail::Descriptor d,
               const nccl_detail::Enqueue& calls) {
  s->ensure_usable(op);
  s->flush_p2p();
  std::unique_ptr<mpi_detail::DescriptorExchange> check;
  if (s->mpi) {
    d.seq = s->mpi->next_seq++;
    d.step = op.step;
    check = std::make_unique<mpi_detail::DescriptorExchange>(s->mpi->coll_check, s->rank, s->size, d);
  }
  const auto deadline = Clock::now() + op.timeout;
  auto launch = std::make_shared<nccl_detail::Launch>();
  launch->event = s->enqueue(op, deadline, calls, check.get());
  return std::make_unique<nccl_detail::NcclRequest>(s, std::move(op), std::move(launch), std::move(check));
}

// Queues a send or receive until the next flush (State::flush_p2p).
RequestPtr queue_p2p(const std::shared_ptr<State>& s, OpInfo op, bool send, const void* send_buf, void* recv_buf,
                     std::size_t count, dtype type, int peer) {
  s->ensure_usable(op);
  auto launch = std::make_shared<nccl_detail::Launch>();
  s->pending_p2p.push_back({send, send_buf, recv_buf, count, type, peer, op, launch});
  return std::make_unique<nccl_detail::NcclRequest>(s, std::move(op), std::move(launch), nullptr);
}

}  // namespace

RequestPtr NcclCommunicator::iallreduce(Buffer buf, ReduceOp op) {
  check_buffer(buf.data, buf.count, buf.place, state_->device, "iallreduce", "in-place");
  state_->drain_timeout = timeout_;
  return run(state_, {call("allreduce", buf.count, buf.type, reduce_op_name(op)), buf.bytes(), step_, timeout_},
             descriptor(mpi_detail::OpKind::allreduce, buf.count, buf.type, -1, static_cast<int>(op)),
             [&](ncclComm_t comm, cudaStream_t stream) {
               MAGMADNN_NCCL_CHECK(
                   ncclAllReduce(buf.data, buf.data, buf.count, nccl_type(buf.type), nccl_op(op), comm, stream), comm,
                   "allreduce");
             });
}

RequestPtr NcclCommunicator::ibroadcast(Buffer buf, int root) {
  check_buffer(buf.data, buf.count, buf.place, state_->device, "ibroadcast", "in-place");
  check_rank(root, size(), "ibroadcast", "root");
  state_->drain_timeout = timeout_;
  return run(
      state_, {call("broadcast", buf.count, buf.type, "root " + std::to_string(root)), buf.bytes(), step_, timeout_},
      descriptor(mpi_detail::OpKind::broadcast, buf.count, buf.type, root), [&](ncclComm_t comm, cudaStream_t stream) {
        MAGMADNN_NCCL_CHECK(ncclBroadcast(buf.data, buf.data, buf.count, nccl_type(buf.type), root, comm, stream), comm,
                            "broadcast");
      });
}

RequestPtr NcclCommunicator::ireduce_scatter(ConstBuffer send, Buffer recv, ReduceOp op) {
  check_buffer(send.data, send.count, send.place, state_->device, "ireduce_scatter", "send");
  check_buffer(recv.data, recv.count, recv.place, state_->device, "ireduce_scatter", "receive");
  check_same_type(send.type, recv.type, "ireduce_scatter");
  MAGMADNN_CHECK(send.count == recv.count * static_cast<std::size_t>(size()), ValueError,
                 "NcclCommunicator::ireduce_scatter: send has " << send.count << " elements; it needs " << size()
                                                                << " x " << recv.count << " (ranks x receive count)");
  state_->drain_timeout = timeout_;
  return run(state_, {call("reduce_scatter", recv.count, recv.type, reduce_op_name(op)), send.bytes(), step_, timeout_},
             descriptor(mpi_detail::OpKind::reduce_scatter, recv.count, recv.type, -1, static_cast<int>(op)),
             [&](ncclComm_t comm, cudaStream_t stream) {
               MAGMADNN_NCCL_CHECK(
                   ncclReduceScatter(send.data, recv.data, recv.count, nccl_type(recv.type), nccl_op(op), comm, stream),
                   comm, "reduce_scatter");
             });
}

RequestPtr NcclCommunicator::iallgather(ConstBuffer send, Buffer recv) {
  check_buffer(send.data, send.count, send.place, state_->device, "iallgather", "send");
  check_buffer(recv.data, recv.count, recv.place, state_->device, "iallgather", "receive");
  check_same_type(send.type, recv.type, "iallgather");
  MAGMADNN_CHECK(recv.count == send.count * static_cast<std::size_t>(size()), ValueError,
                 "NcclCommunicator::iallgather: receive has " << recv.count << " elements; it needs " << size() << " x "
                                                              << send.count << " (ranks x send count)");
  state_->drain_timeout = timeout_;
  return run(state_, {call("allgather", send.count, send.type), recv.bytes(), step_, timeout_},
             descriptor(mpi_detail::OpKind::allgather, send.count, send.type),
             [&](ncclComm_t comm, cudaStream_t stream) {
               MAGMADNN_NCCL_CHECK(ncclAllGather(send.data, recv.data, send.count, nccl_type(send.type), comm, stream),
                                   comm, "allgather");
             });
}

RequestPtr NcclCommunicator::igather(ConstBuffer send, Buffer recv, int root) {
  check_rank(root, size(), "igather", "root");
  check_buffer(send.data, send.count, send.place, state_->device, "igather", "send");
  const bool is_root = rank() == root;
  if (is_root) {
    check_buffer(recv.data, recv.count, recv.place, state_->device, "igather", "receive");
    check_same_type(send.type, recv.type, "igather");
    MAGMADNN_CHECK(recv.count == send.count * static_cast<std::size_t>(size()), ValueError,
                   "NcclCommunicator::igather: the root's receive has " << recv.count << " elements; it needs "
                                                                        << size() << " x " << send.count);
  }
  state_->drain_timeout = timeout_;
  const std::size_t block = send.bytes();
  return run(
      state_,
      {call("gather", send.count, send.type, "root " + std::to_string(root)), is_root ? recv.bytes() : block, step_,
       timeout_},
      descriptor(mpi_detail::OpKind::gather, send.count, send.type, root), [&](ncclComm_t comm, cudaStream_t stream) {
        const ncclDataType_t t = nccl_type(send.type);
        if (!is_root) {
          MAGMADNN_NCCL_CHECK(ncclSend(send.data, send.count, t, root, comm, stream), comm, "gather: send to root");
          return;
        }
        // The root's own block is a copy on the same stream, queued
        // ahead of the group's transfers (they are launched at ncclGroupEnd).
        void* own = at(recv.data, static_cast<std::size_t>(root), block);
        if (block > 0 && own != send.data)
          MAGMADNN_CUDA_CHECK(cudaMemcpyAsync(own, send.data, block, cudaMemcpyDeviceToDevice, stream));
        for (int r = 0; r < size(); ++r) {
          if (r == root) continue;
          MAGMADNN_NCCL_CHECK(
              ncclRecv(at(recv.data, static_cast<std::size_t>(r), block), send.count, t, r, comm, stream), comm,
              "gather: receive from rank " << r);
        }
      });
}

RequestPtr NcclCommunicator::iscatter(ConstBuffer send, Buffer recv, int root) {
  check_rank(root, size(), "iscatter", "root");
  check_buffer(recv.data, recv.count, recv.place, state_->device, "iscatter", "receive");
  const bool is_root = rank() == root;
  if (is_root) {
    check_buffer(send.data, send.count, send.place, state_->device, "iscatter", "send");
    check_same_type(send.type, recv.type, "iscatter");
    MAGMADNN_CHECK(send.count == recv.count * static_cast<std::size_t>(size()), ValueError,
                   "NcclCommunicator::iscatter: the root's send has " << send.count << " elements; it needs " << size()
                                                                      << " x " << recv.count);
  }
  state_->drain_timeout = timeout_;
  const std::size_t block = recv.bytes();
  return run(state_,
             {call("scatter", recv.count, recv.type, "root " + std::to_string(root)), is_root ? send.bytes() : block,
              step_, timeout_},
             descriptor(mpi_detail::OpKind::scatter, recv.count, recv.type, root),
             [&](ncclComm_t comm, cudaStream_t stream) {
               const ncclDataType_t t = nccl_type(recv.type);
               if (!is_root) {
                 MAGMADNN_NCCL_CHECK(ncclRecv(recv.data, recv.count, t, root, comm, stream), comm,
                                     "scatter: receive from root");
                 return;
               }
               const void* own = at(send.data, static_cast<std::size_t>(root), block);
               if (block > 0 && own != recv.data)
                 MAGMADNN_CUDA_CHECK(cudaMemcpyAsync(recv.data, own, block, cudaMemcpyDeviceToDevice, stream));
               for (int r = 0; r < size(); ++r) {
                 if (r == root) continue;
                 MAGMADNN_NCCL_CHECK(
                     ncclSend(at(send.data, static_cast<std::size_t>(r), block), recv.count, t, r, comm, stream), comm,
                     "scatter: send to rank " << r);
               }
             });
}

RequestPtr NcclCommunicator::ireduce(Buffer buf, ReduceOp op, int root) {
  check_buffer(buf.data, buf.count, buf.place, state_->device, "ireduce", "in-place");
  check_rank(root, size(), "ireduce", "root");
  state_->drain_timeout = timeout_;
  return run(state_,
             {call("reduce", buf.count, buf.type, std::string(reduce_op_name(op)) + ", root " + std::to_string(root)),
              buf.bytes(), step_, timeout_},
             descriptor(mpi_detail::OpKind::reduce, buf.count, buf.type, root, static_cast<int>(op)),
             [&](ncclComm_t comm, cudaStream_t stream) {
               // In place: only the root's buffer is written.
               MAGMADNN_NCCL_CHECK(
                   ncclReduce(buf.data, buf.data, buf.count, nccl_type(buf.type), nccl_op(op), root, comm, stream),
                   comm, "reduce");
             });
}

RequestPtr NcclCommunicator::isend(ConstBuffer buf, int dest, int tag) {
  check_buffer(buf.data, buf.count, buf.place, state_->device, "isend", "send");
  check_rank(dest, size(), "isend", "destination");
  // NCCL pairs a send to oneself with its receive only inside one group.
  MAGMADNN_CHECK(dest != rank(), ValueError,
                 "NcclCommunicator::isend: rank " << dest << " sending to itself; copy the buffer instead");
  MAGMADNN_CHECK(tag >= 0, ValueError, "NcclCommunicator::isend: tag " << tag << " is negative");
  state_->drain_timeout = timeout_;
  return queue_p2p(
      state_,
      {call("send", buf.count, buf.type, "to rank " + std::to_string(dest) + ", tag " + std::to_string(tag)),
       buf.bytes(), step_, timeout_},
      true, buf.data, nullptr, buf.count, buf.type, dest);
}

RequestPtr NcclCommunicator::irecv(Buffer buf, int source, int tag) {
  check_buffer(buf.data, buf.count, buf.place, state_->device, "irecv", "receive");
  check_rank(source, size(), "irecv", "source");
  MAGMADNN_CHECK(source != rank(), ValueError,
                 "NcclCommunicator::irecv: rank " << source << " receiving from itself; copy the buffer instead");
  MAGMADNN_CHECK(tag >= 0, ValueError, "NcclCommunicator::irecv: tag " << tag << " is negative");
  state_->drain_timeout = timeout_;
  return queue_p2p(
      state_,
      {call("recv", buf.count, buf.type, "from rank " + std::to_string(source) + ", tag " + std::to_string(tag)),
       buf.bytes(), step_, timeout_},
      false, nullptr, buf.data, buf.count, buf.type, source);
}

void NcclCommunicator::report_failure(const std::string& reason) noexcept {
  if (!state_ || !state_->broken.empty()) return;
  try {
    state_->fail("rank " + std::to_string(state_->rank) + " stopped with an error: " + reason);
  } catch (...) {
    // Out of memory for the text: the others' watchdogs still name this rank.
  }
}

void NcclCommunicator::barrier() {
  state_->drain_timeout = timeout_;
  void* word = state_->scratch.get();
  // NCCL has no barrier: a one-element allreduce completes only once every
  // rank has joined it, and wait() then synchronises with the stream.
  run(state_, {"barrier", sizeof(std::int32_t), step_, timeout_},
      descriptor(mpi_detail::OpKind::barrier, 0, dtype::i32),
      [&](ncclComm_t comm, cudaStream_t stream) {
        MAGMADNN_NCCL_CHECK(ncclAllReduce(word, word, 1, ncclInt32, ncclSum, comm, stream), comm, "barrier");
      })
      ->wait();
}

}  // namespace magmadnn::distributed
