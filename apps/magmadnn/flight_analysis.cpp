#include "flight_analysis.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "magmadnn/core/errors.h"
#include "run_names.h"

namespace magmadnn::cli {
namespace fs = std::filesystem;
namespace {

FlightCall call_of(const Json& e) {
  FlightCall c;
  c.comm = e.at("comm").get<unsigned>();
  c.seq = e.at("seq").get<long long>();
  c.op = e.at("op").get<std::string>();
  c.bytes = e.at("bytes").get<long long>();
  c.step = e.at("step").get<long long>();
  c.start_us = e.at("start_us").get<long long>();
  if (!e.at("end_us").is_null()) c.end_us = e.at("end_us").get<long long>();
  return c;
}

std::string describe(const FlightCall& c) {
  std::ostringstream os;
  os << "#" << c.seq << " " << c.op << " (" << c.bytes << " bytes";
  if (c.step >= 0) os << ", step " << c.step;
  os << ")";
  return os.str();
}

std::string ranks_text(const std::vector<int>& ranks) {
  std::ostringstream os;
  const std::size_t shown = std::min<std::size_t>(ranks.size(), 16);
  for (std::size_t i = 0; i < shown; ++i) os << (i ? ", " : "") << ranks[i];
  if (shown < ranks.size()) os << " and " << ranks.size() - shown << " more";
  return os.str();
}

double seconds(long long us) { return static_cast<double>(us) / 1e6; }

// The last call of each rank on communicator `comm` (ranks without one absent).
std::map<int, const FlightCall*> last_calls(const std::vector<FlightRecord>& records, unsigned comm) {
  std::map<int, const FlightCall*> last;
  for (const FlightRecord& r : records) {
    for (const FlightCall& c : r.calls) {
      if (c.comm == comm && (!last.count(r.rank) || c.seq >= last[r.rank]->seq)) last[r.rank] = &c;
    }
  }
  return last;
}

// The first (communicator, sequence) that two ranks recorded differently.
void find_mismatch(const std::vector<FlightRecord>& records, FlightFindings& f) {
  std::map<std::pair<unsigned, long long>, std::pair<int, const FlightCall*>> first_seen;
  std::optional<std::pair<unsigned, long long>> worst;
  std::string line;
  for (const FlightRecord& r : records) {
    for (const FlightCall& c : r.calls) {
      auto [it, fresh] = first_seen.try_emplace({c.comm, c.seq}, r.rank, &c);
      const FlightCall& o = *it->second.second;
      if (fresh || (o.op == c.op && o.bytes == c.bytes)) continue;
      if (worst && *worst <= it->first) continue;
      worst = it->first;
      std::ostringstream os;
      os << "mismatch on communicator " << c.comm << " at collective #" << c.seq << ": rank " << it->second.first
         << " called " << describe(o) << ", rank " << r.rank << " called " << describe(c);
      line = os.str();
    }
  }
  if (worst) {
    f.first_mismatch_seq = worst->second;
    f.lines.push_back(line);
  }
}

// On each communicator: ranks whose last collective is behind the others'.
void find_stragglers(const std::vector<FlightRecord>& records, FlightFindings& f) {
  std::set<unsigned> comms;
  for (const FlightRecord& r : records)
    for (const FlightCall& c : r.calls) comms.insert(c.comm);
  std::set<int> behind_any;
  for (unsigned comm : comms) {
    const auto last = last_calls(records, comm);
    long long front = -1;
    for (const auto& [rank, c] : last) front = std::max(front, c->seq);
    std::vector<int> behind, ahead;
    for (const auto& [rank, c] : last) (c->seq < front ? behind : ahead).push_back(rank);
    if (behind.empty()) {
      std::vector<int> unfinished;
      for (const auto& [rank, c] : last)
        if (!c->end_us) unfinished.push_back(rank);
      if (!unfinished.empty() && unfinished.size() < last.size()) {
        f.lines.push_back("communicator " + std::to_string(comm) + ": every rank started collective #" +
                          std::to_string(front) + ", ranks " + ranks_text(unfinished) + " did not finish it");
      }
      continue;
    }
    const FlightCall& waited = *last.at(ahead.front());
    long long dumped_us = 0;  // when the first waiting rank wrote its file
    for (const FlightRecord& r : records)
      if (r.rank == ahead.front()) dumped_us = r.dumped_us;
    for (int rank : behind) {
      const FlightCall& c = *last.at(rank);
      std::ostringstream os;
      os << "rank " << rank << " is behind on communicator " << comm << ": its last collective was " << describe(c)
         << (c.end_us ? ", finished" : ", never finished") << "; ranks " << ranks_text(ahead) << " waited in "
         << describe(waited) << std::fixed;
      os.precision(3);
      os << " (rank " << ahead.front() << " for " << seconds(dumped_us - waited.start_us) << " s before its record)";
      f.lines.push_back(os.str());
      behind_any.insert(rank);
    }
  }
  f.stragglers.assign(behind_any.begin(), behind_any.end());
}

}  // namespace

FlightRecord read_flight_record(const std::string& path) {
  std::ifstream in(path);
  MAGMADNN_CHECK(in.good(), IOError, "cannot read the flight-recorder file " << path);
  Json j;
  try {
    j = Json::parse(in);
  } catch (const std::exception& e) {
    MAGMADNN_THROW(ValueError, path << " is not JSON (" << e.what() << "); a rank killed while writing it leaves "
                                    "it cut short");
  }
  MAGMADNN_CHECK(j.is_object() && j.value("format", "") == "magmadnn-flight-recorder-1", ValueError,
                 path << " is not a magmadnn flight-recorder file (no \"format\": \"magmadnn-flight-recorder-1\")");
  FlightRecord r;
  r.file = path;
  try {
    r.rank = j.at("rank").get<int>();
    r.size = j.at("size").get<int>();
    r.host = j.at("host").get<std::string>();
    r.reason = j.at("reason").get<std::string>();
    r.dumped_us = j.at("dumped_us").get<long long>();
    for (const Json& e : j.at("entries")) r.calls.push_back(call_of(e));
  } catch (const Json::exception& e) {
    MAGMADNN_THROW(ValueError, path << ": " << e.what());
  }
  return r;
}

std::vector<FlightRecord> read_flight_dir(const std::string& dir, std::vector<std::string>* unreadable) {
  MAGMADNN_CHECK(fs::is_directory(dir), IOError, dir << " is not a folder");
  static const std::regex name(R"(flight\.rank[0-9]+\.json)");
  static const std::regex part(R"(flight\.rank([0-9]+)\.json\.part)");
  std::vector<FlightRecord> out;
  std::vector<std::string> problems;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string file = e.path().filename().string();
    std::smatch m;
    if (std::regex_match(file, m, part)) {
      problems.push_back(e.path().string() + ": rank " + m[1].str() + " was stopped while writing its record");
    } else if (std::regex_match(file, name)) {
      try {
        out.push_back(read_flight_record(e.path().string()));
      } catch (const ValueError& err) {
        if (unreadable == nullptr) throw;
        problems.push_back(err.what());
      }
    }
  }
  std::sort(problems.begin(), problems.end());
  if (unreadable != nullptr) *unreadable = problems;
  std::string listed;
  for (const std::string& p : problems) listed += "; " + p;
  MAGMADNN_CHECK(!out.empty(), IOError,
                 dir << " holds no readable flight-recorder file (flight.rank<R>.json); the ranks write them where "
                        "MAGMADNN_FLIGHT_DIR points, or into the run folder"
                     << listed);
  std::sort(out.begin(), out.end(), [](const FlightRecord& a, const FlightRecord& b) { return a.rank < b.rank; });
  return out;
}

FlightFindings analyze_flight(const std::vector<FlightRecord>& records) {
  FlightFindings f;
  if (records.empty()) return f;
  std::set<int> present;
  for (const FlightRecord& r : records) present.insert(r.rank);
  for (int r = 0; r < records.front().size; ++r)
    if (!present.count(r)) f.missing_ranks.push_back(r);
  if (!f.missing_ranks.empty()) {
    f.lines.push_back("no record from ranks " + ranks_text(f.missing_ranks) + " of " +
                      std::to_string(records.front().size) +
                      ": killed without a chance to write (SIGKILL, a lost node), or writing elsewhere");
  }
  find_mismatch(records, f);
  find_stragglers(records, f);
  if (f.lines.empty()) f.lines.push_back("the ranks agree: every rank's last collective is the same");
  return f;
}

}  // namespace magmadnn::cli
