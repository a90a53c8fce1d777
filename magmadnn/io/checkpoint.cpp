#include "magmadnn/io/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "magmadnn/core/errors.h"
#include "magmadnn/io/atomic_file.h"

namespace magmadnn::io {

// Tensor bytes are copied as they sit in memory; the format says little-endian.
static_assert(std::endian::native == std::endian::little, "checkpoint I/O assumes a little-endian host");

namespace {

constexpr std::size_t kHeaderBytes = 8 + 4 + 8;  // magic, version, payload size
constexpr std::size_t kCrcBytes = 4;

std::array<std::uint32_t, 256> make_crc_table() {
  std::array<std::uint32_t, 256> t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1u) ? (0xEDB88320u ^ (c >> 1)) : (c >> 1);
    t[i] = c;
  }
  return t;
}

std::atomic<std::size_t> g_write_fault{0};

std::string errno_text() { return std::strerror(errno); }

// Buffered writer to a POSIX descriptor that keeps a running CRC.
class FileSink {
 public:
  FileSink(int fd, std::string path) : fd_(fd), path_(std::move(path)), fault_(g_write_fault.exchange(0)) {
    buf_.reserve(1 << 20);
  }
  void put(const void* p, std::size_t n) {
    crc_ = crc32(p, n, crc_);
    const auto* b = static_cast<const std::byte*>(p);
    if (buf_.size() + n > buf_.capacity()) flush();
    if (n >= buf_.capacity()) {
      write_all(b, n);
    } else {
      buf_.insert(buf_.end(), b, b + n);
    }
  }
  template <typename U>
  void put_le(U v) {
    put(&v, sizeof(U));
  }
  void put_string(const std::string& s) {
    put_le<std::uint32_t>(static_cast<std::uint32_t>(s.size()));
    put(s.data(), s.size());
  }
  void put_crc() {
    const std::uint32_t c = crc_;
    put(&c, sizeof c);
  }
  void flush() {
    write_all(buf_.data(), buf_.size());
    buf_.clear();
  }

 private:
  void write_all(const std::byte* p, std::size_t n) {
    while (n > 0) {
      std::size_t chunk = n;
      if (fault_ != 0) {
        MAGMADNN_CHECK(written_ < fault_, IOError,
                       "checkpoint: write to " << path_ << " failed at byte " << written_ << ": simulated fault");
        chunk = std::min(chunk, fault_ - written_);
      }
      const ssize_t w = ::write(fd_, p, chunk);
      if (w < 0 && errno == EINTR) continue;
      MAGMADNN_CHECK(w > 0, IOError, "checkpoint: write to " << path_ << " failed at byte " << written_ << ": "
                                                              << errno_text());
      p += w;
      n -= static_cast<std::size_t>(w);
      written_ += static_cast<std::size_t>(w);
    }
  }
  int fd_;
  std::string path_;
  std::size_t fault_;
  std::size_t written_ = 0;
  std::uint32_t crc_ = 0;
  std::vector<std::byte> buf_;
};

std::size_t payload_size(const Checkpoint& ck) {
  std::size_t n = 4;
  for (const auto& [k, v] : ck.meta()) n += 4 + k.size() + 4 + v.size();
  n += 4;
  for (const auto& r : ck.tensors()) n += 4 + r.name.size() + 1 + 1 + 8 * r.shape.size() + 8 + r.data.size();
  return n;
}

// Bounds-checked reader over the file's bytes; errors name file and offset.
class Cursor {
 public:
  Cursor(const std::vector<std::byte>& b, std::size_t end, const std::string& path)
      : b_(b), end_(end), path_(path) {}
  std::size_t offset() const noexcept { return pos_; }
  void need(std::size_t n, const char* what) const {
    MAGMADNN_CHECK(n <= end_ - pos_, IOError,
                   "checkpoint " << path_ << ": corrupt at byte offset " << pos_ << ": " << what << " needs " << n
                                 << " bytes but only " << (end_ - pos_) << " remain in the payload");
  }
  template <typename U>
  U get(const char* what) {
    need(sizeof(U), what);
    U v;
    std::memcpy(&v, b_.data() + pos_, sizeof(U));
    pos_ += sizeof(U);
    return v;
  }
  std::string get_string(const char* what) {
    const auto n = get<std::uint32_t>(what);
    need(n, what);
    std::string s(reinterpret_cast<const char*>(b_.data() + pos_), n);
    pos_ += n;
    return s;
  }
  const std::byte* take(std::size_t n, const char* what) {
    need(n, what);
    const std::byte* p = b_.data() + pos_;
    pos_ += n;
    return p;
  }

 private:
  const std::vector<std::byte>& b_;
  std::size_t end_;
  const std::string& path_;
  std::size_t pos_ = kHeaderBytes;
};

bool known_dtype(std::uint8_t c) { return c <= static_cast<std::uint8_t>(dtype::i64); }

}  // namespace

std::uint32_t crc32(const void* data, std::size_t size, std::uint32_t crc) noexcept {
  static const std::array<std::uint32_t, 256> table = make_crc_table();
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint32_t c = ~crc;
  for (std::size_t i = 0; i < size; ++i) c = table[(c ^ p[i]) & 0xFFu] ^ (c >> 8);
  return ~c;
}

void detail::set_checkpoint_write_fault(std::size_t fail_after_bytes) noexcept {
  g_write_fault.store(fail_after_bytes);
}

// ---- Checkpoint -------------------------------------------------------------------

void Checkpoint::set_int(const std::string& key, std::int64_t value) { meta_[key] = std::to_string(value); }
void Checkpoint::set_uint(const std::string& key, std::uint64_t value) { meta_[key] = std::to_string(value); }

void Checkpoint::set_double(const std::string& key, double value) {
  if (std::isnan(value)) {
    meta_[key] = "nan";
    return;
  }
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, value);  // shortest round-trip form
  meta_[key] = std::string(buf, r.ptr);
}

const std::string& Checkpoint::get(const std::string& key) const {
  auto it = meta_.find(key);
  MAGMADNN_CHECK(it != meta_.end(), IOError, "checkpoint: header has no entry '" << key << "'");
  return it->second;
}

std::int64_t Checkpoint::get_int(const std::string& key) const {
  const std::string& s = get(key);
  std::int64_t v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  MAGMADNN_CHECK(r.ec == std::errc() && r.ptr == s.data() + s.size(), IOError,
                 "checkpoint: header entry '" << key << "' = '" << s << "' is not an integer");
  return v;
}

std::uint64_t Checkpoint::get_uint(const std::string& key) const {
  const std::string& s = get(key);
  std::uint64_t v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  MAGMADNN_CHECK(r.ec == std::errc() && r.ptr == s.data() + s.size(), IOError,
                 "checkpoint: header entry '" << key << "' = '" << s << "' is not an unsigned integer");
  return v;
}

double Checkpoint::get_double(const std::string& key) const {
  const std::string& s = get(key);
  if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
  double v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  MAGMADNN_CHECK(r.ec == std::errc() && r.ptr == s.data() + s.size(), IOError,
                 "checkpoint: header entry '" << key << "' = '" << s << "' is not a number");
  return v;
}

void Checkpoint::add_record(TensorRecord rec) {
  MAGMADNN_CHECK(!index_.count(rec.name), ValueError, "checkpoint: tensor '" << rec.name << "' added twice");
  std::int64_t n = 1;
  for (auto d : rec.shape) n *= d;
  MAGMADNN_CHECK(static_cast<std::size_t>(n) * dtype_size(rec.type) == rec.data.size(), ValueError,
                 "checkpoint: tensor '" << rec.name << "' has " << rec.data.size() << " bytes, its shape needs "
                                        << n * static_cast<std::int64_t>(dtype_size(rec.type)));
  index_[rec.name] = tensors_.size();
  tensors_.push_back(std::move(rec));
}

template <typename T>
void Checkpoint::add_tensor(const std::string& name, const Tensor<T>& t) {
  TensorRecord rec;
  rec.name = name;
  rec.type = dtype_v<T>;
  rec.shape = t.shape().dims();
  rec.data.resize(static_cast<std::size_t>(t.size()) * sizeof(T));
  if (t.size() > 0) std::memcpy(rec.data.data(), t.host_data(), rec.data.size());
  add_record(std::move(rec));
}

const TensorRecord* Checkpoint::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

template <typename T>
void Checkpoint::check_tensor(const std::string& name, const Tensor<T>& t) const {
  const TensorRecord* r = find(name);
  MAGMADNN_CHECK(r != nullptr, ShapeError,
                 "checkpoint: no tensor '" << name << "' in the checkpoint (it was written for another model)");
  MAGMADNN_CHECK(r->type == dtype_v<T>, ValueError,
                 "checkpoint: tensor '" << name << "' is " << dtype_name(r->type) << ", expected "
                                        << dtype_name(dtype_v<T>));
  MAGMADNN_CHECK(Shape(r->shape) == t.shape(), ShapeError,
                 "checkpoint: tensor '" << name << "' has shape " << Shape(r->shape) << " in the checkpoint but "
                                        << t.shape() << " in the model");
}

template <typename T>
void Checkpoint::copy_tensor(const std::string& name, Tensor<T>& t) const {
  check_tensor(name, t);
  const TensorRecord* r = find(name);
  t.copy_from_host(reinterpret_cast<const T*>(r->data.data()), t.size());
}

// ---- file I/O -------------------------------------------------------------------

void write_checkpoint(const std::string& path, const Checkpoint& ck) {
  AtomicFile file(path);  // DIR/.NAME.tmp.PID.N, renamed over `path` by commit()
  FileSink out(file.fd(), file.temp_path());
  out.put(kCheckpointMagic, sizeof kCheckpointMagic);
  out.put_le<std::uint32_t>(kCheckpointVersion);
  out.put_le<std::uint64_t>(payload_size(ck));
  out.put_le<std::uint32_t>(static_cast<std::uint32_t>(ck.meta().size()));
  for (const auto& [k, v] : ck.meta()) {
    out.put_string(k);
    out.put_string(v);
  }
  out.put_le<std::uint32_t>(static_cast<std::uint32_t>(ck.tensors().size()));
  for (const auto& r : ck.tensors()) {
    out.put_string(r.name);
    out.put_le<std::uint8_t>(static_cast<std::uint8_t>(r.type));
    out.put_le<std::uint8_t>(static_cast<std::uint8_t>(r.shape.size()));
    for (auto d : r.shape) out.put_le<std::int64_t>(d);
    out.put_le<std::uint64_t>(r.data.size());
    out.put(r.data.data(), r.data.size());
  }
  out.put_crc();
  out.flush();
  file.commit();  // fsync, rename, fsync of the directory
}

Checkpoint read_checkpoint(const std::string& path) {
  // A directory opens as a stream on Linux and "measures" as 2^63 - 1 bytes:
  // only a regular file's size is trusted, and it is read before allocating.
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  MAGMADNN_CHECK(!fs::is_directory(st), IOError, "checkpoint: " << path << " is a directory, not a checkpoint file");
  MAGMADNN_CHECK(!fs::exists(st) || fs::is_regular_file(st), IOError,
                 "checkpoint: " << path << " is not a regular file (a device, FIFO or socket)");
  std::ifstream in(path, std::ios::binary);
  MAGMADNN_CHECK(in.good(), IOError, "checkpoint: cannot open " << path << ": " << errno_text());
  const std::uintmax_t measured = fs::file_size(path, ec);
  MAGMADNN_CHECK(!ec, IOError, "checkpoint: cannot measure " << path << ": " << ec.message());
  const auto file_size = static_cast<std::size_t>(measured);
  std::vector<std::byte> bytes(file_size);
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(file_size));
  MAGMADNN_CHECK(in.good() || file_size == 0, IOError, "checkpoint: cannot read " << path);

  MAGMADNN_CHECK(file_size >= kHeaderBytes + kCrcBytes, IOError,
                 "checkpoint " << path << ": truncated: the file has " << file_size
                               << " bytes, fewer than the " << kHeaderBytes + kCrcBytes
                               << "-byte header and checksum");
  MAGMADNN_CHECK(std::memcmp(bytes.data(), kCheckpointMagic, 8) == 0, IOError,
                 "checkpoint " << path << ": not a magmadnn checkpoint (byte offset 0: magic is not \"MDNNCKPT\")");
  std::uint32_t version;
  std::memcpy(&version, bytes.data() + 8, 4);
  MAGMADNN_CHECK(version == kCheckpointVersion, IOError,
                 "checkpoint " << path << ": byte offset 8: format version " << version
                               << " is not supported (this build reads version " << kCheckpointVersion << ")");
  std::uint64_t payload;
  std::memcpy(&payload, bytes.data() + 12, 8);
  const std::size_t expected = kHeaderBytes + kCrcBytes;
  MAGMADNN_CHECK(payload <= file_size - expected, IOError,
                 "checkpoint " << path << ": truncated: byte offset 12 announces a payload of " << payload
                               << " bytes, so the file should have " << payload + expected << " bytes, but it has "
                               << file_size);
  MAGMADNN_CHECK(payload == file_size - expected, IOError,
                 "checkpoint " << path << ": " << (file_size - expected - payload)
                               << " unexpected bytes after the checksum at byte offset " << kHeaderBytes + payload + 4);
  const std::size_t crc_at = kHeaderBytes + payload;
  std::uint32_t stored;
  std::memcpy(&stored, bytes.data() + crc_at, 4);
  const std::uint32_t actual = crc32(bytes.data(), crc_at);
  MAGMADNN_CHECK(stored == actual, IOError,
                 "checkpoint " << path << ": corrupt: CRC-32 at byte offset " << crc_at << " is 0x" << std::hex
                               << stored << " but the content hashes to 0x" << actual);

  Checkpoint ck;
  Cursor c(bytes, crc_at, path);
  const auto n_meta = c.get<std::uint32_t>("header entry count");
  for (std::uint32_t i = 0; i < n_meta; ++i) {
    std::string k = c.get_string("header key");
    std::string v = c.get_string("header value");
    ck.set(k, v);
  }
  const auto n_tensors = c.get<std::uint32_t>("tensor count");
  for (std::uint32_t i = 0; i < n_tensors; ++i) {
    const std::size_t at = c.offset();
    TensorRecord r;
    r.name = c.get_string("tensor name");
    const auto code = c.get<std::uint8_t>("tensor dtype");
    MAGMADNN_CHECK(known_dtype(code), IOError,
                   "checkpoint " << path << ": byte offset " << c.offset() - 1 << ": unknown dtype code "
                                 << int(code) << " for tensor '" << r.name << "'");
    r.type = static_cast<dtype>(code);
    const auto ndim = c.get<std::uint8_t>("tensor rank");
    std::int64_t numel = 1;
    for (int d = 0; d < ndim; ++d) {
      const auto n = c.get<std::int64_t>("tensor dimension");
      MAGMADNN_CHECK(n >= 0 && (n == 0 || numel <= std::numeric_limits<std::int64_t>::max() / n), IOError,
                     "checkpoint " << path << ": byte offset " << c.offset() - 8 << ": bad dimension " << n
                                   << " for tensor '" << r.name << "'");
      numel *= n;
      r.shape.push_back(n);
    }
    const auto nbytes = c.get<std::uint64_t>("tensor byte count");
    // numel fits int64, numel x element size may not: a shape of 2^61 f64
    // elements "needed" 0 bytes once the product wrapped around.
    const std::uint64_t width = dtype_size(r.type);
    const bool representable =
        static_cast<std::uint64_t>(numel) <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) / width;
    MAGMADNN_CHECK(representable && nbytes == static_cast<std::uint64_t>(numel) * width, IOError,
                   "checkpoint " << path << ": byte offset " << c.offset() - 8 << ": tensor '" << r.name << "' has "
                                 << nbytes << " data bytes, its shape " << Shape(r.shape) << " needs "
                                 << (representable ? std::to_string(static_cast<std::uint64_t>(numel) * width)
                                                   : std::string("more than 2^63")));
    const std::byte* p = c.take(nbytes, "tensor data");
    r.data.assign(p, p + nbytes);
    MAGMADNN_CHECK(ck.find(r.name) == nullptr, IOError,
                   "checkpoint " << path << ": byte offset " << at << ": tensor '" << r.name << "' appears twice");
    ck.add_record(std::move(r));
  }
  MAGMADNN_CHECK(c.offset() == crc_at, IOError,
                 "checkpoint " << path << ": corrupt: " << crc_at - c.offset()
                               << " unread payload bytes at byte offset " << c.offset());
  return ck;
}

#define MAGMADNN_CKPT_INSTANTIATE(T)                                                 \
  template void Checkpoint::add_tensor<T>(const std::string&, const Tensor<T>&);     \
  template void Checkpoint::check_tensor<T>(const std::string&, const Tensor<T>&) const; \
  template void Checkpoint::copy_tensor<T>(const std::string&, Tensor<T>&) const;
MAGMADNN_CKPT_INSTANTIATE(float)
MAGMADNN_CKPT_INSTANTIATE(double)
MAGMADNN_CKPT_INSTANTIATE(std::int32_t)
MAGMADNN_CKPT_INSTANTIATE(std::int64_t)
#undef MAGMADNN_CKPT_INSTANTIATE

}  // namespace magmadnn::io
