#include "magmadnn/io/byte_reader.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <cstdio>
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
  // gzip is recognised by its magic bytes 1f 8b, as zlib does; such a file is
  // checked whole (every member's CRC-32 and ISIZE) before any byte is read.
  if (std::FILE* raw = std::fopen(path_.c_str(), "rb")) {
    unsigned char magic[2] = {0, 0};
    const std::size_t got = std::fread(magic, 1, 2, raw);
    std::fclose(raw);
    compressed_ = got == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  }
  if (compressed_) size_ = verify_gzip_members(path_);
  impl_->f = gzopen(path_.c_str(), "rb");
  MAGMADNN_CHECK(impl_->f != nullptr, IOError,
                 path_ << ": cannot open for reading (" << std::strerror(errno ? errno : ENOENT) << ")");
  gzbuffer(impl_->f, 1 << 17);  // 128 KiB: big sequential reads, fewer syscalls
  // gzdirect is only meaningful once zlib has looked at the first bytes.
  const int c = gzgetc(impl_->f);
  if (c >= 0) gzungetc(c, impl_->f);
  check_stream(impl_->f, path_, 0);
  MAGMADNN_CHECK(compressed_ == (gzdirect(impl_->f) == 0), IOError,
                 path_ << ": changed while being opened (gzip or not)");
  if (!compressed_) {
    std::error_code ec;
    const auto n = std::filesystem::file_size(path_, ec);
    size_ = ec ? 0 : static_cast<std::int64_t>(n);
  }
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
  // size() is known (measured, or decompressed once when the file was
  // opened), so the buffer is exactly what the file holds.
  std::vector<std::uint8_t> out(static_cast<std::size_t>(std::max<std::int64_t>(remaining(), 0)));
  out.resize(read_some(out.data(), out.size()));
  unsigned char more[4096];  // a file that grew since it was measured
  for (std::size_t got; (got = read_some(more, sizeof more)) > 0;) out.insert(out.end(), more, more + got);
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

namespace {
struct InflateStream {
  z_stream z{};
  bool live = false;
  ~InflateStream() {
    if (live) inflateEnd(&z);
  }
};
struct File {
  std::FILE* f = nullptr;
  ~File() {
    if (f) std::fclose(f);
  }
};
}  // namespace

std::int64_t verify_gzip_members(const std::string& path) {
  File file;
  file.f = std::fopen(path.c_str(), "rb");
  MAGMADNN_CHECK(file.f != nullptr, IOError,
                 path << ": cannot open for reading (" << std::strerror(errno ? errno : ENOENT) << ")");
  InflateStream s;
  // 15 + 16: a gzip wrapper only; inflate then checks the CRC-32 and ISIZE
  // trailer itself and reports a mismatch as Z_DATA_ERROR.
  MAGMADNN_CHECK(inflateInit2(&s.z, 15 + 16) == Z_OK, IOError, path << ": cannot start zlib");
  s.live = true;
  std::vector<unsigned char> in(1 << 16), out(1 << 16);
  std::int64_t total = 0, consumed = 0, member_start = 0;
  int member = 1;
  bool in_member = true;
  auto refill = [&] {
    const std::size_t got = std::fread(in.data(), 1, in.size(), file.f);
    MAGMADNN_CHECK(!std::ferror(file.f), IOError, path << ": read error at compressed offset " << consumed);
    s.z.next_in = in.data();
    s.z.avail_in = static_cast<uInt>(got);
    return got > 0;
  };
  for (;;) {
    if (s.z.avail_in == 0 && !refill()) break;
    if (!in_member) {
      // Bytes after a complete member must start another one (1f 8b).
      const bool magic1 = s.z.next_in[0] == 0x1f;
      bool magic2 = false;
      if (magic1 && s.z.avail_in >= 2) {
        magic2 = s.z.next_in[1] == 0x8b;
      } else if (magic1) {
        const int c = std::fgetc(file.f);
        magic2 = c == 0x8b;
        if (c != EOF) std::ungetc(c, file.f);
      }
      MAGMADNN_CHECK(magic1 && magic2, IOError,
                     path << ": bytes after gzip member " << member - 1
                          << " at compressed offset " << consumed
                          << " are not another gzip member (trailing garbage after the data)");
      MAGMADNN_CHECK(inflateReset(&s.z) == Z_OK, IOError, path << ": cannot restart zlib");
      in_member = true;
      member_start = consumed;
    }
    const uInt before_in = s.z.avail_in;
    s.z.next_out = out.data();
    s.z.avail_out = static_cast<uInt>(out.size());
    const int rc = inflate(&s.z, Z_NO_FLUSH);
    consumed += static_cast<std::int64_t>(before_in - s.z.avail_in);
    total += static_cast<std::int64_t>(out.size() - s.z.avail_out);
    if (rc == Z_STREAM_END) {
      in_member = false;
      ++member;
      continue;
    }
    const bool progressed = before_in != s.z.avail_in || s.z.avail_out != out.size();
    MAGMADNN_CHECK((rc == Z_OK || rc == Z_BUF_ERROR) && progressed, IOError,
                   path << ": corrupt gzip member " << member << " (starting at compressed offset " << member_start
                        << "): " << (s.z.msg ? s.z.msg : "zlib error " + std::to_string(rc))
                        << " near compressed offset " << consumed << " (uncompressed offset " << total << ")");
  }
  MAGMADNN_CHECK(!in_member, IOError,
                 path << ": truncated gzip member " << member << " (starting at compressed offset " << member_start
                      << "): the file ends after " << consumed << " bytes, before the member's end and its 8-byte "
                      << "CRC-32/length trailer (" << total << " bytes decompressed so far)");
  return total;
}

std::string find_plain_or_gz(const std::string& path) {
  namespace fs = std::filesystem;
  if (fs::is_regular_file(path)) return path;
  if (fs::is_regular_file(path + ".gz")) return path + ".gz";
  MAGMADNN_THROW(IOError, "file not found: tried " << path << " and " << path << ".gz");
}

}  // namespace magmadnn::io
