/// @file null_stream.h
/// A stream buffer that discards what it is given. Under mpirun the ranks
/// other than 0 print through it, so only rank 0's output shows (their
/// errors still go to std::cerr).
#pragma once

#include <streambuf>

namespace magmadnn::cli {

class NullBuffer : public std::streambuf {
 protected:
  int overflow(int c) override { return traits_type::not_eof(c); }
};

}  // namespace magmadnn::cli
