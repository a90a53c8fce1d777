// The run spec declared once (run/spec_fields.h): every key a config may
// hold has one entry, parse_config and to_json go through it, every entry's
// reader refuses what its `accepts` does not cover, and docs/cli.md's key
// table is the one the table generates.
#include <gtest/gtest.h>

#include "run/config_error.h"

#include <cmath>
#include <cstdlib>
#include <map>
#include <fstream>
#include <set>
#include <sstream>

#include "magmadnn/run/presets.h"
#include "magmadnn/run/spec_fields.h"

using namespace magmadnn::run;

namespace {

Json minimal() { return Json{{"layers", Json::array({Json{{"type", "flatten"}}, Json{{"type", "dense"}, {"units", 10}}})}}; }

// Sets `path` ("a.b", "a.b.c") of a copy of `j` to `v`.
Json with(Json j, const SpecField& f, const Json& v) {
  Json* at = &j;
  std::stringstream groups(f.group);
  for (std::string g; !f.group.empty() && std::getline(groups, g, '.');) at = &(*at)[g];
  (*at)[f.key] = v;
  return j;
}

using magmadnn::run::testing::error_of;

// Every key path of a written config, objects' keys included.
void collect_paths(const Json& j, const std::string& prefix, std::set<std::string>& out) {
  for (const auto& [k, v] : j.items()) {
    if (k == "layers") {
      out.insert(k);
      continue;
    }
    const std::string p = prefix.empty() ? k : prefix + "." + k;
    out.insert(p);
    if (v.is_object()) collect_paths(v, p, out);
  }
}

}  // namespace

TEST(SpecSchema, EveryWrittenKeyHasOneEntry) {
  std::set<std::string> table;
  for (const SpecField& f : spec_fields()) EXPECT_TRUE(table.insert(f.path()).second) << f.path() << " twice";
  Json synthetic = minimal();
  synthetic["data"] = {{"dataset", "synthetic"}, {"shape", {1, 8, 8}}};
  synthetic["early_stopping"] = {{"patience", 2}};
  synthetic["batch_growth"] = {{"max", 400}};
  synthetic["loss_scaling"] = {{"mode", "on"}};
  synthetic["precision"] = "bf16";
  synthetic["deterministic"] = true;
  synthetic["test_every_epoch"] = true;
  Json pipeline = minimal();
  pipeline["parallel"] = {{"pipeline", {{"stages", 2}, {"micro_batches", 4}, {"cuts", {0, 1}}}}};
  for (const Json& j : {synthetic, pipeline, preset("mlp"), preset("resnet50")}) {
    std::set<std::string> written;
    collect_paths(to_json(parse_config(j)), "", written);
    for (const std::string& p : written) EXPECT_TRUE(table.count(p)) << p << " is written but has no entry";
  }
}

// The table's order is the written order, and what is written reads back.
TEST(SpecSchema, ToJsonFollowsTheTableAndReadsBack) {
  const TrainSpec s = parse_config(preset("lenet5"));
  const Json j = to_json(s);
  std::vector<std::string> order;
  for (const SpecField& f : spec_fields()) {
    if (f.group.empty() && j.contains(f.key)) order.push_back(f.key);
  }
  std::vector<std::string> written;
  for (const auto& [k, v] : j.items()) written.push_back(k);
  EXPECT_EQ(written, order);
  EXPECT_EQ(parse_config(j), s);
}

// A value outside what each field accepts is refused, naming its path.
TEST(SpecSchema, EveryReaderRefusesWhatItDoesNotAccept) {
  int checked = 0;
  for (const SpecField& f : spec_fields()) {
    if (!f.read || f.accepts.kind == Accepts::Kind::object) continue;
    Json bad;
    switch (f.accepts.kind) {
      case Accepts::Kind::integer: bad = f.accepts.ints.max + 1; break;
      case Accepts::Kind::seed: bad = -1; break;
      case Accepts::Kind::number: bad = std::isinf(f.accepts.hi) ? Json(-1.0) : Json(f.accepts.hi + 1); break;
      case Accepts::Kind::positive: bad = 0; break;
      case Accepts::Kind::boolean: bad = "yes"; break;
      default: bad = Json::array(); break;
    }
    const std::string e = error_of(with(minimal(), f, bad));
    EXPECT_EQ(e.rfind(f.path() + ": ", 0), 0u) << f.path() << " took " << bad.dump() << ": " << e;
    ++checked;
  }
  EXPECT_GT(checked, 40);
}

// An open lower end is refused at the end itself, with the interval.
TEST(SpecSchema, OpenIntervalsRefuseTheirEnd) {
  const SpecField f = spec_field("distributed.bucket_mb");
  EXPECT_EQ(f.accepts.text(), "a number in (0, 4096]");
  EXPECT_EQ(error_of(with(minimal(), f, 0)), "distributed.bucket_mb: expected a number in (0, 4096], got 0");
  EXPECT_THROW(spec_field("optimizer.learning_rat"), magmadnn::ValueError);
}

// The schema lists each field with its flag and resume rule.
TEST(SpecSchema, SchemaNamesFlagsAndResumeRules) {
  const Json s = spec_schema();
  std::map<std::string, Json> by_key;
  for (const Json& e : s) by_key[e["key"].get<std::string>()] = e;
  EXPECT_EQ(by_key.at("optimizer.learning_rate")["flag"], "--lr X");
  EXPECT_EQ(by_key.at("optimizer.learning_rate")["resume_may_change"], false);
  EXPECT_EQ(by_key.at("precision")["resume_may_change"], true);
  EXPECT_EQ(by_key.at("optimizer.learning_rate")["default"], "0.05");
  EXPECT_EQ(by_key.at("schedule.base_batch")["default"], "batch_size");
  EXPECT_FALSE(by_key.at("optimizer.momentum").contains("flag"));
  EXPECT_EQ(by_key.at("loss")["choices"], Json::array({"cross_entropy", "mse"}));
}

// docs/cli.md holds the table that spec_key_table() generates, between its
// markers: a key added to the table and not to the page fails here.
TEST(SpecSchema, DocsKeyTableIsTheGeneratedOne) {
  std::ifstream in(std::string(MAGMADNN_SOURCE_DIR) + "/docs/cli.md");
  ASSERT_TRUE(in) << "docs/cli.md";
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string page = ss.str();
  const std::string begin = "<!-- spec_key_table: begin (generated from run/spec_fields.cpp by "
                            "tests/run/test_spec_schema.cpp with MAGMADNN_UPDATE_DOCS=1) -->\n";
  const std::string end = "<!-- spec_key_table: end -->";
  const auto b = page.find(begin);
  const auto e = page.find(end);
  ASSERT_NE(b, std::string::npos);
  ASSERT_NE(e, std::string::npos);
  const std::string table = page.substr(b + begin.size(), e - b - begin.size());
  // MAGMADNN_UPDATE_DOCS=1 writes the generated table into the page (as
  // PyTorch's EXPECTTEST_ACCEPT does for expected outputs).
  if (const char* u = std::getenv("MAGMADNN_UPDATE_DOCS"); u && std::string(u) == "1" && table != spec_key_table()) {
    std::ofstream(std::string(MAGMADNN_SOURCE_DIR) + "/docs/cli.md")
        << page.substr(0, b + begin.size()) << spec_key_table() << page.substr(e);
    GTEST_SKIP() << "docs/cli.md rewritten";
  }
  EXPECT_EQ(table, spec_key_table()) << "the key table of docs/cli.md is stale: run this test with "
                                        "MAGMADNN_UPDATE_DOCS=1 to regenerate it";
}
