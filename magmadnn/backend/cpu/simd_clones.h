/// @file simd_clones.h
/// MAGMADNN_SIMD_CLONES: put before a hot, auto-vectorisable CPU function to
/// have the compiler emit AVX-512, AVX2 and baseline versions of it and pick
/// one at load time from the CPU it runs on.
///
/// Why: the library is built for the baseline x86-64 ISA so that one binary
/// runs on any x86-64 machine (as PyTorch and oneDNN do), yet the kernels
/// that are ours rather than oneDNN's (Winograd transforms, for one) are only
/// fast with wide vectors. Function multi-versioning gives both; the cost is
/// one indirect call per invocation, so mark functions that do a block of
/// work per call, not per element.
///
/// Guarantees: on compilers or targets without `target_clones` on function
/// templates (not GCC, not x86-64, or under nvcc) it expands to nothing and
/// the function is compiled once for the build's ISA. Clang is left out: up
/// to at least Clang 14 it refuses the attribute on templates ("multiversioned
/// functions do not yet support function templates"), which broke the Clang
/// builds (the libFuzzer targets of tests/fuzz).
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__) && \
    !defined(MAGMADNN_NO_SIMD_CLONES)
#define MAGMADNN_SIMD_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define MAGMADNN_SIMD_CLONES
#endif
