// Fused Winograd F(2x2, 3x3) on the blocked layouts (winograd_blocked.h
// says what and why). The kernels are compiled twice: for x86-64-v3 (AVX2
// and FMA; an AVX-512 machine runs them too, its blocks of 16 channels as
// two vectors of 8) and for the build's baseline, which runs where AVX2 is
// missing (a forced MAGMADNN_BLOCKED_LAYOUT) and is correct, only slower.
#include "magmadnn/conv/winograd_blocked.h"

#include <algorithm>
#include <atomic>

#include "magmadnn/backend/cpu/cpu_parallel.h"
#include "magmadnn/backend/cpu/thread_buffer.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__) && \
    !defined(MAGMADNN_NO_SIMD_CLONES)
#define MAGMADNN_WINOGRAD_BLOCKED_V3 1
#endif

namespace magmadnn::conv::winograd_blocked {

constexpr std::int64_t kTiles = 12;  // two register blocks of 6 tiles

#ifdef MAGMADNN_WINOGRAD_BLOCKED_V3
#pragma GCC push_options
#pragma GCC target("arch=x86-64-v3")
namespace v3 {
#include "magmadnn/conv/winograd_blocked_kernels.inc"
}  // namespace v3
#pragma GCC pop_options
#endif
namespace baseline {
#include "magmadnn/conv/winograd_blocked_kernels.inc"
}  // namespace baseline

namespace {
struct BufferTag {};
std::atomic<bool> force_baseline{false};

// Whether the x86-64-v3 kernels run: the CPU has AVX2 and FMA, and no test
// asked for the baseline ones.
bool use_v3() noexcept {
#ifdef MAGMADNN_WINOGRAD_BLOCKED_V3
  static const bool has_avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has_avx2 && !force_baseline.load(std::memory_order_relaxed);
#else
  return false;
#endif
}

std::int64_t tiles_of(const Geometry& g) { return g.n * ((g.oh + 1) / 2) * ((g.ow + 1) / 2); }
std::int64_t tasks_of(const Geometry& g) { return (tiles_of(g) + kTiles - 1) / kTiles; }
}  // namespace

bool applies(const Geometry& g) noexcept {
  auto block_ok = [](int b) { return b == 8 || b == 16; };
  return block_ok(g.x_block) && block_ok(g.y_block) && g.cin > 0 && g.cout > 0 && g.cin % g.x_block == 0 &&
         g.cout % g.y_block == 0 && g.n > 0 && g.oh > 0 && g.ow > 0 && g.ph >= 0 && g.ph <= 2 && g.pw >= 0 &&
         g.pw <= 2 && g.oh == g.ih + 2 * g.ph - 2 && g.ow == g.iw + 2 * g.pw - 2;
}

std::size_t filter_bytes(std::int64_t cin, std::int64_t cout) noexcept {
  return static_cast<std::size_t>(16 * cin * cout) * sizeof(float);
}

void transform_filters(const float* w, std::int64_t k, std::int64_t c, bool rotate, float* U) {
  const std::int64_t cout = rotate ? c : k;
  cpu::parallel_for(k * c, k * c > 256, [&](std::int64_t kc) {
    const std::int64_t kk = kc / c, cc = kc % c;
    const float* f = w + kc * 9;
    double g[3][3], t[4][3], u[4][4];
    for (int r = 0; r < 3; ++r)
      for (int s = 0; s < 3; ++s) g[r][s] = rotate ? f[(2 - r) * 3 + (2 - s)] : f[r * 3 + s];
    // u = G g G^T, G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1].
    for (int s = 0; s < 3; ++s) {
      t[0][s] = g[0][s];
      t[1][s] = 0.5 * (g[0][s] + g[1][s] + g[2][s]);
      t[2][s] = 0.5 * (g[0][s] - g[1][s] + g[2][s]);
      t[3][s] = g[2][s];
    }
    for (int i = 0; i < 4; ++i) {
      u[i][0] = t[i][0];
      u[i][1] = 0.5 * (t[i][0] + t[i][1] + t[i][2]);
      u[i][2] = 0.5 * (t[i][0] - t[i][1] + t[i][2]);
      u[i][3] = t[i][2];
    }
    // Forward: the input channel is cc, the output kk; rotated, the reverse.
    const std::int64_t in = rotate ? kk : cc, out = rotate ? cc : kk, cin = rotate ? k : c;
    for (int p = 0; p < 16; ++p) U[(p * cin + in) * cout + out] = static_cast<float>(u[p / 4][p % 4]);
  });
}

void run(const Geometry& g, const float* U, const float* x, const float* bias, bool relu, float* y) {
  const std::int64_t tiles = tiles_of(g), tasks = tasks_of(g);
  const std::size_t buffer = static_cast<std::size_t>(16 * kTiles * (g.cin + g.cout)) * sizeof(float);
  const bool v3 = use_v3();
  cpu::parallel_for(tasks, tasks > 1, [&](std::int64_t t) {
    auto* V = static_cast<float*>(cpu::thread_buffer<BufferTag>(buffer, "conv winograd_f2x2 (blocked)"));
    float* M = V + 16 * kTiles * g.cin;
    const std::int64_t t0 = t * kTiles, nt = std::min(kTiles, tiles - t0);
#ifdef MAGMADNN_WINOGRAD_BLOCKED_V3
    if (v3) {
      v3::task(g, U, x, bias, relu, y, t0, nt, V, M);
      return;
    }
#endif
    (void)v3;
    baseline::task(g, U, x, bias, relu, y, t0, nt, V, M);
  });
}

namespace {
// Chunks of tasks the filter pass sums apart: enough for a few threads,
// fixed by the shape, and at most 4 MB of partial sums (for more, the sums
// leave the cache).
std::int64_t filter_chunks(const Geometry& g) {
  const std::int64_t per_chunk = 16 * g.cin * g.cout;
  return std::clamp<std::int64_t>(std::min<std::int64_t>(32, (std::int64_t{1} << 20) / per_chunk), 1,
                                  std::max<std::int64_t>(tasks_of(g), 1));
}
}  // namespace

std::size_t filter_pass_bytes(const Geometry& g) noexcept {
  return static_cast<std::size_t>(filter_chunks(g) * 16 * g.cin * g.cout) * sizeof(float);
}

void run_filter(const Geometry& g, const float* x, const float* dy, float* dw, void* workspace) {
  const std::int64_t tasks = tasks_of(g), tiles = tiles_of(g), chunks = filter_chunks(g);
  const std::int64_t per_chunk = 16 * g.cin * g.cout;
  const std::size_t buffer = static_cast<std::size_t>(16 * kTiles * (g.cin + g.cout)) * sizeof(float);
  auto* dU = static_cast<float*>(workspace);
  const bool v3 = use_v3();
  cpu::parallel_for(chunks, chunks > 1, [&](std::int64_t ch) {
    auto* V = static_cast<float*>(cpu::thread_buffer<BufferTag>(buffer, "conv winograd_f2x2 (blocked)"));
    float* Z = V + 16 * kTiles * g.cin;
    float* part = dU + ch * per_chunk;
    std::fill_n(part, per_chunk, 0.f);
    for (std::int64_t t = tasks * ch / chunks; t < tasks * (ch + 1) / chunks; ++t) {
      const std::int64_t t0 = t * kTiles, nt = std::min(kTiles, tiles - t0);
#ifdef MAGMADNN_WINOGRAD_BLOCKED_V3
      if (v3) {
        v3::filter_task(g, x, dy, t0, nt, V, Z, part);
        continue;
      }
#endif
      (void)v3;
      baseline::filter_task(g, x, dy, t0, nt, V, Z, part);
    }
  });
  // The chunks' sums into the first, in chunk order (the same order for
  // every element, whatever the threads), as streams over whole chunks:
  // gathering each element's chunks at once strode 16 x chunks ways
  // through memory, several ms on a 64-channel layer.
  if (chunks > 1) {
    const std::int64_t spans = std::min<std::int64_t>(per_chunk / 1024 + 1, 64);
    cpu::parallel_for(spans, per_chunk > 65536, [&](std::int64_t sp) {
      const std::int64_t b = per_chunk * sp / spans, e = per_chunk * (sp + 1) / spans;
      for (std::int64_t ch = 1; ch < chunks; ++ch) {
        const float* src = dU + ch * per_chunk;
        for (std::int64_t i = b; i < e; ++i) dU[i] += src[i];
      }
    });
  }
  // dw[k][c] = G^T dU[.][k][c] G.
  cpu::parallel_for(g.cout * g.cin, g.cout * g.cin > 256, [&](std::int64_t kc) {
    const std::int64_t k = kc / g.cin, c = kc % g.cin;
    double u[4][4], t[3][4];
    for (int p = 0; p < 16; ++p) u[p / 4][p % 4] = dU[(p * g.cout + k) * g.cin + c];
    // G^T = [1 1/2 1/2 0; 0 1/2 -1/2 0; 0 1/2 1/2 1].
    for (int j = 0; j < 4; ++j) {
      t[0][j] = u[0][j] + 0.5 * (u[1][j] + u[2][j]);
      t[1][j] = 0.5 * (u[1][j] - u[2][j]);
      t[2][j] = 0.5 * (u[1][j] + u[2][j]) + u[3][j];
    }
    float* out = dw + kc * 9;
    for (int r = 0; r < 3; ++r) {
      out[r * 3 + 0] = static_cast<float>(t[r][0] + 0.5 * (t[r][1] + t[r][2]));
      out[r * 3 + 1] = static_cast<float>(0.5 * (t[r][1] - t[r][2]));
      out[r * 3 + 2] = static_cast<float>(0.5 * (t[r][1] + t[r][2]) + t[r][3]);
    }
  });
}

void use_baseline_kernel_for_testing(bool on) noexcept { force_baseline.store(on); }

}  // namespace magmadnn::conv::winograd_blocked
