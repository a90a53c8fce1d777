/// @file chooser.h
/// Picks the convolution algorithm for a problem (paper §2.2, dMath's timed
/// choice).
///
/// On the first use of a (problem, pass, element type, device), choose() runs
/// every algorithm of that device that supports the problem and whose
/// workspace fits the limit on random data, and keeps the fastest (minimum of
/// 2 to 5 timed runs after one warm-up; a candidate twice as slow as the
/// leader is dropped after a run, and the rounds stop after about 0.25 s or
/// when one candidate is left).
/// A smaller batch of a layer already measured (an epoch's last, partial
/// batch) takes that layer's choice without measuring. The choice is cached in memory
/// and, when a cache file is set, appended to that file and read back by
/// later processes. Direct is only timed for small problems (at most
/// kDirectTimingMacs multiply-adds) or when nothing else applies: it is the
/// reference, orders of magnitude slower on real layers.
///
/// Forcing, strongest first: the `requested` argument of choose() (the graph
/// ops' `algo` argument), set_forced_algorithm(), and the environment
/// variable MAGMADNN_CONV_ALGO=<name> (names as algo_name()). A forced
/// algorithm that does not exist on the device or does not support the
/// problem raises NotSupportedError naming both; a bad name raises ValueError
/// listing the valid ones. Forced choices ignore the workspace limit.
///
/// The cache file is MAGMADNN_CONV_CACHE=<path> unless set_cache_file() says
/// otherwise. It is plain text, one choice per line:
///   device <TAB> dtype <TAB> pass <TAB> problem <TAB> algorithm <TAB> seconds
/// A malformed line raises IOError naming the file and line. A cached
/// algorithm that no longer applies (another build) is measured again.
///
/// Thread safety: all functions may be called from any thread.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "magmadnn/conv/algorithm.h"
#include "magmadnn/core/types.h"

namespace magmadnn::conv {

/// Problems larger than this are not timed with Direct when another algorithm
/// applies. Direct never won above ~1e5 multiply-adds here (LeNet-5's layers,
/// 7.5e6, run 8-30x slower than FFT), and timing it was most of the
/// chooser's cost in a LeNet-5 epoch.
inline constexpr double kDirectTimingMacs = 1e6;

/// How a choice was made and what was measured.
struct Choice {
  enum class Source : std::uint8_t { Measured, Forced, CacheFile };
  Algo algo = Algo::Auto;
  Source source = Source::Measured;
  /// Seconds per call of every candidate timed (Measured only), in registry order.
  std::vector<std::pair<Algo, double>> times;
  /// Seconds of the chosen algorithm (Measured or CacheFile), else 0.
  double seconds = 0;
};

/// The algorithm to run `pass` of `prob` with, for element type T (float,
/// double, or half or bfloat16 on the GPU) on `device` (index `device_id` for GPUs).
/// Measures on first use as described above.
template <typename T>
ConvAlgorithm<T>& choose(const ConvProblem& prob, Pass pass, DeviceKind device, device_t device_id = 0,
                         Algo requested = Algo::Auto);

/// The cached choice for a key, if choose() has made one (forced choices are
/// not cached, since they depend on the forcing in effect).
template <typename T>
std::optional<Choice> cached_choice(const ConvProblem& prob, Pass pass, DeviceKind device, device_t device_id = 0);

/// Forces one algorithm for every later choice; Algo::Auto removes the force.
void set_forced_algorithm(Algo a);
/// The force in effect: the API's, else MAGMADNN_CONV_ALGO's, else Auto.
/// ValueError when the environment variable holds an unknown name.
Algo forced_algorithm();

/// Largest workspace, in bytes, an algorithm may need to be a candidate
/// (default 1 GiB).
void set_workspace_limit(std::size_t bytes);
std::size_t workspace_limit();

/// Cache file to read and append to; an empty path disables it. Replaces
/// MAGMADNN_CONV_CACHE. The file is read on the next choice.
void set_cache_file(const std::string& path);
/// Undoes set_cache_file: the file is MAGMADNN_CONV_CACHE's again.
void reset_cache_file();
/// The cache file in effect ("" when none).
std::string cache_file();
/// Forgets every in-memory choice (the file is kept).
void clear_choices();

}  // namespace magmadnn::conv
