/// @file cifar.h
/// Reader of the CIFAR-10 and CIFAR-100 binary formats.
///
/// A CIFAR-10 file is a sequence of 3073-byte records: one label byte (0..9)
/// and 3072 pixel bytes (32x32 red, then green, then blue, rows top to
/// bottom). A CIFAR-100 record has 3074 bytes: a coarse label (0..19), a fine
/// label (0..99), then the same 3072 pixels. Files may be gzip-compressed.
///
/// Guarantees: the file size must be a whole number of records and every
/// label must be in range; otherwise IOError names the file, the record size,
/// the offending record and its byte offset.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace magmadnn::io {

enum class CifarKind { Cifar10, Cifar100 };

inline constexpr std::int64_t kCifarChannels = 3, kCifarRows = 32, kCifarCols = 32;
inline constexpr std::int64_t kCifarPixels = kCifarChannels * kCifarRows * kCifarCols;
/// Bytes per record: 3073 (CIFAR-10) or 3074 (CIFAR-100).
constexpr std::int64_t cifar_record_size(CifarKind k) { return kCifarPixels + (k == CifarKind::Cifar10 ? 1 : 2); }

/// The records of one CIFAR binary file, as stored.
struct CifarRecords {
  std::int64_t count = 0;
  std::vector<std::uint8_t> pixels;  ///< count * 3072 bytes, {N, 3, 32, 32}
  std::vector<std::uint8_t> fine;    ///< count labels: CIFAR-10's label, CIFAR-100's fine label
  std::vector<std::uint8_t> coarse;  ///< CIFAR-100 only: count coarse labels (empty for CIFAR-10)
};

/// Reads every record of `path`. Throws IOError as described above.
CifarRecords read_cifar_bin(const std::string& path, CifarKind kind);

/// Writes records in the binary format (for tests and conversions).
void write_cifar_bin(const std::string& path, CifarKind kind, const CifarRecords& records, bool gzip = false);

}  // namespace magmadnn::io
