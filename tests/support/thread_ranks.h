// Runs one body per rank, each on its own thread (the ranks of a
// ThreadCommunicator group), and rethrows the first error any rank threw
// once all have ended.
#pragma once

#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace magmadnn::test {

template <class Body>
void on_thread_ranks(int ranks, Body body) {
  std::exception_ptr error;
  std::mutex mu;
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      try {
        body(r);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!error) error = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace magmadnn::test
