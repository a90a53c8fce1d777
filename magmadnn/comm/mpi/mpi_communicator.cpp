#include "magmadnn/comm/mpi/mpi_communicator.h"

#include <climits>
#include <cstdlib>
#include <sstream>

#include "magmadnn/comm/flight_recorder.h"
#include "magmadnn/comm/mpi/collective_check.h"
#include "magmadnn/comm/mpi/device_copy.h"
#include "magmadnn/comm/mpi/mpi_check.h"
#include "magmadnn/comm/mpi/mpi_request.h"

namespace magmadnn::distributed {

using mpi_detail::CommState;
using mpi_detail::Descriptor;
using mpi_detail::MpiRequest;
using mpi_detail::OpKind;
using mpi_detail::Staged;

namespace {

// MAGMADNN_COLLECTIVE_CHECK: a mode's name; unset or empty is overlap.
CollectiveCheck check_from_environment() {
  const char* v = std::getenv("MAGMADNN_COLLECTIVE_CHECK");
  if (v == nullptr || *v == '\0') return CollectiveCheck::overlap;
  try {
    return parse_collective_check(v);
  } catch (const ValueError& e) {
    MAGMADNN_THROW(ValueError, "MAGMADNN_COLLECTIVE_CHECK: " << e.what());
  }
}

std::shared_ptr<CommState> attach(std::shared_ptr<MpiEnvironment> env, MPI_Comm parent) {
  auto s = std::make_shared<CommState>();
  s->env = std::move(env);
  s->check = check_from_environment();
  for (MPI_Comm* c : {&s->data, &s->coll_check, &s->p2p_check}) {
    MAGMADNN_MPI_CHECK(MPI_Comm_dup(parent, c), "MpiCommunicator: duplicating the communicator");
    MAGMADNN_MPI_CHECK(MPI_Comm_set_errhandler(*c, MPI_ERRORS_RETURN), "MpiCommunicator: setting MPI_ERRORS_RETURN");
  }
  MAGMADNN_MPI_CHECK(MPI_Comm_rank(s->data, &s->rank), "MpiCommunicator");
  MAGMADNN_MPI_CHECK(MPI_Comm_size(s->data, &s->size), "MpiCommunicator");
  int* ub = nullptr;
  int flag = 0;
  MAGMADNN_MPI_CHECK(MPI_Comm_get_attr(s->data, MPI_TAG_UB, &ub, &flag), "MpiCommunicator: asking MPI_TAG_UB");
  if (flag && ub) s->tag_ub = *ub;
  s->post_notice_receive();
  s->presence.start(s->coll_check, s->rank, s->size);
  // The flight recorder names the world rank in its file and dumps on a
  // fatal signal or the launcher's SIGTERM (flight_recorder.h).
  s->flight_comm = flight::next_comm_id();
  int world_rank = 0, world_size = 1;
  MAGMADNN_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank), "MpiCommunicator");
  MAGMADNN_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &world_size), "MpiCommunicator");
  flight::set_world(world_rank, world_size);
  flight::install_signal_handlers();
  return s;
}

int as_int(std::size_t count, const char* op) {
  MAGMADNN_CHECK(count <= static_cast<std::size_t>(INT_MAX), ValueError,
                 "MpiCommunicator::" << op << ": " << count << " elements exceed MPI's int count (" << INT_MAX
                                     << "); split the buffer");
  return static_cast<int>(count);
}

void check_rank(int r, int size, const char* op, const char* role) {
  MAGMADNN_CHECK(r >= 0 && r < size, ValueError,
                 "MpiCommunicator::" << op << ": " << role << " " << r << " is not a rank of this communicator (size "
                                     << size << ")");
}

void check_same_type(dtype a, dtype b, const char* op) {
  MAGMADNN_CHECK(a == b, ValueError,
                 "MpiCommunicator::" << op << ": send dtype " << dtype_name(a) << " but receive dtype "
                                     << dtype_name(b));
}

Descriptor collective(OpKind kind, std::size_t count, dtype t, int root = -1, int reduce = -1) {
  Descriptor d;
  d.kind = kind;
  d.count = static_cast<std::int64_t>(count);
  d.type = static_cast<std::int32_t>(t);
  d.root = root;
  d.reduce = reduce;
  return d;
}

}  // namespace

const char* collective_check_name(CollectiveCheck c) noexcept {
  switch (c) {
    case CollectiveCheck::overlap: return "overlap";
    case CollectiveCheck::every: return "every";
    case CollectiveCheck::off: return "off";
    case CollectiveCheck::pairwise: return "pairwise";
  }
  return "?";
}

CollectiveCheck parse_collective_check(const std::string& name) {
  for (CollectiveCheck c : {CollectiveCheck::overlap, CollectiveCheck::every, CollectiveCheck::off,
                            CollectiveCheck::pairwise})
    if (name == collective_check_name(c)) return c;
  if (name == "strict") return CollectiveCheck::every;
  MAGMADNN_THROW(ValueError, "the collective check \""
                                 << name << "\" is not a mode; expected overlap (the default: a hash vote beside "
                                    "each collective), every (each collective waits for its vote; strict is the "
                                    "same), off, or pairwise (descriptors to every rank)");
}

MpiCommunicator::MpiCommunicator() {
  auto env = MpiEnvironment::acquire();
  state_ = attach(std::move(env), MPI_COMM_WORLD);
}

MpiCommunicator::MpiCommunicator(MPI_Comm comm) {
  auto env = MpiEnvironment::acquire();
  MAGMADNN_CHECK(comm != MPI_COMM_NULL, ValueError, "MpiCommunicator: MPI_COMM_NULL has no processes");
  state_ = attach(std::move(env), comm);
}

MpiCommunicator::~MpiCommunicator() = default;

template <typename B>
void MpiCommunicator::check_buffer(const B& b, const char* op, const char* which) const {
  MAGMADNN_CHECK(b.place == Place::host || supports(b.place), NotSupportedError,
                 "MpiCommunicator::" << op << ": the " << which
                                     << " buffer is device memory, and this build has no CUDA; pass host buffers");
  MAGMADNN_CHECK(b.count == 0 || b.data != nullptr, ValueError,
                 "MpiCommunicator::" << op << ": the " << which << " buffer of " << b.count << " elements is null");
  as_int(b.count, op);
}

Staged MpiCommunicator::stage(const void* data, std::size_t bytes, Place place, bool read, bool host_result) {
  return mpi_detail::stage(*state_->pool, data, bytes, place, read, cuda_aware() && !host_result);
}

int MpiCommunicator::rank() const noexcept { return state_->rank; }
int MpiCommunicator::size() const noexcept { return state_->size; }
MPI_Comm MpiCommunicator::comm() const noexcept { return state_->data; }
void MpiCommunicator::set_collective_check(CollectiveCheck mode) noexcept { state_->check = mode; }
CollectiveCheck MpiCommunicator::collective_check() const noexcept { return state_->check; }
void MpiCommunicator::set_strict_checks(bool strict) noexcept {
  state_->check = strict ? CollectiveCheck::every : CollectiveCheck::overlap;
}
bool MpiCommunicator::strict_checks() const noexcept { return state_->check == CollectiveCheck::every; }
bool MpiCommunicator::cuda_aware() const noexcept { return mpi_detail::device_build() && state_->env->cuda_aware(); }
bool MpiCommunicator::supports(Place place) const noexcept {
  return place == Place::host || mpi_detail::device_build();
}

std::unique_ptr<MpiRequest> MpiCommunicator::start_collective(Descriptor d) {
  CommState& s = *state_;
  s.check_usable(mpi_detail::op_kind_name(d.kind));
  d.seq = s.next_seq++;
  d.step = step_;
  s.presence.record(d);
  auto req = std::make_unique<MpiRequest>(state_, d, timeout_);
  const std::int64_t slot = flight::begin(s.flight_comm, static_cast<std::uint64_t>(d.seq), mpi_detail::op_kind_name(d.kind),
                                          static_cast<std::uint64_t>(d.count) * dtype_size(static_cast<dtype>(d.type)),
                                          step_);
  req->on_complete([slot] { flight::end(slot); });
  switch (s.check) {
    case CollectiveCheck::overlap:
    case CollectiveCheck::every:
      req->watch_hash(std::make_unique<mpi_detail::HashCheck>(s.coll_check, s.rank, s.size, d, s.tag_ub));
      break;
    case CollectiveCheck::pairwise:
      req->watch_collective(std::make_unique<mpi_detail::DescriptorExchange>(s.coll_check, s.rank, s.size, d));
      break;
    case CollectiveCheck::off: break;
  }
  // Every: all ranks have voted and agree before the caller posts the data
  // operation, so MPI never matches two different calls.
  if (s.check == CollectiveCheck::every) req->wait_check();
  return req;
}

RequestPtr MpiCommunicator::iallreduce(Buffer buf, ReduceOp op) {
  check_buffer(buf, "iallreduce", "data");
  const auto& types = state_->env->types();
  const Staged s = stage(buf.data, buf.bytes(), buf.place, true, op == ReduceOp::avg);
  auto req = start_collective(collective(OpKind::allreduce, buf.count, buf.type, -1, static_cast<int>(op)));
  MAGMADNN_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, s.mpi, static_cast<int>(buf.count), types.datatype(buf.type),
                                    types.op(op, buf.type), state_->data, req->data_request()),
                     "iallreduce of " << buf.count << " x " << dtype_name(buf.type));
  if (op == ReduceOp::avg)
    req->on_complete([s, buf, n = size()] { mpi_detail::divide_in_place(s.mpi, buf.count, buf.type, n); });
  req->on_complete([s] { s.copy_back(); });
  return req;
}

RequestPtr MpiCommunicator::ibroadcast(Buffer buf, int root) {
  check_buffer(buf, "ibroadcast", "data");
  check_rank(root, size(), "ibroadcast", "root");
  const bool at_root = rank() == root;
  const Staged s = stage(buf.data, buf.bytes(), buf.place, at_root);
  auto req = start_collective(collective(OpKind::broadcast, buf.count, buf.type, root));
  MAGMADNN_MPI_CHECK(MPI_Ibcast(s.mpi, static_cast<int>(buf.count), state_->env->types().datatype(buf.type), root,
                                state_->data, req->data_request()),
                     "ibroadcast of " << buf.count << " x " << dtype_name(buf.type) << " from rank " << root);
  req->on_complete([s, at_root] {
    if (!at_root) s.copy_back();
  });
  return req;
}

RequestPtr MpiCommunicator::ireduce_scatter(ConstBuffer send, Buffer recv, ReduceOp op) {
  check_buffer(send, "ireduce_scatter", "send");
  check_buffer(recv, "ireduce_scatter", "receive");
  check_same_type(send.type, recv.type, "ireduce_scatter");
  MAGMADNN_CHECK(send.count == recv.count * static_cast<std::size_t>(size()), ValueError,
                 "MpiCommunicator::ireduce_scatter: the send buffer has " << send.count << " elements, expected size() "
                                                                        << size() << " x " << recv.count);
  const auto& types = state_->env->types();
  const Staged in = stage(send.data, send.bytes(), send.place, true);
  const Staged out = stage(recv.data, recv.bytes(), recv.place, false, op == ReduceOp::avg);
  auto req = start_collective(collective(OpKind::reduce_scatter, recv.count, recv.type, -1, static_cast<int>(op)));
  MAGMADNN_MPI_CHECK(MPI_Ireduce_scatter_block(in.mpi, out.mpi, static_cast<int>(recv.count),
                                               types.datatype(recv.type), types.op(op, recv.type), state_->data,
                                               req->data_request()),
                     "ireduce_scatter of " << recv.count << " x " << dtype_name(recv.type) << " per rank");
  if (op == ReduceOp::avg)
    req->on_complete([out, recv, n = size()] { mpi_detail::divide_in_place(out.mpi, recv.count, recv.type, n); });
  req->on_complete([in, out] { out.copy_back(); });
  return req;
}

RequestPtr MpiCommunicator::iallgather(ConstBuffer send, Buffer recv) {
  check_buffer(send, "iallgather", "send");
  check_buffer(recv, "iallgather", "receive");
  check_same_type(send.type, recv.type, "iallgather");
  MAGMADNN_CHECK(recv.count == send.count * static_cast<std::size_t>(size()), ValueError,
                 "MpiCommunicator::iallgather: the receive buffer has " << recv.count << " elements, expected size() "
                                                                        << size() << " x " << send.count);
  as_int(recv.count, "iallgather");
  // This rank's block already in place: MPI_IN_PLACE, as MPI requires for aliasing.
  const void* own_block = static_cast<const char*>(recv.data) + static_cast<std::size_t>(rank()) * send.bytes();
  const bool in_place = send.data == own_block;
  const Staged in = in_place ? Staged{} : stage(send.data, send.bytes(), send.place, true);
  const Staged out = stage(recv.data, recv.bytes(), recv.place, in_place);
  const MPI_Datatype t = state_->env->types().datatype(send.type);
  auto req = start_collective(collective(OpKind::allgather, send.count, send.type));
  MAGMADNN_MPI_CHECK(MPI_Iallgather(in_place ? MPI_IN_PLACE : in.mpi, static_cast<int>(send.count), t, out.mpi,
                                    static_cast<int>(send.count), t, state_->data, req->data_request()),
                     "iallgather of " << send.count << " x " << dtype_name(send.type) << " per rank");
  req->on_complete([in, out] { out.copy_back(); });
  return req;
}

RequestPtr MpiCommunicator::igather(ConstBuffer send, Buffer recv, int root) {
  check_rank(root, size(), "igather", "root");
  check_buffer(send, "igather", "send");
  if (rank() == root) {
    check_buffer(recv, "igather", "receive");
    check_same_type(send.type, recv.type, "igather");
    MAGMADNN_CHECK(recv.count == send.count * static_cast<std::size_t>(size()), ValueError,
                   "MpiCommunicator::igather: root's receive buffer has " << recv.count << " elements, expected size() "
                                                                          << size() << " x " << send.count);
    as_int(recv.count, "igather");
  }
  const Staged in = stage(send.data, send.bytes(), send.place, true);
  const Staged out = rank() == root ? stage(recv.data, recv.bytes(), recv.place, false) : Staged{};
  const MPI_Datatype t = state_->env->types().datatype(send.type);
  auto req = start_collective(collective(OpKind::gather, send.count, send.type, root));
  MAGMADNN_MPI_CHECK(MPI_Igather(in.mpi, static_cast<int>(send.count), t, out.mpi, static_cast<int>(send.count), t,
                                 root, state_->data, req->data_request()),
                     "igather of " << send.count << " x " << dtype_name(send.type) << " to rank " << root);
  req->on_complete([in, out] { out.copy_back(); });
  return req;
}

RequestPtr MpiCommunicator::iscatter(ConstBuffer send, Buffer recv, int root) {
  check_rank(root, size(), "iscatter", "root");
  check_buffer(recv, "iscatter", "receive");
  if (rank() == root) {
    check_buffer(send, "iscatter", "send");
    check_same_type(send.type, recv.type, "iscatter");
    MAGMADNN_CHECK(send.count == recv.count * static_cast<std::size_t>(size()), ValueError,
                   "MpiCommunicator::iscatter: root's send buffer has " << send.count << " elements, expected size() "
                                                                        << size() << " x " << recv.count);
    as_int(send.count, "iscatter");
  }
  const Staged in = rank() == root ? stage(send.data, send.bytes(), send.place, true) : Staged{};
  const Staged out = stage(recv.data, recv.bytes(), recv.place, false);
  const MPI_Datatype t = state_->env->types().datatype(recv.type);
  auto req = start_collective(collective(OpKind::scatter, recv.count, recv.type, root));
  MAGMADNN_MPI_CHECK(MPI_Iscatter(in.mpi, static_cast<int>(recv.count), t, out.mpi, static_cast<int>(recv.count), t,
                                  root, state_->data, req->data_request()),
                     "iscatter of " << recv.count << " x " << dtype_name(recv.type) << " from rank " << root);
  req->on_complete([in, out] { out.copy_back(); });
  return req;
}

RequestPtr MpiCommunicator::ireduce(Buffer buf, ReduceOp op, int root) {
  check_buffer(buf, "ireduce", "data");
  check_rank(root, size(), "ireduce", "root");
  const auto& types = state_->env->types();
  const bool at_root = rank() == root;
  const Staged s = stage(buf.data, buf.bytes(), buf.place, true, at_root && op == ReduceOp::avg);
  auto req = start_collective(collective(OpKind::reduce, buf.count, buf.type, root, static_cast<int>(op)));
  MAGMADNN_MPI_CHECK(MPI_Ireduce(at_root ? MPI_IN_PLACE : s.mpi, at_root ? s.mpi : nullptr,
                                 static_cast<int>(buf.count), types.datatype(buf.type), types.op(op, buf.type), root,
                                 state_->data, req->data_request()),
                     "ireduce of " << buf.count << " x " << dtype_name(buf.type) << " to rank " << root);
  if (op == ReduceOp::avg && at_root)
    req->on_complete([s, buf, n = size()] { mpi_detail::divide_in_place(s.mpi, buf.count, buf.type, n); });
  req->on_complete([s, at_root] {
    if (at_root) s.copy_back();
  });
  return req;
}

RequestPtr MpiCommunicator::isend(ConstBuffer buf, int dest, int tag) {
  CommState& s = *state_;
  s.check_usable("isend");
  check_buffer(buf, "isend", "data");
  check_rank(dest, size(), "isend", "destination");
  MAGMADNN_CHECK(tag >= 0 && tag <= s.tag_ub, ValueError,
                 "MpiCommunicator::isend: tag " << tag << " outside [0, " << s.tag_ub << "]");
  Descriptor d = collective(OpKind::send, buf.count, buf.type);
  d.seq = tag;
  d.step = step_;
  std::ostringstream what;
  what << "isend of " << buf.count << " x " << dtype_name(buf.type) << " (" << buf.bytes() << " bytes) to rank " << dest
       << " with tag " << tag;
  const Staged in = stage(buf.data, buf.bytes(), buf.place, true);
  auto req = std::make_unique<MpiRequest>(state_, what.str(), step_, timeout_);
  req->watch_peer(dest, /*is_recv=*/false, d);
  req->on_complete([in] {});  // keeps a staging block until the send is done
  MAGMADNN_MPI_CHECK(MPI_Isend(req->header_mine(), sizeof(Descriptor), MPI_BYTE, dest, tag, s.p2p_check,
                               req->header_request()),
                     what.str() << ": sending the header");
  MAGMADNN_MPI_CHECK(MPI_Isend(in.mpi, static_cast<int>(buf.count), s.env->types().datatype(buf.type), dest, tag,
                               s.data, req->data_request()),
                     what.str());
  return req;
}

RequestPtr MpiCommunicator::irecv(Buffer buf, int source, int tag) {
  CommState& s = *state_;
  s.check_usable("irecv");
  check_buffer(buf, "irecv", "data");
  check_rank(source, size(), "irecv", "source");
  MAGMADNN_CHECK(tag >= 0 && tag <= s.tag_ub, ValueError,
                 "MpiCommunicator::irecv: tag " << tag << " outside [0, " << s.tag_ub << "]");
  Descriptor d = collective(OpKind::recv, buf.count, buf.type);
  d.seq = tag;
  d.step = step_;
  std::ostringstream what;
  what << "irecv of " << buf.count << " x " << dtype_name(buf.type) << " (" << buf.bytes() << " bytes) from rank "
       << source << " with tag " << tag;
  const Staged out = stage(buf.data, buf.bytes(), buf.place, false);
  auto req = std::make_unique<MpiRequest>(state_, what.str(), step_, timeout_);
  req->watch_peer(source, /*is_recv=*/true, d);
  req->on_complete([out] { out.copy_back(); });
  MAGMADNN_MPI_CHECK(MPI_Irecv(req->header_theirs(), sizeof(Descriptor), MPI_BYTE, source, tag, s.p2p_check,
                               req->header_request()),
                     what.str() << ": posting the header's receive");
  MAGMADNN_MPI_CHECK(MPI_Irecv(out.mpi, static_cast<int>(buf.count), s.env->types().datatype(buf.type), source, tag,
                               s.data, req->data_request()),
                     what.str());
  return req;
}

void MpiCommunicator::barrier() {
  auto req = start_collective(collective(OpKind::barrier, 0, dtype::f32));
  MAGMADNN_MPI_CHECK(MPI_Ibarrier(state_->data, req->data_request()), "barrier");
  req->wait();
}

void MpiCommunicator::report_failure(const std::string& reason) noexcept {
  if (!state_ || !state_->failure.empty() || !MpiEnvironment::mpi_active()) return;
  try {
    // A rank that has already told this one of its failure needs no notice back.
    std::string heard = state_->poll_notice();
    if (!heard.empty()) {
      state_->failure = std::move(heard);
      return;
    }
    state_->failure = "rank " + std::to_string(state_->rank) + " stopped with an error: " + reason;
    state_->send_notice(state_->failure);
  } catch (...) {
    // Out of memory for the text: the others' watchdogs still name this rank.
  }
}

std::unique_ptr<MpiCommunicator> MpiCommunicator::split(int color, int key) {
  // The descriptor round first, so a rank that never calls split is named
  // instead of hanging in the blocking MPI_Comm_split.
  auto req = start_collective(collective(OpKind::split, 0, dtype::f32));
  req->wait();
  MPI_Comm part = MPI_COMM_NULL;
  MAGMADNN_MPI_CHECK(MPI_Comm_split(state_->data, color < 0 ? MPI_UNDEFINED : color, key, &part),
                     "split with color " << color << " and key " << key);
  return adopt_split(part);
}

std::unique_ptr<MpiCommunicator> MpiCommunicator::split_shared() {
  auto req = start_collective(collective(OpKind::split, 0, dtype::f32));
  req->wait();
  MPI_Comm part = MPI_COMM_NULL;
  MAGMADNN_MPI_CHECK(MPI_Comm_split_type(state_->data, MPI_COMM_TYPE_SHARED, rank(), MPI_INFO_NULL, &part),
                     "split by shared memory (MPI_COMM_TYPE_SHARED)");
  return adopt_split(part);
}

std::unique_ptr<MpiCommunicator> MpiCommunicator::adopt_split(MPI_Comm part) {
  if (part == MPI_COMM_NULL) return nullptr;
  std::unique_ptr<MpiCommunicator> out;
  try {
    out = std::make_unique<MpiCommunicator>(part);
  } catch (...) {
    MPI_Comm_free(&part);
    throw;
  }
  MPI_Comm_free(&part);
  out->state_->parent = state_;
  out->state_->check = state_->check;
  out->set_timeout(timeout_);
  out->set_step(step_);
  return out;
}

}  // namespace magmadnn::distributed
