// The inline-test runner: the conformance simulation fixtures all pass, tolerance precedence,
// override-key errors, refusals reported as errors, and output independent of --jobs.
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "esi/check/check.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;

std::string doc_with_tests(const std::string& tests, const std::string& tolerance = "") {
  return R"({"esm": "1.0.0", "metadata": {"name": "t"}, "models": {"M": {
    "variables": {"x": {"type": "unknown", "default": 1.0}, "k": {"type": "parameter", "default": 1.0}},
    "equations": [{"lhs": {"op": "D", "args": ["x"], "wrt": "t"},
                   "rhs": {"op": "*", "args": [{"op": "-", "args": ["k"]}, "x"]}}])" +
         (tolerance.empty() ? "" : ", \"tolerance\": " + tolerance) + R"(, "tests": )" + tests + "}}}";
}

/// The corpus documents `esi validate` refuses, with the code it refuses them with (pinned,
/// each with its reason, in tests/esm/corpus_expectations.json).
std::map<std::string, std::string> refused_corpus_documents() {
  std::ifstream in(fs::path(ESI_SOURCE_DIR) / "tests/esm/corpus_expectations.json");
  const nlohmann::json expected = nlohmann::json::parse(in);
  std::map<std::string, std::string> out;
  for (auto it = expected.begin(); it != expected.end(); ++it)
    if (it->value("validate", "valid") != "valid") out[it.key()] = it->at("validate");
  return out;
}

TEST(Check, EverySimulationFixtureOfTheConformanceSuitePasses) {
  const fs::path corpus = esi::testing::corpus_dir();
  if (corpus.empty()) GTEST_SKIP() << "corpus not found (set ESI_CORPUS)";
  const auto files = esi::check::collect_esm_files({(corpus / "EarthSciAST-tests/simulation").string()});
  ASSERT_GE(files.size(), 9u);
  const auto refused = refused_corpus_documents();
  const auto results = esi::check::check_files(files, 2);
  std::size_t refused_here = 0;
  for (const auto& f : results) {
    const std::string rel = fs::relative(f.file, corpus).generic_string();
    if (auto r = refused.find(rel); r != refused.end()) {
      // An invalid document runs no test: check refuses it with validate's finding.
      ++refused_here;
      ASSERT_TRUE(f.error) << f.file;
      EXPECT_EQ(f.error->code, r->second) << f.file;
      EXPECT_TRUE(f.tests.empty()) << f.file;
      EXPECT_GT(f.assertions_not_run, 0u) << f.file;
      continue;
    }
    EXPECT_FALSE(f.error) << f.file << ": " << f.error->message;
    EXPECT_FALSE(f.tests.empty()) << f.file;
    for (const auto& t : f.tests) {
      EXPECT_FALSE(t.error) << f.file << " " << t.id << ": " << t.error->message;
      for (const auto& a : t.assertions)
        EXPECT_TRUE(a.pass) << f.file << " " << t.id << " " << a.variable << " at " << a.time
                            << ": " << a.actual << " vs " << a.expected;
    }
  }
  const auto s = esi::check::summarize(results);
  EXPECT_EQ(s.failed, 0u);
  EXPECT_EQ(s.errors, refused_here);
  EXPECT_GE(s.assertions, 75u);
}

TEST(Check, OutputDoesNotDependOnJobs) {
  const fs::path corpus = esi::testing::corpus_dir();
  if (corpus.empty()) GTEST_SKIP() << "corpus not found (set ESI_CORPUS)";
  const auto files = esi::check::collect_esm_files({(corpus / "EarthSciAST-tests/simulation").string()});
  EXPECT_EQ(esi::check::to_json(esi::check::check_files(files, 1)).dump(),
            esi::check::to_json(esi::check::check_files(files, 3)).dump());
}

TEST(Check, ToleranceResolvesPerFieldMostSpecificFirst) {
  // x(1) = exp(-1) = 0.36787944...; expected 0.3679 is off by 2.06e-5 (rel 5.6e-5).
  esi::testing::TempDir dir;
  const auto file = dir.write("m.esm", doc_with_tests(R"([
    {"id": "a", "time_span": {"start": 0, "end": 1}, "tolerance": {"rel": 1e-4},
     "assertions": [{"variable": "x", "time": 1, "expected": 0.3679},
                    {"variable": "x", "time": 1, "expected": 0.3679, "tolerance": {"rel": 1e-6}},
                    {"variable": "x", "time": 1, "expected": 0.3679, "tolerance": {"abs": 1e-4, "rel": 1e-9}}]},
    {"id": "b", "time_span": {"start": 0, "end": 1},
     "assertions": [{"variable": "x", "time": 1, "expected": 0.3679}]}])", R"({"abs": 1e-3})"));
  const auto r = esi::check::check_file(file);
  ASSERT_FALSE(r.error);
  ASSERT_EQ(r.tests.size(), 2u);
  ASSERT_EQ(r.tests[0].assertions.size(), 3u);
  EXPECT_TRUE(r.tests[0].assertions[0].pass);   // test rel 1e-4
  EXPECT_TRUE(r.tests[0].assertions[1].pass);   // rel 1e-6 fails, component abs 1e-3 passes
  EXPECT_TRUE(r.tests[0].assertions[2].pass);   // own abs
  EXPECT_TRUE(r.tests[1].assertions[0].pass);   // component abs 1e-3
  EXPECT_NEAR(r.tests[0].assertions[0].actual, std::exp(-1.0), 1e-9);
}

TEST(Check, DefaultToleranceIsRelativeOnly) {
  esi::testing::TempDir dir;
  const auto file = dir.write("m.esm", doc_with_tests(R"([
    {"id": "a", "time_span": {"start": 0, "end": 1}, "parameter_overrides": {"k": 0.0},
     "assertions": [{"variable": "x", "time": 1, "expected": 1.0000011},
                    {"variable": "x", "time": 1, "expected": 1.0000009}]}])"));
  const auto r = esi::check::check_file(file);
  ASSERT_EQ(r.tests.size(), 1u);
  ASSERT_FALSE(r.tests[0].error) << r.tests[0].error->message;
  EXPECT_FALSE(r.tests[0].assertions[0].pass);
  EXPECT_TRUE(r.tests[0].assertions[1].pass);
  const auto s = esi::check::summarize({r});
  EXPECT_EQ(s.failed, 1u);
  EXPECT_FALSE(s.all_passed());
}

TEST(Check, UnknownOverrideKeyIsATestError) {
  esi::testing::TempDir dir;
  const auto file = dir.write("m.esm", doc_with_tests(R"([
    {"id": "a", "time_span": {"start": 0, "end": 1}, "parameter_overrides": {"nope": 2},
     "assertions": [{"variable": "x", "time": 1, "expected": 1}]}])"));
  const auto r = esi::check::check_file(file);
  ASSERT_EQ(r.tests.size(), 1u);
  ASSERT_TRUE(r.tests[0].error);
  EXPECT_EQ(r.tests[0].error->code, "unknown_override");
  EXPECT_EQ(esi::check::summarize({r}).skipped, 1u);
}

TEST(Check, ACellOfAScalarSaysTheComponentRunsAlone) {
  // A test asserting x[1,1] of the scalar x (as a reaction system's test does for a species
  // only the coupling lifts onto a grid): the error says why there are no cells.
  esi::testing::TempDir dir;
  const auto file = dir.write("m.esm", doc_with_tests(R"([
    {"id": "a", "time_span": {"start": 0, "end": 1},
     "assertions": [{"variable": "x[1,1]", "time": 1, "expected": 1}]}])"));
  const auto r = esi::check::check_file(file);
  ASSERT_EQ(r.tests.size(), 1u);
  ASSERT_TRUE(r.tests[0].error);
  EXPECT_EQ(r.tests[0].error->code, "unknown_override");
  EXPECT_EQ(r.tests[0].error->pointer, "/models/M/tests/0/assertions/0/variable");
  EXPECT_NE(r.tests[0].error->message.find("'x' is a scalar there"), std::string::npos) << r.tests[0].error->message;
}

TEST(Check, UnloadableFileIsAFileErrorNotACrash) {
  esi::testing::TempDir dir;
  const auto file = dir.write("bad.esm", "{ not json");
  const auto r = esi::check::check_file(file);
  ASSERT_TRUE(r.error);
  EXPECT_EQ(r.error->code, "json_parse_error");
  const auto j = esi::check::to_json({r});
  EXPECT_EQ(j["summary"]["errors"], 1);
  EXPECT_EQ(j["files"][0]["error"]["code"], "json_parse_error");
}

TEST(Check, DirectoriesAreWalkedForEsmFilesSorted) {
  esi::testing::TempDir dir;
  dir.write("b/two.esm", "{}");
  dir.write("a/one.esm", "{}");
  dir.write("a/skip.json", "{}");
  const auto files = esi::check::collect_esm_files({dir.path().string()});
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].filename(), "one.esm");
  EXPECT_EQ(files[1].filename(), "two.esm");
  EXPECT_THROW(esi::check::collect_esm_files({(dir.path() / "missing").string()}), esi::Error);
}

}  // namespace
