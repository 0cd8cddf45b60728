// `esi plan`: plan.json on stdout or in a file, the same bytes twice, operators by name, and
// located refusals (missing file, bad option values, a failed validation).
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/decay_diffusion.hpp"
#include "support/run_esi.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using esi::testing::read_all;

esi::testing::CliResult run(const esi::testing::TempDir& dir, const std::vector<std::string>& args) {
  return esi::testing::run_esi(ESI_BINARY, args, dir.path() / "stderr.txt");
}

fs::path superfast() { return esi::testing::corpus_dir() / "EarthSciModels/components/gaschem/superfast.esm"; }

}  // namespace

TEST(CliPlan, WritesTheOperatorsOfAReactionSystemToStdout) {
  if (esi::testing::corpus_dir().empty()) GTEST_SKIP() << "corpus not found: set ESI_CORPUS";
  esi::testing::TempDir dir;
  const auto r = run(dir, {"plan", superfast().string()});
  ASSERT_EQ(r.status, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["form"], "scalar");
  ASSERT_EQ(j["operators"].size(), 1u);
  const nlohmann::json& op = j["operators"][0];
  EXPECT_EQ(op["name"], "SuperFast");
  EXPECT_EQ(op["locality"], "pointwise");
  EXPECT_EQ(op["pattern"]["n"], 12);
  EXPECT_EQ(op["pattern"]["nnz"], 68);
  // Rows by name: O3's row lists the species its tendency depends on.
  EXPECT_TRUE(op["pattern"]["rows"].contains("SuperFast.O3"));
  EXPECT_EQ(j["validation"]["ok"], true);
  EXPECT_EQ(j["validation"]["outside_pattern"], 0);
  EXPECT_NE(r.err.find("1 operators in"), std::string::npos) << r.err;
}

TEST(CliPlan, TheSameFileTwiceGivesTheSameBytes) {
  if (esi::testing::corpus_dir().empty()) GTEST_SKIP() << "corpus not found: set ESI_CORPUS";
  esi::testing::TempDir dir;
  const fs::path a = dir.path() / "a.json", b = dir.path() / "b.json";
  ASSERT_EQ(run(dir, {"plan", superfast().string(), "-o", a.string()}).status, 0);
  ASSERT_EQ(run(dir, {"plan", "-o", b.string(), superfast().string()}).status, 0);
  const std::string first = read_all(a);
  EXPECT_FALSE(first.empty());
  EXPECT_EQ(first, read_all(b));
}

TEST(CliPlan, WithARunConfigurationItRecordsEachLeafsMethodAndWhy) {
  // Decay rows 0.01 i (largest 0.06), diffusion rows at most 4 K = 0.008: constant Jacobians,
  // so the sampled Gershgorin bounds are exact.
  esi::testing::TempDir dir;
  const fs::path model = dir.write("m.esm", esi::testing::decay_diffusion_model("0.01"));
  const nlohmann::json config = {
      {"time", {{"stop", 20000}}},
      {"operators", {{"transport", {{"select", {{"locality", {"stencil", "column"}}}}}},
                     {"chemistry", {{"select", {{"locality", "pointwise"}}}}}}},
      {"schedule", {{"lie", {{{"leaf", "transport"}, {"alg", "SSPRK43"}}, {{"leaf", "chemistry"}, {"alg", "auto"}}}}}},
      {"step", {{"dt", 10000}}}};
  const fs::path cfg = dir.write("run.json", config.dump());
  const fs::path a = dir.path() / "a.json", b = dir.path() / "b.json";
  auto r = run(dir, {"plan", model.string(), "--config", cfg.string(), "-o", a.string()});
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_EQ(run(dir, {"plan", "--config", cfg.string(), model.string(), "-o", b.string()}).status, 0);
  EXPECT_EQ(read_all(a), read_all(b));
  const nlohmann::json j = nlohmann::json::parse(read_all(a));
  for (const auto& op : j["operators"]) {
    const double bound = op["gershgorin_at_samples"];
    EXPECT_NEAR(bound, op["locality"] == "pointwise" ? 0.06 : 0.008, 1e-15) << op["name"];
  }
  ASSERT_EQ(j["strategy"].size(), 2u);
  EXPECT_EQ(j["strategy"][0]["alg"], "SSPRK43");
  EXPECT_EQ(j["strategy"][0]["auto"], false);
  EXPECT_EQ(j["strategy"][1]["alg"], "Rodas3");
  EXPECT_EQ(j["strategy"][1]["auto"], true);
  EXPECT_EQ(j["strategy"][1]["pointer"], "/schedule/lie/1");
  EXPECT_NE(j["strategy"][1]["why"].get<std::string>().find("stiff, above 500"), std::string::npos);
}

TEST(CliPlan, RefusalsAreClear) {
  esi::testing::TempDir dir;
  auto r = run(dir, {"plan", (dir.path() / "missing.esm").string()});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("missing.esm"), std::string::npos) << r.err;
  r = run(dir, {"plan"});
  EXPECT_EQ(r.status, 2);
  r = run(dir, {"plan", "--samples", "0", "x.esm"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--samples"), std::string::npos) << r.err;
  r = run(dir, {"plan", "--set", "k", "x.esm"});
  EXPECT_EQ(r.status, 2);
  r = run(dir, {"plan", "--frobnicate", "x.esm"});
  EXPECT_EQ(r.status, 2);
  r = run(dir, {"help", "plan"});
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("usage: esi plan"), std::string::npos);
}

TEST(CliPlan, AValidationThatComparesNothingFails) {
  // A rate of 1/T with T = 0: every right-hand side is infinite, nothing can be compared, so
  // the plan is written but the command fails and says which row and what to do.
  esi::testing::TempDir dir;
  const fs::path doc = dir.write("inf.esm", R"({"esm": "1.0.0", "metadata": {"name": "t"},
    "models": {"M": {"variables": {"x": {"type": "unknown", "default": 1.0},
                                   "T": {"type": "parameter", "default": 0.0}},
      "equations": [{"lhs": {"op": "D", "args": ["x"], "wrt": "t"},
                     "rhs": {"op": "/", "args": ["x", "T"]}}]}}})");
  const fs::path out = dir.path() / "plan.json";
  auto r = run(dir, {"plan", doc.string(), "-o", out.string()});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("M.x is not finite"), std::string::npos) << r.err;
  const nlohmann::json j = nlohmann::json::parse(read_all(out));
  EXPECT_EQ(j["validation"]["ok"], false);
  // With T given the same document plans and validates.
  r = run(dir, {"plan", doc.string(), "--set", "M.T=300", "-o", out.string()});
  EXPECT_EQ(r.status, 0) << r.err;
}
