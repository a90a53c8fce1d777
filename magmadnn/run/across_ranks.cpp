#include "magmadnn/run/across_ranks.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "magmadnn/comm/broadcast_text.h"
#include "magmadnn/data/shard.h"
#include "magmadnn/parallel/layer_state.h"

namespace magmadnn::run {
namespace {

using distributed::host_buffer;

}  // namespace

Json share_config(distributed::Communicator& comm, const std::function<Json()>& make_config,
                  const std::function<bool(const std::exception&)>& is_usage) {
  // Rank 0 sends a status then the text: status 0 is a config, 1 an
  // error message, 2 the message of a usage or config mistake, so the others
  // stop (with rank 0's exit status) instead of waiting for a config that
  // never comes.
  std::string text;
  std::exception_ptr failure;
  std::int64_t status = 0;
  if (comm.rank() == 0) {
    try {
      text = make_config().dump();
    } catch (const std::exception& e) {
      failure = std::current_exception();
      text = e.what();
      const bool usage = is_usage ? is_usage(e) : dynamic_cast<const ConfigError*>(&e) != nullptr;
      status = usage ? 2 : 1;
    }
  }
  if (comm.size() > 1) {
    comm.broadcast(host_buffer(&status, 1), 0);
    distributed::broadcast_text(comm, text, 0);
  }
  if (failure) std::rethrow_exception(failure);
  if (status != 0) {
    throw RootFailure("rank " + std::to_string(comm.rank()) + ": rank 0 could not prepare the run: " + text,
                      status == 2);
  }
  return Json::parse(text);
}

std::uint64_t fingerprint(const Tensor<float>& t) {
  // FNV-1a over the shape, then over the values as 32-bit words.
  std::uint64_t h = 1469598103934665603ull;
  auto mix = [&h](std::uint64_t v) { h = (h ^ v) * 1099511628211ull; };
  for (std::int64_t d : t.shape().dims()) mix(static_cast<std::uint64_t>(d));
  const Tensor<float> host = t.get_memory_type() == DEVICE ? t.to(HOST) : t;
  const float* p = host.host_data();
  for (std::int64_t i = 0; i < host.size(); ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, p + i, sizeof bits);
    mix(bits);
  }
  return h;
}

std::uint64_t fingerprint(const data::Samples<float>& x) {
  if (x.is_generated()) {
    // Computed samples: their values, a chunk of rows at a time.
    std::uint64_t h = 1469598103934665603ull;
    auto mix = [&h](std::uint64_t v) { h = (h ^ v) * 1099511628211ull; };
    for (std::int64_t d : x.shape().dims()) mix(static_cast<std::uint64_t>(d));
    const std::int64_t chunk = 64, row = x.row_size();
    std::vector<float> buf(static_cast<std::size_t>(chunk * row));
    for (std::int64_t r = 0; r < x.rows(); r += chunk) {
      const std::int64_t n = std::min(chunk, x.rows() - r);
      x.gather(nullptr, r, n, buf.data());
      for (std::int64_t i = 0; i < n * row; ++i) {
        std::uint32_t bits;
        std::memcpy(&bits, &buf[static_cast<std::size_t>(i)], sizeof bits);
        mix(bits);
      }
    }
    return h;
  }
  if (!x.is_bytes()) return fingerprint(x.tensor());
  std::uint64_t h = 1469598103934665603ull;
  auto mix = [&h](std::uint64_t v) { h = (h ^ v) * 1099511628211ull; };
  for (std::int64_t d : x.shape().dims()) mix(static_cast<std::uint64_t>(d));
  for (double v : {x.byte_scale().scale, x.byte_scale().shift}) {
    std::uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    mix(bits);
  }
  const std::uint8_t* p = x.byte_data();
  for (std::int64_t i = 0; i < x.size(); ++i) mix(p[i]);
  return h;
}

void check_same_on_every_rank(distributed::Communicator& comm, std::uint64_t value, const std::string& what) {
  if (comm.size() == 1) return;
  std::int64_t root = static_cast<std::int64_t>(value);
  comm.broadcast(host_buffer(&root, 1), 0);
  const bool same = static_cast<std::uint64_t>(root) == value;
  std::int64_t differing = same ? 0 : 1;
  comm.allreduce(host_buffer(&differing, 1), distributed::ReduceOp::sum);
  if (differing == 0) return;
  if (!same) {
    MAGMADNN_THROW(ValueError, "rank " << comm.rank() << ": " << what << " differs from rank 0's (fingerprint "
                                       << std::hex << value << " against " << static_cast<std::uint64_t>(root)
                                       << "): every rank must load the same data");
  }
  MAGMADNN_THROW(ValueError, "rank " << comm.rank() << ": " << what << " of " << differing
                                     << " rank(s) differs from rank 0's: every rank must load the same data");
}

std::optional<std::uint64_t> file_fingerprint(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  MAGMADNN_CHECK(in, IOError, "cannot open " << path << " to compare it across ranks");
  std::uint64_t h = 1469598103934665603ull;
  std::vector<char> block(1 << 20);
  std::uint64_t total = 0;
  while (in) {
    in.read(block.data(), static_cast<std::streamsize>(block.size()));
    const std::size_t got = static_cast<std::size_t>(in.gcount());
    std::size_t i = 0;
    for (; i + 8 <= got; i += 8) {
      std::uint64_t w;
      std::memcpy(&w, block.data() + i, 8);
      h = (h ^ w) * 1099511628211ull;
    }
    for (; i < got; ++i) h = (h ^ static_cast<unsigned char>(block[i])) * 1099511628211ull;
    total += got;
  }
  MAGMADNN_CHECK(in.eof(), IOError, "reading " << path << " to compare it across ranks failed");
  return (h ^ total) * 1099511628211ull;
}

namespace {

std::string shown_path(const std::string& path) {
  if (path.empty()) return path;
  std::error_code ec;
  const std::filesystem::path p = std::filesystem::weakly_canonical(std::filesystem::absolute(path, ec), ec);
  return ec ? path : p.string();
}

Json records_json(const std::vector<InputRecord>& records) {
  Json j = Json::array();
  for (const InputRecord& r : records) {
    j.push_back({{"what", r.what}, {"item", r.item}, {"path", r.path}, {"shown", shown_path(r.path)},
                 {"fingerprint", r.fingerprint}, {"present", r.present}});
  }
  return j;
}

std::string hex(std::uint64_t v) {
  std::ostringstream os;
  os << std::hex << v;
  return os.str();
}

// How this rank's record `mine` differs from rank 0's `root` ({what, detail}),
// or empty when it does not.
std::pair<std::string, std::string> difference(int rank, const Json& mine, const Json& root) {
  const std::string what = root.value("what", "");
  const std::string item = mine.value("item", "");
  const std::string r = "rank " + std::to_string(rank);
  const bool folder = what == "the checkpoint";
  const std::string advice = folder ? "the run folder must be on a file system every rank sees"
                                    : "every rank must read the same files (a folder every rank sees, or identical "
                                      "copies)";
  const auto where = [](const Json& rec) {
    const std::string path = rec.value("path", ""), shown = rec.value("shown", "");
    return shown.empty() || shown == path ? path : path + " (" + shown + ")";
  };
  std::ostringstream os;
  if (mine.value("present", true) != root.value("present", true)) {
    const bool here = mine.value("present", true);
    const Json& lacking = here ? root : mine;
    os << (here ? "rank 0" : r) << " has no " << (item.empty() ? what.substr(4) : item + " file") << " at "
       << where(lacking) << ", but " << (here ? r : std::string("rank 0")) << (folder ? " resumes from " : " reads ")
       << (here ? mine : root).value("shown", "") << "; " << advice;
    return {what, os.str()};
  }
  if (mine.value("fingerprint", std::uint64_t{0}) == root.value("fingerprint", std::uint64_t{0})) return {};
  os << r << " read ";
  if (!item.empty()) os << "its " << item << " ";
  if (mine.value("path", "").empty()) {
    os << "other values (fingerprint " << hex(mine.value("fingerprint", std::uint64_t{0})) << " against "
       << hex(root.value("fingerprint", std::uint64_t{0})) << ")";
  } else {
    os << "from " << where(mine) << " (fingerprint " << hex(mine.value("fingerprint", std::uint64_t{0}))
       << "), rank 0 from " << where(root) << " (fingerprint " << hex(root.value("fingerprint", std::uint64_t{0}))
       << ")";
  }
  os << "; " << advice;
  return {what, os.str()};
}

}  // namespace

void check_same_inputs(distributed::Communicator& comm, const std::vector<InputRecord>& mine) {
  if (comm.size() == 1) return;
  const Json own = records_json(mine);
  std::string text = comm.rank() == 0 ? own.dump() : std::string();
  distributed::broadcast_text(comm, text, 0);
  const Json root = Json::parse(text);
  std::pair<std::string, std::string> diff;
  if (root.size() != own.size()) {
    diff = {"the list of inputs", "rank " + std::to_string(comm.rank()) + " read " + std::to_string(own.size()) +
                                      " inputs, rank 0 " + std::to_string(root.size())};
  }
  for (std::size_t i = 0; diff.first.empty() && i < own.size(); ++i) diff = difference(comm.rank(), own[i], root[i]);
  // Which ranks differ (one flag each, summed: every communicator sums).
  std::vector<std::int64_t> differs(static_cast<std::size_t>(comm.size()), 0);
  differs[static_cast<std::size_t>(comm.rank())] = diff.first.empty() ? 0 : 1;
  comm.allreduce(host_buffer(differs.data(), differs.size()), distributed::ReduceOp::sum);
  const auto at = std::find(differs.begin(), differs.end(), 1);
  if (at == differs.end()) return;
  const int first = static_cast<int>(at - differs.begin());
  const std::int64_t count = std::count(differs.begin(), differs.end(), 1);
  std::string told = comm.rank() == first ? Json{diff.first, diff.second}.dump() : std::string();
  distributed::broadcast_text(comm, told, first);
  const Json t = Json::parse(told);
  std::ostringstream os;
  os << "rank " << comm.rank() << ": " << t[0].get<std::string>();
  if (comm.rank() == first) {
    os << " differs from rank 0's: ";
  } else {
    os << " of " << count << " rank(s) differs from rank 0's: ";
  }
  os << t[1].get<std::string>();
  throw ValueError(os.str());
}

model::Evaluation evaluate_across(distributed::Communicator& comm, model::NeuralNetwork<float>& net,
                                  const data::Samples<float>& x, const Tensor<float>& y) {
  if (comm.size() == 1) return net.evaluate(x, y);
  distributed::broadcast_layer_state(comm, net, 0);
  const data::RowRange mine = data::shard_rows(x.rows(), comm.rank(), comm.size());
  double sums[3] = {0, 0, 0};  // loss x rows, correct, rows
  if (mine.count > 0) {
    const model::Evaluation e =
        net.evaluate(x.slice(mine.begin, mine.begin + mine.count), y.slice(mine.begin, mine.begin + mine.count));
    const double n = static_cast<double>(e.samples);
    sums[0] = e.loss * n;
    sums[1] = std::round(e.accuracy * n);
    sums[2] = n;
  }
  comm.allreduce(host_buffer(sums, 3), distributed::ReduceOp::sum);
  model::Evaluation all;
  all.samples = static_cast<std::int64_t>(std::llround(sums[2]));
  all.loss = sums[2] > 0 ? sums[0] / sums[2] : 0.0;
  all.accuracy = sums[2] > 0 ? sums[1] / sums[2] : 0.0;
  return all;
}

}  // namespace magmadnn::run
