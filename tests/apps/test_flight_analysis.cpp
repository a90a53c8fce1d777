// magmadnn flight (flight_analysis.h): records of a job written here, merged,
// and the diverging rank and collective named.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli.h"
#include "flight_analysis.h"
#include "magmadnn/core/errors.h"

namespace {

using namespace magmadnn::cli;
namespace fs = std::filesystem;

// A job of `size` ranks: each rank in `ranks` did allreduces #0 .. #last[r]
// (the last unfinished when `hung` is set), rank `odd` called a broadcast at
// #odd_seq instead.
struct Job {
  int size = 4;
  std::vector<int> ranks{0, 1, 2, 3};
  std::vector<int> last{7, 6, 7, 7};
  bool hung = true;
  int odd = -1, odd_seq = -1;
};

std::string write_job(const Job& job, const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("flight-analysis-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (std::size_t i = 0; i < job.ranks.size(); ++i) {
    const int r = job.ranks[i];
    Json entries = Json::array();
    for (int s = 0; s <= job.last[i]; ++s) {
      const bool odd = r == job.odd && s == job.odd_seq;
      const bool open = job.hung && s == job.last[i] && job.last[i] == 7;
      entries.push_back({{"comm", 0}, {"seq", s}, {"op", odd ? "broadcast" : "allreduce"}, {"bytes", odd ? 8 : 4096},
                         {"step", s}, {"start_us", 1000000 + 1000 * s}, {"end_us", open ? Json() : Json(1000500 + 1000 * s)}});
    }
    const Json j = {{"format", "magmadnn-flight-recorder-1"}, {"rank", r}, {"size", job.size}, {"pid", 100 + r},
                    {"host", "h"}, {"reason", "test"}, {"dumped_us", 9000000}, {"capacity", 256},
                    {"recorded", entries.size()}, {"entries", entries}};
    std::ofstream(dir / ("flight.rank" + std::to_string(r) + ".json")) << j.dump();
  }
  return dir.string();
}

std::string joined(const FlightFindings& f) {
  std::string s;
  for (const auto& l : f.lines) s += l + "\n";
  return s;
}

TEST(FlightAnalysis, NamesTheRankBehindWithItsLastCollective) {
  const FlightFindings f = analyze_flight(read_flight_dir(write_job(Job{}, "behind")));
  ASSERT_EQ(f.stragglers, std::vector<int>{1}) << joined(f);
  EXPECT_TRUE(f.missing_ranks.empty());
  EXPECT_FALSE(f.first_mismatch_seq);
  const std::string text = joined(f);
  EXPECT_NE(text.find("rank 1 is behind on communicator 0: its last collective was #6 allreduce (4096 bytes, step 6), "
                      "finished; ranks 0, 2, 3 waited in #7 allreduce"),
            std::string::npos)
      << text;
}

TEST(FlightAnalysis, NamesTheFirstMismatchAndTheMissingRanks) {
  Job job;
  job.ranks = {0, 2, 3};
  job.last = {7, 7, 7};
  job.odd = 2;
  job.odd_seq = 5;
  const FlightFindings f = analyze_flight(read_flight_dir(write_job(job, "mismatch")));
  EXPECT_EQ(f.missing_ranks, std::vector<int>{1});
  ASSERT_TRUE(f.first_mismatch_seq);
  EXPECT_EQ(*f.first_mismatch_seq, 5);
  const std::string text = joined(f);
  EXPECT_NE(text.find("no record from ranks 1 of 4"), std::string::npos) << text;
  EXPECT_NE(text.find("rank 2 called #5 broadcast (8 bytes, step 5)"), std::string::npos) << text;
}

TEST(FlightAnalysis, AgreeingRanksExitZeroAndDivergingOnesOne) {
  Job job;
  job.last = {7, 7, 7, 7};
  job.hung = false;
  std::ostringstream out;
  EXPECT_EQ(flight_command({write_job(job, "agree")}, out), 0) << out.str();
  EXPECT_NE(out.str().find("the ranks agree"), std::string::npos) << out.str();
  std::ostringstream out2;
  EXPECT_EQ(flight_command({write_job(Job{}, "diverge")}, out2), 1) << out2.str();
  EXPECT_NE(out2.str().find("4 of 4 ranks wrote a record"), std::string::npos) << out2.str();
}

TEST(FlightAnalysis, RefusesFilesThatAreNotRecords) {
  const fs::path dir = fs::temp_directory_path() / "flight-analysis-bad";
  fs::remove_all(dir);
  fs::create_directories(dir);
  EXPECT_THROW(read_flight_dir(dir.string()), magmadnn::IOError);
  std::ofstream(dir / "flight.rank0.json") << "{\"rank\": 0, \"entries\": [";
  try {
    read_flight_dir(dir.string());
    FAIL() << "a cut-short file was read";
  } catch (const magmadnn::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("flight.rank0.json is not JSON"), std::string::npos) << e.what();
  }
  std::ofstream(dir / "flight.rank0.json") << "{\"rank\": 0}";
  EXPECT_THROW(read_flight_dir(dir.string()), magmadnn::ValueError);
}

// A rank stopped while writing: its record cut short (written in place, as
// before records were renamed into place) or its .part file left. The report
// goes on with the others and counts it as missing.
TEST(FlightAnalysis, ACutShortRecordIsReportedAndCountedAsMissing) {
  Job job;
  job.ranks = {0, 2, 3};
  job.last = {7, 7, 7};
  const fs::path dir = write_job(job, "cut");
  std::ofstream(dir / "flight.rank1.json") << "{\"format\": \"magmadnn-flight-recorder-1\", \"entries\": [";
  std::ostringstream out;
  EXPECT_EQ(flight_command({dir.string()}, out), 1) << out.str();
  EXPECT_NE(out.str().find("3 of 4 ranks wrote a record"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("unreadable, counted as missing: " + (dir / "flight.rank1.json").string() + " is not JSON"),
            std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("no record from ranks 1 of 4"), std::string::npos) << out.str();

  fs::remove(dir / "flight.rank1.json");
  std::ofstream(dir / "flight.rank1.json.part") << "{\"format\"";
  std::ostringstream out2;
  EXPECT_EQ(flight_command({dir.string()}, out2), 1) << out2.str();
  EXPECT_NE(out2.str().find("rank 1 was stopped while writing its record"), std::string::npos) << out2.str();
  EXPECT_NE(out2.str().find("no record from ranks 1 of 4"), std::string::npos) << out2.str();

  // Nothing readable at all: an error that lists why.
  for (int r : {0, 2, 3}) fs::remove(dir / ("flight.rank" + std::to_string(r) + ".json"));
  try {
    std::ostringstream out3;
    flight_command({dir.string()}, out3);
    FAIL() << "a folder with no readable record was reported";
  } catch (const magmadnn::IOError& e) {
    EXPECT_NE(std::string(e.what()).find("holds no readable flight-recorder file"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("rank 1 was stopped while writing"), std::string::npos) << e.what();
  }
}

}  // namespace
