#include "magmadnn/io/idx.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "magmadnn/core/errors.h"
#include "magmadnn/io/byte_reader.h"

namespace magmadnn::io {

std::size_t idx_type_size(IdxType t) noexcept {
  switch (t) {
    case IdxType::u8:
    case IdxType::i8: return 1;
    case IdxType::i16: return 2;
    case IdxType::i32:
    case IdxType::f32: return 4;
    case IdxType::f64: return 8;
  }
  return 0;
}

const char* idx_type_name(IdxType t) noexcept {
  switch (t) {
    case IdxType::u8: return "uint8";
    case IdxType::i8: return "int8";
    case IdxType::i16: return "int16";
    case IdxType::i32: return "int32";
    case IdxType::f32: return "float32";
    case IdxType::f64: return "float64";
  }
  return "unknown";
}

namespace {

bool known_type(std::uint8_t b) {
  return b == 0x08 || b == 0x09 || b == 0x0B || b == 0x0C || b == 0x0D || b == 0x0E;
}

// IDX is big-endian; the hosts we run on are little-endian, so multi-byte
// elements are reversed in place once, right after reading.
void big_endian_to_host(std::uint8_t* p, std::size_t count, std::size_t width) {
  if (width == 1 || std::endian::native == std::endian::big) return;
  for (std::size_t i = 0; i < count; ++i, p += width) std::reverse(p, p + width);
}

template <typename E>
E load(const std::uint8_t* p) {
  E v;
  std::memcpy(&v, p, sizeof(E));
  return v;
}

template <typename T, typename E>
void convert_as(const std::uint8_t* src, std::int64_t n, T* out, double scale, double shift) {
  if (scale == 1.0 && shift == 0.0) {
    for (std::int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(load<E>(src + i * sizeof(E)));
  } else {
    for (std::int64_t i = 0; i < n; ++i)
      out[i] = static_cast<T>(static_cast<double>(load<E>(src + i * sizeof(E))) * scale + shift);
  }
}

}  // namespace

template <typename T>
void IdxArray::convert(T* out, double scale, double shift) const {
  const std::int64_t n = numel();
  switch (type) {
    case IdxType::u8: convert_as<T, std::uint8_t>(bytes.data(), n, out, scale, shift); break;
    case IdxType::i8: convert_as<T, std::int8_t>(bytes.data(), n, out, scale, shift); break;
    case IdxType::i16: convert_as<T, std::int16_t>(bytes.data(), n, out, scale, shift); break;
    case IdxType::i32: convert_as<T, std::int32_t>(bytes.data(), n, out, scale, shift); break;
    case IdxType::f32: convert_as<T, float>(bytes.data(), n, out, scale, shift); break;
    case IdxType::f64: convert_as<T, double>(bytes.data(), n, out, scale, shift); break;
  }
}

IdxArray read_idx(const std::string& path) {
  ByteReader in(path);
  std::uint8_t magic[4];
  in.read_exact(magic, 4, "the IDX magic number");
  if (magic[0] != 0 || magic[1] != 0 || !known_type(magic[2]) || magic[3] == 0) {
    char hex[16];
    std::snprintf(hex, sizeof hex, "%02x %02x %02x %02x", magic[0], magic[1], magic[2], magic[3]);
    MAGMADNN_THROW(IOError, path << ": not an IDX file: wrong magic number " << hex
                                 << " at offset 0 (expected 00 00, a type byte 08/09/0b/0c/0d/0e, and a "
                                    "dimension count of at least 1)");
  }
  IdxArray a;
  a.path = path;
  a.type = static_cast<IdxType>(magic[2]);
  const int ndim = magic[3];
  const std::size_t width = idx_type_size(a.type);
  std::vector<std::int64_t> dims(ndim);
  // Bound the element count before allocating: a corrupt header must not
  // turn into a multi-terabyte allocation.
  const std::int64_t limit = std::numeric_limits<std::int64_t>::max() / 16;
  std::int64_t numel = 1;
  for (int d = 0; d < ndim; ++d) {
    const std::string what = "dimension " + std::to_string(d) + " of the IDX header";
    dims[d] = in.read_be_u32(what.c_str());
    MAGMADNN_CHECK(dims[d] == 0 || numel <= limit / dims[d], IOError,
                   path << ": IDX header declares an impossibly large array (dimension " << d << " = " << dims[d]
                        << ")");
    numel *= dims[d];
  }
  a.shape = Shape(dims);
  const std::size_t nbytes = static_cast<std::size_t>(numel) * width;
  // The claim must fit what the file holds (for gzip: what it decompresses
  // to) before anything is allocated for it.
  MAGMADNN_CHECK(static_cast<std::int64_t>(nbytes) <= in.remaining(), IOError,
                 path << ": truncated: the IDX header claims shape " << a.shape << " (" << numel << " "
                      << idx_type_name(a.type) << " elements, " << nbytes << " bytes from offset " << in.offset()
                      << "), but the file holds only " << in.remaining() << " bytes after the header ("
                      << in.size() << " in all" << (in.compressed() ? " once decompressed" : "") << ")");
  a.bytes.resize(nbytes);
  const std::string what = "data (" + std::to_string(numel) + " " + idx_type_name(a.type) + " elements for shape " +
                           a.shape.to_string() + ")";
  in.read_exact(a.bytes.data(), nbytes, what.c_str());
  if (!in.at_end()) {
    const std::int64_t end_of_data = in.offset();
    const std::size_t extra = in.read_rest().size();
    MAGMADNN_THROW(IOError, path << ": " << extra << " unexpected bytes after the data, from offset " << end_of_data
                                 << ": the header's shape " << a.shape << " does not describe this file");
  }
  big_endian_to_host(a.bytes.data(), static_cast<std::size_t>(numel), width);
  return a;
}

template <typename T>
Tensor<T> read_idx_tensor(const std::string& path, memory_t mem, double scale, double shift) {
  const IdxArray a = read_idx(path);
  Tensor<T> host(a.shape, HOST);
  if (a.numel() > 0) a.convert(host.mutable_host_data(), scale, shift);
  return mem == HOST ? std::move(host) : host.to(mem);
}

void write_idx(const std::string& path, IdxType type, const Shape& shape, const std::vector<double>& values,
               bool gzip) {
  MAGMADNN_CHECK(static_cast<std::int64_t>(values.size()) == shape.numel(), ShapeError,
                 "write_idx(" << path << "): " << values.size() << " values for shape " << shape);
  MAGMADNN_CHECK(shape.ndim() >= 1 && shape.ndim() <= 255, ShapeError,
                 "write_idx(" << path << "): IDX needs 1 to 255 dimensions, got shape " << shape);
  const std::size_t width = idx_type_size(type);
  std::vector<std::uint8_t> buf(values.size() * width);
  auto put = [&](std::size_t i, auto v) {
    std::memcpy(buf.data() + i * width, &v, width);
  };
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double v = values[i];
    auto check_range = [&](double lo, double hi) {
      MAGMADNN_CHECK(v >= lo && v <= hi && v == std::floor(v), ValueError,
                     "write_idx(" << path << "): value " << v << " at index " << i << " does not fit "
                                  << idx_type_name(type));
    };
    switch (type) {
      case IdxType::u8: check_range(0, 255); put(i, static_cast<std::uint8_t>(v)); break;
      case IdxType::i8: check_range(-128, 127); put(i, static_cast<std::int8_t>(v)); break;
      case IdxType::i16: check_range(-32768, 32767); put(i, static_cast<std::int16_t>(v)); break;
      case IdxType::i32: check_range(-2147483648.0, 2147483647.0); put(i, static_cast<std::int32_t>(v)); break;
      case IdxType::f32: put(i, static_cast<float>(v)); break;
      case IdxType::f64: put(i, v); break;
    }
  }
  big_endian_to_host(buf.data(), values.size(), width);  // the swap is its own inverse
  ByteWriter out(path, gzip);
  const std::uint8_t magic[4] = {0, 0, static_cast<std::uint8_t>(type), static_cast<std::uint8_t>(shape.ndim())};
  out.write(magic, 4);
  for (const std::int64_t d : shape) {
    MAGMADNN_CHECK(d <= 0xffffffffll, ShapeError, "write_idx(" << path << "): dimension " << d << " exceeds uint32");
    out.write_be_u32(static_cast<std::uint32_t>(d));
  }
  out.write(buf.data(), buf.size());
  out.close();
}

#define MAGMADNN_IDX_INSTANTIATE(T)                                                  \
  template void IdxArray::convert<T>(T*, double, double) const;                      \
  template Tensor<T> read_idx_tensor<T>(const std::string&, memory_t, double, double);
MAGMADNN_IDX_INSTANTIATE(float)
MAGMADNN_IDX_INSTANTIATE(double)
MAGMADNN_IDX_INSTANTIATE(std::int32_t)
MAGMADNN_IDX_INSTANTIATE(std::int64_t)
#undef MAGMADNN_IDX_INSTANTIATE

}  // namespace magmadnn::io
