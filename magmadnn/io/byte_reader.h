/// @file byte_reader.h
/// ByteReader: reads a file front to back, decompressing it on the fly when
/// it is gzip-compressed (detected from its content, not its name), and
/// ByteWriter, its counterpart for writing plain or gzip files.
///
/// Purpose: the data-set readers (IDX, CSV, CIFAR) parse a byte stream and
/// must say *where* a file is wrong. ByteReader keeps the offset in the
/// uncompressed stream, and every read that comes up short throws an IOError
/// naming the file, the offset, how many bytes were wanted and what they were
/// for.
/// Requires: the file exists and is readable (otherwise the constructor
/// throws IOError naming the path and the system's reason).
/// Guarantees: RAII (the file is closed by the destructor); a corrupt gzip
/// stream is reported as an IOError, never returned as data: before the first
/// byte is handed out, every gzip member is decompressed once and its CRC-32
/// and length (ISIZE) trailer checked, so a cut-off trailer, a damaged byte or
/// bytes after the last member raise an IOError naming the file. That pass
/// also gives size(), the uncompressed length, which readers compare with
/// what a header claims before they allocate.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace magmadnn::io {

class ByteReader {
 public:
  explicit ByteReader(std::string path);
  ~ByteReader();
  ByteReader(const ByteReader&) = delete;
  ByteReader& operator=(const ByteReader&) = delete;

  const std::string& path() const noexcept { return path_; }
  /// Offset of the next byte in the (uncompressed) stream.
  std::int64_t offset() const noexcept { return offset_; }
  /// True when the file is gzip-compressed.
  bool compressed() const noexcept { return compressed_; }
  /// Length of the whole (uncompressed) stream in bytes.
  std::int64_t size() const noexcept { return size_; }
  /// Bytes left after offset().
  std::int64_t remaining() const noexcept { return size_ - offset_; }

  /// Reads up to n bytes; returns how many were read (fewer only at the end).
  std::size_t read_some(void* dst, std::size_t n);
  /// Reads exactly n bytes or throws IOError naming the file, the offset, the
  /// byte count and `what` ("the image data", "dimension 2 of the header").
  void read_exact(void* dst, std::size_t n, const char* what);
  /// A big-endian unsigned 32-bit integer (IDX header fields).
  std::uint32_t read_be_u32(const char* what);
  /// True when no byte is left.
  bool at_end();
  /// Everything left in the file.
  std::vector<std::uint8_t> read_rest();
  /// Reads one line without its '\n' (and without a trailing '\r'). Returns
  /// false at the end of the file when nothing was read.
  bool read_line(std::string& line);

 private:
  struct Impl;
  std::string path_;
  std::unique_ptr<Impl> impl_;
  std::int64_t offset_ = 0;
  std::int64_t size_ = 0;
  bool compressed_ = false;
};

/// Writes a file, gzip-compressed when `gzip` is true. Errors throw IOError
/// naming the path. close() reports a failure to flush; the destructor closes
/// quietly.
class ByteWriter {
 public:
  ByteWriter(std::string path, bool gzip);
  ~ByteWriter();
  ByteWriter(const ByteWriter&) = delete;
  ByteWriter& operator=(const ByteWriter&) = delete;

  void write(const void* src, std::size_t n);
  void write_be_u32(std::uint32_t v);
  void close();

 private:
  struct Impl;
  std::string path_;
  std::unique_ptr<Impl> impl_;
};

/// Decompresses every gzip member of the file at `path` without keeping the
/// output, checking each member's CRC-32 and ISIZE trailer; returns the total
/// uncompressed length. IOError naming the file, the member and its
/// compressed offset for a truncated or corrupt member, or for bytes after
/// the last member that do not start another one.
std::int64_t verify_gzip_members(const std::string& path);

/// Returns `path` if it exists, else `path + ".gz"` if that exists; throws
/// IOError naming both when neither does.
std::string find_plain_or_gz(const std::string& path);

}  // namespace magmadnn::io
