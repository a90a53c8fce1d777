// GEMM floor of the MLP benchmark on a GPU: the matrix products of one
// training step of the MagmaDNN paper's MLP (batch 100, 784 -> N x 528 -> 10)
// with cuBLAS alone, timed with CUDA events. It is the GPU counterpart of
// bench_gemm_floor (gemm_floor.cpp), with the same products in the same
// order, per layer l with W_l of shape (out, in):
//   forward   Y  = X  W^T   (m = batch, n = out, k = in)
//   backward  dW = dY^T X   (m = out,   n = in,  k = batch)
//             dX = dY W     (m = batch, n = in,  k = out), skipped for the
//                                input layer (no gradient w.r.t. the data)
// A training step of any framework does these products and more, so
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

namespace {

constexpr int kBatch = 100, kIn = 784, kHidden = 528, kOut = 10;
constexpr int kStepsPerEpoch = 60000 / kBatch, kEpochs = 5;

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
  DeviceMatrix(std::size_t n, std::mt19937& rng) : n_(n) {
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
  std::size_t n_;
  float* p_ = nullptr;
};

// C (m x n) = op(A) op(B), all row-major: A is m x k (k x m when ta), B is
// k x n (n x k when tb). cuBLAS is column-major, where a row-major matrix is
// its transpose, so it computes C^T = op(B)^T op(A)^T.
struct Gemm {
  std::string name;
  bool ta, tb;
  int m, n, k;
  const float* a;
  const float* b;
  float* c;
  void run(cublasHandle_t h) const {
    const float one = 1.0f, zero = 0.0f;
    CHECK(cublasSgemm(h, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &one, b,
                      tb ? k : n, a, ta ? m : k, &zero, c, n));
  }
  double flops() const { return 2.0 * m * n * k; }
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

  std::printf("GEMMs of one MLP training step (batch %d) on %s, cuBLAS %s, median of %d steps\n\n", kBatch,
              prop.name, o.tf32 ? "TF32" : "FP32", o.steps);
  std::printf("| N | GFLOP/step | ms/step | TFLOP/s | 5-epoch GEMM s |\n|---|---|---|---|---|\n");
  std::mt19937 rng(7);
  for (const int layers : o.layers) {
    // Widths 784, 528 x layers, 10; one weight, activation and gradient
    // buffer per layer, as a framework holds them.
    std::vector<int> width{kIn};
    for (int l = 0; l < layers; ++l) width.push_back(kHidden);
    width.push_back(kOut);
    std::vector<std::unique_ptr<DeviceMatrix>> w, act, dact, dw;
    act.push_back(std::make_unique<DeviceMatrix>(std::size_t(kBatch) * kIn, rng));
    dact.push_back(nullptr);
    for (std::size_t l = 0; l + 1 < width.size(); ++l) {
      w.push_back(std::make_unique<DeviceMatrix>(std::size_t(width[l + 1]) * width[l], rng));
      dw.push_back(std::make_unique<DeviceMatrix>(std::size_t(width[l + 1]) * width[l], rng));
      act.push_back(std::make_unique<DeviceMatrix>(std::size_t(kBatch) * width[l + 1], rng));
      dact.push_back(std::make_unique<DeviceMatrix>(std::size_t(kBatch) * width[l + 1], rng));
    }
    std::vector<Gemm> step;
    for (std::size_t l = 0; l + 1 < width.size(); ++l) {
      step.push_back({"fwd" + std::to_string(l) + " NT", false, true, kBatch, width[l + 1], width[l], act[l]->get(),
                      w[l]->get(), act[l + 1]->get()});
    }
    for (std::size_t l = width.size() - 1; l-- > 0;) {
      step.push_back({"dW" + std::to_string(l) + " TN", true, false, width[l + 1], width[l], kBatch,
                      dact[l + 1]->get(), act[l]->get(), dw[l]->get()});
      if (l > 0) {
        step.push_back({"dX" + std::to_string(l) + " NN", false, false, kBatch, width[l], width[l + 1],
                        dact[l + 1]->get(), w[l]->get(), dact[l]->get()});
      }
    }
    double flops = 0;
    for (const Gemm& g : step) flops += g.flops();
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
        std::printf("|   | %s m=%d n=%d k=%d | %.4f | %.2f | |\n", g.name.c_str(), g.m, g.n, g.k, one,
                    g.flops() / (one * 1e-3) * 1e-12);
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
