/// @file hierarchical_communicator.h
/// A hierarchical allreduce for ranks that span hosts: reduce inside each
/// host (shared memory), allreduce among one leader per host (the network),
/// broadcast inside each host. Only the leaders' share crosses the network:
/// a host's ranks send one buffer between them instead of one each.
///
/// HierarchicalCommunicator decorates a flat communicator: iallreduce takes
/// the three stages, every other call is forwarded unchanged. The allreduce
/// strategies (parallel/allreduce_strategy.h) are given it in place of the
/// flat one (run/data_parallel.cpp, config key distributed.allreduce), so
/// their buckets are issued and overlapped with the backward pass exactly
/// as before: each bucket's request moves through its stages as the
/// strategy's communication thread calls test() on it.
///
/// Hosts: by default the groups of MPI_Comm_split_type(MPI_COMM_TYPE_SHARED),
/// i.e. nodes as the MPI library sees them (Open MPI: the ranks one daemon
/// started; several ranks of one mpirun on one machine are one node). A
/// name per rank overrides it (ranks passing the same name form one host):
/// the `host_name` argument, else the environment variable MAGMADNN_HOST;
/// every rank must give one, or none.
///
/// Requires: what Communicator requires; one thread at a time drives it and
/// its requests (as the strategies' communication thread does).
/// Guarantees:
///  - every rank receives the same result; for sum, max and min it is the
///    flat allreduce's up to the order of the floating-point additions
///    (bit-equal for integers, max and min); avg is the sum divided once by
///    size() on each host's leader (integers: truncated as the flat one);
///  - requests complete in any order, but every stage is issued in the
///    order of the iallreduce calls on every rank (each stage on its own
///    communicator), so buckets in flight together never cross;
///  - each stage is a collective of an MPI communicator split from the flat
///    one: checked, watched (the watchdog names ranks of that stage's
///    communicator) and flight-recorded like any other, and a failure heard
///    on the flat one reaches them;
///  - a device buffer with ReduceOp::avg goes to the flat communicator
///    (the division would need the host);
///  - under the MPI check mode `every`, where starting a collective waits
///    for every rank to start it, an iallreduce first completes the ones
///    still pending (buckets no longer overlap each other, only the
///    backward pass): overlapping ones could each wait for the other.
#pragma once

#include <deque>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "magmadnn/comm/communicator.h"

namespace magmadnn::distributed {

/// Which host each rank is on: leader[r] is the lowest rank on r's host.
struct HostLayout {
  std::vector<int> leader;
  int hosts() const noexcept;
  /// The ranks on the most populated host.
  int largest_host() const noexcept;
  /// "2 hosts (2 + 2 ranks)".
  std::string describe() const;
};

/// The layout of `comm`'s ranks (see the file comment for how hosts are
/// found; `host_name` empty: MAGMADNN_HOST, else shared memory). Collective
/// over `comm`; ValueError, on every rank, when some ranks name a host and
/// others do not. An MPI communicator or one rank only (else NotSupportedError).
HostLayout host_layout(Communicator& comm, const std::string& host_name = "");

class HierarchicalCommunicator final : public Communicator {
 public:
  /// Over `flat` (shared: it lives as long as this one) grouped as
  /// `layout` (from host_layout, the same on every rank). Collective over
  /// `flat`: it splits three communicators from it (reduce and broadcast
  /// inside the host, one over the leaders).
  HierarchicalCommunicator(std::shared_ptr<Communicator> flat, HostLayout layout);
  ~HierarchicalCommunicator() override;

  int rank() const noexcept override { return flat_->rank(); }
  int size() const noexcept override { return flat_->size(); }
  std::string backend() const override { return flat_->backend() + "+hierarchical"; }
  bool supports(Place place) const noexcept override { return flat_->supports(place); }

  RequestPtr iallreduce(Buffer buf, ReduceOp op) override;
  RequestPtr ibroadcast(Buffer buf, int root) override { return sync(*flat_).ibroadcast(buf, root); }
  RequestPtr ireduce_scatter(ConstBuffer send, Buffer recv, ReduceOp op) override {
    return sync(*flat_).ireduce_scatter(send, recv, op);
  }
  RequestPtr iallgather(ConstBuffer send, Buffer recv) override { return sync(*flat_).iallgather(send, recv); }
  RequestPtr igather(ConstBuffer send, Buffer recv, int root) override {
    return sync(*flat_).igather(send, recv, root);
  }
  RequestPtr iscatter(ConstBuffer send, Buffer recv, int root) override {
    return sync(*flat_).iscatter(send, recv, root);
  }
  RequestPtr ireduce(Buffer buf, ReduceOp op, int root) override { return sync(*flat_).ireduce(buf, op, root); }
  RequestPtr isend(ConstBuffer buf, int dest, int tag) override { return sync(*flat_).isend(buf, dest, tag); }
  RequestPtr irecv(Buffer buf, int source, int tag) override { return sync(*flat_).irecv(buf, source, tag); }
  void barrier() override { sync(*flat_).barrier(); }
  void report_failure(const std::string& reason) noexcept override { flat_->report_failure(reason); }

  const HostLayout& layout() const noexcept { return layout_; }
  /// Whether this rank is its host's leader (it takes part in the network stage).
  bool leader() const noexcept { return leaders_ != nullptr; }

 private:
  struct Op;
  class StagedRequest;

  Communicator& sync(Communicator& c);
  bool applies(int stage) const noexcept;
  RequestPtr start(Op& op, int stage);
  void advance(Op& op, int previous_started);
  void progress();
  void wait_for(const Op& op);
  void rethrow_failure() const;

  std::shared_ptr<Communicator> flat_;
  HostLayout layout_;
  std::unique_ptr<Communicator> reduce_, bcast_, leaders_;  // leaders_: null off the leaders
  std::deque<std::shared_ptr<Op>> pending_;                // in issue order
  std::exception_ptr failed_;
};

/// The communicator the allreduce strategies use for `mode`: "flat" gives
/// `flat` itself; "hierarchical" a HierarchicalCommunicator over it (any
/// layout, even one host); "auto" the hierarchical one when `flat` is an
/// MPI communicator whose ranks span more than one host and some host has
/// more than one rank (else nothing is gained: `flat`). Collective over
/// `flat` except for "flat". ValueError for another mode.
std::shared_ptr<Communicator> allreduce_communicator(std::shared_ptr<Communicator> flat, const std::string& mode);

/// The values allreduce_communicator accepts: auto, flat, hierarchical.
const std::vector<std::string>& allreduce_modes();

}  // namespace magmadnn::distributed
