/// @file checkpoint.h
/// The checkpoint file: a key/value header plus named tensors, with a format
/// version and a CRC-32, written atomically. The byte layout is documented in
/// docs/checkpoint_format.md; model::NeuralNetwork::save/load build on it.
///
///   io::Checkpoint ck;
///   ck.set("epoch", "3");
///   ck.add_tensor("fc1/W", w);                     // copies w's values
///   io::write_checkpoint("run/model.ckpt", ck);    // temp file, fsync, rename
///   io::Checkpoint back = io::read_checkpoint("run/model.ckpt");
///   back.copy_tensor("fc1/W", w);                  // ShapeError if shapes differ
///
/// Guarantees:
///  - write_checkpoint never leaves the target partially written: the bytes go
///    to a temporary file in the same directory, which is flushed, fsync'ed
///    and renamed over the target (then the directory is fsync'ed). On any
///    failure the temporary file is removed, the old target is untouched, and
///    an IOError names the file and the failing step;
///  - read_checkpoint checks magic, version, sizes and the checksum before it
///    returns anything, so a truncated or corrupt file raises an IOError
///    naming the file, the byte offset and the problem, and the caller has
///    not changed any state yet.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "magmadnn/core/types.h"
#include "magmadnn/tensor/tensor.h"

namespace magmadnn::io {

/// "MDNNCKPT": the first eight bytes of every checkpoint.
inline constexpr char kCheckpointMagic[8] = {'M', 'D', 'N', 'N', 'C', 'K', 'P', 'T'};
/// Format version written by this build (readers accept exactly this one).
inline constexpr std::uint32_t kCheckpointVersion = 1;

/// One named tensor of a checkpoint: element type, shape and the raw
/// little-endian bytes of its row-major elements.
struct TensorRecord {
  std::string name;
  dtype type = dtype::f32;
  std::vector<std::int64_t> shape;
  std::vector<std::byte> data;
};

/// The in-memory content of a checkpoint file.
class Checkpoint {
 public:
  /// Header entries (strings; numbers are written so they read back exactly).
  void set(const std::string& key, const std::string& value) { meta_[key] = value; }
  void set_int(const std::string& key, std::int64_t value);
  void set_uint(const std::string& key, std::uint64_t value);
  /// Shortest text that reads back to the same double (NaN and inf included).
  void set_double(const std::string& key, double value);
  bool has(const std::string& key) const { return meta_.count(key) != 0; }
  /// The value of `key`; IOError naming the key if it is missing or malformed.
  const std::string& get(const std::string& key) const;
  std::int64_t get_int(const std::string& key) const;
  std::uint64_t get_uint(const std::string& key) const;
  double get_double(const std::string& key) const;
  const std::map<std::string, std::string>& meta() const noexcept { return meta_; }

  /// Appends a copy of `t`'s values under `name` (names must be unique:
  /// ValueError otherwise). Works for tensors in any memory.
  template <typename T>
  void add_tensor(const std::string& name, const Tensor<T>& t);
  void add_record(TensorRecord rec);
  /// The record called `name`, or nullptr.
  const TensorRecord* find(const std::string& name) const;
  const std::vector<TensorRecord>& tensors() const noexcept { return tensors_; }

  /// Checks that record `name` exists and fits `t` (same dtype and shape)
  /// without changing anything: ShapeError naming the tensor if it is missing
  /// or its shape differs (both shapes quoted), ValueError for another dtype.
  template <typename T>
  void check_tensor(const std::string& name, const Tensor<T>& t) const;
  /// check_tensor, then copies the record's values into `t`.
  template <typename T>
  void copy_tensor(const std::string& name, Tensor<T>& t) const;

 private:
  std::map<std::string, std::string> meta_;
  std::vector<TensorRecord> tensors_;
  std::map<std::string, std::size_t> index_;
};

/// Writes `ck` to `path` atomically (see the file comment).
void write_checkpoint(const std::string& path, const Checkpoint& ck);
/// Reads and fully validates the checkpoint at `path`.
Checkpoint read_checkpoint(const std::string& path);

/// CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320, as zlib's crc32):
/// pass the previous result as `crc` to continue over several pieces.
std::uint32_t crc32(const void* data, std::size_t size, std::uint32_t crc = 0) noexcept;

namespace detail {
/// Test hook: when non-zero, the next write_checkpoint calls fail with an
/// IOError once this many bytes went to the temporary file (simulates a full
/// disk). Tests only.
void set_checkpoint_write_fault(std::size_t fail_after_bytes) noexcept;
}  // namespace detail

}  // namespace magmadnn::io
