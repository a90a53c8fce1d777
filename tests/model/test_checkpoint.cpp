#include <fstream>
#include <iterator>

#include "magmadnn/io/atomic_file.h"
#include "model_test_util.h"

using namespace magmadnn;
using namespace mtest;

namespace {

std::vector<char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
void write_bytes(const std::string& path, const std::vector<char>& b) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(b.data(), static_cast<std::streamsize>(b.size()));
}

// A network with dropout and Adam: the RNG state and the optimizer state
// both matter for an exact resume.
model::NeuralNetwork<float> make_net(std::uint64_t seed, unsigned batch = 16) {
  set_seed(seed);
  model::nn_params_t p{batch, 2, 0.01};
  return model::NeuralNetwork<float>(mlp<float>(4, 12, 2, Act::Relu, 0.7), optimizer::CROSS_ENTROPY,
                                     optimizer::ADAM, p);
}

}  // namespace

TEST(Checkpoint, Crc32KnownAnswer) {
  const char* s = "123456789";
  EXPECT_EQ(io::crc32(s, 9), 0xCBF43926u);
  // continuing over pieces gives the same result
  EXPECT_EQ(io::crc32(s + 4, 5, io::crc32(s, 4)), 0xCBF43926u);
  EXPECT_EQ(io::crc32(s, 0), 0u);
}

TEST(Checkpoint, FileRoundTrip) {
  const std::string dir = temp_dir("io");
  io::Checkpoint ck;
  ck.set("name", "value with spaces");
  ck.set_double("pi", 3.141592653589793);
  ck.set_double("third", 1.0 / 3.0);
  ck.set_double("nan", std::nan(""));
  ck.set_double("inf", INFINITY);
  ck.set_int("neg", -42);
  ck.set_uint("big", 0xFFFFFFFFFFFFFFFFull);
  auto a = Tensor<float>::from_vector({2, 3}, {1, 2, 3, 4, 5, 6});
  auto b = Tensor<double>::from_vector({1}, {-0.125});
  auto c = Tensor<std::int64_t>::from_vector({3}, {7, -8, 9});
  ck.add_tensor("a", a);
  ck.add_tensor("b", b);
  ck.add_tensor("c", c);
  EXPECT_THROW(ck.add_tensor("a", a), ValueError);
  io::write_checkpoint(dir + "/x.ckpt", ck);
  const auto back = io::read_checkpoint(dir + "/x.ckpt");
  EXPECT_EQ(back.get("name"), "value with spaces");
  EXPECT_EQ(back.get_double("pi"), 3.141592653589793);
  EXPECT_EQ(back.get_double("third"), 1.0 / 3.0);
  EXPECT_TRUE(std::isnan(back.get_double("nan")));
  EXPECT_EQ(back.get_double("inf"), INFINITY);
  EXPECT_EQ(back.get_int("neg"), -42);
  EXPECT_EQ(back.get_uint("big"), 0xFFFFFFFFFFFFFFFFull);
  EXPECT_THROW(back.get("missing"), IOError);
  EXPECT_THROW(back.get_int("name"), IOError);
  Tensor<float> a2({2, 3}, {ZERO});
  back.copy_tensor("a", a2);
  EXPECT_EQ(a2.to_vector(), a.to_vector());
  Tensor<std::int64_t> c2({3});
  back.copy_tensor("c", c2);
  EXPECT_EQ(c2.to_vector(), c.to_vector());
  Tensor<float> wrong({3, 2}, {ZERO});
  EXPECT_THROW(back.copy_tensor("a", wrong), ShapeError);
  Tensor<float> b_as_float({1}, {ZERO});
  EXPECT_THROW(back.copy_tensor("b", b_as_float), ValueError);
  // file size: 20-byte header + payload + 4-byte CRC, and the CRC covers all before it
  const auto bytes = read_bytes(dir + "/x.ckpt");
  std::uint64_t payload;
  std::memcpy(&payload, bytes.data() + 12, 8);
  EXPECT_EQ(bytes.size(), 20 + payload + 4);
  std::uint32_t crc;
  std::memcpy(&crc, bytes.data() + bytes.size() - 4, 4);
  EXPECT_EQ(crc, io::crc32(bytes.data(), bytes.size() - 4));
  std::filesystem::remove_all(dir);
}

TEST(Checkpoint, ModelRoundTrip) {
  const std::string dir = temp_dir("rt");
  Tensor<float> x, y;
  blobs<float>(50, 4, x, y);
  auto a = make_net(1);
  model::FitOptions<float> o;
  o.epochs = 1;
  a.fit(x, y, o);
  a.save(dir + "/a.ckpt");

  auto b = make_net(2);  // other initial weights
  EXPECT_NE(weight_bytes(a), weight_bytes(b));
  b.load(dir + "/a.ckpt");
  EXPECT_EQ(weight_bytes(a), weight_bytes(b));
  EXPECT_EQ(b.cursor().epoch, 1u);
  EXPECT_EQ(b.cursor().batch, 0);
  EXPECT_EQ(b.optimizer().step_count(), a.optimizer().step_count());
  ASSERT_EQ(b.history().size(), 1u);
  EXPECT_EQ(b.history()[0].train_loss, a.history()[0].train_loss);
  EXPECT_EQ(b.history()[0].seconds, a.history()[0].seconds);
  auto sa = a.optimizer().state(), sb = b.optimizer().state();
  ASSERT_EQ(sa.size(), 8u);  // m and v for 4 parameters
  for (const auto& [k, t] : sa) EXPECT_EQ(t->to_vector(), sb.at(k)->to_vector()) << k;
  EXPECT_EQ(a.predict(x).to_vector(), b.predict(x).to_vector());
  std::filesystem::remove_all(dir);
}

// Two epochs straight == one epoch, save, a fresh model loads, one more epoch.
TEST(Checkpoint, ResumeAtEpochBoundaryIsBitIdentical) {
  const std::string dir = temp_dir("resume");
  Tensor<float> x, y;
  blobs<float>(70, 4, x, y);  // 5 batches of 16, the last partial

  auto straight = make_net(21);
  straight.fit(x, y);
  const auto rng_after_straight = get_rng_state();

  auto first = make_net(21);
  model::FitOptions<float> one;
  one.epochs = 1;
  first.fit(x, y, one);
  first.save(dir + "/e1.ckpt");

  set_seed(12345);  // a different global state in between: load must restore it
  Tensor<float> noise({100}, {UNIFORM});
  auto resumed = make_net(99);
  resumed.load(dir + "/e1.ckpt");
  resumed.fit(x, y, one);

  EXPECT_EQ(weight_bytes(resumed), weight_bytes(straight));
  ASSERT_EQ(resumed.history().size(), 2u);
  EXPECT_EQ(resumed.history()[1].train_loss, straight.history()[1].train_loss);
  EXPECT_EQ(resumed.history()[1].train_accuracy, straight.history()[1].train_accuracy);
  // both runs drew the same dropout streams
  EXPECT_EQ(get_rng_state().next_stream, rng_after_straight.next_stream);
  EXPECT_EQ(get_rng_state().seed, rng_after_straight.seed);
  std::filesystem::remove_all(dir);
}

// A checkpoint taken in the middle of epoch 2, resumed by FitOptions::resume.
TEST(Checkpoint, ResumeMidEpochIsBitIdentical) {
  const std::string dir = temp_dir("mid");
  const std::string path = dir + "/run.ckpt";
  Tensor<float> x, y;
  blobs<float>(70, 4, x, y);

  auto straight = make_net(33);
  straight.fit(x, y);
  const auto rng_after_straight = get_rng_state();

  auto interrupted = make_net(33);
  auto crash = std::make_shared<model::LambdaCallback<float>>();
  crash->batch_end = [&](model::NeuralNetwork<float>& m, const model::BatchLogs& l) {
    if (l.epoch == 2 && l.batch == 2) m.stop_training();  // "killed" after the checkpoint of step 8
  };
  model::FitOptions<float> o;
  o.checkpoint_path = path;
  o.checkpoint_every_batches = 4;  // steps 4 (epoch 1) and 8 (epoch 2, batch 3)
  o.resume = true;
  o.callbacks.push_back(crash);
  interrupted.fit(x, y, o);
  EXPECT_EQ(interrupted.cursor().epoch, 1u);
  EXPECT_EQ(interrupted.cursor().batch, 3);

  set_seed(777);
  auto restarted = make_net(5);
  model::FitOptions<float> again;
  again.checkpoint_path = path;
  again.checkpoint_every_batches = 4;
  again.resume = true;  // the same command again: loads step 8 and finishes the 2-epoch plan
  restarted.fit(x, y, again);
  EXPECT_EQ(restarted.cursor().epoch, 2u);
  EXPECT_EQ(restarted.optimizer().step_count(), 10);
  EXPECT_EQ(weight_bytes(restarted), weight_bytes(straight));
  ASSERT_EQ(restarted.history().size(), 2u);
  EXPECT_EQ(restarted.history()[1].train_loss, straight.history()[1].train_loss);
  EXPECT_EQ(get_rng_state().next_stream, rng_after_straight.next_stream);
  std::filesystem::remove_all(dir);
}

TEST(Checkpoint, BadFilesGiveClearErrorsAndChangeNothing) {
  const std::string dir = temp_dir("bad");
  Tensor<float> x, y;
  blobs<float>(40, 4, x, y);
  auto src = make_net(1);
  model::FitOptions<float> o;
  o.epochs = 1;
  src.fit(x, y, o);
  const std::string good = dir + "/good.ckpt";
  src.save(good);
  const auto bytes = read_bytes(good);

  auto target = make_net(2);
  const auto weights = weight_bytes(target);
  const auto rng = get_rng_state();
  auto expect_untouched = [&] {
    EXPECT_EQ(weight_bytes(target), weights);
    EXPECT_EQ(target.cursor().epoch, 0u);
    EXPECT_EQ(target.optimizer().step_count(), 0);
    EXPECT_TRUE(target.history().empty());
    EXPECT_EQ(get_rng_state().next_stream, rng.next_stream);
  };
  auto expect_io_error = [&](const std::string& path, const std::string& what) {
    try {
      target.load(path);
      ADD_FAILURE() << "no error for " << what;
    } catch (const IOError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(path), std::string::npos) << msg;
      EXPECT_NE(msg.find(what), std::string::npos) << msg;
    }
    expect_untouched();
  };

  auto truncated = std::vector<char>(bytes.begin(), bytes.begin() + bytes.size() / 2);
  write_bytes(dir + "/trunc.ckpt", truncated);
  expect_io_error(dir + "/trunc.ckpt", "truncated");
  write_bytes(dir + "/tiny.ckpt", std::vector<char>(bytes.begin(), bytes.begin() + 10));
  expect_io_error(dir + "/tiny.ckpt", "truncated");

  auto flipped = bytes;
  flipped[bytes.size() / 2] ^= 0x10;
  write_bytes(dir + "/flip.ckpt", flipped);
  expect_io_error(dir + "/flip.ckpt", "CRC-32");

  auto magic = bytes;
  magic[0] = 'X';
  write_bytes(dir + "/magic.ckpt", magic);
  expect_io_error(dir + "/magic.ckpt", "magic");

  auto version = bytes;
  version[8] = 7;
  write_bytes(dir + "/version.ckpt", version);
  expect_io_error(dir + "/version.ckpt", "version 7");

  auto longer = bytes;
  longer.push_back(0);
  write_bytes(dir + "/long.ckpt", longer);
  expect_io_error(dir + "/long.ckpt", "unexpected bytes");

  expect_io_error(dir + "/missing.ckpt", "cannot open");

  // A checkpoint of another architecture: ShapeError naming the tensor.
  set_seed(1);
  model::nn_params_t p{16, 1, 0.01};
  model::NeuralNetwork<float> wide(mlp<float>(4, 13, 2, Act::Relu, 0.7), optimizer::CROSS_ENTROPY, optimizer::ADAM,
                                   p);
  const auto wide_weights = weight_bytes(wide);
  try {
    wide.load(good);
    ADD_FAILURE() << "no error for a shape mismatch";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("param/1_testdense/W"), std::string::npos) << e.what();
  }
  EXPECT_EQ(weight_bytes(wide), wide_weights);

  // ... and of another dtype.
  set_seed(1);
  model::NeuralNetwork<double> dbl(mlp<double>(4, 12, 2, Act::Relu, 0.7), optimizer::CROSS_ENTROPY,
                                   optimizer::ADAM, p);
  EXPECT_THROW(dbl.load(good), ValueError);
  std::filesystem::remove_all(dir);
}

TEST(Checkpoint, FailedWriteLeavesOldFileIntact) {
  const std::string dir = temp_dir("atomic");
  Tensor<float> x, y;
  blobs<float>(40, 4, x, y);
  auto net = make_net(3);
  const std::string path = dir + "/model.ckpt";
  net.save(path);
  const auto before = read_bytes(path);
  model::FitOptions<float> o;
  o.epochs = 1;
  net.fit(x, y, o);

  io::detail::set_checkpoint_write_fault(100);  // the disk "fills up" after 100 bytes
  EXPECT_THROW(net.save(path), IOError);
  EXPECT_EQ(read_bytes(path), before);
  std::size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    ++files;
    EXPECT_EQ(e.path().filename(), "model.ckpt") << "left behind: " << e.path();
  }
  EXPECT_EQ(files, 1u);
  // the old file still loads, and the next write works
  auto other = make_net(3);
  other.load(path);
  net.save(path);
  EXPECT_NE(read_bytes(path), before);
  other.load(path);
  EXPECT_EQ(weight_bytes(other), weight_bytes(net));
  // a directory that does not exist: clear error naming it
  EXPECT_THROW(net.save(dir + "/no/such/dir/m.ckpt"), IOError);
  std::filesystem::remove_all(dir);
}

// The write-step fault switch (io/atomic_file.h): a write stopped at either of
// its two steps (creating the temporary file, renaming it into place) leaves
// the old file byte for byte and no temporary file; the name pattern that
// clean-up removes is exactly .NAME.tmp.PID.N.
TEST(Checkpoint, WriteStepFaultLeavesOldFileAndNoTemporaryFile) {
  const std::string dir = temp_dir("steps");
  auto net = make_net(3);
  const std::string path = dir + "/model.ckpt";
  net.set_checkpoint_entry("cli.note", "carried");
  net.save(path);
  EXPECT_EQ(io::read_checkpoint(path).get("cli.note"), "carried");
  const auto before = read_bytes(path);
  for (std::size_t k : {1u, 2u}) {
    io::detail::set_fault_after_writes(k);
    try {
      net.save(path);
      ADD_FAILURE() << "k=" << k << ": no fault";
    } catch (const IOError& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
    io::detail::set_fault_after_writes(0);
    EXPECT_TRUE(read_bytes(path) == before) << "k=" << k;
    std::size_t files = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      ++files;
      EXPECT_EQ(e.path().filename(), "model.ckpt") << "left behind: " << e.path();
    }
    EXPECT_EQ(files, 1u);
  }
  const std::size_t steps = io::detail::write_steps();
  net.save(path);
  EXPECT_EQ(io::detail::write_steps() - steps, 2u);
  for (const char* name : {".checkpoint.bin.tmp.12.0", ".m.tmp.1.22"}) EXPECT_TRUE(io::is_temp_file_name(name)) << name;
  for (const char* name : {"checkpoint.bin.tmp.12.0", ".checkpoint.bin.tmp", ".tmp.12.0", ".x.tmp.1a.2", ".x.tmp.1.",
                           ".x.tmp..2", ".x.tmpx.1.2"}) {
    EXPECT_FALSE(io::is_temp_file_name(name)) << name;
  }
  std::filesystem::remove_all(dir);
}

// Hostile checkpoints: a history.count the header cannot hold, and a
// directory given as the path, are IOErrors naming the file (they were a
// bare std::bad_alloc: 2^64-1 records, and a directory "measuring" 2^63 bytes).
TEST(Checkpoint, CraftedHistoryCountAndDirectoryAreIOErrors) {
  const std::string dir = temp_dir("hostile");
  auto src = make_net(1);
  const std::string good = dir + "/good.ckpt";
  src.save(good);
  for (const char* count : {"18446744073709551615", "4000000000"}) {
    io::Checkpoint ck = io::read_checkpoint(good);
    ck.set("history.count", count);
    const std::string path = dir + "/count_" + count + ".ckpt";
    io::write_checkpoint(path, ck);
    auto target = make_net(2);
    try {
      target.load(path);
      ADD_FAILURE() << "no error for history.count " << count;
    } catch (const IOError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(path), std::string::npos) << msg;
      EXPECT_NE(msg.find(std::string("history.count claims ") + count), std::string::npos) << msg;
      EXPECT_NE(msg.find("header entries"), std::string::npos) << msg;
    }
    EXPECT_TRUE(target.history().empty());
  }
  auto target = make_net(2);
  EXPECT_THROW(
      {
        try {
          target.load(dir);
        } catch (const IOError& e) {
          EXPECT_NE(std::string(e.what()).find(dir + " is a directory"), std::string::npos) << e.what();
          throw;
        }
      },
      IOError);
  EXPECT_THROW(io::read_checkpoint(dir), IOError);
}
