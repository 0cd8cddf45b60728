// Inline tests of array variables (spec §6.6.5, §6.6.6): assertions that sample cells by
// coordinate and reduce whole fields, a test's own discretization, and references read before
// the run.
#include <string>

#include <gtest/gtest.h>

#include "esi/check/check.hpp"
#include "support/flat_doc.hpp"
#include "support/temp_dir.hpp"

namespace {

using esi::testing::array_doc;

TEST(Arrays, PdeAssertionsSampleAndReduceAsSection665Says) {
  // u[i](t) = i * t; at t = 1: u = [1, 2, 3, 4].
  const std::string assertions = R"([
    {"variable": "u", "time": 1.0, "expected": 2.0, "coords": {"x": 2.5}},
    {"variable": "u", "time": 1.0, "expected": 3.0, "coords": {"x": 2.51}},
    {"variable": "u", "time": 1.0, "expected": 2.5, "reduce": "mean"},
    {"variable": "u", "time": 1.0, "expected": 4.0, "reduce": "max"},
    {"variable": "u", "time": 1.0, "expected": 1.0, "reduce": "min"},
    {"variable": "u", "time": 1.0, "expected": 0.0, "reduce": "Linf_error",
     "reference": {"op": "aggregate", "output_idx": ["i"], "args": [], "ranges": {"i": {"from": "x"}}, "expr": {"op": "*", "args": ["i", "k"]}}},
    {"variable": "u", "time": 1.0, "expected": 0.5, "reduce": "L2_error",
     "reference": {"op": "aggregate", "output_idx": ["i"], "args": [], "ranges": {"i": {"from": "x"}}, "expr": {"op": "*", "args": [2, "i"]}}},
    {"variable": "u", "time": 1.0, "expected": 2.6, "reduce": "mean"}])";
  const std::string text = array_doc(
      R"({"x": {"kind": "interval", "size": 4}})",
      R"({"u": {"type": "unknown", "shape": ["x"], "default": 0.0}, "k": {"type": "parameter", "default": 1.0}})",
      R"([{"lhs": {"op": "D", "args": ["u"], "wrt": "t"}, "rhs": {"op": "aggregate", "output_idx": ["i"], "args": [],
            "ranges": {"i": {"from": "x"}}, "expr": {"op": "*", "args": ["k", "i"]}}}])",
      R"("tests": [{"id": "pde", "time_span": {"start": 0, "end": 1}, "tolerance": {"abs": 1e-9}, "assertions": )" +
          assertions + "}]");
  esi::testing::TempDir dir;
  const auto r = esi::check::check_file(dir.write("m.esm", text));
  ASSERT_FALSE(r.error) << r.error->message;
  ASSERT_EQ(r.tests.size(), 1u);
  ASSERT_FALSE(r.tests[0].error) << r.tests[0].error->message;
  const auto& a = r.tests[0].assertions;
  ASSERT_EQ(a.size(), 8u);
  for (std::size_t i = 0; i + 1 < a.size(); ++i) EXPECT_TRUE(a[i].pass) << i << ": " << a[i].actual;
  EXPECT_NEAR(a[6].actual, 0.5, 1e-12);
  EXPECT_FALSE(a[7].pass);  // a wrong expectation fails: the reductions are not vacuous
}

TEST(Arrays, ATestInjectsItsOwnDiscretization) {
  // The component writes D(g, wrt: x) and imports no rule (§6.6.6): alone it cannot run; its
  // test lowers it under a one-sided difference read from a rule library next to it. With
  // g[i] = i^2 and 0 at the first face, du/dt = [0, 3, 5, 7], so u(1) = [0, 3, 5, 7].
  esi::testing::TempDir dir;
  dir.write("upwind.esm", R"({"esm": "1.0.0", "metadata": {"name": "upwind"},
    "metaparameters": {"N": {"type": "integer", "default": 4}},
    "expression_templates": {"upwind_x": {"params": ["f"], "match": {"op": "D", "args": ["f"], "wrt": "x"},
      "body": {"op": "makearray", "args": [], "regions": [[[2, "N"]], [[1, 1]]],
               "values": [{"op": "aggregate", "output_idx": ["i"], "args": ["f"], "ranges": {"i": [2, "N"]},
                           "expr": {"op": "-", "args": [{"op": "index", "args": ["f", "i"]},
                                                         {"op": "index", "args": ["f", {"op": "-", "args": ["i", 1]}]}]}},
                          0.0]}}}})");
  const std::string text = array_doc(
      R"({"x": {"kind": "interval", "size": 4}})",
      R"({"u": {"type": "unknown", "shape": ["x"], "default": 0.0}, "g": {"type": "unknown", "shape": ["x"]}})",
      R"([{"lhs": "g", "rhs": {"op": "aggregate", "output_idx": ["i"], "args": [],
            "ranges": {"i": {"from": "x"}}, "expr": {"op": "*", "args": ["i", "i"]}}},
          {"lhs": {"op": "D", "args": ["u"], "wrt": "t"}, "rhs": {"op": "D", "args": ["g"], "wrt": "x"}}])",
      R"("tests": [{"id": "upwind", "time_span": {"start": 0, "end": 1}, "tolerance": {"abs": 1e-9},
          "expression_template_imports": [{"ref": "./upwind.esm", "bindings": {"N": 4}}],
          "assertions": [{"variable": "u", "time": 1.0, "expected": 0.0, "coords": {"x": 1}},
                         {"variable": "u", "time": 1.0, "expected": 5.0, "coords": {"x": 3}},
                         {"variable": "u", "time": 1.0, "expected": 7.0, "coords": {"x": 4}}]}])");
  const auto r = esi::check::check_file(dir.write("m.esm", text));
  ASSERT_FALSE(r.error) << r.error->message;
  ASSERT_EQ(r.tests.size(), 1u);
  ASSERT_FALSE(r.tests[0].error) << r.tests[0].error->message;
  ASSERT_EQ(r.tests[0].assertions.size(), 3u);
  for (const auto& a : r.tests[0].assertions) EXPECT_TRUE(a.pass) << a.actual << " vs " << a.expected;
}

TEST(Arrays, AReferenceMayNotReadTheUnknowns) {
  const std::string text = array_doc(
      R"({"x": {"kind": "interval", "size": 2}})", R"({"u": {"type": "unknown", "shape": ["x"], "default": 1.0}})",
      R"([{"lhs": {"op": "D", "args": ["u"], "wrt": "t"}, "rhs": 0.0}])",
      R"("tests": [{"id": "bad", "time_span": {"start": 0, "end": 1}, "assertions": [
          {"variable": "u", "time": 1.0, "expected": 0.0, "reduce": "Linf_error", "reference": "u"}]}])");
  esi::testing::TempDir dir;
  const auto r = esi::check::check_file(dir.write("m.esm", text));
  ASSERT_EQ(r.tests.size(), 1u);
  ASSERT_TRUE(r.tests[0].error);
  EXPECT_EQ(r.tests[0].error->code, "invalid_test");
}

}  // namespace
