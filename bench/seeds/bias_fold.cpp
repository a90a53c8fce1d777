// SHM-Learn-Dist §4: one dense layer's training step (forward, then the
// gradients) with its bias separate (LinearNode: oneDNN's bias post-op on
// the CPU) and folded into the weights (FoldedLinearNode: ShiftRight, one
// GEMM of [1, x] and [b | W], ShiftLeft for dx), timed in pairs.
//
//   seeds_bias_fold --in 784 --out 528 --batches 32,100,256 [--dx 0|1]
//                   [--act sigmoid|none] [--rounds 15] [--reps 40]
//
// For each batch size, `rounds` rounds each time `reps` steps of one form
// and then `reps` of the other, the order alternating from round to round
// (so a change of the machine's load falls on both). --dx 1 also takes the
// gradient of the input (every layer but the first needs it). The activation
// is fused into the product in both forms (op::fuse_linear_activation), as
// in training. Prints one JSON object per batch size: the milliseconds per
// step of every round, for each form.
#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "magmadnn.h"

using namespace magmadnn;

namespace {

struct Args {
  std::int64_t in = 784, out = 528;
  std::vector<std::int64_t> batches{32, 100, 256};
  bool dx = false;
  std::string act = "sigmoid";
  int rounds = 15, reps = 40;
};

std::vector<std::int64_t> int_list(const std::string& s) {
  std::vector<std::int64_t> v;
  std::stringstream ss(s);
  for (std::string t; std::getline(ss, t, ',');) v.push_back(std::stoll(t));
  return v;
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--in") a.in = std::stoll(v);
    else if (k == "--out") a.out = std::stoll(v);
    else if (k == "--batches") a.batches = int_list(v);
    else if (k == "--dx") a.dx = v == "1";
    else if (k == "--act") a.act = v;
    else if (k == "--rounds") a.rounds = std::stoi(v);
    else if (k == "--reps") a.reps = std::stoi(v);
    else throw ValueError("seeds_bias_fold: unknown option " + k);
  }
  return a;
}

// One form's layer on x, with the vars its step differentiates.
struct Case {
  op::Expr<float> out;
  std::vector<op::Expr<float>> vars;
};

Case build(const Args& a, const op::Var<float>& x, layer::BiasForm form) {
  auto fc = layer::fullyconnected<float>(op::Expr<float>(x), a.out, form);
  op::Expr<float> y = a.act == "sigmoid" ? op::sigmoid(fc->out()) : fc->out();
  y = op::fuse_linear_activation(y);
  Case c{y, {}};
  for (const auto& w : fc->get_weights()) c.vars.push_back(w);
  if (a.dx) c.vars.push_back(x);
  return c;
}

double time_steps(Case& c, op::Var<float>& x, int reps) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < reps; ++r) {
    x->mark_changed();  // a new batch: the forward pass runs again
    const auto g = op::compute_gradients(c.out, c.vars);
    (void)g;
  }
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / reps;
}

void print_list(const char* key, const std::vector<double>& v) {
  std::printf("\"%s\": [", key);
  for (std::size_t i = 0; i < v.size(); ++i) std::printf("%s%.5f", i ? ", " : "", v[i]);
  std::printf("]");
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Args a = parse(argc, argv);
    for (std::int64_t batch : a.batches) {
      set_seed(1);
      auto x = op::var<float>("x", {batch, a.in}, {UNIFORM, {0.0f, 1.0f}}, HOST);
      Case sep = build(a, x, layer::BiasForm::separate), fold = build(a, x, layer::BiasForm::folded);
      time_steps(sep, x, 3);  // warm-up: buffers, oneDNN primitives
      time_steps(fold, x, 3);
      std::vector<double> ts, tf;
      for (int r = 0; r < a.rounds; ++r) {
        if (r % 2 == 0) {
          ts.push_back(time_steps(sep, x, a.reps));
          tf.push_back(time_steps(fold, x, a.reps));
        } else {
          tf.push_back(time_steps(fold, x, a.reps));
          ts.push_back(time_steps(sep, x, a.reps));
        }
      }
      std::printf("{\"in\": %lld, \"out\": %lld, \"batch\": %lld, \"dx\": %s, \"act\": \"%s\", \"reps\": %d, ",
                  static_cast<long long>(a.in), static_cast<long long>(a.out), static_cast<long long>(batch),
                  a.dx ? "true" : "false", a.act.c_str(), a.reps);
      print_list("separate_ms", ts);
      std::printf(", ");
      print_list("folded_ms", tf);
      std::printf("}\n");
      std::fflush(stdout);
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "seeds_bias_fold: %s\n", e.what());
    return 1;
  }
}
