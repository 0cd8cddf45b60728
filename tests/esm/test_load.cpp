// Reference resolution: subsystem refs, template imports, metaparameters, coupling imports.
#include <gtest/gtest.h>

#include "esi/core/error.hpp"
#include "esi/esm/flatten.hpp"
#include "support/eval.hpp"
#include "support/temp_dir.hpp"

using esi::esm::flatten;
using esi::esm::load_resolved;
using esi::testing::TempDir;

namespace {

std::string doc(const std::string& body) {
  return R"({"esm": "1.0.0", "metadata": {"name": "t", "authors": ["test"]},)" + body + "}";
}

const char* kLeaf = R"("models": {"Leaf": {"variables": {"x": {"type": "unknown", "default": 2}},
    "equations": [{"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": {"op": "neg", "args": ["x"]}}]}})";

std::string code_of(const std::function<void()>& f, std::string* pointer = nullptr) {
  try {
    f();
  } catch (const esi::Error& e) {
    if (pointer) *pointer = e.diagnostic().pointer;
    return e.code();
  }
  return "no error";
}

}  // namespace

TEST(Load, SubsystemRefsResolveRelativeToTheReferencingFile) {
  TempDir dir;
  dir.write("lib/leaf.esm", doc(kLeaf));
  dir.write("lib/mid.esm", doc(R"("models": {"Mid": {"variables": {}, "equations": [],
      "subsystems": {"L": {"ref": "./leaf.esm"}}}})"));
  const auto top = dir.write("top.esm", doc(R"("models": {"Top": {"variables": {}, "equations": [],
      "subsystems": {"M": {"ref": "lib/mid.esm"}}}})"));
  const auto r = load_resolved(top);
  const auto sys = flatten(r);
  ASSERT_EQ(sys.states.size(), 1u);
  EXPECT_EQ(sys.states[0].name, "Top.M.L.x");
  EXPECT_NE(sys.states[0].file.find("leaf.esm"), std::string::npos) << "declarations remember their file";
}

TEST(Load, RefErrorsNameTheEdge) {
  TempDir dir;
  dir.write("a.esm", doc(R"("models": {"A": {"variables": {}, "equations": [], "subsystems": {"B": {"ref": "b.esm"}}}})"));
  dir.write("b.esm", doc(R"("models": {"B": {"variables": {}, "equations": [], "subsystems": {"A": {"ref": "a.esm"}}}})"));
  std::string ptr;
  EXPECT_EQ(code_of([&] { load_resolved(dir.path() / "a.esm"); }, &ptr), "subsystem_ref_cycle");
  const auto missing = dir.write("m.esm", doc(R"("models": {"A": {"variables": {}, "equations": [], "subsystems": {"X": {"ref": "nope.esm"}}}})"));
  EXPECT_EQ(code_of([&] { load_resolved(missing); }, &ptr), "unresolved_subsystem_ref");
  EXPECT_EQ(ptr, "/models/A/subsystems/X");
  dir.write("two.esm", doc(R"("models": {"A": {"variables": {}, "equations": []}, "B": {"variables": {}, "equations": []}})"));
  const auto amb = dir.write("amb.esm", doc(R"("models": {"A": {"variables": {}, "equations": [], "subsystems": {"X": {"ref": "two.esm"}}}})"));
  EXPECT_EQ(code_of([&] { load_resolved(amb); }), "ambiguous_subsystem_ref");
  dir.write("lib.esm", doc(R"("expression_templates": {"f": {"params": [], "body": 1}})"));
  const auto lib = dir.write("uselib.esm", doc(R"("models": {"A": {"variables": {}, "equations": [], "subsystems": {"X": {"ref": "lib.esm"}}}})"));
  EXPECT_EQ(code_of([&] { load_resolved(lib); }), "subsystem_ref_is_template_library");
}

TEST(Load, MetaparametersFoldIntoIndexSets) {
  TempDir dir;
  const auto f = dir.write("m.esm", doc(R"("metaparameters": {"N": {"type": "integer", "default": 6}},
      "index_sets": {"cells": {"kind": "interval", "size": {"op": "*", "args": ["N", 2]}},
                     "faces": {"kind": "interval", "size": {"op": "+", "args": ["N", 1]}}},
      )" + std::string(kLeaf)));
  const auto r = load_resolved(f);
  EXPECT_EQ(r.index_set_sizes.at("cells"), 12);
  EXPECT_EQ(r.index_set_sizes.at("faces"), 7);
  esi::esm::LoadOptions o;
  o.metaparameters["N"] = 10;
  EXPECT_EQ(load_resolved(f, o).index_set_sizes.at("cells"), 20);
  o.metaparameters["Q"] = 1;
  EXPECT_EQ(code_of([&] { load_resolved(f, o); }), "template_import_unknown_name");
  const auto bad = dir.write("bad.esm", doc(R"("metaparameters": {"N": {"type": "integer", "default": 7}},
      "index_sets": {"half": {"kind": "interval", "size": {"op": "/", "args": ["N", 2]}}}, )" + std::string(kLeaf)));
  EXPECT_EQ(code_of([&] { load_resolved(bad); }), "metaparameter_type_error");
  const auto unbound = dir.write("unbound.esm", doc(R"("metaparameters": {"N": {"type": "integer"}}, )" + std::string(kLeaf)));
  EXPECT_EQ(code_of([&] { load_resolved(unbound); }), "metaparameter_unbound");
}

TEST(Load, TemplateImportsWithBindingsAndPrefix) {
  TempDir dir;
  dir.write("lib/scale.esm", doc(R"("metaparameters": {"K": {"type": "integer"}},
      "expression_templates": {"scaled": {"params": ["u"], "body": {"op": "*", "args": ["K", "u"]}}})"));
  const auto f = dir.write("m.esm", doc(R"("models": {"M": {
      "expression_template_imports": [{"ref": "lib/scale.esm", "bindings": {"K": 3}, "prefix": "s"}],
      "variables": {"x": {"type": "unknown", "default": 1}},
      "equations": [{"lhs": {"op": "D", "args": ["x"], "wrt": "t"},
        "rhs": {"op": "apply_expression_template", "args": [], "name": "s.scaled", "bindings": {"u": "x"}}}]}})"));
  const auto sys = flatten(load_resolved(f));
  EXPECT_DOUBLE_EQ(esi::testing::eval(sys.pool, sys.state_rhs[0], {{"M.x", 5}}), 15);
  const auto missing = dir.write("m2.esm", doc(R"("models": {"M": {
      "expression_template_imports": [{"ref": "lib/nothere.esm"}], "variables": {}, "equations": []}})"));
  EXPECT_EQ(code_of([&] { load_resolved(missing); }), "template_import_unresolved");
  const auto only = dir.write("m3.esm", doc(R"("models": {"M": {
      "expression_template_imports": [{"ref": "lib/scale.esm", "bindings": {"K": 3}, "only": ["zzz"]}], "variables": {}, "equations": []}})"));
  EXPECT_EQ(code_of([&] { load_resolved(only); }), "template_import_unknown_name");
  dir.write("lib/cyc_a.esm", doc(R"("expression_template_imports": [{"ref": "cyc_b.esm"}], "expression_templates": {"a": {"params": [], "body": 1}})"));
  dir.write("lib/cyc_b.esm", doc(R"("expression_template_imports": [{"ref": "cyc_a.esm"}], "expression_templates": {"b": {"params": [], "body": 1}})"));
  const auto cyc = dir.write("m4.esm", doc(R"("models": {"M": {
      "expression_template_imports": [{"ref": "lib/cyc_a.esm"}], "variables": {}, "equations": []}})"));
  EXPECT_EQ(code_of([&] { load_resolved(cyc); }), "template_import_cycle");
}

TEST(Load, CouplingImportsBindRoles) {
  TempDir dir;
  dir.write("wiring.esm", doc(R"("coupling_roles": {"Src": {}, "Dst": {}},
      "coupling": [{"type": "variable_map", "from": "Src.v", "to": "Dst.p", "transform": "param_to_var"}])"));
  const std::string comps = R"("models": {
      "S": {"variables": {"v": {"type": "unknown"}}, "equations": [{"lhs": "v", "rhs": 42}]},
      "D": {"variables": {"p": {"type": "parameter", "default": 1}, "y": {"type": "unknown", "default": 0}},
            "equations": [{"lhs": {"op": "D", "args": ["y"], "wrt": "t"}, "rhs": "p"}]}})";
  const auto f = dir.write("m.esm", doc(comps + R"(, "coupling": [{"type": "coupling_import", "ref": "wiring.esm", "bind": {"Src": "S", "Dst": "D"}}])"));
  const auto sys = flatten(load_resolved(f));
  EXPECT_LT(sys.parameter_index("D.p"), 0);
  EXPECT_DOUBLE_EQ(esi::testing::eval(sys.pool, sys.state_rhs[0], {{"S.v", 42}}), 42);
  const auto unbound = dir.write("u.esm", doc(comps + R"(, "coupling": [{"type": "coupling_import", "ref": "wiring.esm", "bind": {"Src": "S"}}])"));
  EXPECT_EQ(code_of([&] { load_resolved(unbound); }), "coupling_import_role_unbound");
  const auto notcomp = dir.write("n.esm", doc(comps + R"(, "coupling": [{"type": "coupling_import", "ref": "wiring.esm", "bind": {"Src": "S", "Dst": "Nope"}}])"));
  EXPECT_EQ(code_of([&] { load_resolved(notcomp); }), "coupling_import_bind_not_a_component");
}

TEST(Load, BadJsonIsALocatedParseError) {
  TempDir dir;
  const auto f = dir.write("bad.esm", "{\"esm\": \"1.0.0\", ");
  std::string ptr;
  EXPECT_EQ(code_of([&] { load_resolved(f); }, &ptr), "json_parse_error");
  EXPECT_EQ(ptr, "$");  // the root, as the format's conformance fixtures write it
  EXPECT_EQ(code_of([&] { load_resolved(dir.path() / "missing.esm"); }), "file_not_found");
}

TEST(Load, NumbersBeyondBinary64AreAParseErrorNotACrash) {
  // Found by the fuzzer: nlohmann reports out_of_range, not parse_error, for 1e999.
  TempDir dir;
  const auto f = dir.write("big.esm", R"({"esm": "1.0.0", "metadata": {"name": "x"}, "models": {"M": {"variables": {"k": {"type": "parameter", "default": 1e999}}, "equations": []}}})");
  EXPECT_EQ(code_of([&] { load_resolved(f); }), "json_parse_error");
  const auto report = esi::esm::validate_file(f);
  ASSERT_FALSE(report.valid());
  EXPECT_EQ(report.errors[0].code, "json_parse_error");
}

TEST(Load, ALibraryNamedOnItsOwnGetsItsImportGraphResolved) {
  TempDir dir;
  const auto a = dir.write("a.esm", doc(R"("expression_template_imports": [{"ref": "./b.esm"}],
      "expression_templates": {"twice": {"params": ["x"], "body": {"op": "*", "args": [2, "x"]}}})"));
  dir.write("b.esm", doc(R"("expression_template_imports": [{"ref": "./a.esm"}],
      "expression_templates": {"thrice": {"params": ["x"], "body": {"op": "*", "args": [3, "x"]}}})"));
  std::string ptr;
  EXPECT_EQ(code_of([&] { load_resolved(a); }, &ptr), "template_import_cycle");
  EXPECT_EQ(ptr, "/expression_template_imports/0");
  const auto report = esi::esm::validate_file(a);
  ASSERT_FALSE(report.valid());
  EXPECT_EQ(report.errors[0].code, "template_import_cycle");
  // The same library importing a well-formed one is valid.
  const auto c = dir.write("c.esm", doc(R"("expression_template_imports": [{"ref": "./d.esm"}],
      "expression_templates": {"twice": {"params": ["x"], "body": {"op": "*", "args": [2, "x"]}}})"));
  dir.write("d.esm", doc(R"("expression_templates": {"thrice": {"params": ["x"], "body": {"op": "*", "args": [3, "x"]}}})"));
  EXPECT_TRUE(esi::esm::validate_file(c).valid());
  EXPECT_EQ(code_of([&] { dir.write("e.esm", doc(R"("expression_template_imports": [{"ref": "./missing.esm"}],
      "expression_templates": {})")); load_resolved(dir.path() / "e.esm"); }), "template_import_unresolved");
}
