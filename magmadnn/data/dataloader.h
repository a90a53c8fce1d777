/// @file dataloader.h
/// DataLoader: cuts a data set into mini-batches, epoch after epoch, with
/// shuffling, augmentation and background preparation (dMath's prefetching
/// loader).
///
/// What it guarantees:
///  - Every sample appears exactly once per epoch; the last partial batch is
///    produced unless drop_last.
///  - Determinism: the order of an epoch depends only on (seed, epoch), and a
///    sample's augmentation only on (seed, epoch, sample index), never on
///    threads or timing. workers = 0 and workers = N give identical batches,
///    and start_epoch(c.epoch, c.batch) with the seed of a Cursor resumes
///    exactly where that cursor was taken. Samples computed by a RowSource
///    (samples.h; an image folder) get each sample's generator for its
///    random form (random crops), drawn before the augmentations.
///  - Background threads (`workers`) prepare up to max(prefetch, workers)
///    batches ahead; with memory DEVICE or MANAGED they also start the copy
///    to the GPU, so the copy overlaps the training step. An exception thrown
///    while preparing a batch (a failing transform, a missing device) is
///    rethrown by the next() that would have returned that batch; that batch
///    is then skipped.
///  - The destructor stops and joins the threads, also in the middle of an
///    epoch.
/// What it requires:
///  - x {N, ...} and y {N, ...} with the same N, in host-readable memory
///    (HOST, MANAGED or CUDA_MANAGED). x may be held at source precision
///    (Samples, e.g. uint8 images): each batch is promoted to T when it is
///    assembled, before augmentation, and equals the batch cut from the
///    promoted data set bit for bit. The loader keeps a view of both (shared
///    storage, no copy of the data set), so the caller's tensors may go out
///    of scope; their contents must not change while an epoch is running.
///  - One consumer thread calls start_epoch/next/cursor.
///  - Limits of the random streams: N < 2^40 samples, epoch < 2^23.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "magmadnn/core/types.h"
#include "magmadnn/data/samples.h"
#include "magmadnn/data/transforms.h"
#include "magmadnn/tensor/tensor.h"

namespace magmadnn::data {

template <typename T>
struct Batch {
  Tensor<T> x, y;
  std::int64_t index = 0;  ///< batch number in the epoch
  std::int64_t size = 0;   ///< samples in this batch (batch_size, or fewer for the last one)
};

struct LoaderOptions {
  std::int64_t batch_size = 32;
  bool shuffle = true;
  bool drop_last = false;  ///< false: the last partial batch is produced
  int workers = 1;         ///< background threads preparing batches (0: next() prepares them itself)
  int prefetch = 2;        ///< batches prepared ahead (at least `workers` are)
  /// 0: derive one from the global seed (get_seed) and a fresh random stream
  /// at construction, so a seeded program repeats. The seed in use is
  /// reported by seed() and cursor(); pass it back here to resume a run.
  std::uint64_t seed = 0;
  memory_t memory = HOST;  ///< memory of produced batches
};

template <typename T>
class DataLoader {
 public:
  /// Throws ShapeError when x and y disagree on N, ValueError for a bad
  /// option, NotSupportedError for data in DEVICE memory, DeviceError when
  /// `memory` needs a GPU that is not there.
  DataLoader(const Samples<T>& x, const Tensor<T>& y, LoaderOptions opts,
             std::vector<std::shared_ptr<const Transform<T>>> augment = {});
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  /// Samples in the data set.
  std::int64_t size() const;
  /// Batches per epoch.
  std::int64_t num_batches() const;
  std::uint64_t seed() const;
  const LoaderOptions& options() const;

  /// Starts (or restarts) epoch `epoch` at batch `first_batch`, dropping any
  /// batch prepared for the previous position. Without a call, the first
  /// next() starts epoch 0.
  void start_epoch(std::int64_t epoch, std::int64_t first_batch = 0);
  /// The next batch of the epoch; false once the epoch is over.
  bool next(Batch<T>& out);

  struct Cursor {
    std::int64_t epoch = 0, batch = 0;
    std::uint64_t seed = 0;
  };
  /// Position of the next batch next() will return (for checkpoints).
  Cursor cursor() const;

  /// The sample indices of epoch `epoch` in the order they are served.
  std::vector<std::int64_t> epoch_order(std::int64_t epoch) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace magmadnn::data
