// What `esi validate` must refuse before `simulate` would (issue "Trust"): one hostile document
// per class asserting the code and pointer, and a valid counterpart where a false positive is
// plausible. Structural classes go through check_structure; loader classes through
// validate_file on files in a scratch folder (the schema layer off, so the finding under test
// is the one reported).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include <nlohmann/json.hpp>

#include "esi/esm/flatten.hpp"
#include "esi/esm/load.hpp"
#include "esi/esm/structural.hpp"
#include "structural_findings.hpp"
#include "support/temp_dir.hpp"

using esi::testing::TempDir;
using nlohmann::json;

namespace {

using esi::testing::check;
using esi::testing::dump;
using esi::testing::has;
using esi::testing::has_code;


/// A one-state decay model "M" (x' = -k x) with `extra` merged into the model object.
json model_doc(const char* extra = "{}") {
  json m = json::parse(R"({"variables": {"x": {"type": "unknown", "default": 1.0},
                                         "k": {"type": "parameter", "default": 0.5}},
      "equations": [{"lhs": {"op": "D", "args": ["x"], "wrt": "t"},
                     "rhs": {"op": "*", "args": [{"op": "-", "args": ["k"]}, "x"]}}]})");
  m.merge_patch(json::parse(extra));
  return json{{"esm", "1.0.0"}, {"metadata", {{"name", "T"}}}, {"models", {{"M", m}}}};
}

json apply(const char* name, const json& bindings) {
  return json{{"op", "apply_expression_template"},
              {"args", json::array()},
              {"name", name},
              {"bindings", bindings}};
}

/// Templates t0 .. t{levels-1} with t_i(a) = t_{i+1}(a + 1) + t_{i+1}(a + 2): every level
/// doubles the expanded body.
json exponential_templates_doc(int levels) {
  json d = model_doc();
  auto& t = d["models"]["M"]["expression_templates"];
  for (int i = 0; i < levels; ++i) {
    json body;
    if (i + 1 == levels) {
      body = {{"op", "+"}, {"args", {"a", 1}}};
    } else {
      const std::string next = "t" + std::to_string(i + 1);
      body = {{"op", "+"},
              {"args",
               {apply(next.c_str(), {{"a", {{"op", "+"}, {"args", {"a", 1}}}}}),
                apply(next.c_str(), {{"a", {{"op", "+"}, {"args", {"a", 2}}}}})}}};
    }
    t["t" + std::to_string(i)] = {{"params", {"a"}}, {"body", body}};
  }
  return d;
}

/// validate_file (schema layer off) on `text` written to a scratch file.
std::vector<esi::Diagnostic> validate_text(TempDir& dir, const std::string& name,
                                           const std::string& text) {
  esi::esm::LoadOptions o;
  o.schema = false;
  return esi::esm::validate_file(dir.write(name, text), o).errors;
}

const char* kLibrary = R"({"esm": "1.0.0", "metadata": {"name": "L"},
  "index_sets": {"cells": {"kind": "interval", "size": 4}},
  "expression_templates": {"twice": {"params": ["a"], "body": {"op": "*", "args": [2, {"op": "+", "args": ["a", "offset"]}]}}}})";

std::string importing(const std::string& edge) {
  json d = model_doc();
  d["models"]["M"]["expression_template_imports"] = json::array({json::parse(edge)});
  return d.dump();
}

}  // namespace

// ---- templates (§9.7.2-9.7.3) --------------------------------------------------------------

TEST(Trust, TemplateLibrariesImportingEachOtherAreACycle) {
  TempDir dir;
  dir.write(
      "a.esm",
      R"({"esm": "1.0.0", "metadata": {"name": "A"}, "expression_template_imports": [{"ref": "b.esm"}],
                         "expression_templates": {"ta": {"params": [], "body": 1}}})");
  dir.write(
      "b.esm",
      R"({"esm": "1.0.0", "metadata": {"name": "B"}, "expression_template_imports": [{"ref": "a.esm"}],
                         "expression_templates": {"tb": {"params": [], "body": 2}}})");
  const auto ds = validate_text(dir, "m.esm", importing(R"({"ref": "a.esm"})"));
  ASSERT_EQ(ds.size(), 1u) << dump(ds);
  EXPECT_EQ(ds[0].code, "template_import_cycle");
}

TEST(Trust, TemplateApplyingItselfIsRecursive) {
  json d = model_doc();
  d["models"]["M"]["expression_templates"]["t1"] = {{"params", {"a"}},
                                                    {"body", apply("t1", {{"a", "a"}})}};
  EXPECT_FINDING(d, "apply_expression_template_recursive_body",
                 "/models/M/expression_templates/t1/body");
}

TEST(Trust, TemplatesApplyingEachOtherAreRecursiveEvenWhenUnused) {
  json d = model_doc();
  auto& t = d["models"]["M"]["expression_templates"];
  t["t1"] = {{"params", {"a"}}, {"body", apply("t2", {{"a", "a"}})}};
  t["t2"] = {{"params", {"a"}}, {"body", apply("t1", {{"a", "a"}})}};
  const auto ds = check(d);
  EXPECT_TRUE(has_code(ds, "apply_expression_template_recursive_body")) << dump(ds);
  EXPECT_EQ(std::count_if(
                ds.begin(), ds.end(),
                [](const auto& x) { return x.code == "apply_expression_template_recursive_body"; }),
            1)
      << "one cycle, one finding" << dump(ds);
}

namespace {
/// A chain t0 -> t1 -> ... -> t{n-1} of single-reference templates; the last returns its param.
json chain_doc(int n) {
  json d = model_doc();
  auto& t = d["models"]["M"]["expression_templates"];
  for (int i = 0; i < n; ++i)
    t["t" + std::to_string(i)] = {
        {"params", {"a"}},
        {"body",
         i + 1 == n ? json("a") : apply(("t" + std::to_string(i + 1)).c_str(), {{"a", "a"}})}};
  d["models"]["M"]["equations"][0]["rhs"] = {{"op", "*"},
                                             {"args", {apply("t0", {{"a", "k"}}), "x"}}};
  return d;
}
}  // namespace

TEST(Trust, TemplateChainsDeeperThan32AreRefused) {
  // t0 .. t32 is 33 templates deep: refused at t0, where the chain starts.
  EXPECT_FINDING(chain_doc(33), "template_body_expansion_too_deep",
                 "/models/M/expression_templates/t0/body");
  EXPECT_CLEAN(chain_doc(32));
}

TEST(Trust, ExponentialTemplateExpansionIsCapped) {
  // t_i(a) = t_{i+1}(a + 1) + t_{i+1}(a + 2): every level doubles the expanded body.
  json d = exponential_templates_doc(30);
  const auto ds = check(d);
  ASSERT_TRUE(has_code(ds, "template_expansion_too_large")) << dump(ds);
  // Reported once, where the expansion first crosses the limit (about 2^22 nodes: t10, at about 10
  // * 2^19 nodes).
  EXPECT_EQ(std::count_if(ds.begin(), ds.end(),
                          [](const auto& x) { return x.code == "template_expansion_too_large"; }),
            1);
  EXPECT_TRUE(has(ds, "template_expansion_too_large", "/models/M/expression_templates/t10/body"))
      << dump(ds);
}

// ---- import renames (§9.7.7) ------------------------------------------------------------------

TEST(Trust, RenameTargetsMustBeDottedIdentifiers) {
  TempDir dir;
  dir.write("lib.esm", kLibrary);
  auto ds = validate_text(dir, "m1.esm",
                          importing(R"({"ref": "lib.esm", "rename": {"twice": "3 times"}})"));
  ASSERT_EQ(ds.size(), 1u) << dump(ds);
  EXPECT_EQ(ds[0].code, "template_import_rename_invalid");
  EXPECT_EQ(ds[0].pointer, "/models/M/expression_template_imports/0/rename/twice");
  ds = validate_text(dir, "m2.esm", importing(R"({"ref": "lib.esm", "prefix": "a..b"})"));
  ASSERT_EQ(ds.size(), 1u) << dump(ds);
  EXPECT_EQ(ds[0].code, "template_import_rename_invalid");
  EXPECT_EQ(ds[0].pointer, "/models/M/expression_template_imports/0/prefix");
}

TEST(Trust, RenameAndRebindMustNameExportedOrFreeNames) {
  TempDir dir;
  dir.write("lib.esm", kLibrary);
  auto ds = validate_text(dir, "m1.esm",
                          importing(R"({"ref": "lib.esm", "rename": {"twcie": "double"}})"));
  ASSERT_EQ(ds.size(), 1u) << dump(ds);
  EXPECT_EQ(ds[0].code, "template_import_rename_unknown_name");
  EXPECT_EQ(ds[0].pointer, "/models/M/expression_template_imports/0/rename/twcie");
  ds = validate_text(dir, "m2.esm", importing(R"({"ref": "lib.esm", "rebind": {"ofset": "k"}})"));
  ASSERT_EQ(ds.size(), 1u) << dump(ds);
  EXPECT_EQ(ds[0].code, "template_import_rebind_unknown_name");
  EXPECT_EQ(ds[0].pointer, "/models/M/expression_template_imports/0/rebind/ofset");
  // A declared name is renamed, not rebound.
  ds = validate_text(dir, "m3.esm", importing(R"({"ref": "lib.esm", "rebind": {"cells": "k"}})"));
  ASSERT_EQ(ds.size(), 1u) << dump(ds);
  EXPECT_EQ(ds[0].code, "template_import_rebind_unknown_name");
}

TEST(Trust, ValidRenameAndRebindPass) {
  TempDir dir;
  dir.write("lib.esm", kLibrary);
  json d = json::parse(importing(
      R"({"ref": "lib.esm", "prefix": "fine", "rename": {"twice": "dbl"}, "rebind": {"offset": "k"}})"));
  d["models"]["M"]["equations"][0]["rhs"] = {{"op", "*"},
                                             {"args", {apply("dbl", {{"a", "k"}}), "x"}}};
  const auto ds = validate_text(dir, "m.esm", d.dump());
  EXPECT_TRUE(ds.empty()) << dump(ds);
}

// ---- metaparameters (§9.7.6) ------------------------------------------------------------------

TEST(Trust, MetaparameterNamedLikeAVariableConflicts) {
  TempDir dir;
  json d = model_doc(R"({"variables": {"N": {"type": "parameter", "default": 3}}})");
  d["metaparameters"] = {{"N", {{"type", "integer"}, {"default", 4}}}};
  auto ds = validate_text(dir, "m.esm", d.dump());
  ASSERT_EQ(ds.size(), 1u) << dump(ds);
  EXPECT_EQ(ds[0].code, "metaparameter_name_conflict");
  EXPECT_EQ(ds[0].pointer, "/models/M/variables/N");
  json e = model_doc();
  e["metaparameters"] = {{"cells", {{"type", "integer"}, {"default", 4}}}};
  e["index_sets"] = {{"cells", {{"kind", "interval"}, {"size", 3}}}};
  ds = validate_text(dir, "n.esm", e.dump());
  ASSERT_EQ(ds.size(), 1u) << dump(ds);
  EXPECT_EQ(ds[0].code, "metaparameter_name_conflict");
  EXPECT_EQ(ds[0].pointer, "/index_sets/cells");
  // A distinct name is fine.
  json ok = model_doc();
  ok["metaparameters"] = {{"NX", {{"type", "integer"}, {"default", 4}}}};
  ok["index_sets"] = {{"cells", {{"kind", "interval"}, {"size", "NX"}}}};
  ds = validate_text(dir, "ok.esm", ok.dump());
  EXPECT_TRUE(ds.empty()) << dump(ds);
}

// ---- operators (§4.2, §4.3.2, §9.6.6) -------------------------------------------------------

TEST(Trust, InvertedMakearrayRegionIsRefusedButTheEmptySpellingIsNot) {
  json d = model_doc(R"({"variables": {"y": {"type": "unknown", "shape": ["cells"]}},
      "equations": [{"lhs": "y", "rhs": {"op": "makearray", "args": [], "regions": [[[1, 4]], [[3, 1]]], "values": [0, 1]}}]})");
  d["index_sets"] = {{"cells", {{"kind", "interval"}, {"size", 4}}}};
  // merge_patch replaced the equations array: restore the state equation.
  d["models"]["M"]["equations"].push_back(model_doc()["models"]["M"]["equations"][0]);
  EXPECT_FINDING(d, "makearray_region_inverted", "/models/M/equations/0/rhs/regions/1/0");
  d["models"]["M"]["equations"][0]["rhs"]["regions"][1][0] = {3, 2};  // [start, start-1]: empty
  EXPECT_CLEAN(d);
}

TEST(Trust, AMetaparameterRegionIsCheckedOnceFolded) {
  // [2, N-1] is the interior of a stencil: at N = 2 it folds empty ([2, 1], legal), at N = 1 to
  // [2, 0], inverted (spec §4.3.2, §9.6.8). The loader substitutes N; the check folds the rest
  // (hence through the loader, not check_structure alone).
  json d = model_doc(R"({"variables": {"y": {"type": "unknown", "shape": ["cells"]}},
      "equations": [{"lhs": "y", "rhs": {"op": "makearray", "args": [],
        "regions": [[[1, 4]], [[2, {"op": "-", "args": ["N", 1]}]]], "values": [0, 1]}}]})");
  d["index_sets"] = {{"cells", {{"kind", "interval"}, {"size", 4}}}};
  d["models"]["M"]["equations"].push_back(model_doc()["models"]["M"]["equations"][0]);
  d["metaparameters"] = {{"N", {{"type", "integer"}, {"default", 1}}}};
  TempDir dir;
  auto ds = validate_text(dir, "n1.esm", d.dump());
  EXPECT_TRUE(has(ds, "makearray_region_inverted", "/models/M/equations/0/rhs/regions/1/0")) << dump(ds);
  d["metaparameters"]["N"]["default"] = 2;
  ds = validate_text(dir, "n2.esm", d.dump());
  EXPECT_FALSE(has_code(ds, "makearray_region_inverted")) << dump(ds);
}

TEST(Trust, GeometryManifoldOutsideTheClosedSetIsRefused) {
  json d = model_doc(R"({"variables": {"A": {"type": "unknown"}},
      "equations": [{"lhs": "A", "rhs": {"op": "polygon_intersection_area", "args": ["k", "k"], "manifold": "flat"}}]})");
  d["models"]["M"]["equations"].push_back(model_doc()["models"]["M"]["equations"][0]);
  EXPECT_FINDING(d, "geometry_manifold_invalid", "/models/M/equations/0/rhs/manifold");
  d["models"]["M"]["equations"][0]["rhs"]["manifold"] = "spherical";
  EXPECT_CLEAN(d);
}

TEST(Trust, GeometryManifoldBoundThroughATemplateIsCheckedPerCallSite) {
  json d = model_doc(R"({"variables": {"A": {"type": "unknown"}, "B": {"type": "unknown"}},
      "expression_templates": {"area": {"params": ["m"], "body": {"op": "polygon_intersection_area", "args": ["k", "k"], "manifold": "m"}}}})");
  auto& eqs = d["models"]["M"]["equations"];
  eqs.push_back({{"lhs", "A"}, {"rhs", apply("area", {{"m", "planar"}})}});
  eqs.push_back({{"lhs", "B"}, {"rhs", apply("area", {{"m", "bogus"}})}});
  const auto ds = check(d);
  EXPECT_TRUE(has(ds, "geometry_manifold_invalid", "/models/M/equations/2/rhs/bindings/m"))
      << dump(ds);
  EXPECT_EQ(ds.size(), 1u) << "the body's parameter and the planar call are fine" << dump(ds);
}

TEST(Trust, MisspelledOperatorGetsASuggestion) {
  json d = model_doc();
  d["models"]["M"]["equations"][0]["rhs"] = {{"op", "*"},
                                             {"args", {{{"op", "sinn"}, {"args", {"k"}}}, "x"}}};
  const auto ds = check(d);
  ASSERT_TRUE(has(ds, "unknown_operator", "/models/M/equations/0/rhs/args/0/op")) << dump(ds);
  EXPECT_NE(ds[0].message.find("did you mean 'sin'?"), std::string::npos) << ds[0].message;
}

TEST(Trust, RewriteTargetOperatorsAreNotMisspellings) {
  // `grad` is rewrite-target sugar; `dot` (one edit from `not`) is lowered by a match rule.
  json d = model_doc(R"({"variables": {"u": {"type": "unknown"}, "v": {"type": "unknown"}},
      "expression_templates": {"lower_dot": {"params": ["a", "b"], "match": {"op": "dot", "args": ["a", "b"]},
                                             "body": {"op": "*", "args": ["a", "b"]}}}})");
  auto& eqs = d["models"]["M"]["equations"];
  eqs.push_back({{"lhs", "u"}, {"rhs", {{"op", "dot"}, {"args", {"k", "x"}}}}});
  eqs.push_back({{"lhs", "v"}, {"rhs", {{"op", "grad"}, {"args", {"x"}}, {"dim", "z"}}}});
  const auto ds = check(d);
  EXPECT_FALSE(has_code(ds, "unknown_operator")) << dump(ds);
}

TEST(Trust, OperatorArityIsChecked) {
  json d = model_doc();
  d["models"]["M"]["equations"][0]["rhs"] = {
      {"op", "*"}, {"args", {{{"op", "exp"}, {"args", {"k", "x"}}}, "x"}}};
  EXPECT_FINDING(d, "operator_arity", "/models/M/equations/0/rhs/args/0");
  d["models"]["M"]["equations"][0]["rhs"] = {{"op", "min"}, {"args", {"x"}}};
  EXPECT_FINDING(d, "operator_arity", "/models/M/equations/0/rhs");
  d["models"]["M"]["equations"][0]["rhs"] = {{"op", "/"}, {"args", {"k", "x", "x"}}};
  EXPECT_FINDING(d, "operator_arity", "/models/M/equations/0/rhs");
  // Unary minus, n-ary + and a 3-way max are all admissible.
  d["models"]["M"]["equations"][0]["rhs"] = {
      {"op", "+"},
      {"args", {{{"op", "-"}, {"args", {"x"}}}, {{"op", "max"}, {"args", {"k", "x", 1}}}, 0}}};
  EXPECT_CLEAN(d);
}

// ---- components (§6.3.1, §6.6, §7, §11.4) -------------------------------------------------

TEST(Trust, ObservedAlgebraicLoopIsReportedAtValidate) {
  json d = model_doc(R"({"variables": {"a": {"type": "unknown"}, "b": {"type": "unknown"}}})");
  auto& eqs = d["models"]["M"]["equations"];
  eqs.push_back({{"lhs", "a"}, {"rhs", {{"op", "+"}, {"args", {"b", 1}}}}});
  eqs.push_back({{"lhs", "b"}, {"rhs", {{"op", "*"}, {"args", {"a", 2}}}}});
  EXPECT_FINDING(d, "algebraic_loop", "/models/M/equations/1");
  // A chain (b reads a, a reads x) is fine.
  eqs[1]["rhs"] = {{"op", "+"}, {"args", {"x", 1}}};
  EXPECT_CLEAN(d);
}

TEST(Trust, IcOnlyForOdeStates) {
  json d = model_doc();
  auto& eqs = d["models"]["M"]["equations"];
  eqs.push_back({{"lhs", {{"op", "ic"}, {"args", {"x"}}}}, {"rhs", 2.0}});
  EXPECT_CLEAN(d);
  // An event-updated parameter takes its values from its update block, never from ic (§5.4).
  d["models"]["M"]["variables"]["k"]["update"] = {
      {"kind", "condition"}, {"when", {{"op", ">"}, {"args", {"x", 0.5}}}}, {"expression", 1.0}};
  eqs.push_back({{"lhs", {{"op", "ic"}, {"args", {"k"}}}}, {"rhs", 0.2}});
  EXPECT_FINDING(d, "ic_of_non_state", "/models/M/equations/2");
}

TEST(Trust, EventAssigningAParameterIsRefused) {
  json d = model_doc(
      R"({"discrete_events": [{"trigger": {"type": "condition", "expression": {"op": ">", "args": ["t", 1]}},
                                              "affects": [{"lhs": "k", "rhs": 2}]}]})");
  EXPECT_FINDING(d, "event_affects_parameter", "/models/M/discrete_events/0/affects/0");
}

TEST(Trust, DuplicateReactionIdsAreRefused) {
  const json d =
      json::parse(R"({"esm": "1.0.0", "metadata": {"name": "T"}, "reaction_systems": {"R": {
      "species": {"A": {"default": 1.0}, "B": {"default": 0.0}}, "parameters": {"k": {"default": 0.1}},
      "reactions": [{"id": "r1", "substrates": [{"species": "A", "stoichiometry": 1}], "products": [{"species": "B", "stoichiometry": 1}], "rate": "k"},
                    {"id": "r1", "substrates": [{"species": "B", "stoichiometry": 1}], "products": [{"species": "A", "stoichiometry": 1}], "rate": "k"}]}}})");
  EXPECT_FINDING(d, "duplicate_reaction_id", "/reaction_systems/R/reactions/1/id");
}

TEST(Trust, TestsNeedUniqueIdsAndAtLeastOneAssertion) {
  const json t = json::parse(R"({"id": "a", "time_span": {"start": 0, "end": 1},
                                 "assertions": [{"variable": "x", "time": 1, "expected": 0.6065306597}]})");
  json d = model_doc();
  d["models"]["M"]["tests"] = {t};
  EXPECT_CLEAN(d);
  d["models"]["M"]["tests"].push_back(t);
  EXPECT_FINDING(d, "duplicate_test_id", "/models/M/tests/1/id");
  json empty = t;
  empty["assertions"] = json::array();
  d["models"]["M"]["tests"] = {empty};
  EXPECT_FINDING(d, "test_without_assertions", "/models/M/tests/0/assertions");
  empty.erase("assertions");
  d["models"]["M"]["tests"] = {empty};
  EXPECT_FINDING(d, "test_without_assertions", "/models/M/tests/0");
}

// ---- format version (§2, §9.6.5) -------------------------------------------------------------

TEST(Trust, UnknownFormatVersionIsRefused) {
  TempDir dir;
  json d = model_doc();
  d["esm"] = "7.3.0";
  auto ds = validate_text(dir, "new.esm", d.dump());
  ASSERT_EQ(ds.size(), 1u) << dump(ds);
  EXPECT_EQ(ds[0].code, "unsupported_esm_version");
  EXPECT_EQ(ds[0].pointer, "/esm");
  d["esm"] = "1.1.0";
  ds = validate_text(dir, "minor.esm", d.dump());
  ASSERT_EQ(ds.size(), 1u) << dump(ds);
  EXPECT_EQ(ds[0].code, "unsupported_esm_version");
  d["esm"] = "1.0.3";  // a patch release of the version this engine implements
  ds = validate_text(dir, "patch.esm", d.dump());
  EXPECT_TRUE(ds.empty()) << dump(ds);
}

TEST(Trust, TemplateConstructsBeforeTheirVersionAreRefused) {
  TempDir dir;
  json d = model_doc(R"({"expression_templates": {"c": {"params": [], "body": 1}}})");
  d["esm"] = "0.3.0";
  auto ds = validate_text(dir, "old.esm", d.dump());
  ASSERT_EQ(ds.size(), 1u) << dump(ds);
  EXPECT_EQ(ds[0].code, "apply_expression_template_version_too_old");
  json m = model_doc();
  m["esm"] = "0.7.2";
  m["metaparameters"] = {{"N", {{"type", "integer"}, {"default", 4}}}};
  ds = validate_text(dir, "meta.esm", m.dump());
  ASSERT_EQ(ds.size(), 1u) << dump(ds);
  EXPECT_EQ(ds[0].code, "template_import_version_too_old");
}

// ---- the same cap where simulate expands templates --------------------------------------------

TEST(Trust, FlattenStopsAnExponentialTemplateExpansion) {
  // t_i(a) = t_{i+1}(a + 1) + t_{i+1}(a + 2): distinct bindings defeat hash-consing, so the
  // expanded pool doubles per level. Flattening must stop with a located error, not run out of
  // memory.
  TempDir dir;
  json d = exponential_templates_doc(30);
  d["models"]["M"]["equations"][0]["rhs"] = {{"op", "*"},
                                             {"args", {apply("t0", {{"a", "k"}}), "x"}}};
  const auto file = dir.write("big.esm", d.dump());
  std::string code = "no error", pointer;
  try {
    esi::esm::flatten(esi::esm::load_resolved(file));
  } catch (const esi::Error& e) {
    code = e.code();
    pointer = e.diagnostic().pointer;
  }
  EXPECT_EQ(code, "template_expansion_too_large");
  EXPECT_EQ(pointer, "/models/M/equations/0/rhs");
}
