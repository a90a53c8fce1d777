// One ResNet-50 training step at real size: the `resnet50` preset (torchvision
// v1.5, 25.6 M parameters) on synthetic 3 x 224 x 224 images of 1,000
// classes (run/dataset.h: seeded random images, computed per batch), SGD with
// momentum 0.9 and weight decay 1e-4, fp32. Trains 1 + S steps of batch B
// through run::TrainingRun (the path `magmadnn train` takes), times each
// step (forward, backward, update, the batch's assembly) and prints the
// first (it includes the convolution chooser's timing of each new shape)
// apart from the rest, then the process's peak resident memory.
//
// Each step's process CPU seconds (user + system, all threads) are printed
// beside its wall time: on a shared machine the wall time also counts the
// time other processes held the cores.
//
// With --profile 1, every step after the first is profiled (op::Profiler):
// the per-node table, then the time per (phase, op kind) summed over nodes.
//
// With --precision bf16, GEMMs and convolutions compute in bf16 with float
// accumulation ("precision": "bf16"; docs/mixed_precision.md), the peer of
// PyTorch's bf16 autocast (bench/peers/pytorch_resnet50.py).
//
// A line "record {...}" gives the result as JSON (framework, threads, batch,
// precision, wall and CPU seconds of the steps after the first, the
// median's images/s, peak RSS) for
// bench/run_resnet50_peers.
//
// Usage: bench_resnet50_step [--batch B] [--steps S] [--classes K] [--folder DIR] [--profile 0|1]
//                            [--precision fp32|bf16]
//   (threads: OMP_NUM_THREADS)
// The data is synthetic: a measure of speed and memory, not of learning.
// With --folder, the images are JPEGs of DIR/train and DIR/test instead
// (bench_image_folder_decode writes such a folder), decoded, cropped and
// flipped on the loader thread while the steps run ("dataset": "folder",
// the decode threads tuned as in a run): the step time against synthetic
// data's is what the pipeline costs the step.
#include <omp.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <string>
#include <numeric>
#include <vector>

#include "magmadnn/backend/registry.h"
#include "magmadnn/compute/graph_memory.h"
#include "magmadnn/compute/profiler.h"
#include "magmadnn/data/image_folder.h"
#include "magmadnn/run/presets.h"
#include "magmadnn/run/process_memory.h"
#include "magmadnn/run/run_training.h"

using namespace magmadnn;

namespace {
double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

double gib(double bytes) { return bytes / (1024.0 * 1024.0 * 1024.0); }

// The resident set now (/proc/self/statm's second field), in bytes.
double rss_now() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  long pages = 0, resident = 0;
  const int got = std::fscanf(f, "%ld %ld", &pages, &resident);
  std::fclose(f);
  return got == 2 ? static_cast<double>(resident) * 4096.0 : 0.0;
}

// One line of where the memory is: the CPU pool's bytes in use, cached and
// at peak, and the process's resident set.
void print_memory(const char* when) {
  const MemoryStats m = cpu_backend().memory_stats(0);
  std::printf("memory %s: pool in use %.2f GiB, cached %.2f GiB, peak in use %.2f GiB; RSS %.2f GiB, peak %.2f GiB\n",
              when, gib(static_cast<double>(m.bytes_in_use)), gib(static_cast<double>(m.bytes_cached)),
              gib(static_cast<double>(m.peak_bytes_in_use)), gib(rss_now()),
              gib(static_cast<double>(run::peak_rss_bytes())));
}

// The profile summed over nodes: one row per (phase, op kind).
void print_by_kind(std::int64_t steps) {
  std::map<std::pair<std::string, std::string>, std::pair<std::uint64_t, double>> sum;
  double total = 0;
  for (const auto& e : op::Profiler::entries()) {
    auto& s = sum[{e.phase, e.kind}];
    s.first += e.calls;
    s.second += e.seconds;
    total += e.seconds;
  }
  std::vector<std::pair<double, std::string>> rows;
  for (const auto& [k, v] : sum) {
    char line[160];
    std::snprintf(line, sizeof line, "%-10s %-24s %8llu %10.1f ms/step %6.1f%%", k.first.c_str(), k.second.c_str(),
                  static_cast<unsigned long long>(v.first), 1e3 * v.second / static_cast<double>(steps),
                  total > 0 ? 100.0 * v.second / total : 0.0);
    rows.emplace_back(v.second, line);
  }
  std::sort(rows.rbegin(), rows.rend());
  std::printf("profile by (phase, op kind), %lld steps:\n", static_cast<long long>(steps));
  for (const auto& r : rows) std::printf("%s\n", r.second.c_str());
  std::printf("total profiled %.1f ms/step\n", 1e3 * total / static_cast<double>(steps));
}
// The result as one JSON line, for bench/run_resnet50_peers: the steps after
// the first (which includes the convolution chooser), the median's images/s
// and the peak resident memory so far.
void print_record(const std::string& precision, std::int64_t batch, const std::vector<double>& seconds,
                  const std::vector<double>& cpu) {
  std::vector<double> rest(seconds.begin() + 1, seconds.end());
  if (rest.empty()) return;
  run::Json rec = {{"framework", "magmadnn"}, {"network", "resnet50"}, {"threads", omp_get_max_threads()},
                   {"batch", batch}, {"precision", precision}, {"step_seconds", rest},
                   {"step_cpu_seconds", std::vector<double>(cpu.begin() + 1, cpu.end())}};
  std::sort(rest.begin(), rest.end());
  const double median = rest.size() % 2 ? rest[rest.size() / 2]
                                        : 0.5 * (rest[rest.size() / 2 - 1] + rest[rest.size() / 2]);
  rec["median_step_seconds"] = median;
  rec["images_per_second"] = static_cast<double>(batch) / median;
  rec["peak_rss_gib"] = gib(static_cast<double>(run::peak_rss_bytes()));
  std::printf("record %s\n", rec.dump().c_str());
}
}  // namespace

int main(int argc, char** argv) {
  std::int64_t batch = 32, steps = 3;
  std::string folder;
  std::int64_t classes = 1000;
  bool profile = false;
  std::string precision = "fp32";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--precision")) precision = argv[i + 1];
    if (!std::strcmp(argv[i], "--batch")) batch = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--steps")) steps = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--folder")) folder = argv[i + 1];
    if (!std::strcmp(argv[i], "--classes")) classes = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--profile")) profile = std::atoi(argv[i + 1]) != 0;
  }
  run::Json j = run::preset("resnet50");
  j["batch_size"] = batch;
  j["precision"] = precision;
  if (folder.empty()) {
    j["data"]["train_samples"] = batch * (1 + steps);
    j["data"]["test_samples"] = 1;
    j["data"]["classes"] = classes;
  } else {
    j["data"] = {{"dataset", "folder"}, {"train", folder + "/train"}, {"test", folder + "/test"},
                 {"shape", {3, 224, 224}}, {"limit_train", batch * (1 + steps)}, {"limit_test", 1},
                 {"val_split", 0}, {"mean", {0.485, 0.456, 0.406}}, {"std", {0.229, 0.224, 0.225}}};
    classes = static_cast<std::int64_t>(data::image_folder_classes(folder + "/train").size());
  }
  // The classifier: one unit a class (--classes for synthetic data, the
  // folder's sub-folders otherwise; compare the two at the same count).
  for (auto it = j["layers"].rbegin(); it != j["layers"].rend(); ++it) {
    if ((*it)["type"] == "dense") {
      (*it)["units"] = classes;
      break;
    }
  }
  run::TrainingRun tr(run::parse_config(j));
  using Clock = std::chrono::steady_clock;
  std::vector<double> seconds, cpu;
  auto t = Clock::now();
  double c = cpu_seconds();
  auto cb = std::make_shared<model::LambdaCallback<float>>();
  cb->batch_end = [&](model::NeuralNetwork<float>&, const model::BatchLogs&) {
    const auto now = Clock::now();
    seconds.push_back(std::chrono::duration<double>(now - t).count());
    const double c_now = cpu_seconds();
    cpu.push_back(c_now - c);
    print_memory(("after step " + std::to_string(seconds.size())).c_str());
    if (profile && seconds.size() == 1) {  // the first step (the chooser's) stays out of the profile
      op::Profiler::reset();
      op::Profiler::enable();
    }
    t = Clock::now();
    c = cpu_seconds();
  };
  cb->epoch_begin = [&](model::NeuralNetwork<float>&, unsigned) {
    t = Clock::now();
    c = cpu_seconds();
  };
  cb->epoch_end = [&](model::NeuralNetwork<float>&, const model::EpochRecord&) { op::Profiler::enable(false); };
  run::RunOptions o;
  o.callbacks.push_back(cb);
  o.log = folder.empty() ? nullptr : &std::cout;
  const run::RunResult r = tr.run(o);
  std::printf("resnet50 (%s 3x224x224, %lld classes), batch %lld, %d threads, %lld parameters\n",
              folder.empty() ? "synthetic" : ("JPEGs of " + folder).c_str(), static_cast<long long>(classes),
              static_cast<long long>(batch),
              omp_get_max_threads(), static_cast<long long>(tr.network().num_params()));
  std::printf("first step: %.2f s, %.2f CPU s (includes choosing the convolution algorithms)\n", seconds.at(0),
              cpu.at(0));
  for (std::size_t i = 1; i < seconds.size(); ++i) std::printf("step %zu: %.2f s, %.2f CPU s\n", i + 1, seconds[i], cpu[i]);
  std::vector<double> rest(seconds.begin() + 1, seconds.end());
  if (!rest.empty()) {
    std::sort(rest.begin(), rest.end());
    const double mean = std::accumulate(rest.begin(), rest.end(), 0.0) / static_cast<double>(rest.size());
    std::printf("later steps: median %.2f s, mean %.2f s over %zu (%.2f images/s at the median)\n",
                rest[rest.size() / 2], mean, rest.size(), static_cast<double>(batch) / rest[rest.size() / 2]);
  }
  print_record(precision, batch, seconds, cpu);
  std::printf("train loss %.4f (%s)\n", r.history.at(0).train_loss,
              folder.empty() ? "synthetic labels: ln(classes) is chance" : "ln(classes) at the start");
  if (profile) {
    op::Profiler::print(std::cout, steps);
    std::cout.flush();
    print_by_kind(steps);
  }
  // What a step needs in theory: the activations backward reads (the
  // graph's forward values), the batch's images, and the parameters, their
  // gradients and the momentum. Training releases each activation as backward passes it, so the graph
  // is evaluated again here, on the last batch the run fed (the test
  // split's), and its activations scaled to the training batch: every one of
  // them is per image.
  model::NeuralNetwork<float>& net = tr.network();
  net.loss()->eval();
  op::GraphMemory g = op::graph_memory(net.loss().get());
  const double per = static_cast<double>(batch) / static_cast<double>(net.input()->output().shape()[0]);
  g.forward_values = static_cast<std::size_t>(static_cast<double>(g.forward_values) * per);
  g.largest_value = static_cast<std::size_t>(static_cast<double>(g.largest_value) * per);
  for (auto& [kind, bytes] : g.by_kind) bytes = static_cast<std::size_t>(static_cast<double>(bytes) * per);
  double params = 0;
  for (const auto& p : net.parameters()) params += 4.0 * static_cast<double>(p->output().size());
  const double images = 4.0 * static_cast<double>(batch) * 3 * 224 * 224;
  const double theory = static_cast<double>(g.forward_values) + images + 3 * params;
  std::printf("graph: %zu nodes, forward values at batch %lld %.2f GiB (largest %.3f GiB); parameters %.3f GiB, "
              "the batch's images %.3f GiB\n",
              g.nodes, static_cast<long long>(batch), gib(static_cast<double>(g.forward_values)),
              gib(static_cast<double>(g.largest_value)), gib(params), gib(images));
  for (const auto& [kind, bytes] : g.by_kind) std::printf("  forward values of %-22s %.3f GiB\n", kind.c_str(), gib(static_cast<double>(bytes)));
  std::printf("theory (forward values + images + parameters, gradients, momentum): %.2f GiB\n", gib(theory));
  print_memory("at the end");
  std::printf("peak RSS %.2f GiB (%.2fx the theory)\n", gib(static_cast<double>(run::peak_rss_bytes())),
              static_cast<double>(run::peak_rss_bytes()) / theory);
  return 0;
}
