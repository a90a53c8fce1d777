#include "magmadnn/io/cifar.h"

#include <algorithm>
#include <cstring>

#include "magmadnn/core/errors.h"
#include "magmadnn/io/byte_reader.h"

namespace magmadnn::io {

CifarRecords read_cifar_bin(const std::string& path, CifarKind kind) {
  const std::int64_t rec = cifar_record_size(kind);
  const char* name = kind == CifarKind::Cifar10 ? "CIFAR-10" : "CIFAR-100";
  ByteReader in(path);
  // Whole-file read: CIFAR files are ~30 MB, and knowing the size first lets
  // a wrong format be reported before any record is decoded.
  const std::vector<std::uint8_t> bytes = in.read_rest();
  const auto size = static_cast<std::int64_t>(bytes.size());
  MAGMADNN_CHECK(size > 0 && size % rec == 0, IOError,
                 path << ": " << size << " bytes is not a whole number of " << name << " records of " << rec
                      << " bytes (" << (rec - kCifarPixels) << " label byte(s) + " << kCifarPixels
                      << " pixels); the last record starts at offset " << (size / rec) * rec << " and has "
                      << size % rec << " bytes"
                      << (size % (rec == 3073 ? 3074 : 3073) == 0 ? " (the size fits the other CIFAR format)" : ""));
  CifarRecords r;
  r.count = size / rec;
  r.pixels.resize(static_cast<std::size_t>(r.count * kCifarPixels));
  r.fine.resize(static_cast<std::size_t>(r.count));
  if (kind == CifarKind::Cifar100) r.coarse.resize(static_cast<std::size_t>(r.count));
  const int fine_classes = kind == CifarKind::Cifar10 ? 10 : 100;
  for (std::int64_t i = 0; i < r.count; ++i) {
    const std::uint8_t* p = bytes.data() + i * rec;
    if (kind == CifarKind::Cifar100) {
      MAGMADNN_CHECK(p[0] < 20, IOError,
                     path << ": record " << i << " (offset " << i * rec << "): coarse label " << int(p[0])
                          << " is outside [0, 20)");
      r.coarse[i] = *p++;
    }
    MAGMADNN_CHECK(*p < fine_classes, IOError,
                   path << ": record " << i << " (offset " << i * rec + (kind == CifarKind::Cifar100)
                        << "): label " << int(*p) << " is outside [0, " << fine_classes << ")");
    r.fine[i] = *p++;
    std::memcpy(r.pixels.data() + i * kCifarPixels, p, kCifarPixels);
  }
  return r;
}

void write_cifar_bin(const std::string& path, CifarKind kind, const CifarRecords& r, bool gzip) {
  MAGMADNN_CHECK(static_cast<std::int64_t>(r.pixels.size()) == r.count * kCifarPixels &&
                     static_cast<std::int64_t>(r.fine.size()) == r.count &&
                     (kind == CifarKind::Cifar10 || static_cast<std::int64_t>(r.coarse.size()) == r.count),
                 ValueError, "write_cifar_bin(" << path << "): buffers do not hold " << r.count << " records");
  ByteWriter out(path, gzip);
  for (std::int64_t i = 0; i < r.count; ++i) {
    if (kind == CifarKind::Cifar100) out.write(&r.coarse[i], 1);
    out.write(&r.fine[i], 1);
    out.write(r.pixels.data() + i * kCifarPixels, kCifarPixels);
  }
  out.close();
}

}  // namespace magmadnn::io
