/// @file run_fixtures.h
/// What tests that train through the command or a run need: a tiny
/// MNIST-format data set written as IDX files, a whole file read as text,
/// and a shell command run with its output captured.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "magmadnn/io/idx.h"

namespace magmadnn::test {

/// How write_stripes draws an 8x8 image of class c (0, 1 or 2): rows
/// [2c+1, 2c+3) are the stripe; every other pixel is uniform noise in
/// [0, noise_max]. Plain: a stripe pixel is `bright`. Additive: a stripe
/// pixel is noise + `bright`, so the classes overlap and training needs more
/// than a step or two.
struct StripeStyle {
  int noise_max = 60;
  int bright = 220;
  bool additive = false;
};

/// Writes DIR/PREFIX-images-idx3-ubyte ({n, 8, 8} uint8) and
/// DIR/PREFIX-labels-idx1-ubyte (n labels in {0, 1, 2}), the same for the
/// same (n, seed, style).
inline void write_stripes(const std::string& dir, const std::string& prefix, int n, unsigned seed,
                          StripeStyle style = {}) {
  constexpr int kSide = 8;
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> noise(0, style.noise_max), label(0, 2);
  std::vector<double> pixels, labels;
  for (int i = 0; i < n; ++i) {
    const int c = label(rng);
    for (int r = 0; r < kSide; ++r) {
      const bool stripe = r >= 2 * c + 1 && r < 2 * c + 3;
      for (int col = 0; col < kSide; ++col) {
        // The draw order matters: the same seed must give the same images.
        pixels.push_back(style.additive ? noise(rng) + (stripe ? style.bright : 0) : (stripe ? style.bright : noise(rng)));
      }
    }
    labels.push_back(c);
  }
  io::write_idx(dir + "/" + prefix + "-images-idx3-ubyte", io::IdxType::u8, {n, kSide, kSide}, pixels, false);
  io::write_idx(dir + "/" + prefix + "-labels-idx1-ubyte", io::IdxType::u8, {n}, labels, false);
}

/// The whole file (empty when it cannot be read).
inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

struct CommandResult {
  int rc;  ///< exit status, -1 when the command did not exit normally
  std::string out, err;
};

/// Runs `command` in a shell with standard output and error sent to
/// SCRATCH.out and SCRATCH.err, and returns both with the exit status.
inline CommandResult run_shell(const std::string& command, const std::string& scratch) {
  const int status = std::system((command + " >" + scratch + ".out 2>" + scratch + ".err").c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_text(scratch + ".out"), read_text(scratch + ".err")};
}

}  // namespace magmadnn::test
