/// @file fuzz_entries.h
/// One entry function per reader, fed arbitrary bytes. Each writes the bytes
/// to a scratch file of this process (the readers take paths), runs the
/// reader, and returns true when the input was accepted, false when it was
/// refused with a magmadnn::Error. Anything else escaping (another exception
/// type, a crash, a sanitizer report) is a bug in the reader.
///
/// Used by test_fuzz_replay (every seed corpus file, any compiler) and by the
/// libFuzzer drivers fuzz_<target>.cpp (Clang), built either with the whole
/// library instrumented (a full Clang build):
///   CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DMAGMADNN_CUDA=OFF \
///     -DMAGMADNN_MPI=OFF -DMAGMADNN_FUZZ=ON
///   cmake --build build-fuzz --target fuzz_idx
/// or with only the readers instrumented, on top of an ordinary build (28
/// Clang compiles; see the script for what that leaves out):
///   tests/fuzz/build_reader_fuzzers.sh build build-fuzz-readers
/// and run as
///   build-fuzz/tests/fuzz/fuzz_idx -max_len=4096 -malloc_limit_mb=64 -rss_limit_mb=2048 \
///     -timeout=10 -runs=1000000 NEW_CORPUS_DIR tests/fuzz/corpus/idx
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
/// A tune config: run::read_json_file, tune::parse_tune_config, then the
/// searcher it names asked for its first few trials (the space sampled).
bool tune_config(const std::uint8_t* data, std::size_t size);
/// A search journal (journal.jsonl) continued with --resume: tune::read_journal,
/// then tune::run_search replaying it against kJournalConfig (a 2 x 2 grid)
/// with a synthetic trial function (no training), and results_json of the end.
bool journal(const std::uint8_t* data, std::size_t size);
/// results.json of a search as the report page reads it: cli::read_tune_results,
/// best_trial() and minimize().
bool results(const std::uint8_t* data, std::size_t size);
/// data::decode_image (JPEG or PNG from memory) then data::prepare_image to
/// a tiny sample; the first byte picks the channels (bit 0), the sample's
/// height and width (bits 1-3, 4-6) and the random form (bit 7). Only in
/// builds with JPEG and PNG decoding (MAGMADNN_HAVE_IMAGES).
bool image(const std::uint8_t* data, std::size_t size);
/// A run folder as `magmadnn compare` reads it: the first byte picks which of
/// metrics.csv, summary.json, test_per_epoch.csv and config.json holds the
/// rest of the input (the others hold a valid run's files); then
/// cli::read_compare_run, check_comparable, the run's label and render_compare.
/// Only in builds with the command line (MAGMADNN_BUILD_APPS).
bool compare(const std::uint8_t* data, std::size_t size);

/// The tune config the journal entry resumes (its "begin" line must hold it).
extern const char* const kJournalConfig;

/// The scratch file the entries write ("<tmp>/magmadnn_fuzz_<pid>/<name>").
std::string scratch_path(const std::string& name);

}  // namespace magmadnn::fuzz
