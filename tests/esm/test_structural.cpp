// Structural checks (esi::esm::check_structure): one small inline document per check — a valid
// variant with no findings and an invalid one with the exact code and pointer — then the
// conformance fixtures of EarthSciAST-tests/invalid and a no-false-positive sweep over every
// document of the corpus that should be valid.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "esi/core/json.hpp"
#include "esi/esm/structural.hpp"
#include "structural_findings.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using esi::testing::check;
using esi::testing::dump;
using esi::testing::has;


/// A document holding one model "M" (and optional extra top-level fields).
json doc_with(const char* model, const char* extra = "{}") {
  json d = json::parse(extra);
  d["esm"] = "1.0.0";
  d["metadata"] = {{"name", "T"}};
  d["models"]["M"] = json::parse(model);
  return d;
}

// A balanced one-state model the tests below extend.
constexpr const char* kDecayVars = R"("x": {"type": "unknown"}, "k": {"type": "parameter"})";
constexpr const char* kDecayEq =
    R"({"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": {"op": "*", "args": ["k", "x"]}})";

std::string decay_model(const std::string& extra_fields = "", const std::string& rhs = "") {
  std::string eq = rhs.empty()
                       ? kDecayEq
                       : R"({"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": )" + rhs + "}";
  return std::string("{\"variables\": {") + kDecayVars + "}, \"equations\": [" + eq + "]" +
         extra_fields + "}";
}

}  // namespace

// ---- §4.9: reference integrity -------------------------------------------------------------

TEST(StructuralNames, ValidModelHasNoFindings) {
  EXPECT_CLEAN(doc_with(decay_model().c_str()));
}

TEST(StructuralNames, UndefinedNameIsReportedAtTheExpressionRoot) {
  const std::string nested = R"({"op": "+", "args": [{"op": "exp", "args": ["q"]}, "x"]})";
  EXPECT_FINDING(doc_with(decay_model("", nested).c_str()), "undefined_variable",
                 "/models/M/equations/0/rhs");
}

TEST(StructuralNames, EveryExpressionChildIsWalked) {
  const char* rhss[] = {
      R"({"op": "aggregate", "output_idx": [], "args": ["k"], "ranges": {"g": {"from": "grp"}},
          "expr": {"op": "*", "args": [{"op": "index", "args": ["k", "g"]}, "q"]}})",
      R"({"op": "integral", "args": ["k"], "var": "s", "lower": "q", "upper": 1})",
      R"({"op": "aggregate", "output_idx": [], "ranges": {"g": {"from": "grp"}}, "expr": 1,
          "filter": {"op": "<", "args": ["g", "q"]}})",
      R"({"op": "makearray", "args": [], "regions": [[[1, 1]]], "values": ["q"]})",
      R"({"op": "apply_expression_template", "name": "neg", "args": [], "bindings": {"a": "q"}})",
  };
  for (const char* r : rhss)
    EXPECT_FINDING(doc_with(decay_model("", r).c_str(), R"({"index_sets": {"grp":
                   {"kind": "interval", "size": 2}}})"),
                   "undefined_variable", "/models/M/equations/0/rhs");
}

TEST(StructuralNames, EveryExpressionBearingFieldIsChecked) {
  struct Case {
    const char* fields;
    const char* pointer;
  } cases[] = {
      {R"(, "guesses": {"x": "q"})", "/models/M/guesses/x"},
      {R"(, "initialization_equations": [{"lhs": "x", "rhs": "q"}])",
       "/models/M/initialization_equations/0/rhs"},
      {R"(, "continuous_events": [{"conditions": ["q"], "affects": []}])",
       "/models/M/continuous_events/0/conditions/0"},
      {R"(, "continuous_events": [{"conditions": ["x"], "affects": [{"lhs": "x", "rhs": "q"}]}])",
       "/models/M/continuous_events/0/affects/0/rhs"},
      {R"(, "discrete_events": [{"trigger": {"type": "condition", "expression": "q"},
           "affects": []}])",
       "/models/M/discrete_events/0/trigger/expression"},
      {R"(, "tests": [{"id": "a", "time_span": {"start": 0, "end": 1}, "assertions":
           [{"variable": "x", "time": 1, "expected": 0, "reference": "q"}]}])",
       "/models/M/tests/0/assertions/0/reference"},
      {R"(, "tests": [{"id": "a", "time_span": {"start": 0, "end": 1}, "assertions":
           [{"variable": "nope", "time": 1, "expected": 0}]}])",
       "/models/M/tests/0/assertions/0/variable"},
  };
  for (const auto& c : cases)
    EXPECT_FINDING(doc_with(decay_model(c.fields).c_str()), "undefined_variable", c.pointer);
  // Parameter updates (§5.4) and data bindings (§8.5), object and array forms.
  const char* upd = R"({"variables": {"x": {"type": "unknown"},
      "k": {"type": "parameter", "update": {"kind": "condition", "when": "q", "expression": 1}},
      "j": {"type": "parameter", "shape": [], "update": {"kind": "data", "source": "S",
            "from": {"file_variable": "v", "unit_conversion": {"op": "*", "args": ["r", 2]}}}},
      "m": {"type": "parameter", "update": [{"kind": "condition", "when": "x", "expression": 1},
            {"kind": "condition", "when": "x", "expression": "q"}]}},
      "equations": [{"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": "k"}]})";
  const json d = doc_with(upd, R"({"data_sources": {"S": {"kind": "grid"}}})");
  EXPECT_FINDING(d, "undefined_variable", "/models/M/variables/k/update/when");
  EXPECT_FINDING(d, "undefined_variable", "/models/M/variables/j/update/from/unit_conversion");
  EXPECT_FINDING(d, "undefined_variable", "/models/M/variables/m/update/1/expression");
}

TEST(StructuralNames, ImplicitlyDeclaredSymbolsResolve) {
  // §4.9.1: t, index-set names, dim/spatial-wrt axis names, ic RHS coordinates, index symbols
  // of aggregate/argmin/integral and of element LHSs, _var, metaparameters.
  const char* model = R"({"variables": {
      "u": {"type": "unknown", "shape": ["cells"]}, "v": {"type": "unknown"},
      "w": {"type": "unknown", "shape": ["cells"]}, "a": {"type": "parameter"}},
    "equations": [
      {"lhs": {"op": "ic", "args": ["u"]}, "rhs": {"op": "sin", "args": ["xcoord"]}},
      {"lhs": {"op": "D", "args": ["u"], "wrt": "t"},
       "rhs": {"op": "+", "args": [{"op": "grad", "args": ["u"], "dim": "lon"}, "lon", "cells",
               "NX", {"op": "*", "args": ["a", "t"]},
               {"op": "integral", "args": ["s"], "var": "s", "lower": 0, "upper": "s"}]}},
      {"lhs": {"op": "D", "args": ["v"], "wrt": "t"},
       "rhs": {"op": "aggregate", "output_idx": [], "ranges": {"i": {"from": "cells"}},
               "expr": {"op": "index", "args": ["u", "i"]}}},
      {"lhs": {"op": "index", "args": ["w", "j"]}, "rhs": {"op": "*", "args": ["j", "a"]}},
      {"lhs": {"op": "D", "args": ["_var"], "wrt": "t"}, "rhs": {"op": "-", "args": ["_var"]}}],
    "continuous_events": [{"conditions": ["v"], "affects": [{"lhs": "_var", "rhs": 0}]}],
    "tests": [{"id": "a", "time_span": {"start": 0, "end": 1},
               "assertions": [{"variable": "u[2]", "time": 1, "expected": 0}]}]})";
  EXPECT_CLEAN(doc_with(model, R"({"index_sets": {"cells": {"kind": "interval", "size": 3}},
                                   "metaparameters": {"NX": {"default": 3}}})"));
}

TEST(StructuralNames, ScopedReferencesWalkEverySegment) {
  // §4.9.2: A.B.C.x walks A -> B -> C; a subsystem may name its siblings and the roots.
  const char* model = R"({"variables": {"x": {"type": "unknown"}},
    "equations": [{"lhs": {"op": "D", "args": ["x"], "wrt": "t"},
                   "rhs": {"op": "+", "args": ["M.B.C.y", "B.C.y", "R.O3", "Ext.anything"]}}],
    "subsystems": {
      "B": {"variables": {}, "equations": [], "subsystems": {
        "C": {"variables": {"y": {"type": "unknown"}},
              "equations": [{"lhs": "y", "rhs": {"op": "+", "args": ["M.x", "B.C.y"]}}]}}},
      "Ext": {"ref": "./not_resolved_here.esm"}}})";
  json d = doc_with(model);
  d["reaction_systems"]["R"] = json::parse(R"({"species": {"O3": {}}, "parameters": {"k": {}},
      "reactions": [{"id": "r", "substrates": [{"species": "O3", "stoichiometry": 1}],
                     "products": null, "rate": "k"}]})");
  EXPECT_CLEAN(d);
  d["models"]["M"]["equations"][0]["rhs"]["args"][0] = "M.B.y";  // no y in B
  EXPECT_FINDING(d, "undefined_variable", "/models/M/equations/0/rhs");
}

// ---- §7: reaction systems -------------------------------------------------------------------

namespace {
json rs_doc(const char* reactions, const char* extra = "") {
  json d = {{"esm", "1.0.0"}, {"metadata", {{"name", "T"}}}};
  d["reaction_systems"]["R"] = json::parse(
      std::string(R"({"species": {"A": {}, "B": {}}, "parameters": {"k": {}}, "reactions": )") +
      reactions + extra + "}");
  return d;
}
}  // namespace

TEST(StructuralReactions, SpeciesParametersAndShape) {
  EXPECT_CLEAN(rs_doc(R"([{"id": "r1", "substrates": [{"species": "A", "stoichiometry": 1}],
      "products": [{"species": "B", "stoichiometry": 1}], "rate": {"op": "*", "args": ["k", "t"]}}])"));
  const json bad = rs_doc(R"([{"id": "r1", "substrates": [{"species": "A", "stoichiometry": 1},
      {"species": "Z", "stoichiometry": 1}], "products": [{"species": "k", "stoichiometry": 1}],
      "rate": {"op": "*", "args": ["k", "kk"]}}, {"id": "r2", "substrates": null, "products": [],
      "rate": "k"}])");
  EXPECT_FINDING(bad, "undefined_species", "/reaction_systems/R/reactions/0/substrates/1/species");
  EXPECT_FINDING(bad, "undefined_species", "/reaction_systems/R/reactions/0/products/0/species");
  EXPECT_FINDING(bad, "undefined_parameter", "/reaction_systems/R/reactions/0/rate");
  EXPECT_FINDING(bad, "null_reaction", "/reaction_systems/R/reactions/1");
  const json ic = rs_doc(R"([{"id": "r", "substrates": null, "products": [{"species": "A",
      "stoichiometry": 1}], "rate": "k"}])",
                         R"(, "constraint_equations": [
      {"lhs": {"op": "ic", "args": ["A"]}, "rhs": 1}])");
  EXPECT_FINDING(ic, "ic_in_reaction_system", "/reaction_systems/R/constraint_equations/0");
}

// ---- §5: events and updates -----------------------------------------------------------------

TEST(StructuralEvents, AffectTargets) {
  EXPECT_CLEAN(doc_with(decay_model(R"(, "discrete_events": [{"trigger": {"type": "periodic",
      "interval": 1}, "affects": [{"lhs": "x", "rhs": {"op": "Pre", "args": ["x"]}}]}])")
                            .c_str()));
  EXPECT_FINDING(doc_with(decay_model(R"(, "continuous_events": [{"conditions": ["x"],
      "affects": [{"lhs": "nope", "rhs": 0}]}])")
                              .c_str()),
                 "event_var_undeclared", "/models/M/continuous_events/0/affects/0/lhs");
  EXPECT_FINDING(doc_with(decay_model(R"(, "discrete_events": [{"trigger": {"type": "periodic",
      "interval": 1}, "affects": [{"lhs": "k", "rhs": 0}]}])")
                              .c_str()),
                 "event_affects_parameter", "/models/M/discrete_events/0/affects/0");
}

TEST(StructuralEvents, DataSourceMustExist) {
  const char* m = R"({"variables": {"x": {"type": "unknown"}, "T": {"type": "parameter",
      "shape": [], "update": {"kind": "data", "source": "Met", "from": {"file_variable": "T"}}}},
      "equations": [{"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": "T"}]})";
  EXPECT_CLEAN(doc_with(m, R"({"data_sources": {"Met": {"kind": "grid"}}})"));
  EXPECT_FINDING(doc_with(m, R"({"data_sources": {"Other": {"kind": "grid"}}})"),
                 "data_source_undefined", "/models/M/variables/T/update");
}

// ---- §4.9.4 / §6.3.1: balance and system kind ---------------------------------------------

TEST(StructuralBalance, UnknownsVersusEquations) {
  const char* balanced = R"({"variables": {"H": {"type": "unknown"}, "SO4": {"type": "unknown"},
      "c": {"type": "unknown", "shape": ["n"]}, "held": {"type": "unknown"},
      "fed": {"type": "unknown"}, "Ksp": {"type": "parameter"}},
    "equations": [{"lhs": "H", "rhs": "Ksp"},
      {"lhs": {"op": "*", "args": ["H", "H", "SO4"]}, "rhs": "Ksp"},
      {"lhs": {"op": "index", "args": ["c", 1]}, "rhs": 1},
      {"lhs": {"op": "index", "args": ["c", 2]}, "rhs": 2},
      {"lhs": {"op": "ic", "args": ["held"]}, "rhs": 3}]})";
  json d = doc_with(balanced, R"({"index_sets": {"n": {"kind": "interval", "size": 2}},
      "models": {"Src": {"variables": {"s": {"type": "unknown"}},
                         "equations": [{"lhs": "s", "rhs": 1}]}},
      "coupling": [{"type": "variable_map", "from": "Src.s", "to": "M.fed",
                    "transform": "param_to_var"}]})");
  EXPECT_CLEAN(d);
  d["models"]["M"]["variables"]["extra"] = {{"type", "unknown"}};
  EXPECT_FINDING(d, "equation_count_mismatch", "/models/M");
  // Too many: an equation for a name that is no declared unknown.
  EXPECT_FINDING(doc_with(R"({"variables": {"x": {"type": "unknown"}}, "equations": [
      {"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": 1},
      {"lhs": {"op": "D", "args": ["y"], "wrt": "t"}, "rhs": 1}]})"),
                 "equation_count_mismatch", "/models/M");
}

TEST(StructuralBalance, DeclaredSystemKindMustMatchDerivation) {
  EXPECT_CLEAN(doc_with(decay_model(R"(, "system_kind": "ode")").c_str()));
  EXPECT_FINDING(doc_with(decay_model(R"(, "system_kind": "nonlinear")").c_str()),
                 "system_kind_mismatch", "/models/M/system_kind");
}

// ---- §10: coupling ----------------------------------------------------------------------------

namespace {
json coupled(const char* coupling) {
  json d = doc_with(decay_model().c_str());
  d["models"]["N"] = json::parse(R"({"variables": {"y": {"type": "unknown", "units": "K"},
      "p": {"type": "parameter", "units": "K"}, "q": {"type": "parameter", "units": "degC"}},
      "equations": [{"lhs": "y", "rhs": "p"}],
      "subsystems": {"S": {"variables": {"z": {"type": "parameter"}}, "equations": []}}})");
  d["coupling"] = json::parse(coupling);
  return d;
}
}  // namespace

TEST(StructuralCoupling, SystemsAndScopedReferences) {
  EXPECT_CLEAN(coupled(R"([{"type": "operator_compose", "systems": ["M", "N.S"],
      "translate": {"M.x": {"var": "N.y", "factor": 2}}},
    {"type": "variable_map", "from": "N.y", "to": "N.S.z", "transform": "identity"},
    {"type": "variable_map", "from": "M.x", "to": "N.p",
     "transform": {"op": "*", "args": ["M.x", "N.S.z"]}},
    {"type": "couple", "systems": ["M", "N"], "connector": {"equations": [{"from": "N.y",
     "to": "M.x", "transform": "additive", "expression": {"op": "-", "args": ["N.y"]}}]}},
    {"type": "event", "event_type": "continuous", "conditions": ["M.x"],
     "affects": [{"lhs": "M.x", "rhs": 0}]}])"));
  const json bad = coupled(R"([{"type": "operator_compose", "systems": ["M", "Nope"]},
    {"type": "variable_map", "from": "Nope.T", "to": "N.p", "transform": "param_to_var"},
    {"type": "variable_map", "from": "N.missing", "to": "N.p", "transform": "param_to_var"},
    {"type": "variable_map", "from": "M.x", "to": "N.p",
     "transform": {"op": "*", "args": ["M.x", "M.undefined_xyz"]}},
    {"type": "couple", "systems": ["M", "N"], "connector": {"equations": [{"from": "N.y",
     "to": "M.x", "transform": "additive", "expression": "bare"}]}},
    {"type": "event", "event_type": "continuous", "conditions": ["x"], "affects": []}])");
  EXPECT_FINDING(bad, "undefined_system", "/coupling/0/systems");
  EXPECT_FINDING(bad, "unresolved_scoped_ref", "/coupling/1/from");
  EXPECT_FINDING(bad, "unresolved_scoped_ref", "/coupling/2/from");
  EXPECT_FINDING(bad, "unresolved_scoped_ref", "/coupling/3/transform");
  EXPECT_FINDING(bad, "unresolved_scoped_ref", "/coupling/4/connector/equations/0/expression");
  EXPECT_FINDING(bad, "unresolved_scoped_ref", "/coupling/5/conditions/0");
}

TEST(StructuralCoupling, IdentityMapNeedsEqualUnits) {
  EXPECT_FINDING(coupled(R"([{"type": "variable_map", "from": "N.q", "to": "N.p",
      "transform": "identity"}])"),
                 "domain_unit_mismatch", "/coupling/0");
  EXPECT_CLEAN(coupled(R"([{"type": "variable_map", "from": "N.q", "to": "N.p",
      "transform": "conversion_factor", "factor": 1}])"));
}

TEST(StructuralCoupling, CircularReferencesBetweenComponents) {
  json d = doc_with(R"({"variables": {"x": {"type": "unknown"}}, "equations": [
      {"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": "N.y"}]})");
  d["models"]["N"] = json::parse(R"({"variables": {"y": {"type": "unknown"}}, "equations": [
      {"lhs": {"op": "D", "args": ["y"], "wrt": "t"}, "rhs": 1}]})");
  EXPECT_CLEAN(d);
  d["models"]["N"]["equations"][0]["rhs"] = "M.x";
  EXPECT_FINDING(d, "circular_dependency", "/models");
}

// ---- §4.3: arrays -----------------------------------------------------------------------------

TEST(StructuralArrays, BroadcastOperator) {
  for (const char* ok : {R"({"op": "broadcast", "fn": "-", "args": ["x"]})",
                         R"({"op": "broadcast", "fn": "max", "args": ["x", "k", 0]})"})
    EXPECT_CLEAN(doc_with(decay_model("", ok).c_str()));
  for (const char* bad : {R"({"op": "broadcast", "fn": "not_a_real_op", "args": ["x"]})",
                          R"({"op": "broadcast", "args": ["x"]})",
                          R"({"op": "broadcast", "fn": "min", "args": ["x"]})",
                          R"({"op": "broadcast", "fn": "index", "args": ["x", 1]})",
                          R"({"op": "+", "args": [{"op": "broadcast", "fn": "sin",
                              "args": ["x", "k"]}]})"})
    EXPECT_FINDING(doc_with(decay_model("", bad).c_str()), "invalid_broadcast_fn",
                   "/models/M/equations/0/rhs");
}

TEST(StructuralArrays, IndexSetsAndShapes) {
  const char* sets = R"({"index_sets": {"lon": {"kind": "interval", "size": 2},
      "lat": {"kind": "interval", "size": 2}, "lev": {"kind": "interval", "size": 2},
      "keys": {"kind": "categorical", "members": [1.5, 2.5]},
      "ids": {"kind": "categorical", "members": [1, 2]}}})";
  const char* m = R"({"variables": {"dp": {"type": "unknown", "shape": ["lon", "lat"]},
      "w2": {"type": "parameter", "shape": ["lat", "lon"]}, "z1": {"type": "parameter",
      "shape": ["lat"]}, "s": {"type": "unknown", "shape": ["lon"]}},
    "equations": [{"lhs": {"op": "D", "args": ["dp"], "wrt": "t"},
                   "rhs": {"op": "*", "args": ["w2", "z1"]}},
      {"lhs": {"op": "aggregate", "output_idx": ["i"], "ranges": {"i": {"from": "lon"}},
               "expr": {"op": "index", "args": ["s", "i"]}},
       "rhs": {"op": "aggregate", "output_idx": ["i"], "ranges": {"i": {"from": "lon"},
               "g": {"from": "ids"}}, "join": [{"on": [["g", "ids"]]}], "expr": 1}}]})";
  const json good = doc_with(m, sets);
  EXPECT_CLEAN(good);
  json d = good;
  d["models"]["M"]["variables"]["z1"]["shape"] = {"lev"};
  EXPECT_FINDING(d, "array_shape_mismatch", "/models/M/equations/0/rhs");
  d = good;
  d["models"]["M"]["equations"][1]["lhs"]["ranges"]["i"]["from"] = "ghost_cells";
  EXPECT_FINDING(d, "undefined_index_set", "/models/M/equations/1/lhs");
  d = good;
  d["models"]["M"]["equations"][1]["rhs"]["ranges"]["g"]["from"] = "keys";
  EXPECT_FINDING(d, "join_key_invalid_type", "/models/M/equations/1/rhs");
  // A null key has no value to compare: a null member of the key column, or a null column.
  d = good;
  d["index_sets"]["ids"]["members"] = {1, nullptr};
  EXPECT_FINDING(d, "join_key_invalid_type", "/models/M/equations/1/rhs");
  d = good;
  d["models"]["M"]["equations"][1]["rhs"]["join"][0]["on"][0][1] = nullptr;
  EXPECT_FINDING(d, "join_key_invalid_type", "/models/M/equations/1/rhs");
}

TEST(StructuralArrays, RelationalNodesStayOffTheContinuousPath) {
  const char* m = R"({"variables": {"u": {"type": "unknown"}, "lo": {"type": "parameter"},
      "e": {"type": "unknown"}},
    "equations": [{"lhs": {"op": "D", "args": ["u"], "wrt": "t"}, "rhs": 1},
      {"lhs": "e", "rhs": {"op": "aggregate", "output_idx": [], "semiring": "bool_and_or",
       "distinct": true, "key": {"op": "skolem", "args": ["lo"]}, "expr": {"op": "true",
       "args": []}}}]})";
  json d = doc_with(m);
  EXPECT_CLEAN(d);
  d["models"]["M"]["equations"][1]["rhs"]["key"]["args"][0] = "u";
  EXPECT_FINDING(d, "relational_node_in_continuous", "/models/M/equations/1/rhs");
}

// ---- robustness -------------------------------------------------------------------------------

TEST(StructuralRobustness, MalformedShapesNeverThrow) {
  const char* docs[] = {
      R"(null)",
      R"([])",
      R"({"models": []})",
      R"({"models": {"M": 3}})",
      R"({"models": {"M": {"variables": "x", "equations": {"a": 1}}}})",
      R"({"models": {"M": {"variables": {"x": 1}, "equations": [1, "x", {"lhs": {"op": 3}}]}}})",
      R"({"models": {"M": {"variables": {}, "equations": [{"lhs": {"op": "D"}, "rhs": null}],
          "subsystems": {"S": {"ref": 7}}}}, "coupling": [{"type": "couple", "systems": [1]},
          {"type": "variable_map", "from": 2, "transform": {"op": "+"}}]})",
      R"({"reaction_systems": {"R": {"species": [], "reactions": [{"substrates": 5}]}},
          "domain": {"independent_variable": 4}, "index_sets": [1]})",
  };
  for (const char* t : docs) EXPECT_NO_THROW(check(json::parse(t))) << t;
}

// ---- corpus: conformance fixtures and the no-false-positive sweep ---------------------------

namespace {

fs::path corpus_dir() {
  if (const char* env = std::getenv("ESI_CORPUS"); env && *env) return env;
  return ESI_DEFAULT_CORPUS;
}

#define REQUIRE_CORPUS(sub)                                                                 \
  const fs::path dir_ = corpus_dir() / (sub);                                               \
  if (!fs::is_directory(dir_))                                                              \
    GTEST_SKIP() << "corpus folder " << dir_ << " not found; set ESI_CORPUS to the corpus " \
                 << "directory (the one holding EarthSciAST-tests/) to run this test";

/// Replaces each `{"ref": ...}` component with the single model / reaction system its file
/// holds (spec §4.7), resolving nested refs relative to each file, and merges the mounted
/// files' index_sets and data_sources into the document. What cannot be resolved (URL and
/// ${VAR} refs, missing or multi-component files) stays a stub: check_structure treats it as
/// opaque. A test stand-in for the loader, so this suite does not depend on it.
void resolve_refs(json& doc, json& map, const fs::path& file, int depth) {
  if (!map.is_object()) return;
  for (auto& [key, v] : map.items()) {
    if (v.is_object() && v.contains("ref") && v["ref"].is_string() && !v.contains("variables") &&
        !v.contains("species") && depth < 12) {
      const std::string ref = v["ref"];
      if (ref.find("${") == std::string::npos && ref.find("://") == std::string::npos) {
        const fs::path target =
            fs::path(ref).is_absolute() ? fs::path(ref) : file.parent_path() / ref;
        json sub;
        try {
          sub = esi::read_json_file(target);
        } catch (const std::exception&) {
          sub = nullptr;
        }
        if (sub.is_object()) {
          for (const char* sec : {"models", "reaction_systems"})
            if (sub.contains(sec)) resolve_refs(sub, sub[sec], target, depth + 1);
          std::vector<const json*> comps;
          for (const char* sec : {"models", "reaction_systems"})
            if (sub.contains(sec) && sub[sec].is_object())
              for (auto& [ck, cv] : sub[sec].items()) comps.push_back(&cv);
          if (comps.size() == 1) {
            for (const char* reg : {"index_sets", "data_sources"})
              if (sub.contains(reg) && sub[reg].is_object())
                for (auto& [rk, rv] : sub[reg].items())
                  if (!doc.contains(reg) || !doc[reg].contains(rk)) doc[reg][rk] = rv;
            v = *comps[0];
          }
        }
      }
    }
    if (v.is_object() && v.contains("subsystems")) resolve_refs(doc, v["subsystems"], file, depth);
  }
}

json load_resolved_for_test(const fs::path& file) {
  json doc = esi::read_json_file(file);
  for (const char* sec : {"models", "reaction_systems"})
    if (doc.contains(sec)) resolve_refs(doc, doc[sec], file, 0);
  return doc;
}

/// Runs check_structure over every .esm below `dir` (recursively) except the file names in
/// `skip`; returns the formatted findings and counts the files checked in `n`.
std::string sweep(const fs::path& dir, const std::set<std::string>& skip, std::size_t& n) {
  std::string out;
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".esm") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    const std::string name = f.filename().string();
    if (skip.count(name)) continue;
    ++n;
    for (const auto& d : esi::esm::check_structure(load_resolved_for_test(f), f.string()))
      out += "\n  " + esi::format_diagnostic(d);
  }
  return out;
}

}  // namespace

TEST(StructuralCorpus, ConformanceInvalidFixtures) {
  REQUIRE_CORPUS("EarthSciAST-tests/invalid");
  const json expected = esi::read_json_file(dir_ / "expected_errors.json");
  // Known gaps, each a layer other than check_structure: unresolvable / ambiguous subsystem
  // refs are reported by the loader while it resolves refs (spec §4.7); check_structure sees
  // only resolved documents and treats a leftover stub as opaque.
  const std::set<std::string> loader_layer = {"subsystem_ref_ambiguous.esm",
                                              "subsystem_ref_not_found.esm"};
  std::size_t total = 0, matched = 0;
  for (const auto& [name, entry] : expected.items()) {
    const json& se = entry.value("structural_errors", json::array());
    const json& sch = entry.value("schema_errors", json::array());
    if (!fs::exists(dir_ / name) || se.empty() || !sch.empty()) continue;
    bool unit = false;
    for (const auto& e : se)
      unit = unit || e.value("code", "") == "unit_inconsistency" ||
             e.value("code", "") == "unit_parse_error";
    if (unit || loader_layer.count(name)) continue;
    ++total;
    const auto ds = esi::esm::check_structure(load_resolved_for_test(dir_ / name), name);
    bool all = true;
    for (const auto& e : se) {
      const bool ok = has(ds, e.value("code", ""), e.value("path", ""));
      EXPECT_TRUE(ok) << name << ": want " << e.value("code", "") << " at " << e.value("path", "")
                      << ", got:" << dump(ds);
      all = all && ok;
    }
    matched += all;
  }
  EXPECT_EQ(matched, total);
  EXPECT_GE(total, 29u) << "fewer conformance fixtures than expected were found";
}

TEST(StructuralCorpus, NoFindingsOnValidDocuments) {
  REQUIRE_CORPUS("EarthSciAST-tests");
  std::size_t n = 0;
  EXPECT_EQ(sweep(dir_ / "valid", {}, n), "");
  EXPECT_EQ(sweep(dir_ / "simulation", {}, n), "");
  EXPECT_GE(n, 100u);
}

TEST(StructuralCorpus, NoFindingsOnEarthSciModelsComponents) {
  REQUIRE_CORPUS("EarthSciModels/components");
  std::set<std::string> skip = {
      // An applicator fragment: its equations are D(SuperFast.<X>) ~ ..., written to be merged
      // onto a SuperFast reaction system by an assembly's operator_compose; standalone, the
      // document contains no system 'SuperFast', so every scoped reference is undefined.
      "superfast_deposition_sink.esm",
  };
  // The *_loader.esm files still carry the removed pre-1.0 `data_loaders` block: they hold no
  // component, and the corpus README lists them as not loadable.
  for (const auto& e : fs::recursive_directory_iterator(dir_))
    if (e.path().filename().string().ends_with("_loader.esm"))
      skip.insert(e.path().filename().string());
  std::size_t n = 0;
  EXPECT_EQ(sweep(dir_, skip, n), "");
  EXPECT_GE(n, 250u);
}
