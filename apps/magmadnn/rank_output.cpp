#include "rank_output.h"

#include <iostream>
#include <sstream>
#include <streambuf>

#include "args.h"
#include "magmadnn/comm/communicator_factory.h"
#include "magmadnn/run/across_ranks.h"
#include "magmadnn/run/spec.h"

namespace magmadnn::cli {
namespace {

class NullBuffer : public std::streambuf {
 protected:
  int overflow(int c) override { return traits_type::not_eof(c); }
};

}  // namespace

bool is_usage_error(const std::exception& e) {
  if (dynamic_cast<const UsageError*>(&e) != nullptr || dynamic_cast<const run::ConfigError*>(&e) != nullptr)
    return true;
  const auto* root = dynamic_cast<const run::RootFailure*>(&e);
  return root != nullptr && root->usage();
}

int run_on_ranks(const std::string& command, const distributed::Communicator& comm, std::ostream& out,
                 const std::function<int(std::ostream&)>& body) {
  NullBuffer discard;
  std::ostream quiet_stream(&discard);
  try {
    return body(comm.rank() == 0 ? out : quiet_stream);
  } catch (const std::exception& e) {
    out.flush();
    // One write, so the lines of ranks failing together do not interleave.
    std::ostringstream line;
    line << command << ": rank " << comm.rank() << " of " << comm.size() << ": error: " << e.what() << "\n";
    std::cerr << line.str() << std::flush;
    distributed::abort_job(is_usage_error(e) ? 2 : 1);
  }
}

}  // namespace magmadnn::cli
