/// @file rank_output.h
/// How a subcommand runs on every rank of an mpirun job: rank 0 prints, the
/// other ranks print nothing, and a rank that fails says so and ends the job.
#pragma once

#include <exception>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>

#include "magmadnn/comm/communicator.h"

namespace magmadnn::cli {

/// Calls `body` with `out` on rank 0 and a stream that discards on the other
/// ranks, and returns its result. An exception from `body` on any rank is
/// printed to std::cerr as "COMMAND: rank R of N: error: ...", then the whole
/// job ends (distributed::abort_job) with status 2 for a usage or config
/// mistake (is_usage_error), else 1: other ranks may be waiting for this one
/// in a collective.
/// Whether `e` is the user's mistake (exit status 2): a UsageError, a
/// ConfigError, or a rank's report that rank 0 failed with one
/// (run::RootFailure), so every rank of a job agrees on the status.
bool is_usage_error(const std::exception& e);

int run_on_ranks(const std::string& command, const distributed::Communicator& comm, std::ostream& out,
                 const std::function<int(std::ostream&)>& body);

}  // namespace magmadnn::cli
