// A component that calls a template only its test imports (spec §9.7.10 form (4): the test's
// injection builds an ephemeral instance; the persisted component keeps the call). The test
// runs and its value is the closed form; `esi validate` notes the call instead of refusing the
// document, as it notes a rewrite target of a discretization-agnostic component; a call no
// run can resolve stays an error.
#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "esi/check/check.hpp"
#include "esi/esm/load.hpp"
#include "support/temp_dir.hpp"

namespace {

const char* const kLibrary = R"({"esm": "1.0.0", "metadata": {"name": "lib"},
  "expression_templates": {"decay": {"params": ["q", "k"], "body": {"op": "*", "args": [{"op": "-", "args": ["k"]}, "q"]}}}})";

/// x' = decay(x, k) with k = 0.5, the template imported by the test when `injects`.
std::string model(bool injects) {
  return std::string(R"({"esm": "1.0.0", "metadata": {"name": "m"}, "models": {"M": {
    "variables": {"x": {"type": "unknown", "units": "1", "default": 1.0}, "k": {"type": "parameter", "units": "1/s", "default": 0.5}},
    "equations": [{"lhs": {"op": "D", "args": ["x"], "wrt": "t"},
                   "rhs": {"op": "apply_expression_template", "args": [], "name": "decay", "bindings": {"q": "x", "k": "k"}}}],
    "tests": [{"id": "injected", "time_span": {"start": 0, "end": 2},)") +
         (injects ? R"("expression_template_imports": [{"ref": "lib.esm"}],)" : "") +
         R"("assertions": [{"variable": "x", "time": 2, "expected": 0.36787944117144233, "tolerance": {"rel": 1e-6}}]}]}}})";
}

TEST(CheckInjection, ATemplateOnlyTheTestImportsRunsInThatTest) {
  esi::testing::TempDir dir;
  dir.write("lib.esm", kLibrary);
  const auto path = dir.write("m.esm", model(true));
  const auto r = esi::check::check_file(path.string());
  ASSERT_FALSE(r.error) << r.error->message;
  ASSERT_EQ(r.tests.size(), 1u);
  ASSERT_FALSE(r.tests[0].error) << r.tests[0].error->message;
  ASSERT_EQ(r.tests[0].assertions.size(), 1u);
  EXPECT_TRUE(r.tests[0].assertions[0].pass);
  EXPECT_NEAR(r.tests[0].assertions[0].actual, std::exp(-1.0), 1e-6);  // x(2) = e^(-0.5 * 2)
  const auto report = esi::esm::validate_file(path);
  EXPECT_TRUE(report.valid());
  bool noted = false;
  for (const auto& n : report.notes)
    noted = noted || (n.code == "apply_expression_template_unknown_template" &&
                      n.pointer == "/models/M/equations/0/rhs");
  EXPECT_TRUE(noted);
}

TEST(CheckInjection, ACallNoRunCanResolveIsStillAnError) {
  esi::testing::TempDir dir;
  const auto report = esi::esm::validate_file(dir.write("m.esm", model(false)));
  EXPECT_FALSE(report.valid());
  ASSERT_FALSE(report.errors.empty());
  EXPECT_EQ(report.errors[0].code, "apply_expression_template_unknown_template");
}

}  // namespace
