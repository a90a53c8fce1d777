// A job in which rank 1 misbehaves at step 7, for the watchdog tests
// (run_mpi_fault.cmake). Every rank does one healthy allreduce at step 6,
// then at step 7 every rank but 1 calls allreduce(1024 x float32, sum) while
// rank 1, depending on the mode:
//   skip   calls the next collective (a barrier) instead;
//   count  calls allreduce with 1000 elements;
//   dtype  calls allreduce with 1024 int32;
//   hang   never calls anything (sleeps 60 s);
//   exit   leaves main() normally without the collective (MPI finalized);
//   kill   is killed by SIGKILL.
// A rank that catches CommError prints "rank R: CommError: <message>" and
// ends the job with distributed::abort_job(3), as an application should.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "magmadnn/comm/communicator_factory.h"

using namespace magmadnn;
using namespace magmadnn::distributed;

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  const int timeout_ms = argc > 2 ? std::atoi(argv[2]) : 2000;
  std::unique_ptr<Communicator> comm = make_communicator("mpi");
  const int rank = comm->rank();
  comm->set_timeout(std::chrono::milliseconds(timeout_ms));
  try {
    std::vector<float> v(1024, 1.0f);
    comm->set_step(6);
    comm->allreduce(host_buffer(v.data(), v.size()), ReduceOp::sum);
    comm->set_step(7);
    if (rank != 1) {
      comm->allreduce(host_buffer(v.data(), v.size()), ReduceOp::sum);
    } else if (mode == "skip") {
      // falls through to the barrier below
    } else if (mode == "count") {
      comm->allreduce(host_buffer(v.data(), 1000), ReduceOp::sum);
    } else if (mode == "dtype") {
      std::vector<std::int32_t> w(1024, 1);
      comm->allreduce(host_buffer(w.data(), w.size()), ReduceOp::sum);
    } else if (mode == "hang") {
      std::this_thread::sleep_for(std::chrono::seconds(60));
    } else if (mode == "exit") {
      std::printf("rank 1: leaving early\n");
      return 0;
    } else if (mode == "kill") {
      std::fflush(stdout);
      std::raise(SIGKILL);
    } else {
      comm->allreduce(host_buffer(v.data(), v.size()), ReduceOp::sum);  // healthy
    }
    comm->barrier();
    std::printf("rank %d: no error\n", rank);
  } catch (const CommError& e) {
    std::printf("rank %d: CommError: %s\n", rank, e.what());
    abort_job(3);
  }
  return 0;
}
