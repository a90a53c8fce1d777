/// @file across_ranks.h
/// The pieces of a training run across ranks that are not its training
/// plugin (parallel/sharded_training.h): rank 0's config reaching every
/// rank, a check that every rank loaded the same data, and an evaluation
/// split among the ranks. (Rank 0's initial weights reach every rank
/// through the strategy's attach, parallel/strategy.h.) run_training and `magmadnn train`
/// use them; with a single rank each is a copy or the plain call.
///
/// Requires: every rank of `comm` makes the same calls in the same order
/// (they are collectives). Guarantees: each call either completes on every
/// rank or throws (CommError from the communicator, within its timeout);
/// share_config never leaves the other ranks waiting on a rank 0 that failed
/// to produce the config: they throw CommError quoting rank 0's error.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <string>
#include <memory>
#include <optional>
#include <vector>

#include "magmadnn/comm/communicator.h"
#include "magmadnn/model/neural_network.h"
#include "magmadnn/model/params.h"
#include "magmadnn/run/spec.h"

namespace magmadnn::run {

/// What the other ranks throw when rank 0 could not prepare the run: rank
/// 0's message, and whether its error was the user's mistake (share_config's
/// `is_usage`), so that every rank ends the job with rank 0's exit status.
class RootFailure : public CommError {
 public:
  RootFailure(const std::string& what, bool usage) : CommError(what), usage_(usage) {}
  bool usage() const noexcept { return usage_; }

 private:
  bool usage_;
};

/// On rank 0 calls `make_config` and sends its result to every rank; every
/// rank returns rank 0's config (the others never call `make_config`). An
/// exception from `make_config` is rethrown on rank 0; the other ranks throw
/// RootFailure("rank 0 could not prepare the run: <its message>"), usage()
/// telling what `is_usage` said of rank 0's exception (ConfigError counts as
/// usage when `is_usage` is empty).
Json share_config(distributed::Communicator& comm, const std::function<Json()>& make_config,
                  const std::function<bool(const std::exception&)>& is_usage = {});

/// A 64-bit fingerprint of `t`'s shape and values (not cryptographic: it
/// tells data sets apart, it does not authenticate them).
std::uint64_t fingerprint(const Tensor<float>& t);
/// The same for samples: a tensor's as above; bytes (data::Samples) hash
/// their shape, scale and bytes.
std::uint64_t fingerprint(const data::Samples<float>& x);

/// Checks that every rank passes rank 0's `value` (e.g. the fingerprint of
/// its training data): otherwise every rank throws ValueError, each naming
/// `what`, its own value and rank 0's, or how many ranks differ.
void check_same_on_every_rank(distributed::Communicator& comm, std::uint64_t value, const std::string& what);

/// One input a rank read, for check_same_inputs.
struct InputRecord {
  std::string what;  ///< the group, in messages: "the training data", "the checkpoint", "the config"
  std::string item;  ///< which part of it: "images", "labels", or empty
  std::string path;  ///< the file as this rank named it (perhaps relative); empty for one that is no file
  std::uint64_t fingerprint = 0;  ///< of what was read (fingerprint(), file_fingerprint())
  bool present = true;            ///< false: this rank found no such file
};

/// A 64-bit fingerprint of the bytes of the file at `path` (FNV-1a over
/// 8-byte words; not cryptographic), or nullopt when there is no such file.
/// IOError when it exists and cannot be read.
std::optional<std::uint64_t> file_fingerprint(const std::string& path);

/// Checks, before any collective of training, that every rank read what
/// rank 0 read: the same records in the same order, each with rank 0's
/// fingerprint and presence. Otherwise every rank throws ValueError (no
/// source location: the cause is the ranks' files, not the code) naming the
/// first rank that differs, the input, and both ranks' paths made absolute
/// with links resolved, e.g. "rank 1: the checkpoint differs from rank 0's:
/// rank 1 has no checkpoint at out/checkpoint.bin (/w/r1/out/checkpoint.bin),
/// but rank 0 resumes from /w/r0/out/checkpoint.bin; the run folder must be
/// on a file system every rank sees". A rank that does not differ says how
/// many do ("the test data of 1 rank(s) differs from rank 0's: ...").
/// Collective (two broadcasts of rank 0's records, two allreduces, and the
/// first differing rank's text).
void check_same_inputs(distributed::Communicator& comm, const std::vector<InputRecord>& mine);

/// Loss and accuracy over (x, y), each rank scoring its slice (the
/// distributed sampler's rule, data::shard_rows) and the sums reduced, so
/// every rank returns the whole set's result (equal to a single process's
/// within float rounding). Uses rank 0's layer state.
model::Evaluation evaluate_across(distributed::Communicator& comm, model::NeuralNetwork<float>& net,
                                  const data::Samples<float>& x, const Tensor<float>& y);

}  // namespace magmadnn::run
