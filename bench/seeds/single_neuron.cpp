// SHM-Learn-Dist §3, Figure 2.1: one sigmoid neuron learning the step
// function f(x) = 0 for x < 0.5, 1 for x >= 0.5, trained data-parallel by
// magmadnn's own strategies (parallel/strategy.h) on as many ranks as the
// launcher gives: `allreduce` or `ps` for the seed's gradient averaging
// (Eq. 2.1), `weight-avg` for its weight averaging (Eq. 2.2).
//
//   mpirun -np 4 --oversubscribe seeds_single_neuron --strategy allreduce \
//          [--steps 10000] [--lr 0.5] [--seed 1] [--eval-every 10] \
//          [--average-every 1] [--distinct-init 0|1] --csv loss.csv
//
// Every rank is one of the seed's workers: it takes --steps SGD steps of one
// sample x ~ U[0, 1) drawn from its own stream (seed, rank), so the global
// batch of a step is one sample per worker. Loss: squared error
// (sigmoid(w x + b) - f(x))^2 (optimizer::MSE; the seed names no loss). The
// weights start at w, b ~ U(-1, 1) from rank 0's stream; with
// --distinct-init 1 (the seed's weight averaging: "every worker starts with
// its own set of weights") each rank keeps its own draw after attach().
//
// Rank 0 writes the CSV: step, the global batch's mean loss (the workers'
// losses of that step, averaged), and every --eval-every steps the loss on
// the whole function (1000 evenly spaced x in [0, 1), from rank 0's
// weights) with w and b. The last line on stdout is one JSON object with
// the run's settings and timings.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "magmadnn.h"
#include "magmadnn/comm/communicator_factory.h"
#include "magmadnn/parallel/strategy_registry.h"

using namespace magmadnn;

namespace {

struct Args {
  std::string strategy = "allreduce";
  std::string csv;
  long steps = 10000;
  double lr = 0.5;
  unsigned seed = 1;
  long eval_every = 10;
  int average_every = 1;
  bool distinct_init = false;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (i + 1 >= argc) throw ValueError("seeds_single_neuron: " + k + " needs a value");
    const std::string v = argv[++i];
    if (k == "--strategy") a.strategy = v;
    else if (k == "--csv") a.csv = v;
    else if (k == "--steps") a.steps = std::stol(v);
    else if (k == "--lr") a.lr = std::stod(v);
    else if (k == "--seed") a.seed = static_cast<unsigned>(std::stoul(v));
    else if (k == "--eval-every") a.eval_every = std::stol(v);
    else if (k == "--average-every") a.average_every = std::stoi(v);
    else if (k == "--distinct-init") a.distinct_init = v == "1";
    else throw ValueError("seeds_single_neuron: unknown option " + k);
  }
  if (a.steps < 1 || a.eval_every < 1 || a.average_every < 1 || !(a.lr > 0))
    throw ValueError("seeds_single_neuron: --steps, --eval-every, --average-every and --lr must be positive");
  return a;
}

float step_fn(float x) { return x < 0.5f ? 0.0f : 1.0f; }

// Mean squared error of sigmoid(w x + b) against the step over 1000 evenly
// spaced points of [0, 1): the loss on the whole function.
double grid_loss(double w, double b) {
  constexpr int kPoints = 1000;
  double s = 0.0;
  for (int i = 0; i < kPoints; ++i) {
    const double x = (i + 0.5) / kPoints;
    const double p = 1.0 / (1.0 + std::exp(-(w * x + b)));
    s += (p - step_fn(static_cast<float>(x))) * (p - step_fn(static_cast<float>(x)));
  }
  return s / kPoints;
}

void set_param(const op::Var<float>& p, float value) { p->value().mutable_host_data()[0] = value; }
double get_param(const op::Var<float>& p) { return static_cast<double>(p->value().host_data()[0]); }

std::unique_ptr<model::NeuralNetwork<float>> make_neuron(double lr) {
  auto x_ph = op::placeholder<float>("x", {-1, 1});
  x_ph->set_value(Tensor<float>({1, 1}, {ZERO}));
  std::vector<std::shared_ptr<layer::Layer<float>>> layers;
  auto in = layer::input<float>(x_ph);
  auto fc = layer::fullyconnected<float>(in->out(), 1, true);
  auto act = layer::activation<float>(fc->out(), layer::SIGMOID);
  layers.push_back(in.ptr());
  layers.push_back(fc.ptr());
  layers.push_back(act.ptr());
  layers.push_back(layer::output<float>(act->out()).ptr());
  model::nn_params_t p{1, 1, lr};
  p.shuffle = false;
  return std::make_unique<model::NeuralNetwork<float>>(layers, optimizer::MSE, optimizer::SGD, p);
}

int run(const Args& a) {
  std::shared_ptr<distributed::Communicator> comm = distributed::make_communicator("auto");
  const int rank = comm->rank(), ranks = comm->size();
  set_seed(a.seed);
  auto net = make_neuron(a.lr);
  const auto& params = net->parameters();  // weight {1, 1}, bias {1}
  if (params.size() != 2) throw ValueError("seeds_single_neuron: expected a weight and a bias");

  std::mt19937 rng(a.seed * 7919u + static_cast<unsigned>(rank));
  std::uniform_real_distribution<float> init(-1.0f, 1.0f), unit(0.0f, 1.0f);
  const float w0 = init(rng), b0 = init(rng);
  set_param(params[0], w0);
  set_param(params[1], b0);

  distributed::StrategyOptions o;
  o.average_every = a.average_every;
  std::unique_ptr<distributed::Strategy<float>> strategy;
  if (ranks > 1) {
    strategy = distributed::make_strategy<float>(a.strategy, comm, o);
    strategy->attach(*net);  // rank 0's weights on every rank
    if (a.distinct_init) {   // the seed's weight averaging: each worker its own start
      set_param(params[0], w0);
      set_param(params[1], b0);
    }
  }

  std::vector<float> xs(static_cast<std::size_t>(a.steps)), ys(xs.size());
  for (std::size_t i = 0; i < xs.size(); ++i) {
    xs[i] = unit(rng);
    ys[i] = step_fn(xs[i]);
  }
  Tensor<float> x = Tensor<float>::from_vector({a.steps, 1}, xs);
  Tensor<float> y = Tensor<float>::from_vector({a.steps, 1}, ys);

  std::vector<double> loss(xs.size(), 0.0);
  struct Eval { long step; double loss, w, b; };
  std::vector<Eval> evals;
  if (rank == 0) evals.push_back({0, grid_loss(get_param(params[0]), get_param(params[1])),
                                  get_param(params[0]), get_param(params[1])});
  auto cb = std::make_shared<model::LambdaCallback<float>>();
  cb->batch_end = [&](model::NeuralNetwork<float>& m, const model::BatchLogs& logs) {
    loss[static_cast<std::size_t>(logs.batch)] = logs.loss;
    const long step = static_cast<long>(logs.batch) + 1;
    if (rank == 0 && (step % a.eval_every == 0 || step == a.steps)) {
      const double w = get_param(m.parameters()[0]), b = get_param(m.parameters()[1]);
      evals.push_back({step, grid_loss(w, b), w, b});
    }
  };
  model::FitOptions<float> fo;
  fo.callbacks.push_back(cb);
  const auto t0 = std::chrono::steady_clock::now();
  net->fit(x, y, fo);
  if (strategy) strategy->finalize();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  comm->allreduce(distributed::host_buffer(loss.data(), loss.size()), distributed::ReduceOp::avg);

  if (rank == 0) {
    if (!a.csv.empty()) {
      std::ofstream f(a.csv);
      if (!f) throw IOError("seeds_single_neuron: cannot write " + a.csv);
      f << "step,batch_loss,grid_loss,w,b\n";
      std::size_t e = 1;
      for (long s = 1; s <= a.steps; ++s) {
        f << s << ',' << loss[static_cast<std::size_t>(s - 1)];
        if (e < evals.size() && evals[e].step == s) {
          f << ',' << evals[e].loss << ',' << evals[e].w << ',' << evals[e].b;
          ++e;
        } else {
          f << ",,,";
        }
        f << '\n';
      }
      if (!f) throw IOError("seeds_single_neuron: write failed: " + a.csv);
    }
    const distributed::StepTiming t = strategy ? strategy->timing() : distributed::StepTiming{};
    std::printf("{\"strategy\": \"%s\", \"ranks\": %d, \"steps\": %ld, \"lr\": %g, \"seed\": %u, "
                "\"average_every\": %d, \"distinct_init\": %s, \"initial_grid_loss\": %.6g, "
                "\"final_grid_loss\": %.6g, \"w\": %.6g, \"b\": %.6g, \"seconds\": %.3f, "
                "\"comm_seconds\": %.3f}\n",
                ranks > 1 ? a.strategy.c_str() : "none", ranks, a.steps, a.lr, a.seed, a.average_every,
                a.distinct_init ? "true" : "false", evals.front().loss, evals.back().loss, evals.back().w,
                evals.back().b, seconds, t.comm_seconds);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "seeds_single_neuron: error: %s\n", e.what());
    distributed::abort_job(1);  // the other ranks stop too (one process: exits 1)
  }
}
