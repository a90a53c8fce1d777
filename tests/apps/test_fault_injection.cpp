// Fault injection over the `magmadnn` binary (path from CMake): a short
// training replaces (--overwrite) a finished run, and is stopped at every one
// of its write steps in turn (MAGMADNN_FAULT_AFTER_WRITES=k, io/atomic_file.h):
// once as kill -9 would stop it (MAGMADNN_FAULT_KILL=1: _exit, no clean-up),
// once with an IOError. After each stop a complete checkpoint still loads
// (`magmadnn evaluate`): the old run's until the new one has its first
// checkpoint, then the new one's; and `train --resume` continues whichever run
// the folder holds and finishes it, leaving no .previous/ and no temp file.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "magmadnn/io/atomic_file.h"
#include "magmadnn/io/idx.h"
#include "support/run_fixtures.h"

namespace fs = std::filesystem;
using namespace magmadnn;

namespace {

constexpr int kSide = 8, kClasses = 3;

void write_split(const std::string& dir, const std::string& prefix, int n, unsigned seed) {
  test::write_stripes(dir, prefix, n, seed, {60, 200, false});
}


using CmdResult = test::CommandResult;
using test::read_text;

// Runs `magmadnn ARGS` with the environment prefix `env`; rc is the exit status.
CmdResult magmadnn_cmd(const std::string& env, const std::string& args, const std::string& scratch) {
  return test::run_shell(env + " " + MAGMADNN_APP + " " + args, scratch);
}

bool has_temp_file(const std::string& dir) {
  for (const auto& e : fs::directory_iterator(dir)) {
    if (io::is_temp_file_name(e.path().filename().string())) return true;
  }
  return false;
}

class FaultInjection : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = ::testing::TempDir() + "/magmadnn_faults_" + std::to_string(::getpid());
    fs::remove_all(root_);
    fs::create_directories(root_ + "/data");
    write_split(root_ + "/data", "train", 120, 1);
    write_split(root_ + "/data", "t10k", 30, 2);
    std::ofstream(root_ + "/tiny.json") << R"({"name": "tiny", "layers": [{"type": "flatten"},
      {"type": "dense", "units": 8, "activation": "relu"}, {"type": "dense", "units": 3, "activation": "softmax"}],
      "optimizer": {"type": "sgd", "learning_rate": 0.1}, "epochs": 2, "batch_size": 20, "seed": 5,
      "data": {"dataset": "idx", "dir": ")" + root_ + R"(/data"}})";
  }
  void TearDown() override {
    ::umount((root_ + "/small").c_str());  // DiskFullWhileWritingTheReport's tmpfs, if an assertion left it
    fs::remove_all(root_);
  }
  std::string root_;
};

void stop_at_every_write_step(const std::string& root, bool kill) {
  const std::string base = root + "/base", scratch = root + "/cmd";
  ASSERT_EQ(magmadnn_cmd("", "train --config " + root + "/tiny.json --out " + base + " --quiet", scratch).rc, 0);
  const std::string base_ckpt = read_text(base + "/checkpoint.bin");
  const std::string env_kill = kill ? " MAGMADNN_FAULT_KILL=1" : "";
  std::size_t k = 1, kept_old = 0, had_new = 0, named_previous = 0;
  for (; k < 100; ++k) {
    SCOPED_TRACE("k=" + std::to_string(k) + (kill ? " (killed)" : " (IOError)"));
    const std::string dir = root + "/run";
    fs::remove_all(dir);
    fs::copy(base, dir, fs::copy_options::recursive);
    const CmdResult r = magmadnn_cmd("MAGMADNN_FAULT_AFTER_WRITES=" + std::to_string(k) + env_kill,
                               "train --config " + root + "/tiny.json --seed 9 --out " + dir + " --overwrite --quiet",
                               scratch);
    if (r.rc == 0) break;  // k is past the run's last write step
    ASSERT_EQ(r.rc, kill ? 137 : 1) << r.err;
    EXPECT_NE(r.err.find(kill ? "fault injected" : "simulated fault"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(dir), std::string::npos) << r.err;  // the message names the file

    // A complete checkpoint loads: the folder's, or the old run's set aside.
    std::string ckpt = dir + "/checkpoint.bin";
    for (const char* aside : {"/.previous/checkpoint.bin", "/.previous.partial/checkpoint.bin"}) {
      if (!fs::exists(ckpt) && fs::exists(dir + aside)) ckpt = dir + aside;
    }
    ASSERT_TRUE(fs::exists(ckpt)) << "no checkpoint left";
    const bool old = read_text(ckpt) == base_ckpt;
    kept_old += old;
    had_new += !old;
    const CmdResult e = magmadnn_cmd("", "evaluate --checkpoint " + ckpt + " --json", scratch);
    EXPECT_EQ(e.rc, 0) << ckpt << ": " << e.err;
    if (kill && !fs::exists(dir + "/checkpoint.bin") && fs::exists(dir + "/.previous")) {
      // Between the kill and the next `train`, every command that reads the
      // folder names where the old run waits (it said only "does not exist").
      const std::string prev = dir + "/.previous/checkpoint.bin";
      for (const std::string& cmd :
           {"evaluate --checkpoint " + dir + "/checkpoint.bin",
            "predict --checkpoint " + dir + "/checkpoint.bin --input " + root + "/data/t10k-images-idx3-ubyte.gz",
            "compare " + dir + " --out " + root + "/cmp.html"}) {
        const CmdResult m = magmadnn_cmd("", cmd, scratch);
        EXPECT_NE(m.rc, 0) << cmd;
        EXPECT_NE(m.err.find(prev), std::string::npos) << cmd << ": " << m.err;
        EXPECT_NE(m.err.find("--overwrite"), std::string::npos) << cmd << ": " << m.err;
      }
      ++named_previous;
    }

    // --resume settles the folder and finishes whichever run it holds.
    const CmdResult res = magmadnn_cmd("", "train --resume --epochs 3 --out " + dir + " --quiet", scratch);
    ASSERT_EQ(res.rc, 0) << res.out << res.err;
    EXPECT_FALSE(fs::exists(dir + "/.previous"));
    EXPECT_FALSE(fs::exists(dir + "/.previous.partial"));
    EXPECT_FALSE(has_temp_file(dir));
    const std::string summary = read_text(dir + "/summary.json"), config = read_text(dir + "/config.json");
    EXPECT_NE(summary.find("\"epochs\": 3"), std::string::npos) << summary;
    EXPECT_NE(config.find(old ? "\"seed\": 5" : "\"seed\": 9"), std::string::npos) << config;
    if (kill && fs::exists(dir + "/checkpoint.bin")) {
      EXPECT_EQ(magmadnn_cmd("", "evaluate --checkpoint " + dir + "/checkpoint.bin", scratch).rc, 0);
    }
  }
  const std::size_t steps = k - 1;
  std::cout << "write steps of the replacing run: " << steps << "; stops that kept the old run: " << kept_old
            << ", that left the new one: " << had_new << "\n";
  EXPECT_GE(steps, 20u);  // set aside (7), config.json (2), 2 epochs of checkpoint, metrics, report, the end
  if (kill) EXPECT_GE(named_previous, 2u);  // killed after the set-aside: config.json's two steps at least
  EXPECT_GE(kept_old, 8u);
  EXPECT_GE(had_new, 10u);
}

// A first run into a new folder, stopped at each write step (the first is
// creating the folder): a checkpoint that exists loads and `--resume`
// finishes the run; before the first checkpoint, running the command again
// with --overwrite finishes it. No temporary file is left either way.
void stop_first_run_at_every_write_step(const std::string& root, bool kill) {
  const std::string scratch = root + "/cmd", dir = root + "/fresh/run";
  const std::string env_kill = kill ? " MAGMADNN_FAULT_KILL=1" : "";
  std::size_t k = 1, with_checkpoint = 0;
  for (; k < 100; ++k) {
    SCOPED_TRACE("k=" + std::to_string(k) + (kill ? " (killed)" : " (IOError)"));
    fs::remove_all(root + "/fresh");
    const std::string train = "train --config " + root + "/tiny.json --out " + dir + " --quiet";
    const CmdResult r = magmadnn_cmd("MAGMADNN_FAULT_AFTER_WRITES=" + std::to_string(k) + env_kill, train, scratch);
    if (r.rc == 0) break;
    ASSERT_EQ(r.rc, kill ? 137 : 1) << r.err;
    EXPECT_NE(r.err.find(dir), std::string::npos) << r.err;
    if (k == 1) EXPECT_FALSE(fs::exists(dir)) << "the folder was created past the stop at its creation";
    const bool has_ckpt = fs::exists(dir + "/checkpoint.bin");
    with_checkpoint += has_ckpt;
    if (has_ckpt) {
      EXPECT_EQ(magmadnn_cmd("", "evaluate --checkpoint " + dir + "/checkpoint.bin", scratch).rc, 0);
    }
    const CmdResult again =
        magmadnn_cmd("", has_ckpt ? "train --resume --out " + dir + " --quiet" : train + " --overwrite", scratch);
    ASSERT_EQ(again.rc, 0) << again.out << again.err;
    EXPECT_FALSE(has_temp_file(dir));
    EXPECT_NE(read_text(dir + "/summary.json").find("\"epochs\": 2"), std::string::npos);
  }
  std::cout << "write steps of a first run: " << k - 1 << "; stops after its first checkpoint: " << with_checkpoint
            << "\n";
  EXPECT_GE(k - 1, 8u);  // the folder, config.json (2), 2 epochs of checkpoint and metrics, report, summary
  EXPECT_GE(with_checkpoint, 4u);
}

}  // namespace

TEST_F(FaultInjection, KilledAtEveryWriteStepOfAFirstRun) { stop_first_run_at_every_write_step(root_, true); }

TEST_F(FaultInjection, FailingAtEveryWriteStepOfAFirstRun) { stop_first_run_at_every_write_step(root_, false); }

TEST_F(FaultInjection, KilledAtEveryWriteStepOfAnOverwrite) { stop_at_every_write_step(root_, true); }

TEST_F(FaultInjection, FailingAtEveryWriteStepOfAnOverwrite) { stop_at_every_write_step(root_, false); }

// A real full disk (a 1 MiB tmpfs, when this process may mount one): with the
// free space grown page by page, the last amount with which the run still
// fails is the one where only the final report.html no longer fits. That run
// exits 1 naming report.html and "No space left on device", and the checkpoint
// written before it loads. (The same case through the switch:
// FailingAtEveryWriteStepOfAnOverwrite, and test_apps'
// FailedReportWriteKeepsTheCheckpoint.)
TEST_F(FaultInjection, DiskFullWhileWritingTheReport) {
  const std::string mnt = root_ + "/small", dir = mnt + "/run", scratch = root_ + "/cmd";
  fs::create_directories(mnt);
  if (::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=1m") != 0) GTEST_SKIP() << "cannot mount a tmpfs here";
  CmdResult last_failure{-1, "", ""};
  bool evaluated = false, finished = false;
  for (std::uintmax_t free_kib = 4; free_kib < 1000 && !finished; free_kib += 4) {
    fs::remove_all(dir);
    fs::remove(mnt + "/filler");
    struct statvfs st {};
    ASSERT_EQ(::statvfs(mnt.c_str(), &st), 0);
    const std::uintmax_t avail = static_cast<std::uintmax_t>(st.f_bavail) * st.f_frsize;
    if (avail <= free_kib * 1024) break;
    {
      std::ofstream filler(mnt + "/filler", std::ios::binary);
      filler << std::string(avail - free_kib * 1024, 'f');
    }
    const CmdResult r = magmadnn_cmd("", "train --config " + root_ + "/tiny.json --out " + dir + " --quiet", scratch);
    if (r.rc == 0) {
      finished = true;
      break;
    }
    last_failure = r;
    evaluated = fs::exists(dir + "/checkpoint.bin") &&
                magmadnn_cmd("", "evaluate --checkpoint " + dir + "/checkpoint.bin", scratch).rc == 0;
  }
  ::umount(mnt.c_str());
  ASSERT_TRUE(finished);
  EXPECT_EQ(last_failure.rc, 1) << last_failure.err;
  EXPECT_NE(last_failure.err.find(dir + "/report.html"), std::string::npos) << last_failure.err;
  EXPECT_NE(last_failure.err.find("No space left on device"), std::string::npos) << last_failure.err;
  EXPECT_TRUE(evaluated);
}

// --out where nothing can be written (a file in the way, /proc): exit 1 naming it.
TEST_F(FaultInjection, UnwritableOutFolder) {
  std::ofstream(root_ + "/file") << "x";
  for (const std::string out : {root_ + "/file/run", std::string("/proc/magmadnn-run")}) {
    const CmdResult r = magmadnn_cmd("", "train --config " + root_ + "/tiny.json --out " + out + " --quiet", root_ + "/cmd");
    EXPECT_EQ(r.rc, 1) << r.err;
    EXPECT_NE(r.err.find(out), std::string::npos) << r.err;
  }
}
