// Flattening: mass action, templates, coupling, classification, overrides, refs and
// metaparameters. Right-hand sides are checked by evaluating them with the naive test
// evaluator against formulas computed here from the document's own numbers.
#include <gtest/gtest.h>

#include <cmath>

#include "esi/core/error.hpp"
#include "esi/esm/flatten.hpp"
#include "esi/expr/parse.hpp"
#include "support/eval.hpp"
#include "support/temp_dir.hpp"

using esi::esm::flatten;
using esi::esm::FlattenOptions;
using esi::esm::load_resolved;
using esi::esm::System;
using esi::testing::eval;
using esi::testing::TempDir;

namespace {

const char* kHeader = R"("esm": "1.0.0", "metadata": {"name": "t", "authors": ["test"]})";

std::string doc(const std::string& body) { return "{" + std::string(kHeader) + "," + body + "}"; }

System flatten_text(const TempDir& dir, const std::string& body, FlattenOptions o = {}) {
  return flatten(load_resolved(dir.write("m.esm", doc(body))), o);
}

double rhs_of(const System& s, const std::string& state, const std::map<std::string, double>& env) {
  const int i = s.state_index(state);
  EXPECT_GE(i, 0) << state;
  return eval(s.pool, s.state_rhs[i], env);
}

std::string error_code(const std::function<void()>& f) {
  try {
    f();
  } catch (const esi::Error& e) {
    return e.code();
  }
  return "no error";
}

constexpr const char* kReactions = R"(
"reaction_systems": {"R": {
  "species": {"A": {"default": 1.0}, "B": {"default": 2.0}, "C": {"default": 0.5},
              "M": {"default": 7.0, "constant": true}},
  "parameters": {"k1": {"default": 0.3}, "T": {"default": 290.0}},
  "expression_templates": {"arr": {"params": ["a", "e"],
      "body": {"op": "*", "args": ["a", {"op": "exp", "args": [{"op": "/", "args": [{"op": "neg", "args": ["e"]}, "T"]}]}]}}},
  "reactions": [
    {"id": "r1", "substrates": [{"species": "A", "stoichiometry": 1}, {"species": "B", "stoichiometry": 2}],
     "products": [{"species": "C", "stoichiometry": 0.5}], "rate": "k1"},
    {"id": "r2", "substrates": [{"species": "C", "stoichiometry": 1}, {"species": "M", "stoichiometry": 1}],
     "products": [{"species": "A", "stoichiometry": 1}, {"species": "C", "stoichiometry": 1}],
     "rate": {"op": "apply_expression_template", "args": [], "name": "arr", "bindings": {"a": 2e-3, "e": 150}}},
    {"id": "r3", "substrates": null, "products": [{"species": "B", "stoichiometry": 1}], "rate": 0.01}
  ]}})";

}  // namespace

TEST(Flatten, MassActionMatchesHandWrittenRates) {
  TempDir dir;
  const System s = flatten_text(dir, kReactions);
  ASSERT_EQ(s.states.size(), 3u);  // M is a reservoir: a parameter
  EXPECT_GE(s.parameter_index("R.M"), 0);
  const std::map<std::string, double> env{{"R.A", 1.3}, {"R.B", 0.7}, {"R.C", 2.1},
                                          {"R.M", 7.0}, {"R.k1", 0.3}, {"R.T", 290.0}};
  const double v1 = 0.3 * 1.3 * std::pow(0.7, 2);
  const double v2 = 2e-3 * std::exp(-150.0 / 290.0) * 2.1 * 7.0;
  const double v3 = 0.01;
  EXPECT_DOUBLE_EQ(rhs_of(s, "R.A", env), -v1 + v2);
  EXPECT_DOUBLE_EQ(rhs_of(s, "R.B", env), -2 * v1 + v3);
  // C is consumed and produced by r2 (net zero): only r1 touches it.
  EXPECT_DOUBLE_EQ(rhs_of(s, "R.C", env), 0.5 * v1);
  EXPECT_EQ(s.states[s.state_index("R.B")].default_value, 2.0);
}

TEST(Flatten, TemplateErrorsAreLocated) {
  TempDir dir;
  auto model = [](const std::string& rate, const std::string& templates) {
    return R"("reaction_systems": {"R": {"species": {"A": {"default": 1}}, "parameters": {},
      "expression_templates": )" + templates + R"(, "reactions": [
      {"id": "r", "substrates": [{"species": "A", "stoichiometry": 1}], "products": null, "rate": )" +
           rate + "}]}}";
  };
  const std::string t1 = R"({"f": {"params": ["x"], "body": {"op": "*", "args": ["x", 2]}}})";
  EXPECT_EQ(error_code([&] { flatten_text(dir, model(R"({"op": "apply_expression_template", "args": [], "name": "g", "bindings": {}})", t1)); }),
            "apply_expression_template_unknown_template");
  EXPECT_EQ(error_code([&] { flatten_text(dir, model(R"({"op": "apply_expression_template", "args": [], "name": "f", "bindings": {"y": 1}})", t1)); }),
            "apply_expression_template_bindings_mismatch");
  const std::string cyc = R"({"f": {"params": [], "body": {"op": "apply_expression_template", "args": [], "name": "g", "bindings": {}}},
                              "g": {"params": [], "body": {"op": "apply_expression_template", "args": [], "name": "f", "bindings": {}}}})";
  EXPECT_EQ(error_code([&] { flatten_text(dir, model(R"({"op": "apply_expression_template", "args": [], "name": "f", "bindings": {}})", cyc)); }),
            "apply_expression_template_recursive_body");
  try {
    flatten_text(dir, model(R"({"op": "+", "args": ["A", "nope"]})", t1));
    FAIL();
  } catch (const esi::Error& e) {
    EXPECT_EQ(e.code(), "undefined_variable");
    EXPECT_EQ(e.diagnostic().pointer, "/reaction_systems/R/reactions/0/rate");
    EXPECT_NE(e.diagnostic().file.find("m.esm"), std::string::npos);
  }
}

TEST(Flatten, NestedTemplatesShareOneDagNode) {
  TempDir dir;
  const System s = flatten_text(dir, R"("models": {"M": {
    "variables": {"x": {"type": "unknown", "default": 1}, "k": {"type": "parameter", "default": 3}},
    "expression_templates": {
      "sq": {"params": ["u"], "body": {"op": "*", "args": ["u", "u"]}},
      "quad": {"params": ["u"], "body": {"op": "apply_expression_template", "args": [], "name": "sq",
                "bindings": {"u": {"op": "apply_expression_template", "args": [], "name": "sq", "bindings": {"u": "u"}}}}}},
    "equations": [{"lhs": {"op": "D", "args": ["x"], "wrt": "t"},
      "rhs": {"op": "-", "args": [{"op": "apply_expression_template", "args": [], "name": "quad", "bindings": {"u": {"op": "+", "args": ["x", "k"]}}}]}}]}})");
  const double x = 0.5, k = 3;
  EXPECT_DOUBLE_EQ(rhs_of(s, "M.x", {{"M.x", x}, {"M.k", k}}), -std::pow(x + k, 4));
  // (x+k)^4 as nested products: the shared square appears once in the DAG.
  const auto outer = s.pool.args(s.state_rhs[0])[0];
  const auto sq = s.pool.args(outer);
  ASSERT_EQ(sq.size(), 2u);
  EXPECT_EQ(sq[0], sq[1]);
}

TEST(Flatten, OperatorComposeSumsTendenciesAndIsRequired) {
  TempDir dir;
  const std::string models = R"("models": {
    "A": {"variables": {"x": {"type": "unknown", "default": 1}, "a": {"type": "parameter", "default": 2}},
          "equations": [{"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": {"op": "*", "args": ["a", "x"]}}]},
    "B": {"variables": {"b": {"type": "parameter", "default": 5}},
          "equations": [{"lhs": {"op": "D", "args": ["A.x"], "wrt": "t"}, "rhs": {"op": "neg", "args": ["b"]}}]}})";
  const System s = flatten_text(dir, models + R"(, "coupling": [{"type": "operator_compose", "systems": ["A", "B"]}])");
  ASSERT_EQ(s.states.size(), 1u);
  EXPECT_DOUBLE_EQ(rhs_of(s, "A.x", {{"A.x", 3}, {"A.a", 2}, {"B.b", 5}}), 2 * 3 - 5);
  EXPECT_EQ(error_code([&] { flatten_text(dir, models); }), "conflicting_equations");
}

TEST(Flatten, VariableMapTransforms) {
  TempDir dir;
  const std::string models = R"("models": {
    "Met": {"variables": {"Tair": {"type": "unknown"}, "h": {"type": "parameter", "default": 3}},
            "equations": [{"lhs": "Tair", "rhs": {"op": "+", "args": [280, "h"]}}]},
    "Chem": {"variables": {"c": {"type": "unknown", "default": 1}, "T": {"type": "parameter", "default": 300}},
             "equations": [{"lhs": {"op": "D", "args": ["c"], "wrt": "t"}, "rhs": {"op": "/", "args": ["c", "T"]}}]}})";
  System s = flatten_text(dir, models + R"(, "coupling": [{"type": "variable_map", "from": "Met.Tair", "to": "Chem.T", "transform": "param_to_var"}])");
  EXPECT_LT(s.parameter_index("Chem.T"), 0) << "a mapped parameter leaves the parameter set";
  EXPECT_DOUBLE_EQ(rhs_of(s, "Chem.c", {{"Chem.c", 2}, {"Met.Tair", 250}}), 2.0 / 250);
  s = flatten_text(dir, models + R"(, "coupling": [{"type": "variable_map", "from": "Met.Tair", "to": "Chem.T", "transform": "conversion_factor", "factor": 2}])");
  EXPECT_DOUBLE_EQ(rhs_of(s, "Chem.c", {{"Chem.c", 2}, {"Met.Tair", 250}}), 2.0 / 500);
  s = flatten_text(dir, models + R"(, "coupling": [{"type": "variable_map", "from": "Met.Tair", "to": "Chem.T",
      "transform": {"op": "-", "args": ["Met.Tair", "Met.h"]}}])");
  ASSERT_GE(s.observed_index("Chem.T"), 0) << "an expression transform makes the target observed";
  EXPECT_DOUBLE_EQ(eval(s.pool, s.observed_rhs[s.observed_index("Chem.T")], {{"Met.Tair", 250}, {"Met.h", 3}}), 247);
  // Observed order: Met.Tair must come before Chem.T, which reads it.
  EXPECT_LT(s.observed_index("Met.Tair"), s.observed_index("Chem.T"));
}

TEST(Flatten, CoupleConnectorAddsTerms) {
  TempDir dir;
  const System s = flatten_text(dir, R"("models": {
    "E": {"variables": {"e": {"type": "parameter", "default": 4}}, "equations": []},
    "C": {"variables": {"y": {"type": "unknown", "default": 1}},
          "equations": [{"lhs": {"op": "D", "args": ["y"], "wrt": "t"}, "rhs": {"op": "neg", "args": ["y"]}}]}},
    "coupling": [{"type": "couple", "systems": ["E", "C"], "connector": {"equations": [
      {"from": "E.e", "to": "C.y", "transform": "additive", "expression": {"op": "*", "args": ["E.e", 0.5]}}]}}])");
  EXPECT_DOUBLE_EQ(rhs_of(s, "C.y", {{"C.y", 3}, {"E.e", 4}}), -3 + 2);
}

TEST(Flatten, ObservedAreOrderedAndCyclesRefused) {
  TempDir dir;
  const std::string head = R"("models": {"M": {"variables": {"a": {"type": "unknown"}, "b": {"type": "unknown"},
      "c": {"type": "unknown"}, "x": {"type": "unknown", "default": 1}, "k": {"type": "parameter", "default": 2}},
    "equations": [)";
  const System s = flatten_text(dir, head + R"(
      {"lhs": "c", "rhs": {"op": "*", "args": ["b", 2]}},
      {"lhs": "b", "rhs": {"op": "+", "args": ["a", 1]}},
      {"lhs": "a", "rhs": {"op": "*", "args": ["k", "x"]}},
      {"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": {"op": "neg", "args": ["c"]}}]}})");
  ASSERT_EQ(s.observed.size(), 3u);
  EXPECT_EQ(s.observed[0].name, "M.a");
  EXPECT_EQ(s.observed[1].name, "M.b");
  EXPECT_EQ(s.observed[2].name, "M.c");
  EXPECT_EQ(error_code([&] {
              flatten_text(dir, head + R"(
      {"lhs": "a", "rhs": "b"}, {"lhs": "b", "rhs": "c"}, {"lhs": "c", "rhs": "a"},
      {"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": "k"}]}})");
            }),
            "algebraic_loop");
}

TEST(Flatten, ImplicitEquationsMakeAlgebraicUnknowns) {
  TempDir dir;
  const System s = flatten_text(dir, R"("models": {"W": {"variables": {
      "K": {"type": "unknown"}, "OH": {"type": "unknown"}, "H": {"type": "parameter", "default": 1e-7},
      "T": {"type": "parameter", "default": 298}},
    "equations": [{"lhs": "K", "rhs": {"op": "*", "args": [1e-14, {"op": "/", "args": ["T", 298]}]}},
                  {"lhs": "K", "rhs": {"op": "*", "args": ["H", "OH"]}}]}})");
  ASSERT_EQ(s.algebraic.size(), 1u);
  EXPECT_EQ(s.algebraic[0].name, "W.OH");
  EXPECT_EQ(s.algebraic_equations.size(), 1u);
  EXPECT_EQ(error_code([&] {
              flatten_text(dir, R"("models": {"W": {"variables": {"u": {"type": "unknown"}}, "equations": []}})");
            }),
            "equation_count_mismatch");
}

TEST(Flatten, InitialValuesAndOverrides) {
  TempDir dir;
  const std::string body = R"("models": {"M": {"variables": {
      "x": {"type": "unknown", "default": 1}, "y": {"type": "unknown", "default": 2},
      "k": {"type": "parameter", "default": 3}},
    "equations": [{"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": "k"},
                  {"lhs": {"op": "D", "args": ["y"], "wrt": "t"}, "rhs": "k"},
                  {"lhs": {"op": "ic", "args": ["x"]}, "rhs": {"op": "*", "args": ["k", 10]}}]},
    "N": {"variables": {"k": {"type": "parameter", "default": 1}}, "equations": []}})";
  FlattenOptions o;
  o.initial_conditions["y"] = 9;
  o.parameter_overrides["M.k"] = 4;
  const System s = flatten_text(dir, body, o);
  const auto& x = s.states[s.state_index("M.x")];
  ASSERT_NE(x.initial, esi::expr::kNoNode) << "ic(x) wins over default";
  EXPECT_DOUBLE_EQ(eval(s.pool, x.initial, {{"M.k", 3}}), 30);
  EXPECT_EQ(s.states[s.state_index("M.y")].default_value, 9.0);
  EXPECT_EQ(s.parameters[s.parameter_index("M.k")].default_value, 4.0);
  FlattenOptions ambiguous;
  ambiguous.parameter_overrides["k"] = 1;
  EXPECT_EQ(error_code([&] { flatten_text(dir, body, ambiguous); }), "ambiguous_override");
  FlattenOptions unknown;
  unknown.initial_conditions["zz"] = 1;
  EXPECT_EQ(error_code([&] { flatten_text(dir, body, unknown); }), "unknown_override");
}

TEST(Flatten, AnUnknownGivenOnlyAnInitialValueIsHeldThere) {
  // w has its ic and nothing else: a state with D(w) = 0 starting at 2k = 6, which x reads.
  // v is an observed; an ic for it contradicts its equation and is still refused.
  TempDir dir;
  const std::string body = R"("models": {"M": {"variables": {
      "x": {"type": "unknown", "default": 1}, "w": {"type": "unknown"}, "v": {"type": "unknown"},
      "k": {"type": "parameter", "default": 3}},
    "equations": [{"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": {"op": "*", "args": ["w", "x"]}},
                  {"lhs": {"op": "ic", "args": ["w"]}, "rhs": {"op": "*", "args": ["k", 2]}},
                  {"lhs": "v", "rhs": "x"}IC_V]}})";
  auto with = [&](const std::string& ic_v) {
    std::string b = body;
    b.replace(b.find("IC_V"), 4, ic_v);
    return b;
  };
  const System s = flatten_text(dir, with(""));
  const int w = s.state_index("M.w");
  ASSERT_GE(w, 0);
  EXPECT_EQ(eval(s.pool, s.state_rhs[w], {{"M.w", 5.0}, {"M.x", 7.0}, {"M.k", 3}}), 0.0);
  EXPECT_EQ(eval(s.pool, s.states[w].initial, {{"M.k", 3}}), 6.0);
  EXPECT_EQ(rhs_of(s, "M.x", {{"M.w", 5.0}, {"M.x", 7.0}, {"M.k", 3}}), 35.0);
  try {
    flatten_text(dir, with(R"(, {"lhs": {"op": "ic", "args": ["v"]}, "rhs": 1.0})"));
    ADD_FAILURE() << "ic of an observed flattened";
  } catch (const esi::Error& e) {
    EXPECT_EQ(e.code(), "ic_of_non_state");
    EXPECT_EQ(e.diagnostic().pointer, "/models/M/equations/3");
  }
}

TEST(Flatten, SingleComponentKeepsItsSubsystems) {
  TempDir dir;
  const std::string body = R"("models": {
    "P": {"variables": {"x": {"type": "unknown", "default": 1}},
          "equations": [{"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": "S.r"}],
          "subsystems": {"S": {"variables": {"r": {"type": "parameter", "default": 0.5}}, "equations": []}}},
    "Q": {"variables": {"z": {"type": "unknown", "default": 1}},
          "equations": [{"lhs": {"op": "D", "args": ["z"], "wrt": "t"}, "rhs": 1}]}})";
  FlattenOptions o;
  o.component = "P";
  const System s = flatten_text(dir, body, o);
  EXPECT_EQ(s.components, (std::vector<std::string>{"P", "P.S"}));
  EXPECT_DOUBLE_EQ(rhs_of(s, "P.x", {{"P.S.r", 0.5}}), 0.5);
  o.component = "Nope";
  EXPECT_EQ(error_code([&] { flatten_text(dir, body, o); }), "unknown_component");
}

TEST(Flatten, OperatorPlaceholderAppliesToComposedStates) {
  TempDir dir;
  const System s = flatten_text(dir, R"("models": {
    "Sink": {"variables": {"k": {"type": "parameter", "default": 0.1}},
             "equations": [{"lhs": {"op": "D", "args": ["_var"], "wrt": "t"}, "rhs": {"op": "*", "args": [{"op": "neg", "args": ["k"]}, "_var"]}}]}},
    "reaction_systems": {"R": {"species": {"A": {"default": 1}, "B": {"default": 1}}, "parameters": {},
      "reactions": [{"id": "r", "substrates": [{"species": "A", "stoichiometry": 1}], "products": [{"species": "B", "stoichiometry": 1}], "rate": 2}]}},
    "coupling": [{"type": "operator_compose", "systems": ["R", "Sink"]}])");
  const std::map<std::string, double> env{{"R.A", 3}, {"R.B", 5}, {"Sink.k", 0.1}};
  EXPECT_DOUBLE_EQ(rhs_of(s, "R.A", env), -2 * 3 - 0.1 * 3);
  EXPECT_DOUBLE_EQ(rhs_of(s, "R.B", env), 2 * 3 - 0.1 * 5);
}

TEST(Flatten, ArraysBecomeCellsAndWhatIsNotSupportedHasOneCode) {
  TempDir dir;
  const esi::esm::System s = flatten_text(dir, R"("index_sets": {"x": {"kind": "interval", "size": 4}},
      "models": {"M": {"variables": {"u": {"type": "unknown", "shape": ["x"], "default": 0}},
                       "equations": [{"lhs": {"op": "D", "args": ["u"], "wrt": "t"}, "rhs": 0}]}})");
  ASSERT_EQ(s.states.size(), 4u);
  EXPECT_EQ(s.states[3].name, "M.u[4]");
  ASSERT_EQ(s.arrays.size(), 1u);
  EXPECT_EQ(s.arrays[0].extents, std::vector<std::int64_t>{4});
  // Relational joins over index sets are a capability esi lacks: one code, located.
  EXPECT_EQ(error_code([&] {
              flatten_text(dir, R"("index_sets": {"x": {"kind": "interval", "size": 2}},
      "models": {"M": {"variables": {"u": {"type": "unknown", "shape": ["x"], "default": 0}, "s": {"type": "unknown"}},
                       "equations": [{"lhs": {"op": "D", "args": ["u"], "wrt": "t"}, "rhs": 0},
                                     {"lhs": "s", "rhs": {"op": "aggregate", "output_idx": [], "args": ["u"],
                                      "join": [["i", "i"]], "expr": {"op": "index", "args": ["u", "i"]}}}]}})");
            }),
            "unsupported_array_feature");
  // A spatial derivative no rule lowers cannot be evaluated (spec §9.6.8).
  EXPECT_EQ(error_code([&] {
              flatten_text(dir, R"("models": {"M": {"variables": {"u": {"type": "unknown", "default": 0}},
                       "equations": [{"lhs": {"op": "D", "args": ["u"], "wrt": "t"}, "rhs": {"op": "D", "args": ["u"], "wrt": "x"}}]}})");
            }),
            "unlowered_operator");
}

TEST(Flatten, ClosedFunctionsAreCheckedAtLoad) {
  TempDir dir;
  auto with_rhs = [&](const std::string& rhs) {
    return flatten_text(dir, R"("models": {"M": {"variables": {"y": {"type": "unknown"}, "p": {"type": "parameter", "default": 1.5}},
      "equations": [{"lhs": "y", "rhs": )" + rhs + "}]}}");
  };
  const System s = with_rhs(R"({"op": "fn", "name": "interp.linear", "args": [
      {"op": "const", "args": [], "value": [10, 20, 40]}, {"op": "const", "args": [], "value": [1, 2, 3]}, "p"]})");
  EXPECT_EQ(s.observed.size(), 1u);
  EXPECT_EQ(error_code([&] { with_rhs(R"({"op": "fn", "name": "interp.linear", "args": [
      {"op": "const", "args": [], "value": [10, 20, 40]}, {"op": "const", "args": [], "value": [1, 3, 2]}, "p"]})"); }),
            "interp_non_monotonic_axis");
  EXPECT_EQ(error_code([&] { with_rhs(R"({"op": "fn", "name": "interp.linear", "args": [
      {"op": "const", "args": [], "value": [10, 20]}, {"op": "const", "args": [], "value": [1, 2, 3]}, "p"]})"); }),
            "interp_axis_length_mismatch");
  EXPECT_EQ(error_code([&] { with_rhs(R"({"op": "fn", "name": "math.clamp", "args": ["p"]})"); }),
            "unknown_closed_function");
}

TEST(Flatten, OperatorComposeIdentifiesSameNamedStates) {
  TempDir dir;
  const System s = flatten_text(dir, R"("models": {
    "Chem": {"variables": {"O3": {"type": "unknown", "default": 10}, "k": {"type": "parameter", "default": 0.5}},
             "equations": [{"lhs": {"op": "D", "args": ["O3"], "wrt": "t"}, "rhs": {"op": "*", "args": [{"op": "neg", "args": ["k"]}, "O3"]}}]},
    "Dep": {"variables": {"O3": {"type": "unknown", "default": 99}, "v": {"type": "parameter", "default": 0.1}},
            "equations": [{"lhs": {"op": "D", "args": ["O3"], "wrt": "t"}, "rhs": {"op": "*", "args": [{"op": "neg", "args": ["v"]}, "O3"]}}]}},
    "coupling": [{"type": "operator_compose", "systems": ["Chem", "Dep"]}])");
  ASSERT_EQ(s.states.size(), 1u) << "Dep.O3 is Chem.O3";
  EXPECT_EQ(s.states[0].name, "Chem.O3");
  EXPECT_EQ(s.states[0].default_value, 10.0) << "the first system's declaration wins";
  EXPECT_DOUBLE_EQ(rhs_of(s, "Chem.O3", {{"Chem.O3", 4}, {"Chem.k", 0.5}, {"Dep.v", 0.1}}), -0.5 * 4 - 0.1 * 4);
}

// §7.4 multiplies every rate by its substrate product; a rate written k / A for a substrate A
// (GEOS-Chem's R12) is cancelled symbolically, so the law stays finite at A = 0 and elsewhere
// equals (k / A) * A * B^2 to rounding.
TEST(Flatten, RateDividedByASubstrateCancelsSymbolically) {
  TempDir dir;
  const System s = flatten_text(dir, R"(
"reaction_systems": {"R": {
  "species": {"A": {"default": 1.0}, "B": {"default": 2.0}, "C": {"default": 0.0}},
  "parameters": {"k": {"default": 0.5}},
  "reactions": [{"id": "r", "substrates": [{"species": "A", "stoichiometry": 1},
                                           {"species": "B", "stoichiometry": 2}],
                 "products": [{"species": "C", "stoichiometry": 1}],
                 "rate": {"op": "/", "args": ["k", "A"]}}]}})");
  const std::map<std::string, double> at_zero{{"R.A", 0.0}, {"R.B", 3.0}, {"R.C", 0.0}, {"R.k", 0.5}};
  EXPECT_DOUBLE_EQ(rhs_of(s, "R.C", at_zero), 0.5 * 9.0);
  EXPECT_DOUBLE_EQ(rhs_of(s, "R.A", at_zero), -0.5 * 9.0);
  const std::map<std::string, double> env{{"R.A", 1.7}, {"R.B", 0.3}, {"R.C", 0.0}, {"R.k", 0.5}};
  EXPECT_NEAR(rhs_of(s, "R.C", env), (0.5 / 1.7) * 1.7 * 0.3 * 0.3, 1e-16);
}
