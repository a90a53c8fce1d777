/// @file local_communicator.h
/// LocalCommunicator: the Communicator of a single process (rank 0 of 1).
/// Collectives are copies (a reduction over one rank is the identity, avg
/// included); a send to rank 0 is queued and matched by a later irecv from
/// rank 0 with the same tag (or the reverse), so code written for N ranks
/// runs unchanged with one and needs no MPI.
///
/// Requires: host buffers (device buffers raise NotSupportedError; on a GPU
/// use one rank of the NCCL or MPI communicator). Guarantees: a root or
/// peer other than 0 raises ValueError; a count or dtype that differs
/// between a send and its receive raises CommError naming both; an irecv
/// whose send never comes fails its wait() at once with CommError (with one
/// process, nobody else can send it).
#pragma once

#include <deque>
#include <vector>

#include "magmadnn/comm/communicator.h"

namespace magmadnn::distributed {

class LocalCommunicator final : public Communicator {
 public:
  int rank() const noexcept override { return 0; }
  int size() const noexcept override { return 1; }
  std::string backend() const override { return "local"; }
  bool supports(Place place) const noexcept override { return place == Place::host; }

  RequestPtr iallreduce(Buffer buf, ReduceOp op) override;
  RequestPtr ibroadcast(Buffer buf, int root) override;
  RequestPtr ireduce_scatter(ConstBuffer send, Buffer recv, ReduceOp op) override;
  RequestPtr iallgather(ConstBuffer send, Buffer recv) override;
  RequestPtr igather(ConstBuffer send, Buffer recv, int root) override;
  RequestPtr iscatter(ConstBuffer send, Buffer recv, int root) override;
  RequestPtr ireduce(Buffer buf, ReduceOp op, int root) override;
  RequestPtr isend(ConstBuffer buf, int dest, int tag) override;
  RequestPtr irecv(Buffer buf, int source, int tag) override;
  void barrier() override {}

 private:
  struct Message {
    int tag;
    dtype type;
    std::vector<unsigned char> bytes;
  };
  std::deque<Message> sent_;  // sends to self not yet received
};

}  // namespace magmadnn::distributed
