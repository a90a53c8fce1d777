#include "magmadnn/compute/autocast.h"

#include <array>
#include <atomic>

#include "magmadnn/core/errors.h"
#include "magmadnn/core/thread_precision.h"

namespace magmadnn::autocast {
namespace {

// The policy. Order must follow OpKind (checked by rule()).
constexpr std::array<Rule, 9> kTable{{
    {OpKind::Gemm, "gemm", true, "compute-bound; float accumulation keeps K-term sums accurate"},
    {OpKind::Conv, "conv", true, "compute-bound; float accumulation as for GEMM"},
    {OpKind::Softmax, "softmax", false, "exp overflows and the normalising sum loses terms in 8 bits"},
    {OpKind::CrossEntropy, "cross_entropy", false, "log of small probabilities needs float's range and bits"},
    {OpKind::Reduction, "reduction", false, "long sums lose small terms in an 8-bit mantissa"},
    {OpKind::Normalization, "normalization", false, "variance is a difference of nearly equal sums"},
    {OpKind::Loss, "loss", false, "the value optimised and reported; its gradient seeds backward"},
    {OpKind::Pooling, "pooling", false, "memory-bound: low precision saves no time"},
    {OpKind::Elementwise, "elementwise", false, "memory-bound; updates of fp32 masters must not round"},
}};

std::atomic<std::uint64_t> g_casts{0};
std::atomic<bool> g_fused_update_casts{true};

}  // namespace

std::span<const Rule> table() { return kTable; }

const Rule& rule(OpKind kind) {
  const auto i = static_cast<std::size_t>(kind);
  MAGMADNN_CHECK(i < kTable.size() && kTable[i].kind == kind, ValueError,
                 "autocast: no rule for op kind " << i);
  return kTable[i];
}

dtype compute_dtype(OpKind kind, Precision p) {
  if (!rule(kind).low_precision) return dtype::f32;
  switch (p) {
    case Precision::BF16: return dtype::bf16;
    case Precision::FP16: return dtype::f16;
    default: return dtype::f32;
  }
}

Precision current() noexcept { return thread_precision(); }

bool bf16(OpKind kind) noexcept {
  return thread_precision() == Precision::BF16 && kTable[static_cast<std::size_t>(kind)].low_precision;
}

AutocastScope::AutocastScope(Precision p) noexcept : previous_(thread_precision()) { set_thread_precision(p); }
AutocastScope::~AutocastScope() { set_thread_precision(previous_); }

std::uint64_t cast_count() noexcept { return g_casts.load(std::memory_order_relaxed); }
void count_cast() noexcept { g_casts.fetch_add(1, std::memory_order_relaxed); }

bool fused_update_casts() noexcept { return g_fused_update_casts.load(std::memory_order_relaxed); }
void set_fused_update_casts(bool on) noexcept { g_fused_update_casts.store(on, std::memory_order_relaxed); }

}  // namespace magmadnn::autocast
