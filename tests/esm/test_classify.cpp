// classify_model (spec §6.3.1): the worked example inline, then every golden of the
// conformance classification suite.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "esi/core/json.hpp"
#include "esi/esm/structural.hpp"

namespace fs = std::filesystem;
using esi::esm::Classification;
using esi::esm::classify_model;
using nlohmann::json;

namespace {

json to_json(const Classification& c) {
  return {{"ode_states", c.ode_states},
          {"observed_unknowns", c.observed_unknowns},
          {"algebraic_unknowns", c.algebraic_unknowns},
          {"brownian_parameters", c.brownian_parameters},
          {"discrete_parameters", c.discrete_parameters},
          {"sampled_parameters", c.sampled_parameters},
          {"constant_parameters", c.constant_parameters},
          {"system_kind", c.system_kind},
          {"declared_system_kind",
           c.declared_system_kind.empty() ? json(nullptr) : json(c.declared_system_kind)}};
}

fs::path corpus_dir() {
  if (const char* env = std::getenv("ESI_CORPUS"); env && *env) return env;
  return ESI_DEFAULT_CORPUS;
}

/// The model node at a golden's dot-path key ("Parent.Child" is a subsystem).
const json* model_at(const json& doc, const std::string& path) {
  const json* level = doc.contains("models") ? &doc["models"] : nullptr;
  const json* node = nullptr;
  std::size_t start = 0;
  while (level && level->is_object()) {
    const std::size_t dot = path.find('.', start);
    const std::string seg = path.substr(start, dot == std::string::npos ? dot : dot - start);
    if (!level->contains(seg)) return nullptr;
    node = &(*level)[seg];
    if (dot == std::string::npos) return node;
    start = dot + 1;
    level = node->contains("subsystems") ? &(*node)["subsystems"] : nullptr;
  }
  return nullptr;
}

}  // namespace

TEST(Classify, SpecWorkedExample) {
  const json model = json::parse(R"({
    "variables": {
      "c": {"type": "unknown"}, "v_dep": {"type": "unknown"}, "SO4": {"type": "unknown"},
      "k": {"type": "parameter", "default": 0.1},
      "eps": {"type": "parameter", "distribution": {"kind": "normal", "mean": 0, "std": 1},
              "update": {"kind": "wiener"}}},
    "equations": [
      {"lhs": {"op": "D", "args": ["c"], "wrt": "t"}, "rhs": {"op": "*", "args": ["k", "c"]}},
      {"lhs": "v_dep", "rhs": {"op": "/", "args": [1, "k"]}},
      {"lhs": {"op": "*", "args": ["SO4", "SO4"]}, "rhs": "k"}]})");
  const Classification c = classify_model(model);
  EXPECT_EQ(c.ode_states, std::vector<std::string>{"c"});
  EXPECT_EQ(c.observed_unknowns, std::vector<std::string>{"v_dep"});
  EXPECT_EQ(c.algebraic_unknowns, std::vector<std::string>{"SO4"});
  EXPECT_EQ(c.brownian_parameters, std::vector<std::string>{"eps"});
  EXPECT_EQ(c.constant_parameters, std::vector<std::string>{"k"});
  EXPECT_EQ(c.system_kind, "sde");
  EXPECT_EQ(c.declared_system_kind, "");
}

TEST(Classify, ArrayedAndInitialConditionForms) {
  // Element and aggregate LHSs define their array (§4.3); an `ic` equation defines nothing;
  // a spatial D on the RHS makes the model a PDE even without a time derivative.
  const json model = json::parse(R"({
    "variables": {"u": {"type": "unknown", "shape": ["x"]}, "w": {"type": "unknown"},
                  "e": {"type": "unknown", "shape": ["x"]}, "f": {"type": "unknown"}},
    "equations": [
      {"lhs": {"op": "aggregate", "output_idx": ["i"], "expr": {"op": "D", "args": [
        {"op": "index", "args": ["u", "i"]}], "wrt": "t"}}, "rhs": 0},
      {"lhs": {"op": "index", "args": [{"op": "D", "args": ["w"], "wrt": "t"}]}, "rhs": 0},
      {"lhs": {"op": "index", "args": ["e", "i"]}, "rhs": {"op": "D", "args": ["u"], "wrt": "x"}},
      {"lhs": {"op": "ic", "args": ["f"]}, "rhs": 0}]})");
  const Classification c = classify_model(model);
  EXPECT_EQ(c.ode_states, (std::vector<std::string>{"u", "w"}));
  EXPECT_EQ(c.observed_unknowns, std::vector<std::string>{"e"});
  EXPECT_EQ(c.algebraic_unknowns, std::vector<std::string>{"f"});
  EXPECT_EQ(c.system_kind, "pde");
}

TEST(Classify, MalformedModelsNeverThrow) {
  for (const char* t : {"null", "[]", R"({"variables": 1, "equations": {}})",
                        R"({"variables": {"a": 3}, "equations": [null, {"lhs": {"op": "D"}}]})"})
    EXPECT_NO_THROW(classify_model(json::parse(t))) << t;
}

TEST(Classify, ConformanceGoldens) {
  const fs::path dir = corpus_dir() / "EarthSciAST-tests/conformance/classification";
  if (!fs::is_directory(dir))
    GTEST_SKIP() << "corpus folder " << dir << " not found; set ESI_CORPUS to the corpus "
                 << "directory (the one holding EarthSciAST-tests/) to run this test";
  const json manifest = esi::read_json_file(dir / "manifest.json");
  std::size_t models = 0, fixtures = 0;
  for (const auto& f : manifest.at("fixtures")) {
    const json doc = esi::read_json_file(dir / f.at("fixture").get<std::string>());
    const json golden = esi::read_json_file(dir / f.at("golden").get<std::string>());
    ++fixtures;
    for (const auto& [key, want] : golden.at("models").items()) {
      const json* node = model_at(doc, key);
      ASSERT_NE(node, nullptr) << f.at("id") << ": no model at " << key;
      json got = to_json(classify_model(*node));
      if (!want.contains("declared_system_kind"))
        got.erase("declared_system_kind");  // some omit it
      EXPECT_EQ(got, want) << f.at("id") << " model " << key;
      ++models;
    }
  }
  EXPECT_EQ(fixtures, 6u);
  EXPECT_GE(models, 13u);
}
