// GEMM floor of the MLP benchmark on a GPU: the matrix products of one
// training step of the MagmaDNN paper's MLP (batch 100, 784 -> N x 528 -> 10)
// with cuBLAS alone, timed with CUDA events. It is the GPU counterpart of
// bench_gemm_floor (gemm_floor.cpp): both time the products of
// mlp_step_products.h, in that order. A training step of any framework does these products and more, so
// "magmadnn's step / this floor" is how far the rest of the step costs.
//
// The operands are random (never zeros: a GPU may skip work on them). A
// step's time is the median of `steps` timed steps after 10 warm-up steps,
// each step between two events on one stream; per-product medians with
// --verbose. --tf32 lets cuBLAS use TF32 tensor cores (as --precision tf32).
//
// Usage: bench_gemm_floor_cuda [--steps S] [--layers 1,2,3,4] [--tf32] [--verbose]
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "mlp_step_products.h"

namespace {

using mlp_step::kBatch;
using mlp_step::kEpochs;
using mlp_step::kStepsPerEpoch;

void check(cudaError_t e, const char* what, int line) {
  if (e != cudaSuccess) {
    std::ostringstream os;
    os << "gemm_floor_cuda.cpp:" << line << ": " << what << ": " << cudaGetErrorString(e);
    throw std::runtime_error(os.str());
  }
}
void check(cublasStatus_t s, const char* what, int line) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    std::ostringstream os;
    os << "gemm_floor_cuda.cpp:" << line << ": " << what << ": cuBLAS status " << static_cast<int>(s);
    throw std::runtime_error(os.str());
  }
}
#define CHECK(expr) check((expr), #expr, __LINE__)

// A device buffer of n random floats in [-1, 1).
class DeviceMatrix {
 public:
  DeviceMatrix(std::size_t n, std::mt19937& rng) {
    CHECK(cudaMalloc(&p_, n * sizeof(float)));
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> h(n);
    for (float& v : h) v = u(rng);
    CHECK(cudaMemcpy(p_, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  }
  ~DeviceMatrix() { cudaFree(p_); }
  DeviceMatrix(const DeviceMatrix&) = delete;
  DeviceMatrix& operator=(const DeviceMatrix&) = delete;
  float* get() const noexcept { return p_; }

 private:
  float* p_ = nullptr;
};

// C (m x n) = op(A) op(B), all row-major: A is m x k (k x m when ta), B is
// k x n (n x k when tb). cuBLAS is column-major, where a row-major matrix is
// its transpose, so it computes C^T = op(B)^T op(A)^T.
struct Gemm {
  mlp_step::Product p;
  const float* a;
  const float* b;
  float* c;
  void run(cublasHandle_t h) const {
    const float one = 1.0f, zero = 0.0f;
    const int m = static_cast<int>(p.m), n = static_cast<int>(p.n), k = static_cast<int>(p.k);
    CHECK(cublasSgemm(h, p.tb ? CUBLAS_OP_T : CUBLAS_OP_N, p.ta ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &one, b,
                      p.tb ? k : n, a, p.ta ? m : k, &zero, c, n));
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Options {
  int steps = 50;
  std::vector<int> layers{1, 2, 3, 4};
  bool tf32 = false;
  bool verbose = false;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--steps") {
      o.steps = std::stoi(value());
      if (o.steps < 1) throw std::runtime_error("--steps must be at least 1");
    } else if (a == "--layers") {
      o.layers.clear();
      std::stringstream ss(value());
      for (std::string t; std::getline(ss, t, ',');) {
        const int l = std::stoi(t);
        if (l < 1 || l > 16) throw std::runtime_error("--layers: " + t + " is not in 1..16");
        o.layers.push_back(l);
      }
    } else if (a == "--tf32") {
      o.tf32 = true;
    } else if (a == "--verbose") {
      o.verbose = true;
    } else {
      throw std::runtime_error("unknown option " + a +
                               " (usage: bench_gemm_floor_cuda [--steps S] [--layers 1,2,3,4] [--tf32] [--verbose])");
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) try {
  const Options o = parse(argc, argv);
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("bench_gemm_floor_cuda: no CUDA device; nothing to time\n");
    return 0;
  }
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, 0));
  cublasHandle_t h = nullptr;
  CHECK(cublasCreate(&h));
  cudaStream_t stream = nullptr;
  CHECK(cudaStreamCreate(&stream));
  CHECK(cublasSetStream(h, stream));
  CHECK(cublasSetMathMode(h, o.tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));

  std::printf("GEMMs of one MLP training step (batch %lld) on %s, cuBLAS %s, median of %d steps\n\n",
              static_cast<long long>(kBatch),
              prop.name, o.tf32 ? "TF32" : "FP32", o.steps);
  std::printf("| N | GFLOP/step | ms/step | TFLOP/s | 5-epoch GEMM s |\n|---|---|---|---|---|\n");
  std::mt19937 rng(7);
  for (const int layers : o.layers) {
    // One buffer per (kind, layer), as a framework holds them.
    const std::vector<std::int64_t> dims = mlp_step::widths(layers);
    std::vector<std::vector<std::unique_ptr<DeviceMatrix>>> buffers(5);
    auto data = [&](mlp_step::Operand op) {
      auto& kind = buffers[static_cast<std::size_t>(op.buffer)];
      const auto l = static_cast<std::size_t>(op.layer);
      if (kind.size() <= l) kind.resize(l + 1);
      if (!kind[l]) {
        const auto n = static_cast<std::size_t>(mlp_step::buffer_elements(dims, op.buffer, op.layer));
        kind[l] = std::make_unique<DeviceMatrix>(n, rng);
      }
      return kind[l]->get();
    };
    std::vector<Gemm> step;
    for (const mlp_step::Product& p : mlp_step::products(layers)) step.push_back({p, data(p.a), data(p.b), data(p.c)});
    double flops = 0;
    for (const Gemm& g : step) flops += g.p.flops();
    const auto time = [&](const std::vector<Gemm>& gs) {
      for (int i = 0; i < 10; ++i)
        for (const Gemm& g : gs) g.run(h);
      std::vector<double> ms;
      for (int s = 0; s < o.steps; ++s) {
        CHECK(cudaEventRecord(e0, stream));
        for (const Gemm& g : gs) g.run(h);
        CHECK(cudaEventRecord(e1, stream));
        CHECK(cudaEventSynchronize(e1));
        float t = 0;
        CHECK(cudaEventElapsedTime(&t, e0, e1));
        ms.push_back(t);
      }
      return median(ms);
    };
    const double ms = time(step);
    std::printf("| %d | %.3f | %.4f | %.2f | %.3f |\n", layers, flops * 1e-9, ms, flops / (ms * 1e-3) * 1e-12,
                ms * 1e-3 * kStepsPerEpoch * kEpochs);
    if (o.verbose) {
      for (const Gemm& g : step) {
        const double one = time({g});
        std::printf("|   | %s %c%c m=%lld n=%lld k=%lld | %.4f | %.2f | |\n", g.p.name.c_str(), g.p.ta ? 'T' : 'N',
                    g.p.tb ? 'T' : 'N', static_cast<long long>(g.p.m), static_cast<long long>(g.p.n),
                    static_cast<long long>(g.p.k), one, g.p.flops() / (one * 1e-3) * 1e-12);
      }
    }
  }
  CHECK(cudaGetLastError());
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cublasDestroy(h);
  cudaStreamDestroy(stream);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_gemm_floor_cuda: %s\n", e.what());
  return 1;
}
