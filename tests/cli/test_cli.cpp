// End-to-end tests of the `esi` binary: exit statuses, the human and --json output forms, and
// clear refusals (missing file, bad JSON, undefined names) rather than crashes.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include "support/run_esi.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;

using Result = esi::testing::CliResult;
using esi::testing::read_all;

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("esi_cli_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  /// Runs `esi ARGS...` and captures stdout, stderr and the exit status.
  Result run(const std::vector<std::string>& args) const {
    return esi::testing::run_esi(ESI_BINARY, args, dir_ / "stderr.txt");
  }

  fs::path write(const std::string& name, const std::string& text) const {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }

  static std::string example() { return std::string(ESI_SOURCE_DIR) + "/examples/ozone_box.esm"; }

  fs::path dir_;
};

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

/// A one-model document whose equation reads an undeclared name.
const char* kUndefinedVariable = R"({
  "esm": "1.0.0",
  "metadata": {"name": "UndefinedName"},
  "models": {
    "Box": {
      "variables": {
        "x": {"type": "unknown", "units": "1", "default": 1.0},
        "k": {"type": "parameter", "units": "1/s", "default": 0.1}
      },
      "equations": [
        {"lhs": {"op": "D", "args": ["x"], "wrt": "t"},
         "rhs": {"op": "*", "args": [{"op": "-", "args": ["k_missing"]}, "x"]}}
      ]
    }
  }
})";

/// A valid one-model document: exponential decay.
const char* kDecay = R"({
  "esm": "1.0.0",
  "metadata": {"name": "Decay"},
  "models": {
    "Box": {
      "variables": {
        "x": {"type": "unknown", "units": "1", "default": 1.0},
        "k": {"type": "parameter", "units": "1/s", "default": 0.1},
        "half": {"type": "unknown", "units": "1"}
      },
      "equations": [
        {"lhs": {"op": "D", "args": ["x"], "wrt": "t"},
         "rhs": {"op": "*", "args": [{"op": "-", "args": ["k"]}, "x"]}},
        {"lhs": "half", "rhs": {"op": "/", "args": ["x", 2]}}
      ]
    }
  }
})";

// ---- the command surface ---------------------------------------------------------------------

TEST_F(CliTest, VersionAndHelp) {
  Result r = run({"--version"});
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out.rfind("esi ", 0), 0u) << r.out;

  r = run({"help"});
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("validate"), std::string::npos);
  EXPECT_NE(r.out.find("inspect"), std::string::npos);

  r = run({"help", "inspect"});
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("--component"), std::string::npos);

  r = run({"validate", "--help"});
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("--json"), std::string::npos);
}

TEST_F(CliTest, UsageErrorsExitTwo) {
  Result r = run({});
  EXPECT_EQ(r.status, 2);

  r = run({"frobnicate"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("unknown command 'frobnicate'"), std::string::npos) << r.err;

  r = run({"validate"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("no FILE"), std::string::npos) << r.err;

  r = run({"validate", "--bogus", example()});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--bogus"), std::string::npos) << r.err;

  r = run({"inspect"});
  EXPECT_EQ(r.status, 2);

  r = run({"inspect", example(), example()});
  EXPECT_EQ(r.status, 2);

  r = run({"inspect", example(), "--component"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("needs a NAME"), std::string::npos) << r.err;
}

// ---- validate --------------------------------------------------------------------------------

TEST_F(CliTest, ValidateBundledExample) {
  ESI_SKIP_WITHOUT_ESM_SCHEMA();
  const Result r = run({"validate", example()});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(r.out, example() + ": valid\n");
}

TEST_F(CliTest, ValidateJsonLineForValidFile) {
  const Result r = run({"validate", "--json", example()});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  const auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 1u) << r.out;
  const nlohmann::json j = nlohmann::json::parse(lines[0]);
  EXPECT_EQ(j.at("file"), example());
  EXPECT_EQ(j.at("valid"), true);
  EXPECT_TRUE(j.at("errors").is_array());
  EXPECT_TRUE(j.at("errors").empty()) << lines[0];
}

TEST_F(CliTest, ValidateReportsUndefinedVariableWithPointer) {
  const fs::path bad = write("undefined.esm", kUndefinedVariable);
  const Result r = run({"validate", "--json", bad.string()});
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  const auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 1u) << r.out;
  const nlohmann::json j = nlohmann::json::parse(lines[0]);
  EXPECT_EQ(j.at("file"), bad.string());
  EXPECT_EQ(j.at("valid"), false);
  bool found = false;
  for (const auto& e : j.at("errors")) {
    ASSERT_TRUE(e.contains("code") && e.contains("path") && e.contains("message")) << e.dump();
    EXPECT_FALSE(e.contains("file")) << "same-file findings carry no file key: " << e.dump();
    if (e.at("code") == "undefined_variable") {
      EXPECT_EQ(e.at("path"), "/models/Box/equations/0/rhs");
      EXPECT_NE(e.at("message").get<std::string>().find("k_missing"), std::string::npos);
      found = true;
    }
  }
  EXPECT_TRUE(found) << lines[0];
}

TEST_F(CliTest, ValidateHumanOutputNamesFilePointerAndCode) {
  const fs::path bad = write("undefined.esm", kUndefinedVariable);
  const Result r = run({"validate", bad.string()});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find(bad.string() + ":/models/Box/equations/0/rhs: error[undefined_variable]"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(bad.string() + ": invalid ("), std::string::npos) << r.out;
}

TEST_F(CliTest, ValidateManyFilesOneLineEachAndExitOneIfAnyInvalid) {
  const fs::path good = write("decay.esm", kDecay);
  const fs::path bad = write("undefined.esm", kUndefinedVariable);
  const Result r = run({"validate", "--json", good.string(), bad.string(), example()});
  EXPECT_EQ(r.status, 1);
  const auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 3u) << r.out;
  EXPECT_EQ(nlohmann::json::parse(lines[0]).at("valid"), true) << lines[0];
  EXPECT_EQ(nlohmann::json::parse(lines[1]).at("valid"), false) << lines[1];
  EXPECT_EQ(nlohmann::json::parse(lines[2]).at("valid"), true) << lines[2];
}

TEST_F(CliTest, ValidateMissingFileIsAFindingNotACrash) {
  const std::string missing = (dir_ / "no_such_file.esm").string();
  const Result r = run({"validate", "--json", missing});
  EXPECT_EQ(r.status, 1) << r.err;
  const auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 1u) << r.out << r.err;
  const nlohmann::json j = nlohmann::json::parse(lines[0]);
  EXPECT_EQ(j.at("valid"), false);
  ASSERT_FALSE(j.at("errors").empty());
  EXPECT_EQ(j.at("errors")[0].at("code"), "file_not_found") << lines[0];
}

TEST_F(CliTest, ValidateBadJsonIsAParseError) {
  const fs::path bad = write("broken.esm", "{\"esm\": \"1.0.0\", \"metadata\": ");
  const Result r = run({"validate", "--json", bad.string()});
  EXPECT_EQ(r.status, 1);
  const auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 1u) << r.out << r.err;
  const nlohmann::json j = nlohmann::json::parse(lines[0]);
  ASSERT_FALSE(j.at("errors").empty());
  EXPECT_EQ(j.at("errors")[0].at("code"), "json_parse_error") << lines[0];
}

TEST_F(CliTest, ValidateNumberOverflowIsAParseErrorNotAnInternalError) {
  // nlohmann reports a number outside double range as out_of_range, not parse_error (found by
  // fuzz/fuzz_loader.cpp); it is still bad JSON input, so exit 1 with a finding, never exit 3.
  const fs::path bad = write("overflow.esm", R"({"esm":"1.0.0","metadata":{"name":"Big"},
    "models":{"M":{"variables":{"k":{"type":"parameter","default":2.5e1298}},"equations":[]}}})");
  const Result r = run({"validate", "--json", bad.string()});
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  const auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 1u) << r.out << r.err;
  const nlohmann::json j = nlohmann::json::parse(lines[0]);
  ASSERT_FALSE(j.at("errors").empty());
  EXPECT_EQ(j.at("errors")[0].at("code"), "json_parse_error") << lines[0];
}

// ---- inspect ---------------------------------------------------------------------------------

TEST_F(CliTest, InspectBundledExampleHuman) {
  const Result r = run({"inspect", example()});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  for (const char* needle :
       {"components (", "OzoneNOx", "SurfaceExchange", "Diagnostics", "states (", "OzoneNOx.O3",
        "observed (", "Diagnostics.NOx", "parameters (", "OzoneNOx.T = 298.15", "equations: "}) {
    EXPECT_NE(r.out.find(needle), std::string::npos) << "missing '" << needle << "' in\n" << r.out;
  }
  // operator_compose joins SurfaceExchange's O3 and NO tendencies onto the chemistry's states:
  // seven species states (CO is a reservoir), none left over in SurfaceExchange.
  EXPECT_NE(r.out.find("states (7):"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("  SurfaceExchange.O3  ["), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  OzoneNOx.CO = 2.5e+12"), std::string::npos) << r.out;
}

TEST_F(CliTest, InspectJsonIsOneCanonicalObject) {
  const Result r = run({"inspect", "--json", example()});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 1u) << r.out;
  const nlohmann::json j = nlohmann::json::parse(lines[0]);
  EXPECT_TRUE(j.is_object());
  EXPECT_FALSE(j.empty());
  EXPECT_EQ(j.dump(), lines[0]) << "canonical JSON: sorted keys, no whitespace";
}

TEST_F(CliTest, InspectOneComponent) {
  const Result r = run({"inspect", "--component", "SurfaceExchange", example()});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("SurfaceExchange.O3"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("Diagnostics.NOx"), std::string::npos) << r.out;
}

TEST_F(CliTest, InspectSmallModelShowsObservedAsInfix) {
  const fs::path good = write("decay.esm", kDecay);
  const Result r = run({"inspect", good.string()});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("Box.x"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Box.half = "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Box.k = 0.1"), std::string::npos) << r.out;
}

TEST_F(CliTest, InspectMissingFileIsAClearError) {
  const std::string missing = (dir_ / "no_such_file.esm").string();
  const Result r = run({"inspect", missing});
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_NE(r.err.find(missing), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("error[file_not_found]"), std::string::npos) << r.err;
}

TEST_F(CliTest, InspectInvalidDocumentFailsWithDiagnostic) {
  const fs::path bad = write("broken.esm", "[1, 2,");
  const Result r = run({"inspect", bad.string()});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("error[json_parse_error]"), std::string::npos) << r.err;
}

}  // namespace
