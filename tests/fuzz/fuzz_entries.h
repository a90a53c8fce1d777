/// @file fuzz_entries.h
/// One entry function per reader, fed arbitrary bytes. Each writes the bytes
/// to a scratch file of this process (the readers take paths), runs the
/// reader, and returns true when the input was accepted, false when it was
/// refused with a magmadnn::Error. Anything else escaping (another exception
/// type, a crash, a sanitizer report) is a bug in the reader.
///
/// Used by test_fuzz_replay (every seed corpus file, any compiler) and by the
/// libFuzzer drivers fuzz_<target>.cpp (Clang, -DMAGMADNN_FUZZ=ON):
///   CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DMAGMADNN_CUDA=OFF \
///     -DMAGMADNN_MPI=OFF -DMAGMADNN_FUZZ=ON
///   cmake --build build-fuzz --target fuzz_idx
///   build-fuzz/tests/fuzz/fuzz_idx -max_len=4096 -malloc_limit_mb=96 -rss_limit_mb=1024 \
///     -runs=1000000 NEW_CORPUS_DIR tests/fuzz/corpus/idx
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace magmadnn::fuzz {

/// io::read_idx and io::read_idx_tensor<float> (plain or gzip, by content).
bool idx(const std::uint8_t* data, std::size_t size);
/// io::ByteReader: the whole stream, then line by line (gzip members are
/// checked: CRC-32, ISIZE, trailing bytes).
bool gzip(const std::uint8_t* data, std::size_t size);
/// io::read_csv / read_csv_labeled / read_csv_to_tensor; the first byte picks
/// the options (delimiter, header, label column, encoding, class count).
bool csv(const std::uint8_t* data, std::size_t size);
/// io::read_cifar_bin and data::load_cifar10 / load_cifar100; the first byte
/// picks the format.
bool cifar(const std::uint8_t* data, std::size_t size);
/// io::read_checkpoint; input that does not start with the "MDNNCKPT" magic
/// is taken as the payload and wrapped in a valid header and CRC-32, so the
/// parser behind the checksum is reached.
bool checkpoint(const std::uint8_t* data, std::size_t size);
/// run::read_json_file (nesting-depth limit, syntax) then run::parse_config.
bool config(const std::uint8_t* data, std::size_t size);

/// The scratch file the entries write ("<tmp>/magmadnn_fuzz_<pid>/<name>").
std::string scratch_path(const std::string& name);

}  // namespace magmadnn::fuzz
