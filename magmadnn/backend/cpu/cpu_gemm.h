/// @file cpu_gemm.h
/// Introspection of the CPU gemm path, for tests and benchmarks.
#pragma once

#include <cstddef>

namespace magmadnn::cpu {

/// Number of oneDNN matmul primitives created so far (one per distinct float
/// problem); a repeated product must not add one.
std::size_t onednn_matmul_cache_size();

}  // namespace magmadnn::cpu
