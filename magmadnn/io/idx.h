/// @file idx.h
/// Reader and writer of IDX files, the format of MNIST and Fashion-MNIST.
///
/// An IDX file is: two zero bytes, a type byte (0x08 uint8, 0x09 int8, 0x0B
/// int16, 0x0C int32, 0x0D float32, 0x0E float64), a byte with the number of
/// dimensions, then each dimension as a big-endian uint32, then the elements,
/// big-endian, row-major. Files may be gzip-compressed (detected from their
/// content, so `train-images-idx3-ubyte.gz` and an uncompressed copy read the
/// same).
///
/// Guarantees: a malformed file throws IOError naming the path and what is
/// wrong: a wrong magic number (with the bytes found), a truncated header or
/// truncated data (with the offset and the byte counts), or bytes left over
/// after the declared data. Nothing partial is ever returned.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "magmadnn/core/shape.h"
#include "magmadnn/core/types.h"
#include "magmadnn/tensor/tensor.h"

namespace magmadnn::io {

/// Element type codes of the IDX format.
enum class IdxType : std::uint8_t { u8 = 0x08, i8 = 0x09, i16 = 0x0B, i32 = 0x0C, f32 = 0x0D, f64 = 0x0E };

/// Bytes per element of an IDX type.
std::size_t idx_type_size(IdxType t) noexcept;
/// "uint8", "int8", "int16", "int32", "float32", "float64".
const char* idx_type_name(IdxType t) noexcept;

/// The content of an IDX file: its element type, its dimensions, and its
/// elements converted to host byte order (`bytes` holds shape.numel() elements
/// of idx_type_size(type) bytes each).
struct IdxArray {
  std::string path;
  IdxType type = IdxType::u8;
  Shape shape;
  std::vector<std::uint8_t> bytes;

  std::int64_t numel() const { return shape.numel(); }
  /// Writes the elements into `out` (numel() values) as `out = v * scale + shift`.
  template <typename T>
  void convert(T* out, double scale = 1.0, double shift = 0.0) const;
};

/// Reads a whole IDX file (plain or gzip). Throws IOError as described above.
IdxArray read_idx(const std::string& path);

/// Reads an IDX file into a new tensor of its shape, in `mem` memory, with
/// every element mapped to `v * scale + shift` (e.g. scale 1/255 for pixels).
template <typename T>
Tensor<T> read_idx_tensor(const std::string& path, memory_t mem = HOST, double scale = 1.0, double shift = 0.0);

/// Writes an IDX file of `type` with `shape` from `values` (shape.numel()
/// values, each converted to `type`; out-of-range values throw ValueError).
/// Compressed with gzip when `gzip` is true.
void write_idx(const std::string& path, IdxType type, const Shape& shape, const std::vector<double>& values,
               bool gzip = false);

}  // namespace magmadnn::io
