#include "magmadnn/run/pipeline_config.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "magmadnn/parallel/pipeline/cuts.h"
#include "magmadnn/parallel/pipeline/unit.h"
#include "magmadnn/run/build_network.h"
#include "magmadnn/run/layer_kinds.h"
#include "magmadnn/run/parallel_plan.h"

namespace magmadnn::run {

namespace pl = distributed::pipeline;

namespace {

// A library error's reason, as a ConfigError quotes it: without the
// "pipeline: " it starts with and the [file:line] it ends with.
std::string reason(const Error& e) {
  std::string m = e.what();
  const auto at = m.rfind(" [");
  if (at != std::string::npos) m.erase(at);
  if (m.rfind("pipeline: ", 0) == 0) m.erase(0, 10);
  return m;
}

std::vector<int> spec_cuts(const TrainSpec& spec) {
  return {spec.pipeline.cuts.begin(), spec.pipeline.cuts.end()};
}

void check_cuts_given(const TrainSpec& spec, const std::vector<std::vector<int>>& reads) {
  const PipelineSpec& p = spec.pipeline;
  const int n = static_cast<int>(spec.layers.size());
  if (p.cuts.empty()) {
    const auto points = pl::cut_points(reads);
    const auto places = std::count(points.begin(), points.end(), true) - 1;
    if (places + 1 < p.stages)
      throw ConfigError("parallel.pipeline.stages",
                        std::to_string(p.stages) + " stages, but the network can be cut in only " +
                            std::to_string(places) + " places (a cut inside a branch, such as a residual block's, "
                                                     "is not one)");
    return;
  }
  if (static_cast<std::int64_t>(p.cuts.size()) != p.stages)
    throw ConfigError("parallel.pipeline.cuts", "expected one first layer per stage (" + std::to_string(p.stages) +
                                                    "), got " + std::to_string(p.cuts.size()));
  try {
    pl::check_cuts(spec_cuts(spec), n);
    pl::check_no_crossing(spec_cuts(spec), reads);
  } catch (const ValueError& e) {
    throw ConfigError("parallel.pipeline.cuts", reason(e));
  }
}

}  // namespace

std::vector<std::vector<int>> layer_reads(const TrainSpec& spec) {
  std::vector<std::vector<int>> reads;
  for (std::size_t i = 0; i < spec.layers.size(); ++i) {
    std::vector<int> r;
    for (std::int64_t j : layer_inputs(spec.layers, i)) r.push_back(static_cast<int>(j));
    reads.push_back(std::move(r));
  }
  return reads;
}

void check_pipeline_config(const TrainSpec& spec) {
  const PipelineSpec& p = spec.pipeline;
  if (!p.enabled) return;
  const auto n = static_cast<std::int64_t>(spec.layers.size());
  if (p.stages > n)
    throw ConfigError("parallel.pipeline.stages", std::to_string(p.stages) + " stages but the network has only " +
                                                      std::to_string(n) + " layers (each stage needs at least one)");
  if (spec.batch_size % p.replicas != 0)
    throw ConfigError("parallel.pipeline.replicas", std::to_string(p.replicas) + " replicas do not divide batch_size " +
                                                        std::to_string(spec.batch_size));
  if (p.replicas == 1 && spec.batch_size % p.micro_batches != 0)
    throw ConfigError("parallel.pipeline.micro_batches",
                      std::to_string(p.micro_batches) + " micro-batches do not divide batch_size " +
                          std::to_string(spec.batch_size) + " (every micro-batch must have the same size)");
  if (p.replicas > 1 && (spec.batch_size / p.replicas) % p.micro_batches != 0)
    throw ConfigError("parallel.pipeline.micro_batches",
                      std::to_string(p.micro_batches) + " micro-batches do not divide a replica's " +
                          std::to_string(spec.batch_size / p.replicas) + " rows (batch_size " +
                          std::to_string(spec.batch_size) + " / " + std::to_string(p.replicas) + " replicas)");
  if (spec.batch_growth.enabled)
    throw ConfigError("batch_growth", "not supported with a pipeline yet (the micro-batches divide one batch size)");
  if (plan_parallel(spec).hybrid())
    throw ConfigError("parallel.pipeline", "a pipeline of model-parallel layers is not supported yet (set "
                                           "distributed.parallel and every layer's \"parallel\" to \"data\")");
  for (std::int64_t i = 0; i < n; ++i) {
    if (spec.layers[i].type == "dropout")
      throw ConfigError("layers[" + std::to_string(i) + "]",
                        "a dropout layer cannot be pipelined yet: a stage runs a micro-batch's forward again before "
                        "its backward, which would draw another mask");
  }
  check_cuts_given(spec, layer_reads(spec));
}

std::vector<pl::LayerFactory<float>> pipeline_factories(const TrainSpec& spec) {
  struct Shared {
    TrainSpec spec;
    ParallelPlan plan;
    std::map<std::int64_t, op::Expr<float>> outs;  // outputs built so far in this pass, by layer (-1: input)
  };
  auto sh = std::make_shared<Shared>(Shared{spec, plan_parallel(spec), {}});
  std::vector<pl::LayerFactory<float>> fs;
  for (std::size_t i = 0; i < spec.layers.size(); ++i) {
    fs.push_back([sh, i](const op::Expr<float>& in) -> std::shared_ptr<layer::Layer<float>> {
      sh->outs[static_cast<std::int64_t>(i) - 1] = in;
      const LayerSpec& l = sh->spec.layers[i];
      const std::string where = "layers[" + std::to_string(i) + "]";
      std::vector<std::shared_ptr<layer::Layer<float>>> chain;
      LayerBuild lb{chain, l, sh->plan.layers[i], where, false, nullptr, {}, {}, {}};
      for (std::int64_t j : layer_inputs(sh->spec.layers, i)) {
        lb.inputs.push_back(sh->outs.at(j));
        lb.input_names.push_back(j < 0 ? std::string(kNetworkInputName) : "layers[" + std::to_string(j) + "]");
      }
      lb.activate = [&chain](op::Expr<float> x, const std::string& name) { return push_activation(chain, x, name); };
      op::Expr<float> out = find_layer_kind(l.type)->build(lb);
      sh->outs[static_cast<std::int64_t>(i)] = out;
      return std::make_shared<pl::Unit<float>>(l.type, in, std::move(chain), out);
    });
  }
  return fs;
}

pl::PipelineOptions pipeline_options(const TrainSpec& spec) {
  pl::PipelineOptions o;
  o.micro_batches = static_cast<int>(spec.pipeline.micro_batches);
  o.schedule = pl::parse_schedule(spec.pipeline.schedule);
  o.first = spec_cuts(spec);
  o.balance = pl::parse_balance(spec.pipeline.balance);
  if (o.first.empty()) o.cut_points = pl::cut_points(layer_reads(spec));
  o.loss = spec.loss == "mse" ? optimizer::MSE : optimizer::CROSS_ENTROPY;
  return o;
}

Json pipeline_plan_json(const TrainSpec& spec, const pl::Pipeline<float>& pipe) {
  Json j;
  j["stages"] = pipe.stages();
  j["micro_batches"] = spec.pipeline.micro_batches;
  j["replicas"] = spec.pipeline.replicas;
  j["micro_batch_size"] = spec.batch_size / spec.pipeline.replicas / spec.pipeline.micro_batches;
  j["schedule"] = spec.pipeline.schedule;
  j["cuts"] = pipe.first();
  j["cut_by"] = spec.pipeline.cuts.empty() ? spec.pipeline.balance : std::string("config");
  Json stages = Json::array();
  const int n = static_cast<int>(pipe.facts().size());
  for (int s = 0; s < pipe.stages(); ++s) {
    const int begin = pipe.first()[s], end = s + 1 < pipe.stages() ? pipe.first()[s + 1] : n;
    Json st, types = Json::array();
    std::int64_t params = 0;
    double flops = 0;
    for (int i = begin; i < end; ++i) {
      types.push_back(spec.layers[i].type);
      params += pipe.facts()[i].params;
      flops += pipe.facts()[i].flops;
    }
    st["stage"] = s;
    st["layers"] = {begin, end - 1};
    st["types"] = types;
    st["parameters"] = params;
    st["weight_bytes"] = params * static_cast<std::int64_t>(sizeof(float));
    st["estimated_flops_per_sample"] = flops;
    std::int64_t out = 1;
    for (std::int64_t d : pipe.facts()[end - 1].out_sample) out *= d;
    st["output_floats_per_sample"] = out;
    stages.push_back(st);
  }
  j["per_stage"] = stages;
  return j;
}

std::string pipeline_plan_text(const Json& plan) {
  std::ostringstream os;
  const auto replicas = plan["replicas"].get<std::int64_t>();
  os << "pipeline: " << plan["stages"].get<int>() << " stages";
  if (replicas > 1) os << " x " << replicas << " replicas";
  os << ", " << plan["micro_batches"].get<std::int64_t>()
     << " micro-batches of " << plan["micro_batch_size"].get<std::int64_t>() << ", "
     << plan["schedule"].get<std::string>() << ", cuts by " << plan["cut_by"].get<std::string>() << "\n";
  for (const Json& st : plan["per_stage"]) {
    const int stage = st["stage"].get<int>(), stages = plan["stages"].get<int>();
    os << "  stage " << stage << " (rank" << (replicas > 1 ? "s" : "");
    for (std::int64_t r = 0; r < replicas; ++r) os << (r ? ", " : " ") << r * stages + stage;
    os << "): layers["
       << st["layers"][0].get<int>() << ".." << st["layers"][1].get<int>() << "]";
    for (const Json& t : st["types"]) os << " " << t.get<std::string>();
    os << "; " << st["parameters"].get<std::int64_t>() << " parameters, ~"
       << static_cast<std::int64_t>(st["estimated_flops_per_sample"].get<double>()) << " flops a sample\n";
  }
  return os.str();
}

}  // namespace magmadnn::run
