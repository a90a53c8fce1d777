#include "magmadnn/conv/cpu_conv_util.h"

#include "magmadnn/backend/cpu/simd_clones.h"

namespace magmadnn::conv::cpu_detail {

// Why 8 partial sums: one double accumulator is a serial chain GCC may not
// reorder, so the bias gradient of the FFT and Winograd passes ran at one
// add per cycle (0.04 ms of a LeNet-5 step); 8 lanes of independent sums are
// a vector the compiler keeps as such.
template <typename T>
MAGMADNN_SIMD_CLONES double sum_in_double(const T* p, std::int64_t n) {
  double acc[8] = {};
  std::int64_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (int l = 0; l < 8; ++l) acc[l] += static_cast<double>(p[j + l]);
  double tail = 0;
  for (; j < n; ++j) tail += static_cast<double>(p[j]);
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail;
}

template double sum_in_double<float>(const float*, std::int64_t);
template double sum_in_double<double>(const double*, std::int64_t);

}  // namespace magmadnn::conv::cpu_detail
