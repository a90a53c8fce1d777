/// @file types.h
/// The vocabulary types shared by every layer of magmadnn: where memory lives
/// (memory_t), which device (device_t), and the element types (dtype).
#pragma once

#include <cstdint>
#include <string>

#include "magmadnn/core/half.h"

namespace magmadnn {

/// Where a MemoryManager keeps its data (paper §2.1).
///  - HOST: host memory only.
///  - DEVICE: GPU memory only.
///  - MANAGED: magmadnn's own mirror, a host and a device copy that are kept
///    coherent lazily: a side is copied only when it is read while stale.
///    Without a GPU, MANAGED lives on the host.
///  - CUDA_MANAGED: CUDA unified memory (cudaMallocManaged).
enum memory_t { HOST = 0, DEVICE = 1, MANAGED = 2, CUDA_MANAGED = 3 };

/// Index of a GPU (or 0 for the host).
using device_t = int;

/// Element types a Tensor can store. Arithmetic kernels exist for float and
/// double everywhere; half and bfloat16 are storage types with conversions.
enum class dtype : std::uint8_t { f32 = 0, f64 = 1, f16 = 2, bf16 = 3, i32 = 4, i64 = 5 };

template <typename T>
struct dtype_of;
template <> struct dtype_of<float> { static constexpr dtype value = dtype::f32; };
template <> struct dtype_of<double> { static constexpr dtype value = dtype::f64; };
template <> struct dtype_of<half> { static constexpr dtype value = dtype::f16; };
template <> struct dtype_of<bfloat16> { static constexpr dtype value = dtype::bf16; };
template <> struct dtype_of<std::int32_t> { static constexpr dtype value = dtype::i32; };
template <> struct dtype_of<std::int64_t> { static constexpr dtype value = dtype::i64; };

template <typename T>
inline constexpr dtype dtype_v = dtype_of<T>::value;

/// Bytes per element of a dtype.
std::size_t dtype_size(dtype t) noexcept;
/// "float32", "float64", "float16", "bfloat16", "int32", "int64".
const char* dtype_name(dtype t) noexcept;
/// "HOST", "DEVICE", "MANAGED", "CUDA_MANAGED".
const char* memory_name(memory_t m) noexcept;

/// Compatibility name from the MagmaDNN paper for the half type.
using magmaHalf = half;

}  // namespace magmadnn
