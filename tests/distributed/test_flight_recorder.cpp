// The flight recorder (comm/flight_recorder.h) in one process: the ring keeps
// the last K collectives in order, a dump is valid JSON holding them, and a
// fatal signal dumps and then still ends the process by that signal.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "magmadnn/comm/flight_recorder.h"

namespace {

namespace flight = magmadnn::distributed::flight;
namespace fs = std::filesystem;
using nlohmann::json;

// A fresh recorder of `k` entries writing into a new folder.
std::string fresh(const char* k) {
  const fs::path dir = fs::temp_directory_path() / ("flight-" + std::to_string(::getpid()) + "-" + k);
  fs::remove_all(dir);
  fs::create_directories(dir);
  ::setenv("MAGMADNN_FLIGHT_RECORDER", k, 1);
  ::setenv("MAGMADNN_FLIGHT_DIR", dir.c_str(), 1);
  flight::reset_for_testing();
  flight::set_world(3, 4);
  return dir.string();
}

json read(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

TEST(FlightRecorder, KeepsTheLastKCollectivesInOrder) {
  const std::string dir = fresh("4");
  ASSERT_EQ(flight::capacity(), 4u);
  for (int i = 0; i < 6; ++i) {
    const std::int64_t slot = flight::begin(0, static_cast<std::uint64_t>(i), "allreduce", 4096u * (i + 1), 10 + i);
    if (i != 5) flight::end(slot);  // the last one never finishes, as in a hang
  }
  flight::end(1);  // slot 1 now holds collective 5 (unfinished): ignored
  ASSERT_TRUE(flight::dump("test \"quoted\" reason"));
  EXPECT_EQ(flight::dump_path(), dir + "/flight.rank3.json");
  EXPECT_FALSE(std::filesystem::exists(dir + "/flight.rank3.json.part"));  // renamed into place
  const json j = read(flight::dump_path());
  EXPECT_EQ(j["format"], "magmadnn-flight-recorder-1");
  EXPECT_EQ(j["rank"], 3);
  EXPECT_EQ(j["size"], 4);
  EXPECT_EQ(j["reason"], "test \"quoted\" reason");
  EXPECT_EQ(j["recorded"], 6);
  ASSERT_EQ(j["entries"].size(), 4u);
  for (int i = 0; i < 4; ++i) {
    const json& e = j["entries"][i];
    EXPECT_EQ(e["seq"], i + 2);
    EXPECT_EQ(e["op"], "allreduce");
    EXPECT_EQ(e["bytes"], 4096 * (i + 3));
    EXPECT_EQ(e["step"], 12 + i);
    EXPECT_GT(e["start_us"].get<long long>(), 0);
    EXPECT_EQ(e["end_us"].is_null(), i == 3) << e.dump();
  }
}

TEST(FlightRecorder, OffWritesNothingAndOneRankAloneWritesNothing) {
  const std::string dir = fresh("0");
  EXPECT_EQ(flight::begin(0, 0, "barrier", 0, -1), -1);
  EXPECT_FALSE(flight::dump("off"));
  EXPECT_TRUE(fs::is_empty(dir));
  fresh("8");
  flight::set_world(0, 1);
  flight::begin(0, 0, "barrier", 0, -1);
  EXPECT_FALSE(flight::dump("one process"));
}

// In a child: a SIGTERM (as a launcher sends to the ranks of a failed job)
// writes the record, and the child still dies of SIGTERM.
TEST(FlightRecorder, ASignalDumpsAndStillEndsTheProcess) {
  const std::string dir = fresh("16");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    flight::install_signal_handlers();
    flight::begin(1, 41, "broadcast", 8, 7);
    ::raise(SIGTERM);
    ::_exit(0);  // not reached when the signal ends the process
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the child exited " << WEXITSTATUS(status) << " instead of dying of SIGTERM";
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  const json j = read(dir + "/flight.rank3.json");
  EXPECT_NE(j["reason"].get<std::string>().find("SIGTERM"), std::string::npos) << j["reason"];
  ASSERT_EQ(j["entries"].size(), 1u);
  EXPECT_EQ(j["entries"][0]["seq"], 41);
  EXPECT_EQ(j["entries"][0]["comm"], 1);
  EXPECT_TRUE(j["entries"][0]["end_us"].is_null());
}

}  // namespace
