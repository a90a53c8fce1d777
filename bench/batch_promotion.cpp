// What promoting a batch costs: the rows of a shuffled Fashion-MNIST-sized
// epoch (60000 x 784) gathered into float batches of 100, from a float data
// set (the copy the loaders made before) and from a uint8 one (promoted per
// batch, data::Samples::gather). Single thread (OMP_NUM_THREADS=1 is set by
// the caller or not: gather splits only batches of 64 KiB or more).
//
//   bench_batch_promotion [rounds]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <vector>

#include "magmadnn/data/samples.h"

using namespace magmadnn;

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 5;
  const std::int64_t n = 60000, row = 784, batch = 100;
  std::mt19937 gen(1);
  auto bytes = std::make_shared<std::vector<std::uint8_t>>(static_cast<std::size_t>(n * row));
  for (auto& b : *bytes) b = static_cast<std::uint8_t>(gen());
  const auto u8 = data::Samples<float>::from_bytes({n, row}, bytes, {1.0 / 255.0, 0.0});
  const data::Samples<float> f32 = u8.to_tensor();
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), gen);
  std::vector<float> out(static_cast<std::size_t>(batch * row));
  auto epoch = [&](const data::Samples<float>& s) {
    const auto t0 = std::chrono::steady_clock::now();
    for (std::int64_t b = 0; b < n; b += batch) s.gather(order.data(), b, batch, out.data());
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  std::vector<double> tf, tu;
  for (int r = 0; r < rounds; ++r) {  // alternated, so both see the same machine
    tf.push_back(epoch(f32));
    tu.push_back(epoch(u8));
  }
  std::sort(tf.begin(), tf.end());
  std::sort(tu.begin(), tu.end());
  const double mf = tf[tf.size() / 2], mu = tu[tu.size() / 2], batches = double(n / batch);
  std::printf("epoch of %lld batches of %lld x %lld, median of %d rounds\n", (long long)(n / batch),
              (long long)batch, (long long)row, rounds);
  std::printf("float data set (memcpy rows):   %.2f ms/epoch  %.1f us/batch\n", mf * 1e3, mf / batches * 1e6);
  std::printf("uint8 data set (promote rows):  %.2f ms/epoch  %.1f us/batch\n", mu * 1e3, mu / batches * 1e6);
  return 0;
}
