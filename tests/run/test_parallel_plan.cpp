// Hybrid plans in the config: "parallel" per layer and distributed.parallel
// parsed and written back, what plan_parallel() lays out for the wide MLP and
// LeNet-5 under "data", "model" and "auto", and the refusals, each naming
// its JSON path. With no group (one process) every plan builds the plain network.
#include <gtest/gtest.h>

#include <string>

#include "magmadnn/run/build_network.h"
#include "magmadnn/run/parallel_plan.h"
#include "magmadnn/run/presets.h"
#include "magmadnn/run/spec.h"

namespace {
using namespace magmadnn;
using namespace magmadnn::run;

Json wide_mlp(const std::string& parallel) {
  Json j;
  j["layers"] = Json::array({{{"type", "flatten"}},
                             {{"type", "dense"}, {"units", 4096}, {"activation", "relu"}},
                             {{"type", "dense"}, {"units", 4096}, {"activation", "relu"}},
                             {{"type", "dense"}, {"units", 10}, {"activation", "softmax"}}});
  if (!parallel.empty()) j["distributed"] = {{"parallel", parallel}};
  return j;
}

// The error message parse_config throws for `j`, or "" if it parses.
std::string refusal(const Json& j) {
  try {
    parse_config(j);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

std::vector<Placement> placements(const ParallelPlan& p) {
  std::vector<Placement> out;
  for (const auto& l : p.layers) out.push_back(l.placement);
  return out;
}

TEST(ParallelConfig, DefaultIsDataAndRoundTrips) {
  const TrainSpec s = parse_config(wide_mlp(""));
  EXPECT_EQ(s.distributed.parallel, "data");
  EXPECT_FALSE(plan_parallel(s).hybrid());
  // The default is not written, so older configs read back unchanged.
  EXPECT_FALSE(to_json(s)["distributed"].contains("parallel"));
  Json j = wide_mlp("auto");
  j["layers"][3]["parallel"] = "data";
  const TrainSpec t = parse_config(j);
  EXPECT_EQ(t.layers[3].parallel, "data");
  EXPECT_EQ(parse_config(to_json(t)), t);
  EXPECT_EQ(to_json(t)["distributed"]["parallel"], "auto");
}

TEST(ParallelConfig, UnknownValuesAndMisplacedKeysNameTheirPath) {
  Json j = wide_mlp("");
  j["layers"][1]["parallel"] = "tensor";
  EXPECT_NE(refusal(j).find("layers[1].parallel: expected one of \"data\", \"model\", \"auto\""), std::string::npos)
      << refusal(j);
  EXPECT_NE(refusal(wide_mlp("both")).find("distributed.parallel: expected one of"), std::string::npos);
  Json k = wide_mlp("");
  k["layers"][0]["parallel"] = "model";
  EXPECT_NE(refusal(k).find("layers[0].parallel: only dense and conv2d layers choose a layout"), std::string::npos)
      << refusal(k);
}

TEST(ParallelConfig, StrategiesOtherThanAllreduceAreRefusedForHybridPlans) {
  for (const char* s : {"weight-avg", "ps", "asgd", "ring"}) {
    Json j = wide_mlp("auto");
    j["distributed"]["strategy"] = s;
    EXPECT_NE(refusal(j).find("distributed.strategy: the plan has model-parallel layers"), std::string::npos)
        << s << ": " << refusal(j);
    Json d = wide_mlp("data");  // plain data parallelism: every strategy
    d["distributed"]["strategy"] = s;
    EXPECT_EQ(refusal(d), "") << s;
  }
}

TEST(ParallelConfig, DropoutOnWholeBatchActivationsIsRefused) {
  Json j = wide_mlp("auto");
  j["layers"].insert(j["layers"].begin() + 3, Json{{"type", "dropout"}, {"rate", 0.5}});
  EXPECT_NE(refusal(j).find("layers[3]: dropout on whole-batch activations"), std::string::npos) << refusal(j);
}

// The refusal's advice, followed, is accepted (the old advice, "give the
// dense layer after it parallel: data", gave the same refusal again).
TEST(ParallelConfig, DropoutRefusalAdviceWorksWhenFollowed) {
  auto dense = [](int units, const char* act, const char* parallel) {
    return Json{{"type", "dense"}, {"units", units}, {"activation", act}, {"parallel", parallel}};
  };
  const Json dropout = {{"type", "dropout"}, {"rate", 0.5}};
  Json j;
  j["layers"] = Json::array({{{"type", "flatten"}}, dense(32, "relu", "data"), dense(64, "relu", "model"), dropout,
                             dense(32, "relu", "data"), dense(10, "softmax", "data")});
  const std::string r = refusal(j);
  EXPECT_NE(r.find("layers[3]: dropout on whole-batch activations"), std::string::npos) << r;
  EXPECT_EQ(r.find("give the dense layer after it"), std::string::npos) << r;
  EXPECT_NE(r.find("move it right after layers[1] or after layers[4]"), std::string::npos) << r;
  for (int spot : {1, 4}) {  // the advice, followed: the dropout right after layers[spot]
    Json moved = j;
    moved["layers"].erase(3);
    moved["layers"].insert(moved["layers"].begin() + (spot < 3 ? spot + 1 : spot), dropout);
    EXPECT_EQ(refusal(moved), "") << spot << ": " << moved["layers"].dump();
  }
  // No data-parallel layer but the last: the message says to add one, and that works.
  Json u2;
  u2["layers"] = Json::array({dense(64, "relu", "model"), dropout, dense(10, "softmax", "data")});
  const std::string none = refusal(u2);
  EXPECT_NE(none.find("add a dense layer with \"parallel\": \"data\" and put the dropout right after it"),
            std::string::npos)
      << none;
  Json added = u2;
  added["layers"].insert(added["layers"].begin() + 1, dense(64, "relu", "data"));
  EXPECT_EQ(refusal(added), "") << added["layers"].dump();
}

TEST(ParallelPlan, WideMlpUnderModelAndAuto) {
  const ParallelPlan m = plan_parallel(parse_config(wide_mlp("model")));
  EXPECT_TRUE(m.hybrid());
  EXPECT_EQ(placements(m), (std::vector<Placement>{Placement::replicated, Placement::column, Placement::row,
                                                   Placement::column_gathered}));
  EXPECT_EQ(m.before_input, Transition::none);  // the data arrives whole on every rank
  EXPECT_EQ(m.before_loss, Transition::none);
  const ParallelPlan a = plan_parallel(parse_config(wide_mlp("auto")));
  EXPECT_EQ(placements(a), (std::vector<Placement>{Placement::replicated, Placement::column, Placement::row,
                                                   Placement::replicated}));
}

TEST(ParallelPlan, LeNet5UnderAuto) {
  Json j = preset("lenet5");
  j["distributed"] = {{"parallel", "auto"}};
  const ParallelPlan p = plan_parallel(parse_config(j));
  // conv, pool, conv, pool, flatten on shards; the 120/84 pair split; the head replicated.
  EXPECT_EQ(placements(p),
            (std::vector<Placement>{Placement::data, Placement::data, Placement::data, Placement::data,
                                    Placement::data, Placement::column, Placement::row, Placement::replicated}));
  EXPECT_EQ(p.before_input, Transition::scatter_batch);
  EXPECT_EQ(p.layers[5].before, Transition::gather_batch);
  EXPECT_EQ(p.before_loss, Transition::none);
  // A data-parallel head after the split pair: cut the batch again, join it before the loss.
  j["layers"][7]["parallel"] = "data";
  const ParallelPlan q = plan_parallel(parse_config(j));
  EXPECT_EQ(q.layers[7].placement, Placement::data);
  EXPECT_EQ(q.layers[7].before, Transition::scatter_batch);
  EXPECT_EQ(q.before_loss, Transition::gather_batch);
}

TEST(ParallelPlan, AutoWithoutAPairIsPlainDataParallelism) {
  // A convolutional net with one dense head: nothing to split.
  Json j;
  j["layers"] = Json::array({{{"type", "conv2d"}, {"filters", 4}, {"kernel", 3}},
                             {{"type", "flatten"}},
                             {{"type", "dense"}, {"units", 10}}});
  j["distributed"] = {{"parallel", "auto"}};
  const ParallelPlan p = plan_parallel(parse_config(j));
  EXPECT_FALSE(p.hybrid());
  EXPECT_EQ(p.before_input, Transition::none);
}

// "model" on a convolution is the channel-parallel convolution across
// ranks; one process builds the plain Conv2D (the split needs a group).
TEST(ParallelPlan, ModelOnConv2dSplitsChannelsAndOneProcessBuildsThePlainLayer) {
  Json j = preset("lenet5");
  j["layers"][2]["parallel"] = "model";
  const TrainSpec s = parse_config(j);
  EXPECT_EQ(plan_parallel(s).layers[2].placement, Placement::channels);
  const NetworkBuild b = build_network(s, {1, 28, 28}, 1, 10);
  EXPECT_FALSE(b.split);
  EXPECT_EQ(b.rank_weights, b.whole_weights);
}

TEST(ParallelPlan, OneProcessBuildsThePlainNetwork) {
  for (const char* how : {"data", "model", "auto"}) {
    const TrainSpec s = parse_config(wide_mlp(how));
    const NetworkBuild b = build_network(s, {1, 28, 28}, 1, 10);
    EXPECT_FALSE(b.split) << how;
    EXPECT_TRUE(b.exchange.empty());
    for (const auto& l : b.model->layers()) EXPECT_EQ(l->type_name().find("Parallel"), std::string::npos) << how;
    EXPECT_EQ(b.rank_weights, b.whole_weights);
    EXPECT_EQ(b.whole_weights, b.model->num_params());
  }
}

}  // namespace
