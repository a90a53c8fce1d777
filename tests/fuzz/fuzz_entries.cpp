#include "fuzz_entries.h"

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "magmadnn/core/errors.h"
#include "magmadnn/data/cifar.h"
#include "magmadnn/io/byte_reader.h"
#include "magmadnn/io/checkpoint.h"
#include "magmadnn/io/cifar.h"
#include "magmadnn/io/csv.h"
#include "magmadnn/io/idx.h"
#include "magmadnn/run/spec.h"

namespace magmadnn::fuzz {

namespace {

namespace fs = std::filesystem;

const fs::path& scratch_dir() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("magmadnn_fuzz_" + std::to_string(::getpid()));
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

void write_file(const std::string& path, const void* data, std::size_t size) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
}

// Runs `body`; true when it returns, false when it throws a magmadnn::Error.
template <typename F>
bool guarded(F&& body) {
  try {
    body();
    return true;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace

std::string scratch_path(const std::string& name) { return (scratch_dir() / name).string(); }

bool idx(const std::uint8_t* data, std::size_t size) {
  const std::string path = scratch_path("idx");
  write_file(path, data, size);
  return guarded([&] {
    const io::IdxArray a = io::read_idx(path);
    (void)a.numel();
    const Tensor<float> t = io::read_idx_tensor<float>(path, HOST, 1.0 / 255, 0.0);
    (void)t.size();
  });
}

bool gzip(const std::uint8_t* data, std::size_t size) {
  const std::string path = scratch_path("stream.gz");
  write_file(path, data, size);
  return guarded([&] {
    {
      io::ByteReader in(path);
      const std::vector<std::uint8_t> all = in.read_rest();
      (void)all;
    }
    io::ByteReader in(path);
    std::string line;
    while (in.read_line(line)) {
    }
  });
}

bool csv(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return false;
  const std::uint8_t sel = data[0];
  const std::string path = scratch_path("data.csv");
  write_file(path, data + 1, size - 1);
  io::CsvOptions o;
  o.delimiter = (sel & 1) ? ';' : ',';
  o.header = (sel & 2) != 0;
  o.label_column = (sel & 4) ? -1 : 0;
  o.labels = (sel & 8) ? io::LabelEncoding::Index : io::LabelEncoding::OneHot;
  o.num_classes = (sel >> 4) & 7;
  return guarded([&] {
    const bool plain = guarded([&] { (void)io::read_csv<float>(path, o); });
    const bool labelled = guarded([&] { (void)io::read_csv_labeled<double>(path, o); });
    if (sel & 0x80) {
      Tensor<float> x({4, 2}, HOST), y({4, 3}, HOST);
      io::read_csv_to_tensor(x, y, path, o);
    }
    (void)plain;
    (void)labelled;
  });
}

bool cifar(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return false;
  const std::uint8_t sel = data[0];
  const io::CifarKind kind = (sel & 1) ? io::CifarKind::Cifar100 : io::CifarKind::Cifar10;
  const std::string name = kind == io::CifarKind::Cifar10 ? "test_batch.bin" : "test.bin";
  const std::string path = scratch_path(name);
  write_file(path, data + 1, size - 1);
  return guarded([&] {
    if (sel & 2) {
      const io::CifarRecords r = io::read_cifar_bin(path, kind);
      (void)r.count;
    } else if (kind == io::CifarKind::Cifar10) {
      (void)data::load_cifar10<float>(scratch_dir().string(), data::Test);
    } else {
      (void)data::load_cifar100<float>(scratch_dir().string(), data::Test, (sel & 4) != 0);
    }
  });
}

bool checkpoint(const std::uint8_t* data, std::size_t size) {
  const std::string path = scratch_path("model.ckpt");
  const bool raw = size >= 8 && std::memcmp(data, io::kCheckpointMagic, 8) == 0;
  if (!raw) {
    // Magic, version, payload size, payload, CRC-32 of all before it.
    // One buffer of the final size filled by memcpy: GCC 14 at -O3 warned
    // (-Wstringop-overflow, a false positive) on the chain of inserts.
    const std::uint32_t version = io::kCheckpointVersion;
    const std::uint64_t payload = size;
    std::vector<std::uint8_t> file(20 + size + 4);
    std::memcpy(file.data(), io::kCheckpointMagic, 8);
    std::memcpy(file.data() + 8, &version, 4);
    std::memcpy(file.data() + 12, &payload, 8);
    if (size > 0) std::memcpy(file.data() + 20, data, size);
    const std::uint32_t crc = io::crc32(file.data(), 20 + size);
    std::memcpy(file.data() + 20 + size, &crc, 4);
    write_file(path, file.data(), file.size());
  } else {
    write_file(path, data, size);
  }
  return guarded([&] {
    const io::Checkpoint ck = io::read_checkpoint(path);
    for (const auto& entry : ck.meta()) {
      const std::string& k = entry.first;
      (void)guarded([&] { (void)ck.get_int(k); });
      (void)guarded([&] { (void)ck.get_double(k); });
    }
  });
}

bool config(const std::uint8_t* data, std::size_t size) {
  const std::string path = scratch_path("config.json");
  write_file(path, data, size);
  return guarded([&] { (void)run::parse_config(run::read_json_file(path)); });
}

}  // namespace magmadnn::fuzz
