// GEMM floor for the MLP benchmark: how fast can the matrix products of one
// training step of the MagmaDNN paper's MLP (batch 100, 784 -> N x 528 -> 10)
// run with the GEMM library alone, and how far is that from the CPU's peak?
//
// For N = 1..4 one step is the products of mlp_step_products.h (forward up
// the layers, then the weight and input gradients down), with oneDNN matmul primitives
// (created once, transposes as strides, like the CPU backend) and with
// OpenBLAS cblas_sgemm, and with oneDNN in bf16 (operands rounded to bf16
// once, before timing, as mixed precision casts each weight once per step;
// float accumulation and output, like the CPU backend's bf16 path). A step's time is the median of timed steps; the
// projected 5-epoch time is that times 600 steps x 5 epochs, a floor under
// any framework's training time (which adds activations, loss, updates).
//
// The fp32 peak is reported two ways: measured with an FMA microkernel on
// the same threads (AVX-512, else AVX2), and computed from the machine's
// description: cores x GHz x FMA lanes x FMA pipes x 2.
//
// Usage: bench_gemm_floor [--threads T] [--steps S] [--layers 1,2,3,4] [--verbose]
#include <cblas.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <immintrin.h>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "magmadnn/backend/cpu/onednn_compat.h"
#include "mlp_step_products.h"

namespace {

using mlp_step::kBatch;
using mlp_step::kEpochs;
using mlp_step::kStepsPerEpoch;

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// One C = op(A) op(B) product of a step, row-major, beta = 0.
struct Gemm {
  std::string name;
  bool ta, tb;
  std::int64_t m, n, k;
  const float *A, *B;
  float* C;
  double flops() const { return 2.0 * double(m) * double(n) * double(k); }
};

// Buffers of one MLP step: activations, weights, output gradients, and the
// products that connect them.
struct MlpStep {
  std::vector<std::vector<float>> act, weight, grad_out, grad_w, grad_in;
  std::vector<Gemm> gemms;

  explicit MlpStep(int hidden_layers) {
    using mlp_step::Buffer;
    const std::vector<std::int64_t> dims = mlp_step::widths(hidden_layers);
    const int L = mlp_step::weight_layers(hidden_layers);
    auto filled = [&](Buffer b, int l, float v) {
      return std::vector<float>(static_cast<std::size_t>(mlp_step::buffer_elements(dims, b, l)), v);
    };
    for (int l = 0; l <= L; ++l) act.push_back(filled(Buffer::act, l, 0.01f * (l + 1)));
    for (int l = 0; l < L; ++l) {
      weight.push_back(filled(Buffer::weight, l, 0.02f));
      grad_out.push_back(filled(Buffer::grad_out, l, 0.03f));
      grad_w.push_back(filled(Buffer::grad_w, l, 0.0f));
      grad_in.push_back(filled(Buffer::grad_in, l, 0.0f));
    }
    auto data = [this](mlp_step::Operand o) -> float* {
      std::vector<std::vector<float>>* all[] = {&act, &weight, &grad_out, &grad_w, &grad_in};
      return (*all[static_cast<int>(o.buffer)])[static_cast<std::size_t>(o.layer)].data();
    };
    for (const mlp_step::Product& p : mlp_step::products(hidden_layers))
      gemms.push_back({p.name, p.ta, p.tb, p.m, p.n, p.k, data(p.a), data(p.b), data(p.c)});
  }
  double flops() const {
    double f = 0;
    for (const auto& g : gemms) f += g.flops();
    return f;
  }
};

// A library runs every product of a step; run(i) executes product i.
struct Library {
  std::string name;
  std::function<void(std::size_t)> run;
};

// bf16 bits of f, rounded to nearest even (inputs here are finite).
std::uint16_t bf16_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return static_cast<std::uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

Library onednn_library(const std::vector<Gemm>& gemms, bool bf16) {
  using namespace dnnl;
  auto eng = std::make_shared<engine>(engine::kind::cpu, 0);
  auto strm = std::make_shared<stream>(*eng);
  struct Bound {
    matmul prim;
    memory a, b, c;
  };
  auto bound = std::make_shared<std::vector<Bound>>();
  auto copies = std::make_shared<std::vector<std::vector<std::uint16_t>>>();
  copies->reserve(2 * gemms.size());
  auto rounded = [&copies](const float* p, std::int64_t n) {
    copies->emplace_back(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) copies->back()[i] = bf16_bits(p[i]);
    return static_cast<void*>(copies->back().data());
  };
  const auto in_type = bf16 ? memory::data_type::bf16 : memory::data_type::f32;
  for (const auto& g : gemms) {
    using dims = memory::dims;
    // A transposed operand is the same buffer read with swapped strides.
    memory::desc a_md(dims{g.m, g.k}, in_type, g.ta ? dims{1, g.m} : dims{g.k, 1});
    memory::desc b_md(dims{g.k, g.n}, in_type, g.tb ? dims{1, g.k} : dims{g.n, 1});
    memory::desc c_md(dims{g.m, g.n}, memory::data_type::f32, dims{g.n, 1});
    const matmul::primitive_desc pd = magmadnn::onednn_compat::matmul_pd(*eng, a_md, b_md, nullptr, c_md);
    void* a = bf16 ? rounded(g.A, g.m * g.k) : const_cast<float*>(g.A);
    void* b = bf16 ? rounded(g.B, g.k * g.n) : const_cast<float*>(g.B);
    bound->push_back({matmul(pd), memory(a_md, *eng, a), memory(b_md, *eng, b), memory(c_md, *eng, g.C)});
  }
  return {"oneDNN " + magmadnn::onednn_compat::runtime_version() + (bf16 ? " bf16" : ""),
          [eng, strm, bound, copies](std::size_t i) {
            auto& b = (*bound)[i];
            b.prim.execute(*strm, {{DNNL_ARG_SRC, b.a}, {DNNL_ARG_WEIGHTS, b.b}, {DNNL_ARG_DST, b.c}});
            strm->wait();
          }};
}

// Whether oneDNN can make a bf16 matmul here: it has none without AVX-512
// (oneDNN 2.6; 3.x also makes them on AVX2 cores with AVX-NE-CONVERT), and
// primitive creation then throws. The library's own probe
// (cpu::bf16_matmul_native) is not used: this program links the GEMM
// libraries alone, not magmadnn.
bool bf16_matmul_native() {
  using namespace dnnl;
  try {
    const engine eng(engine::kind::cpu, 0);
    const memory::desc a({2, 2}, memory::data_type::bf16, memory::format_tag::ab);
    const memory::desc c({2, 2}, memory::data_type::f32, memory::format_tag::ab);
    magmadnn::onednn_compat::matmul_pd(eng, a, a, nullptr, c);
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
}

Library openblas_library(const std::vector<Gemm>& gemms) {
  return {"OpenBLAS", [&gemms](std::size_t i) {
            const Gemm& g = gemms[i];
            const int lda = static_cast<int>(g.ta ? g.m : g.k), ldb = static_cast<int>(g.tb ? g.k : g.n);
            cblas_sgemm(CblasRowMajor, g.ta ? CblasTrans : CblasNoTrans, g.tb ? CblasTrans : CblasNoTrans,
                        static_cast<int>(g.m), static_cast<int>(g.n), static_cast<int>(g.k), 1.0f, g.A, lda, g.B,
                        ldb, 0.0f, g.C, static_cast<int>(g.n));
          }};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

// Median seconds of one whole step (every product in order), and of each
// product alone.
std::pair<double, std::vector<double>> time_step(const Library& lib, std::size_t count, int steps) {
  for (int w = 0; w < 5; ++w)
    for (std::size_t i = 0; i < count; ++i) lib.run(i);
  std::vector<double> step_times;
  std::vector<std::vector<double>> each(count);
  for (int s = 0; s < steps; ++s) {
    const auto t_step = Clock::now();
    for (std::size_t i = 0; i < count; ++i) {
      const auto t0 = Clock::now();
      lib.run(i);
      each[i].push_back(seconds_since(t0));
    }
    step_times.push_back(seconds_since(t_step));
  }
  std::vector<double> per;
  for (auto& e : each) per.push_back(median(e));
  return {median(step_times), per};
}

// ---------------------------------------------------------------- peak

// 16 independent FMA chains per thread: enough to cover a 4-cycle latency on
// 2 pipes with room to spare, and few enough to stay in registers. Written
// out per ISA because target attributes do not reach into lambdas.
__attribute__((target("avx512f"))) float fma_avx512(std::int64_t iters) {
  __m512 acc[16];
  for (int j = 0; j < 16; ++j) acc[j] = _mm512_set1_ps(0.001f * static_cast<float>(j));
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (std::int64_t it = 0; it < iters; ++it)
#pragma GCC unroll 16
    for (int j = 0; j < 16; ++j) acc[j] = _mm512_fmadd_ps(acc[j], a, b);
  float sum = 0;
  for (int j = 0; j < 16; ++j) sum += _mm512_reduce_add_ps(acc[j]);
  return sum;
}

__attribute__((target("avx2,fma"))) float fma_avx2(std::int64_t iters) {
  __m256 acc[16];
  for (int j = 0; j < 16; ++j) acc[j] = _mm256_set1_ps(0.001f * static_cast<float>(j));
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (std::int64_t it = 0; it < iters; ++it)
#pragma GCC unroll 16
    for (int j = 0; j < 16; ++j) acc[j] = _mm256_fmadd_ps(acc[j], a, b);
  alignas(32) float lanes[8];
  float sum = 0;
  for (int j = 0; j < 16; ++j) {
    _mm256_store_ps(lanes, acc[j]);
    sum += lanes[0];
  }
  return sum;
}

struct PeakMeasurement {
  std::string isa;
  int lanes = 0;
  double gflops = 0;
};

PeakMeasurement measure_peak(int threads) {
  PeakMeasurement p;
  std::function<float(std::int64_t)> kernel;
  if (__builtin_cpu_supports("avx512f")) {
    p = {"AVX-512", 16, 0};
    kernel = fma_avx512;
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    p = {"AVX2+FMA", 8, 0};
    kernel = fma_avx2;
  } else {
    return p;  // no FMA: nothing meaningful to measure
  }
  // Many short trials, best one counts: a trial of ~10 ms is rarely
  // interrupted even on a machine shared with other work.
  const std::int64_t iters = 4'000'000;
  double best = 0;
  for (int trial = 0; trial < 60; ++trial) {
    std::vector<float> sink(threads);
    std::vector<std::thread> pool;
    const auto t0 = Clock::now();
    for (int t = 0; t < threads; ++t) pool.emplace_back([&, t] { sink[t] = kernel(iters); });
    for (auto& th : pool) th.join();
    const double s = seconds_since(t0);
    if (sink[0] == 12345.0f) std::puts("");  // keeps the result alive
    best = std::max(best, double(threads) * double(iters) * 16.0 * p.lanes * 2.0 / s / 1e9);
  }
  p.gflops = best;
  return p;
}

// What /proc/cpuinfo and sysfs say: physical cores, nominal or maximum GHz.
struct CpuDescription {
  std::string model;
  int cores = 0;
  double ghz = 0;
  std::string ghz_source;
};

CpuDescription describe_cpu() {
  CpuDescription d;
  std::ifstream in("/proc/cpuinfo");
  std::string line, phys = "0";
  std::set<std::string> core_ids;
  while (std::getline(in, line)) {
    auto value = [&] { return line.substr(line.find(':') + 2); };
    if (line.rfind("model name", 0) == 0 && d.model.empty()) d.model = value();
    if (line.rfind("physical id", 0) == 0) phys = value();
    if (line.rfind("core id", 0) == 0) core_ids.insert(phys + ":" + value());
    if (line.rfind("cpu MHz", 0) == 0 && d.ghz == 0) {
      d.ghz = std::atof(value().c_str()) / 1000.0;
      d.ghz_source = "cpu MHz in /proc/cpuinfo";
    }
  }
  d.cores = core_ids.empty() ? static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)) : static_cast<int>(core_ids.size());
  std::ifstream maxf("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
  double khz = 0;
  if (maxf >> khz && khz > 0) {
    d.ghz = khz / 1e6;
    d.ghz_source = "cpuinfo_max_freq (boost)";
  }
  return d;
}

std::vector<int> parse_layers(const std::string& s) {
  std::vector<int> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const int v = std::atoi(item.c_str());
    if (v < 1 || v > 64) throw std::invalid_argument("--layers: '" + item + "' is not a layer count in 1..64");
    out.push_back(v);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) try {
  int threads = 2, steps = 50;
  bool verbose = false;
  std::vector<int> layers{1, 2, 3, 4};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    if (a == "--threads") threads = std::atoi(next().c_str());
    else if (a == "--steps") steps = std::atoi(next().c_str());
    else if (a == "--layers") layers = parse_layers(next());
    else if (a == "--verbose") verbose = true;
    else throw std::invalid_argument("unknown argument '" + a + "' (known: --threads --steps --layers --verbose)");
  }
  if (threads < 1 || steps < 1) throw std::invalid_argument("--threads and --steps must be positive");
  omp_set_num_threads(threads);         // oneDNN's OpenMP runtime
  openblas_set_num_threads(threads);    // OpenBLAS's own thread pool

  const CpuDescription cpu = describe_cpu();
  const PeakMeasurement peak = measure_peak(threads);
  const int pipes = 2;  // FMA pipes per core: 2 on every AVX2/AVX-512 x86 server core we target
  const int used_cores = std::min(threads, cpu.cores);
  const double computed = used_cores * cpu.ghz * peak.lanes * pipes * 2.0;
  std::printf("CPU: %s, %d cores, %.2f GHz (%s)\n", cpu.model.c_str(), cpu.cores, cpu.ghz, cpu.ghz_source.c_str());
  // A virtual machine shows the nominal clock; the measured peak tells the
  // clock the cores really ran at, if they retire `pipes` FMAs per cycle.
  std::printf("fp32 peak on %d threads: measured %.1f GFLOP/s (%s FMA microkernel; %.1f FLOP/cycle/core at %.2f GHz,\n"
              "  or %d FLOP/cycle/core at an effective %.2f GHz)\n",
              threads, peak.gflops, peak.isa.c_str(), peak.gflops / (used_cores * cpu.ghz), cpu.ghz,
              peak.lanes * pipes * 2, peak.gflops / (used_cores * peak.lanes * pipes * 2.0));
  std::printf("fp32 peak computed from the CPU description: %.1f GFLOP/s = %d cores x %.2f GHz x %d lanes x %d FMA "
              "pipes x 2\n", computed, used_cores, cpu.ghz, peak.lanes, pipes);
  std::printf("GEMMs of one MLP training step (batch %lld), median of %d steps, %d threads\n\n",
              static_cast<long long>(kBatch), steps, threads);
  // One library at a time over every N: OpenMP (oneDNN) and OpenBLAS worker
  // threads that spin after their last call would otherwise steal the cores
  // from the other library's threads.
  std::vector<MlpStep> steps_by_n;
  for (int n : layers) steps_by_n.emplace_back(n);
  std::vector<std::vector<std::string>> rows(layers.size());
  std::vector<std::function<Library(const std::vector<Gemm>&)>> libraries = {
      [](const std::vector<Gemm>& g) { return onednn_library(g, false); }};
  if (bf16_matmul_native()) {
    libraries.push_back([](const std::vector<Gemm>& g) { return onednn_library(g, true); });
  } else {
    std::printf("(no oneDNN bf16 rows: oneDNN %s has no bf16 matmul on this CPU)\n\n",
                magmadnn::onednn_compat::runtime_version().c_str());
  }
  libraries.push_back(openblas_library);
  for (const auto& make : libraries) {
    for (std::size_t li = 0; li < layers.size(); ++li) {
      const MlpStep& step = steps_by_n[li];
      const Library lib = make(step.gemms);
      const auto [step_s, per] = time_step(lib, step.gemms.size(), steps);
      const double gflops = step.flops() / step_s / 1e9;
      char line[512];
      std::snprintf(line, sizeof line, "| %d | %.3f | %s | %.3f | %.1f | %.0f%% | %.2f |\n", layers[li],
                    step.flops() / 1e9, lib.name.c_str(), step_s * 1e3, gflops, 100.0 * gflops / peak.gflops,
                    step_s * kStepsPerEpoch * kEpochs);
      rows[li].push_back(line);
      if (verbose)
        for (std::size_t i = 0; i < per.size(); ++i) {
          const Gemm& g = step.gemms[i];
          std::snprintf(line, sizeof line, "|   | %s %c%c m=%lld n=%lld k=%lld | %s | %.4f | %.1f | | |\n",
                        g.name.c_str(), g.ta ? 'T' : 'N', g.tb ? 'T' : 'N', static_cast<long long>(g.m),
                        static_cast<long long>(g.n), static_cast<long long>(g.k), lib.name.c_str(), per[i] * 1e3,
                        g.flops() / per[i] / 1e9);
          rows[li].push_back(line);
        }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // let the library's threads go idle
  }
  std::printf("| N | GFLOP/step | library | ms/step | GFLOP/s | %% of measured peak | 5-epoch GEMM s |\n");
  std::printf("|---|---|---|---|---|---|---|\n");
  for (const auto& r : rows)
    for (const auto& line : r) std::fputs(line.c_str(), stdout);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_gemm_floor: %s\n", e.what());
  return 1;
}
