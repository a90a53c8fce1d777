#include "magmadnn/io/byte_reader.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>

#include "magmadnn/core/errors.h"

namespace magmadnn::io {

namespace {
// zlib reports a damaged or cut-off gzip stream only through gzerror; a short
// read alone cannot tell "end of file" from "corrupt member".
void check_stream(gzFile f, const std::string& path, std::int64_t offset) {
  int err = Z_OK;
  const char* msg = gzerror(f, &err);
  if (err != Z_OK && err != Z_STREAM_END)
    MAGMADNN_THROW(IOError, path << ": corrupt or truncated gzip stream near uncompressed offset " << offset << " ("
                                 << (msg ? msg : "zlib error") << ")");
}
}  // namespace

// The handle lives in Impl so that it is closed even when the constructor
// throws after opening (a stream that is corrupt from its first block).
struct ByteReader::Impl {
  gzFile f = nullptr;
  ~Impl() {
    if (f) gzclose_r(f);
  }
};

ByteReader::ByteReader(std::string path) : path_(std::move(path)), impl_(std::make_unique<Impl>()) {
  MAGMADNN_CHECK(!std::filesystem::is_directory(path_), IOError, path_ << ": is a directory, not a file");
  impl_->f = gzopen(path_.c_str(), "rb");
  MAGMADNN_CHECK(impl_->f != nullptr, IOError,
                 path_ << ": cannot open for reading (" << std::strerror(errno ? errno : ENOENT) << ")");
  gzbuffer(impl_->f, 1 << 17);  // 128 KiB: big sequential reads, fewer syscalls
  // gzdirect is only meaningful once zlib has looked at the first bytes.
  const int c = gzgetc(impl_->f);
  if (c >= 0) gzungetc(c, impl_->f);
  compressed_ = gzdirect(impl_->f) == 0;
  check_stream(impl_->f, path_, 0);
}

ByteReader::~ByteReader() = default;

std::size_t ByteReader::read_some(void* dst, std::size_t n) {
  auto* out = static_cast<unsigned char*>(dst);
  std::size_t done = 0;
  while (done < n) {
    const unsigned chunk = static_cast<unsigned>(std::min<std::size_t>(n - done, 1u << 30));
    const int got = gzread(impl_->f, out + done, chunk);
    if (got < 0) check_stream(impl_->f, path_, offset_ + static_cast<std::int64_t>(done));
    if (got <= 0) break;
    done += static_cast<std::size_t>(got);
  }
  offset_ += static_cast<std::int64_t>(done);
  check_stream(impl_->f, path_, offset_);
  return done;
}

void ByteReader::read_exact(void* dst, std::size_t n, const char* what) {
  const std::int64_t start = offset_;
  const std::size_t got = read_some(dst, n);
  MAGMADNN_CHECK(got == n, IOError,
                 path_ << ": truncated: expected " << n << " bytes of " << what << " at offset " << start
                       << ", but the file ends after " << got << " (at offset " << offset_ << ")");
}

std::uint32_t ByteReader::read_be_u32(const char* what) {
  unsigned char b[4];
  read_exact(b, 4, what);
  return (std::uint32_t(b[0]) << 24) | (std::uint32_t(b[1]) << 16) | (std::uint32_t(b[2]) << 8) | std::uint32_t(b[3]);
}

bool ByteReader::at_end() {
  const int c = gzgetc(impl_->f);
  if (c < 0) {
    check_stream(impl_->f, path_, offset_);
    return true;
  }
  gzungetc(c, impl_->f);
  return false;
}

std::vector<std::uint8_t> ByteReader::read_rest() {
  std::vector<std::uint8_t> out;
  std::size_t used = 0;
  for (;;) {
    out.resize(used + (1u << 20));
    const std::size_t got = read_some(out.data() + used, 1u << 20);
    used += got;
    if (got < (1u << 20)) break;
  }
  out.resize(used);
  return out;
}

bool ByteReader::read_line(std::string& line) {
  line.clear();
  char buf[4096];
  bool any = false;
  while (gzgets(impl_->f, buf, sizeof buf) != nullptr) {
    any = true;
    const std::size_t len = std::strlen(buf);
    offset_ += static_cast<std::int64_t>(len);
    line.append(buf, len);
    if (!line.empty() && line.back() == '\n') break;
  }
  check_stream(impl_->f, path_, offset_);
  if (!line.empty() && line.back() == '\n') line.pop_back();
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return any;
}

struct ByteWriter::Impl {
  gzFile f = nullptr;
  ~Impl() {
    if (f) gzclose_w(f);
  }
};

ByteWriter::ByteWriter(std::string path, bool gzip) : path_(std::move(path)), impl_(std::make_unique<Impl>()) {
  // "T" asks zlib for a plain (transparent) write, so one code path serves both.
  impl_->f = gzopen(path_.c_str(), gzip ? "wb6" : "wbT");
  MAGMADNN_CHECK(impl_->f != nullptr, IOError,
                 path_ << ": cannot open for writing (" << std::strerror(errno ? errno : EACCES) << ")");
}

ByteWriter::~ByteWriter() = default;

void ByteWriter::write(const void* src, std::size_t n) {
  const auto* p = static_cast<const unsigned char*>(src);
  while (n > 0) {
    const unsigned chunk = static_cast<unsigned>(std::min<std::size_t>(n, 1u << 30));
    const int put = gzwrite(impl_->f, p, chunk);
    MAGMADNN_CHECK(put > 0, IOError, path_ << ": write failed");
    p += put;
    n -= static_cast<std::size_t>(put);
  }
}

void ByteWriter::write_be_u32(std::uint32_t v) {
  const unsigned char b[4] = {static_cast<unsigned char>(v >> 24), static_cast<unsigned char>(v >> 16),
                              static_cast<unsigned char>(v >> 8), static_cast<unsigned char>(v)};
  write(b, 4);
}

void ByteWriter::close() {
  if (!impl_->f) return;
  const int rc = gzclose_w(impl_->f);
  impl_->f = nullptr;
  MAGMADNN_CHECK(rc == Z_OK, IOError, path_ << ": failed to finish writing (zlib code " << rc << ")");
}

std::string find_plain_or_gz(const std::string& path) {
  namespace fs = std::filesystem;
  if (fs::is_regular_file(path)) return path;
  if (fs::is_regular_file(path + ".gz")) return path + ".gz";
  MAGMADNN_THROW(IOError, "file not found: tried " << path << " and " << path << ".gz");
}

}  // namespace magmadnn::io
