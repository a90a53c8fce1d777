#include "magmadnn/parallel/pipeline/pipeline.h"

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

#include "magmadnn/data/dataloader.h"
#include "magmadnn/model/metrics.h"
#include "magmadnn/parallel/pipeline/cuts.h"

namespace magmadnn::distributed::pipeline {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Message tags: activations of micro-batch m forward, gradients backward.
constexpr int kTagBase = 4096;
int forward_tag(int m) { return kTagBase + 2 * m; }
int backward_tag(int m) { return kTagBase + 2 * m + 1; }

// 2 x parameters x output positions + output elements (Balance::flops).
double estimated_flops(std::int64_t params, const std::vector<std::int64_t>& out) {
  double elements = 1;
  for (std::int64_t d : out) elements *= static_cast<double>(d);
  const double positions = out.size() >= 2 ? elements / static_cast<double>(out[0]) : 1.0;
  return 2.0 * static_cast<double>(params) * positions + elements;
}

// The whole network, built once on a placeholder: its layers (for the
// initial weights) and each layer's output shape and parameter count.
template <typename T>
std::vector<std::shared_ptr<layer::Layer<T>>> build_whole(const std::vector<LayerFactory<T>>& factories,
                                                          const std::vector<std::int64_t>& sample, memory_t mem,
                                                          std::vector<LayerFacts>& facts, op::Var<T>& input) {
  std::vector<std::int64_t> pattern{-1}, one{1};
  pattern.insert(pattern.end(), sample.begin(), sample.end());
  one.insert(one.end(), sample.begin(), sample.end());
  auto ph = op::placeholder<T>("pipeline_input", pattern, mem);
  ph->set_value(Tensor<T>(Shape(one), {ZERO}, mem));
  input = ph;
  std::vector<std::shared_ptr<layer::Layer<T>>> whole;
  op::Expr<T> cur = ph;
  for (std::size_t i = 0; i < factories.size(); ++i) {
    auto l = factories[i](cur);
    MAGMADNN_CHECK(l != nullptr && l->out(), ValueError, "pipeline: layer " << i << "'s factory built nothing");
    check_recomputable(*l, static_cast<int>(i));
    cur = l->out();
    std::vector<std::int64_t> out = cur->get_output_shape().dims();
    out.erase(out.begin());
    facts.push_back({out, l->num_params(), estimated_flops(l->num_params(), out),
                     static_cast<std::int64_t>(l->get_weights().size()),
                     static_cast<std::int64_t>(l->get_state().size())});
    whole.push_back(std::move(l));
  }
  return whole;
}

// Balance::time: each layer's forward seconds on kTimedRows random rows,
// the median of kTimedRuns after a warm-up. A node keeps its output until an
// input changes, so after a new input, evaluating the layers in order runs
// each layer's own nodes once, and each evaluation times one layer.
constexpr std::int64_t kTimedRows = 16;
constexpr int kTimedRuns = 3;
template <typename T>
std::vector<double> timed_costs(op::Var<T>& input, const std::vector<std::shared_ptr<layer::Layer<T>>>& whole,
                                const std::vector<std::int64_t>& sample, memory_t mem) {
  std::vector<std::int64_t> dims{kTimedRows};
  dims.insert(dims.end(), sample.begin(), sample.end());
  const Tensor<T> x(Shape(dims), {UNIFORM, {T(-1), T(1)}}, mem);
  std::vector<std::vector<double>> runs(whole.size());
  for (int r = 0; r <= kTimedRuns; ++r) {
    input->set_value(x);
    for (std::size_t i = 0; i < whole.size(); ++i) {
      const auto t0 = Clock::now();
      whole[i]->out()->eval();
      if (r > 0) runs[i].push_back(seconds_since(t0));  // run 0 warms up
    }
  }
  std::vector<double> cost;
  for (auto& t : runs) {
    std::nth_element(t.begin(), t.begin() + kTimedRuns / 2, t.end());
    cost.push_back(std::max(t[kTimedRuns / 2], 1e-9));  // a layer of no measurable time still weighs something
  }
  return cost;
}

std::vector<double> layer_costs(const std::vector<LayerFacts>& facts, Balance b) {
  std::vector<double> cost;
  for (const auto& f : facts) cost.push_back(b == Balance::flops ? f.flops : static_cast<double>(f.params) + 1.0);
  return cost;
}

}  // namespace

const char* balance_name(Balance b) noexcept {
  return b == Balance::flops ? "flops" : b == Balance::time ? "time" : "parameters";
}

Balance parse_balance(const std::string& name) {
  if (name == "parameters") return Balance::parameters;
  if (name == "flops") return Balance::flops;
  if (name == "time") return Balance::time;
  MAGMADNN_THROW(ValueError,
                 "pipeline balance: expected \"parameters\", \"flops\" or \"time\", got \"" << name << "\"");
}

template <typename T>
Pipeline<T>::Pipeline(std::shared_ptr<Communicator> comm, const std::vector<LayerFactory<T>>& factories,
                      std::vector<std::int64_t> sample_shape, std::shared_ptr<optimizer::Optimizer<T>> opt,
                      PipelineOptions options)
    : comm_(std::move(comm)), opt_(std::move(opt)), options_(std::move(options)) {
  MAGMADNN_CHECK(comm_ != nullptr && opt_ != nullptr, ValueError, "pipeline: a communicator and an optimizer are needed");
  const int n = static_cast<int>(factories.size());
  const int stages = comm_->size();
  const int wanted = options_.first.empty() ? stages : static_cast<int>(options_.first.size());
  check_pipeline(wanted, n, stages, options_.micro_batches);
  op::Var<T> input;
  auto whole = build_whole<T>(factories, sample_shape, options_.memory, facts_, input);
  if (options_.first.empty()) {
    std::vector<double> cost(static_cast<std::size_t>(n));
    if (options_.balance != Balance::time) {
      cost = layer_costs(facts_, options_.balance);
    } else {
      // Timed on stage 0 alone and sent to the others: every stage must cut alike.
      if (stage() == 0) cost = timed_costs<T>(input, whole, sample_shape, options_.memory);
      comm_->broadcast(host_buffer(cost.data(), cost.size()), 0);
    }
    first_ = balanced_cuts(cost, stages, options_.cut_points);
  } else {
    first_ = options_.first;
  }
  check_cuts(first_, n);
  const int s = stage();
  const int begin = first_[s], end = s + 1 < stages ? first_[s + 1] : n;
  in_sample_ = s == 0 ? sample_shape : facts_[begin - 1].out_sample;
  out_sample_ = facts_[end - 1].out_sample;
  stage_ = std::make_unique<Stage<T>>(factories, begin, end, in_sample_, is_last(), options_.loss, options_.memory);
  stage_->copy_weights_from(whole);
}

template <typename T>
Tensor<T> Pipeline<T>::receive(int source, int tag, std::int64_t rows, const std::vector<std::int64_t>& sample,
                               const char* what, std::int64_t index) {
  std::vector<std::int64_t> dims{rows};
  dims.insert(dims.end(), sample.begin(), sample.end());
  Tensor<T> buf(Shape(dims), {NONE}, HOST);
  try {
    comm_->irecv(host_buffer(buf.mutable_host_data(), static_cast<std::size_t>(buf.size())), source, tag)->wait();
  } catch (const CommError& e) {
    // The watchdog names the rank; the pipeline adds which stage waited for what.
    MAGMADNN_THROW(CommError, "pipeline stage " << stage() << " (step " << steps_ << ") waiting for " << what << " "
                                                << index << "'s " << (source < stage() ? "activations" : "gradient")
                                                << " from stage " << source << ": " << e.what());
  }
  return buf;
}

template <typename T>
void Pipeline<T>::send(const Tensor<T>& t, int dest, int tag) {
  // Buffers of sends that have completed go first.
  std::erase_if(sends_, [](Pending& p) { return p.request->test(); });
  Pending p{nullptr, t.to(HOST)};
  p.request = comm_->isend(host_buffer(p.data.host_data(), static_cast<std::size_t>(p.data.size())), dest, tag);
  sends_.push_back(std::move(p));
}

template <typename T>
void Pipeline<T>::finish_sends() {
  for (auto& p : sends_) p.request->wait();
  sends_.clear();
}

template <typename T>
void Pipeline<T>::run_action(const Action& a, const Tensor<T>& x, const Tensor<T>& y, std::int64_t rows,
                             double& loss_sum) {
  const std::int64_t r0 = a.micro * rows, r1 = r0 + rows;
  if (a.forward) {
    const Tensor<T> in = is_first() ? x.slice(r0, r1) : receive(stage() - 1, forward_tag(a.micro), rows, in_sample_, "micro-batch", a.micro);
    const Tensor<T> labels = is_last() ? y.slice(r0, r1) : Tensor<T>();
    const auto t0 = Clock::now();
    const Tensor<T>& out = stage_->forward(a.micro, in, is_last() ? &labels : nullptr);
    stats_.busy_s += seconds_since(t0);
    if (is_last()) {
      loss_sum += static_cast<double>(out.get(0));
      count_correct(labels);
    } else {
      send(out, stage() + 1, forward_tag(a.micro));
    }
    return;
  }
  const Tensor<T> g = is_last() ? Tensor<T>() : receive(stage() + 1, backward_tag(a.micro), rows, out_sample_, "micro-batch", a.micro);
  const auto t0 = Clock::now();
  const T seed = is_last() ? T(1) / T(options_.micro_batches) : T(1);
  Tensor<T> dx = stage_->backward(a.micro, is_last() ? nullptr : &g, seed, !is_first());
  stats_.busy_s += seconds_since(t0);
  if (!is_first()) send(dx, stage() - 1, backward_tag(a.micro));
}

template <typename T>
void Pipeline<T>::count_correct(const Tensor<T>& labels) {
  stats_.correct += model::count_correct(stage_->score()->output(), labels);
}

template <typename T>
double Pipeline<T>::train_step(const Tensor<T>& x, const Tensor<T>& y) {
  const int m = options_.micro_batches;
  const std::int64_t batch = is_first() ? x.shape()[0] : y.shape()[0];
  MAGMADNN_CHECK(batch % replicas() == 0, ValueError,
                 "pipeline: " << replicas() << " replicas do not divide the batch of " << batch);
  const std::int64_t rows = batch / replicas(), r0 = replica() * rows;  // this replica's rows
  check_micro_batches(rows, m);
  const Tensor<T> xs = is_first() ? x.slice(r0, r0 + rows) : Tensor<T>();
  const Tensor<T> ys = is_last() ? y.slice(r0, r0 + rows) : Tensor<T>();
  comm_->set_step(steps_);
  stats_ = {};
  stage_->set_training(true);
  stage_->zero_gradients();
  const std::vector<Action> actions = stage_actions(options_.schedule, stage(), stages(), m);
  stats_.peak_in_flight = peak_in_flight(actions);
  const std::int64_t recomputed = stage_->recomputes();
  double loss_sum = 0;
  const auto t0 = Clock::now();
  try {
    for (const Action& a : actions) {
      run_action(a, xs, ys, rows / m, loss_sum);
      if (a.forward) stats_.peak_stash_bytes = std::max(stats_.peak_stash_bytes, stage_->stash_bytes());
    }
    finish_sends();
  } catch (const std::exception& e) {
    comm_->report_failure(e.what());  // the other stages stop at once instead of at their watchdog
    throw;
  }
  stats_.wall_s = seconds_since(t0);
  stats_.recomputes = stage_->recomputes() - recomputed;
  for (auto& g : stage_->gradients())  // the replicas' mean gradients, averaged: the whole batch's
    if (options_.replicas)
      options_.replicas->allreduce(host_buffer(g.mutable_host_data(), static_cast<std::size_t>(g.size())),
                                   ReduceOp::avg);
  op::GradTable<T> table;
  std::vector<op::Expr<T>> vars;
  for (std::size_t i = 0; i < stage_->parameters().size(); ++i) {
    vars.push_back(stage_->parameters()[i]);
    table.set(vars.back(), std::move(stage_->gradients()[i]));
  }
  if (!vars.empty()) opt_->step(vars, table);
  else opt_->set_step_count(opt_->step_count() + 1);  // a stage without weights keeps the schedule's count too
  stage_->zero_gradients();
  double result[2] = {loss_sum / m, static_cast<double>(stats_.correct)};
  comm_->broadcast(host_buffer(result, 2), stages() - 1);
  if (options_.replicas) {
    options_.replicas->allreduce(host_buffer(result, 2), ReduceOp::sum);
    result[0] /= replicas();
  }
  stats_.loss = result[0];
  stats_.correct = static_cast<std::int64_t>(result[1]);
  ++steps_;
  return stats_.loss;
}

template <typename T>
model::Evaluation Pipeline<T>::evaluate(const data::Samples<T>& x, const Tensor<T>& y, std::int64_t batch,
                                        std::vector<std::int64_t>* classes) {
  data::LoaderOptions lo;
  lo.batch_size = batch;
  lo.shuffle = false;
  lo.workers = 0;
  data::DataLoader<T> loader(x, y, lo);
  stage_->set_training(false);
  double sums[2] = {0, 0};  // loss x rows, correct rows
  data::Batch<T> b;
  for (std::int64_t k = 0; loader.next(b); ++k) {
    const int tag = forward_tag(k % 1024);
    const Tensor<T> in = is_first() ? b.x : receive(stage() - 1, tag, b.size, in_sample_, "evaluation batch", k);
    const Tensor<T>& out = stage_->infer(in, is_last() ? &b.y : nullptr);
    if (!is_last()) {
      send(out, stage() + 1, tag);
      continue;
    }
    sums[0] += static_cast<double>(out.get(0)) * static_cast<double>(b.size);
    sums[1] += static_cast<double>(model::count_correct(stage_->score()->output(), b.y));
    if (classes) {
      const auto c = model::row_classes(stage_->score()->output());
      classes->insert(classes->end(), c.begin(), c.end());
    }
  }
  finish_sends();
  if (classes) {
    classes->resize(static_cast<std::size_t>(loader.size()));
    comm_->broadcast(host_buffer(classes->data(), classes->size()), stages() - 1);
  }
  stage_->set_training(true);
  comm_->broadcast(host_buffer(sums, 2), stages() - 1);
  model::Evaluation e;
  e.samples = loader.size();
  e.loss = e.samples > 0 ? sums[0] / static_cast<double>(e.samples) : 0.0;
  e.accuracy = e.samples > 0 ? sums[1] / static_cast<double>(e.samples) : 0.0;
  return e;
}

template class Pipeline<float>;
template class Pipeline<double>;

}  // namespace magmadnn::distributed::pipeline
