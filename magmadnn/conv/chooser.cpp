#include "magmadnn/conv/chooser.h"

#include "magmadnn/core/determinism.h"

#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>

#include "magmadnn/conv/timing.h"
#include "magmadnn/core/determinism.h"
#include "magmadnn/core/errors.h"
#include "magmadnn/core/half.h"

namespace magmadnn::conv {
namespace {

struct State {
  std::mutex mu;
  std::map<std::string, Choice> choices;  // key -> choice
  // Batch-free key -> (largest batch measured, its choice): a smaller batch
  // of a measured layer (an epoch's last, partial batch) reuses the choice.
  std::map<std::string, std::pair<std::int64_t, Choice>> by_layer;
  Algo forced = Algo::Auto;
  std::size_t limit = std::size_t{1} << 30;
  bool file_overridden = false;
  std::string file;
  std::string loaded_file;  // the file whose lines are in `choices`
};
State& state() {
  static State s;
  return s;
}

std::string device_label(DeviceKind d, device_t id) {
  return d == DeviceKind::CPU ? std::string("cpu") : "cuda:" + std::to_string(id);
}

template <typename T>
std::string make_key(const ConvProblem& pr, Pass pass, DeviceKind d, device_t id) {
  return device_label(d, id) + "\t" + dtype_name(dtype_v<T>) + "\t" + pass_name(pass) + "\t" + pr.to_string();
}

std::string file_in_effect(const State& s) {
  if (s.file_overridden) return s.file;
  const char* env = std::getenv("MAGMADNN_CONV_CACHE");
  return env ? std::string(env) : std::string();
}

// The batch of a problem as ConvProblem::to_string() writes it ("n128 c16
// ...") and the same text with batch 0 (the layer's key, as make_key of a
// problem with n = 0 gives it); nothing for text of another form.
std::optional<std::pair<std::int64_t, std::string>> layer_of(const std::string& problem) {
  const std::size_t space = problem.find(' ');
  if (problem.size() < 2 || problem[0] != 'n' || space == std::string::npos || space < 2) return std::nullopt;
  std::int64_t n = 0;
  for (std::size_t i = 1; i < space; ++i) {
    if (problem[i] < '0' || problem[i] > '9') return std::nullopt;
    n = n * 10 + (problem[i] - '0');
  }
  return std::make_pair(n, "n0" + problem.substr(space));
}

// Reads the cache file once per path into s.choices (entries already measured in this process win).
void load_file(State& s, const std::string& path) {
  if (path.empty() || s.loaded_file == path) return;
  s.loaded_file = path;
  std::ifstream in(path);
  if (!in) return;  // not written yet
  std::string line;
  for (int lineno = 1; std::getline(in, line); ++lineno) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string part; std::getline(ss, part, '\t');) f.push_back(part);
    MAGMADNN_CHECK(f.size() == 6, IOError,
                   "conv chooser cache " << path << ":" << lineno << ": expected 6 tab-separated fields, got "
                                         << f.size() << ": '" << line << "'");
    Choice c;
    c.source = Choice::Source::CacheFile;
    try {
      c.algo = parse_algo(f[4]);
      c.seconds = std::stod(f[5]);
    } catch (const std::exception& e) {
      MAGMADNN_THROW(IOError, "conv chooser cache " << path << ":" << lineno << ": " << e.what());
    }
    s.choices.emplace(f[0] + "\t" + f[1] + "\t" + f[2] + "\t" + f[3], c);
    // As for a measured choice, a smaller batch of the layer takes it.
    if (auto l = layer_of(f[3]); l) {
      auto& slot = s.by_layer[f[0] + "\t" + f[1] + "\t" + f[2] + "\t" + l->second];
      if (slot.first < l->first) slot = {l->first, c};
    }
  }
}

void append_file(const std::string& path, const std::string& key, const Choice& c) {
  if (path.empty()) return;
  std::ofstream out(path, std::ios::app);
  MAGMADNN_CHECK(out.good(), IOError, "conv chooser: cannot append to cache file " << path);
  out << key << "\t" << algo_name(c.algo) << "\t" << c.seconds << "\n";
}

// Whether `a` computes `pass` of `pr` in the problem's layouts.
template <typename T>
bool takes(const ConvAlgorithm<T>& a, const ConvProblem& pr, Pass pass) {
  return a.supports(pr, pass) && (!pr.blocked() || a.reads_blocked(pr, pass));
}

template <typename T>
Choice measure(const ConvProblem& pr, Pass pass, DeviceKind device, device_t dev, std::size_t limit) {
  std::vector<ConvAlgorithm<T>*> cands;
  for (ConvAlgorithm<T>* a : algorithms<T>(device)) {
    if (takes(*a, pr, pass) && a->workspace_bytes(pr, pass) <= limit) cands.push_back(a);
  }
  if (cands.size() > 1 && pr.macs() > kDirectTimingMacs) {
    std::erase_if(cands, [](auto* a) { return a->id() == Algo::Direct; });
  }
  MAGMADNN_CHECK(!cands.empty(), NotSupportedError,
                 "conv chooser: no " << device_label(device, dev) << " algorithm supports " << pass_name(pass)
                                     << " of " << pr.to_string() << " within the workspace limit of " << limit
                                     << " bytes");
  // The measuring is paid inside the first training step of every new shape
  // (a LeNet-5 epoch has a dozen), so it is kept short: after each round a
  // candidate at least twice as slow as the leader stops being timed (noise
  // does not turn 2x around), after the second one at least 1.25x as slow,
  // and rounds stop after 5, once 0.25 s went by (at least 2 rounds), or
  // when a single candidate is left. Only candidates within 25% of each
  // other, where one more round can change the pick, get the later rounds.
  const TimingRounds rounds{
      .max_rounds = 5, .min_rounds = 2, .budget_seconds = 0.25, .drop_ratio = 2.0, .settle_ratio = 1.25};
  const std::vector<std::optional<double>> best = time_algorithms<T>(cands, pr, pass, device, dev, rounds);
  Choice c;
  c.source = Choice::Source::Measured;
  c.seconds = 1e300;
  for (std::size_t i = 0; i < cands.size(); ++i) {
    if (!best[i]) continue;  // could not run here (e.g. out of device memory for its workspace)
    c.times.emplace_back(cands[i]->id(), *best[i]);
    if (*best[i] < c.seconds) c.seconds = *best[i], c.algo = cands[i]->id();
  }
  MAGMADNN_CHECK(c.algo != Algo::Auto, DeviceError,
                 "conv chooser: every candidate failed for " << pass_name(pass) << " of " << pr.to_string());
  return c;
}

template <typename T>
ConvAlgorithm<T>& forced(Algo id, const ConvProblem& pr, Pass pass, DeviceKind device, device_t dev) {
  ConvAlgorithm<T>* a = find_algorithm<T>(id, device);
  MAGMADNN_CHECK(a != nullptr, NotSupportedError,
                 "conv: algorithm '" << algo_name(id) << "' is not available on " << device_label(device, dev)
                                     << " in this build (" << dtype_name(dtype_v<T>) << ")");
  MAGMADNN_CHECK(!pr.blocked() || a->reads_blocked(pr, pass), NotSupportedError,
                 "conv: algorithm '" << algo_name(id) << "' does not read the blocked layouts of "
                                     << pass_name(pass) << " of " << pr.to_string());
  MAGMADNN_CHECK(a->supports(pr, pass), NotSupportedError,
                 "conv: forced algorithm '" << algo_name(id) << "' does not support " << pass_name(pass) << " of "
                                            << pr.to_string());
  return *a;
}

// Deterministic algorithms: no timing, the first supported algorithm in a
// fixed order of what usually wins here (oneDNN and cuDNN, the libraries;
// then Winograd for 3x3, FFT for larger kernels, im2col for the rest;
// Direct, the slow reference, last). Not cached: it costs a few calls of
// supports() per step.
template <typename T>
ConvAlgorithm<T>& fixed_pick(const ConvProblem& pr, Pass pass, DeviceKind device, device_t dev, std::size_t limit) {
  for (Algo id : {Algo::OneDNN, Algo::CuDNN, Algo::WinogradF4x4, Algo::FFT, Algo::Im2colGemm, Algo::Direct}) {
    ConvAlgorithm<T>* a = find_algorithm<T>(id, device);
    if (a && takes(*a, pr, pass) && a->workspace_bytes(pr, pass) <= limit) return *a;
  }
  MAGMADNN_THROW(NotSupportedError, "conv chooser: no " << device_label(device, dev) << " algorithm supports "
                                                        << pass_name(pass) << " of " << pr.to_string()
                                                        << " within the workspace limit of " << limit << " bytes");
}

}  // namespace

template <typename T>
ConvAlgorithm<T>& choose(const ConvProblem& pr, Pass pass, DeviceKind device, device_t dev, Algo requested) {
  if (pr.blocked()) {
    // A requested algorithm must read the layouts (forced() says so
    // otherwise). With one reader there is nothing to time, and it is
    // taken as a forced one is, without asking for its workspace: this
    // runs at every pass of every step.
    if (requested != Algo::Auto) return forced<T>(requested, pr, pass, device, dev);
    ConvAlgorithm<T>* reader = nullptr;
    int readers = 0;
    for (ConvAlgorithm<T>* a : algorithms<T>(device)) {
      if (takes(*a, pr, pass)) reader = a, ++readers;
    }
    if (readers == 1) return *reader;
  }
  const Algo force = requested != Algo::Auto ? requested : forced_algorithm();
  if (force != Algo::Auto) return forced<T>(force, pr, pass, device, dev);

  if (deterministic_algorithms()) return fixed_pick<T>(pr, pass, device, dev, workspace_limit());

  State& s = state();
  std::lock_guard lock(s.mu);  // held while measuring, so one key is never measured twice
  const std::string path = file_in_effect(s);
  load_file(s, path);
  const std::string key = make_key<T>(pr, pass, device, dev);
  auto it = s.choices.find(key);
  if (it != s.choices.end()) {
    ConvAlgorithm<T>* a = find_algorithm<T>(it->second.algo, device);
    if (a && takes(*a, pr, pass)) return *a;
    s.choices.erase(it);
  }
  ConvProblem any_batch = pr;
  any_batch.n = 0;
  const std::string layer_key = make_key<T>(any_batch, pass, device, dev);
  if (auto l = s.by_layer.find(layer_key); l != s.by_layer.end() && l->second.first >= pr.n) {
    ConvAlgorithm<T>* a = find_algorithm<T>(l->second.second.algo, device);
    if (a && takes(*a, pr, pass)) {
      s.choices[key] = l->second.second;
      return *a;
    }
  }
  Choice c = measure<T>(pr, pass, device, dev, s.limit);
  s.choices[key] = c;
  if (auto& slot = s.by_layer[layer_key]; slot.first < pr.n) slot = {pr.n, c};
  append_file(path, key, c);
  return *find_algorithm<T>(c.algo, device);
}

template <typename T>
std::optional<Choice> cached_choice(const ConvProblem& pr, Pass pass, DeviceKind device, device_t dev) {
  State& s = state();
  std::lock_guard lock(s.mu);
  auto it = s.choices.find(make_key<T>(pr, pass, device, dev));
  if (it == s.choices.end()) return std::nullopt;
  return it->second;
}

void set_forced_algorithm(Algo a) {
  std::lock_guard lock(state().mu);
  state().forced = a;
}

Algo forced_algorithm() {
  {
    std::lock_guard lock(state().mu);
    if (state().forced != Algo::Auto) return state().forced;
  }
  const char* env = std::getenv("MAGMADNN_CONV_ALGO");
  if (!env || !*env) return Algo::Auto;
  try {
    return parse_algo(env);
  } catch (const ValueError& e) {
    MAGMADNN_THROW(ValueError, "MAGMADNN_CONV_ALGO: " << e.what());
  }
}

void set_workspace_limit(std::size_t bytes) {
  std::lock_guard lock(state().mu);
  state().limit = bytes;
}
std::size_t workspace_limit() {
  std::lock_guard lock(state().mu);
  return state().limit;
}

void set_cache_file(const std::string& path) {
  std::lock_guard lock(state().mu);
  state().file_overridden = true;
  state().file = path;
  state().loaded_file.clear();
}
void reset_cache_file() {
  std::lock_guard lock(state().mu);
  state().file_overridden = false;
  state().file.clear();
  state().loaded_file.clear();
}
std::string cache_file() {
  std::lock_guard lock(state().mu);
  return file_in_effect(state());
}
void clear_choices() {
  std::lock_guard lock(state().mu);
  state().choices.clear();
  state().by_layer.clear();
  state().loaded_file.clear();
}

template ConvAlgorithm<float>& choose<float>(const ConvProblem&, Pass, DeviceKind, device_t, Algo);
template ConvAlgorithm<double>& choose<double>(const ConvProblem&, Pass, DeviceKind, device_t, Algo);
template std::optional<Choice> cached_choice<float>(const ConvProblem&, Pass, DeviceKind, device_t);
template std::optional<Choice> cached_choice<double>(const ConvProblem&, Pass, DeviceKind, device_t);
template ConvAlgorithm<half>& choose<half>(const ConvProblem&, Pass, DeviceKind, device_t, Algo);
template std::optional<Choice> cached_choice<half>(const ConvProblem&, Pass, DeviceKind, device_t);
template ConvAlgorithm<bfloat16>& choose<bfloat16>(const ConvProblem&, Pass, DeviceKind, device_t, Algo);
template std::optional<Choice> cached_choice<bfloat16>(const ConvProblem&, Pass, DeviceKind, device_t);

}  // namespace magmadnn::conv
