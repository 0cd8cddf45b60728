// esm::describe and reaction_text: reactions as authored (coefficients, empty sides, local
// names, templates expanded), natural name order, group selection and the keep filter.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "esi/esm/flatten.hpp"
#include "support/temp_dir.hpp"

namespace {

using esi::esm::DescribeOptions;
using esi::esm::describe;
using esi::esm::flatten;
using esi::esm::load_resolved;
using esi::esm::System;
using esi::testing::TempDir;
using nlohmann::json;

/// 2 A -> 0.5 B at a template rate, a sink of B, and species x_2, x_10, x_1 declared in byte
/// order so natural order (x_1, x_2, x_10) has to be made.
const char* kMechanism = R"({"esm": "1.0.0", "metadata": {"name": "t", "authors": ["test"]},
  "reaction_systems": {"R": {
    "expression_templates": {"arrhenius": {"params": ["A0", "E"],
      "body": {"op": "*", "args": ["A0", {"op": "exp", "args": [{"op": "/", "args": [{"op": "-", "args": ["E"]}, "T"]}]}]}}},
    "species": {"A": {"default": 1.0}, "B": {"default": 0.0}, "x_10": {"default": 0.0},
                "x_2": {"default": 0.0}, "x_1": {"default": 0.0}},
    "parameters": {"T": {"default": 300.0}, "k_sink": {"default": 0.1}},
    "reactions": [
      {"id": "R1", "name": "dimerish", "substrates": [{"species": "A", "stoichiometry": 2}],
       "products": [{"species": "B", "stoichiometry": 0.5}],
       "rate": {"op": "apply_expression_template", "name": "arrhenius", "args": [],
                "bindings": {"A0": 2.5, "E": 100}}},
      {"id": "R2", "substrates": [{"species": "B", "stoichiometry": 1}], "products": null, "rate": "k_sink"}
    ]}}})";

System flat(const TempDir& dir) { return flatten(load_resolved(dir.write("m.esm", kMechanism))); }

TEST(Describe, ReactionsAreRecordedAsAuthoredWithTemplatesExpanded) {
  TempDir dir;
  const System s = flat(dir);
  ASSERT_EQ(s.reactions.size(), 2u);
  EXPECT_EQ(s.reactions[0].component, "R");
  EXPECT_EQ(s.reactions[0].id, "R1");
  EXPECT_EQ(s.reactions[0].pointer, "/reaction_systems/R/reactions/0");
  ASSERT_EQ(s.reactions[0].substrates.size(), 1u);
  EXPECT_EQ(s.reactions[0].substrates[0].second, 2.0);
  EXPECT_EQ(s.reactions[0].products[0].second, 0.5);
  EXPECT_EQ(esi::esm::reaction_text(s, s.reactions[0]), "2 A -> 0.5 B : 2.5 * exp(-(100) / T)");
  EXPECT_EQ(esi::esm::reaction_text(s, s.reactions[1]), "B -> \u2205 : k_sink");
}

TEST(Describe, GroupsAreInNaturalOrderAndReactionsInDocumentOrder) {
  TempDir dir;
  const json d = describe(flat(dir));
  std::vector<std::string> states;
  for (const json& v : d["states"]) states.push_back(v["name"]);
  EXPECT_EQ(states, (std::vector<std::string>{"R.A", "R.B", "R.x_1", "R.x_2", "R.x_10"}));
  ASSERT_EQ(d["reactions"].size(), 2u);
  EXPECT_EQ(d["reactions"][0]["id"], "R1");
  EXPECT_EQ(d["reactions"][0]["name"], "dimerish");
  EXPECT_EQ(d["reactions"][1]["id"], "R2");
  EXPECT_EQ(d["counts"]["reactions"], 2);
  // One ODE per species, listed under the state's name in the same natural order.
  ASSERT_EQ(d["equations"].size(), 5u);
  EXPECT_EQ(d["equations"][4]["variable"], "R.x_10");
  EXPECT_EQ(d["equations"][0]["kind"], "ode");
}

TEST(Describe, OptionsSelectGroupsAndKeepFilters) {
  TempDir dir;
  const System s = flat(dir);
  DescribeOptions only_reactions;
  only_reactions.states = only_reactions.observed = only_reactions.parameters = only_reactions.equations = false;
  const json r = describe(s, only_reactions);
  EXPECT_FALSE(r.contains("states"));
  EXPECT_FALSE(r.contains("parameters"));
  EXPECT_FALSE(r.contains("equations"));
  EXPECT_EQ(r["reactions"].size(), 2u);

  DescribeOptions sink;  // matches R2's rate and the parameter's name, nothing else
  sink.keep = [](const std::string& text) { return text.find("k_sink") != std::string::npos; };
  const json k = describe(s, sink);
  ASSERT_EQ(k["reactions"].size(), 1u);
  EXPECT_EQ(k["reactions"][0]["id"], "R2");
  ASSERT_EQ(k["parameters"].size(), 1u);
  EXPECT_EQ(k["parameters"][0]["name"], "R.k_sink");
  // B's ODE reads k_sink; A's does not.
  ASSERT_EQ(k["equations"].size(), 1u);
  EXPECT_EQ(k["equations"][0]["variable"], "R.B");
  EXPECT_TRUE(k["states"].empty());
}

}  // namespace
