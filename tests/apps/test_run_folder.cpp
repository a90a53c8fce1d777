// Run folder files: metrics.csv round trip and its error messages.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include <unistd.h>

#include "run_folder.h"

using namespace magmadnn;
using namespace magmadnn::cli;

TEST(CliRunFolder, MetricsRoundTrip) {
  model::History h(2);
  h[0].epoch = 1;
  h[0].train_loss = 0.75;
  h[0].train_accuracy = 0.7;
  h[0].val_loss = std::numeric_limits<double>::quiet_NaN();
  h[0].val_accuracy = std::numeric_limits<double>::quiet_NaN();
  h[0].learning_rate = 0.05;
  h[0].seconds = 1.5;
  h[0].samples_per_second = 4000;
  h[1] = h[0];
  h[1].epoch = 2;
  h[1].val_loss = 0.5;
  h[1].val_accuracy = 0.8125;
  const std::string dir = ::testing::TempDir() + "/cli_run_folder_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  RunFolder rf(dir + "/nested");  // parents are created
  rf.write_metrics(h);
  const model::History back = rf.read_metrics();
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[1].epoch, 2u);
  EXPECT_DOUBLE_EQ(back[1].val_accuracy, 0.8125);
  EXPECT_TRUE(std::isnan(back[0].val_loss));
  EXPECT_DOUBLE_EQ(back[0].samples_per_second, 4000);
  EXPECT_FALSE(std::filesystem::exists(rf.file("metrics.csv.tmp")));
  std::ifstream in(rf.file("metrics.csv"));
  std::string header;
  std::getline(in, header);
  EXPECT_EQ(header, "epoch,train_loss,train_accuracy,val_loss,val_accuracy,learning_rate,seconds,samples_per_second");
}

TEST(CliRunFolder, MalformedMetricsNameFileAndLine) {
  const std::string ok = metrics_csv({});
  try {
    parse_metrics_csv(ok + "1,0.5,x,,,0.1,1,1\n", "m.csv");
    FAIL();
  } catch (const IOError& e) {
    EXPECT_NE(std::string(e.what()).find("m.csv:2: field 3 is not a number: \"x\""), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_metrics_csv(ok + "1,2\n", "m.csv"), IOError);
  EXPECT_THROW(parse_metrics_csv("a,b\n", "m.csv"), IOError);
}

// An epoch that is no positive whole number is refused before it is cast to
// unsigned (undefined for NaN, negatives and huge values; seen while writing
// tests/fuzz's compare target: an empty field reads as NaN).
TEST(CliRunFolder, MetricsEpochMustBeAPositiveInteger) {
  const std::string ok = metrics_csv({});
  for (const char* epoch : {"", "-1", "0", "1e300", "2.5", "nan", "inf"}) {
    try {
      parse_metrics_csv(ok + epoch + ",0.5,0.5,,,0.1,1,1\n", "m.csv");
      ADD_FAILURE() << "accepted epoch \"" << epoch << "\"";
    } catch (const IOError& e) {
      EXPECT_NE(std::string(e.what()).find("m.csv:2: epoch"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(parse_metrics_csv(ok + "3,0.5,0.5,,,0.1,1,1\n", "m.csv").at(0).epoch, 3u);
}
