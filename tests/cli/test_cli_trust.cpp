// Hostile use of `esi simulate` and `esi check`, end to end through the built binary: each case
// asserts the exit status and the error code or the key words of the message.
#include <unistd.h>

#include <cstdlib>
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

using esi::testing::CliResult;
using esi::testing::TempDir;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// Runs esi with stderr captured in `dir`.
CliResult run(const TempDir& dir, const std::vector<std::string>& args) {
  return esi::testing::run_esi(ESI_BINARY, args, dir.path() / "stderr.txt");
}

std::string model(const std::string& variables, const std::string& equations,
                  const std::string& extra = "") {
  return R"({"esm": "1.0.0", "metadata": {"name": "t"}, "models": {"M": {"variables": )" +
         variables + R"(, "equations": )" + equations + (extra.empty() ? "" : ", " + extra) + "}}}";
}

// dx/dt = 1 / (x - 1) from x(0) = 1: the derivative is +inf at the start.
const std::string kSingularAtStart = model(
    R"({"x": {"type": "unknown", "default": 1.0}})",
    R"([{"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": {"op": "/", "args": [1, {"op": "-", "args": ["x", 1]}]}}])");

// dx/dt = -k x, x(0) = 1.
const std::string kDecay = model(
    R"({"x": {"type": "unknown", "default": 1.0}, "k": {"type": "parameter", "default": 1.0}})",
    R"([{"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": {"op": "*", "args": [{"op": "-", "args": ["k"]}, "x"]}}])");

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// ---- simulate: options ----

TEST(CliTrust, SimulateRefusesNonFiniteAndOutOfRangeOptionsAsUsageErrors) {
  TempDir dir;
  const std::string file = dir.write("m.esm", kDecay).string(),
                    out = (dir.path() / "o.csv").string();
  struct Case {
    std::vector<std::string> options;
    std::string words;  // expected in the message
  };
  const std::vector<Case> cases{
      {{"--tspan", "0", "1", "--rtol", "inf"}, "--rtol: 'inf' is not a finite number"},
      {{"--tspan", "0", "1", "--atol", "nan"}, "--atol: 'nan' is not a finite number"},
      {{"--tspan", "0", "inf"}, "--tspan: 'inf' is not a finite number"},
      {{"--tspan", "0", "1", "--saveat", "nan"}, "--saveat: 'nan' is not a finite number"},
      {{"--tspan", "0", "1", "--set", "k=inf"}, "--set k: 'inf' is not a finite number"},
      {{"--tspan", "0", "1", "--dt", "-0.1"}, "--dt must be positive"},
      {{"--tspan", "0", "1", "--dt", "0"}, "--dt must be positive"},
      {{"--tspan", "0", "1", "--saveat", "0"}, "--saveat must be positive"},
      {{"--tspan", "0", "1", "--saveat", "-1"}, "--saveat must be positive"},
      {{"--tspan", "0", "1", "--component", ""}, "--component needs a component name"},
      {{"--tspan", "2", "1"}, "T1 must not be before T0"},
      {{"--tspan", "0", "1", "--rtol", "-1"}, "must not be negative"},
      {{"--tspan", "0", "1", "--rtol", "0", "--atol", "0"}, "cannot both be 0"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args{"simulate", file, "--output", out};
    args.insert(args.end(), c.options.begin(), c.options.end());
    const CliResult r = run(dir, args);
    EXPECT_EQ(r.status, 2) << c.words;
    EXPECT_TRUE(contains(r.err, c.words)) << r.err;
    EXPECT_FALSE(std::filesystem::exists(out)) << c.words;  // refused before anything is written
  }
}

TEST(CliTrust, SimulateRefusesASaveatGridOverTheRowLimitBeforeRunning) {
  TempDir dir;
  const std::string file = dir.write("m.esm", kDecay).string(),
                    out = (dir.path() / "o.csv").string();
  const CliResult r =
      run(dir, {"simulate", file, "--tspan", "0", "1", "--saveat", "1e-9", "--output", out});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "1000000001 rows")) << r.err;
  EXPECT_TRUE(contains(r.err, "the limit is 10000000")) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out));
  // The limit is stated in the help; a grid just under it is accepted (not run here).
  EXPECT_TRUE(contains(run(dir, {"help", "simulate"}).out, "at most 10000000 rows"));
}

// ---- simulate: writes ----

TEST(CliTrust, SimulateReportsAFullDeviceAsAFailedWrite) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  TempDir dir;
  const std::string file = dir.write("m.esm", kDecay).string();
  const CliResult r =
      run(dir, {"simulate", file, "--tspan", "0", "1", "--saveat", "0.1", "--output", "/dev/full"});
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(contains(r.err, "output_write_failed")) << r.err;
  EXPECT_TRUE(contains(r.err, "No space left")) << r.err;
  // stdout of any command is checked too.
  const CliResult inspect = esi::testing::run_esi(
      "/bin/sh", {"-c", std::string("'") + ESI_BINARY + "' inspect '" + file + "' >/dev/full"},
      dir.path() / "stderr.txt");
  EXPECT_EQ(inspect.status, 1);
  EXPECT_TRUE(contains(inspect.err, "output_write_failed")) << inspect.err;
}

// The output is opened before the solve: a model whose solve would fail reports the unwritable
// path, not the solve.
TEST(CliTrust, SimulateChecksTheOutputPathBeforeTheSolve) {
  TempDir dir;
  const std::string singular = dir.write("s.esm", kSingularAtStart).string();
  const CliResult r = run(dir, {"simulate", singular, "--tspan", "0", "1", "--output",
                                (dir.path() / "no_such_folder" / "o.csv").string()});
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(contains(r.err, "output_not_writable")) << r.err;
  EXPECT_FALSE(contains(r.err, "NonFinite")) << r.err;
}

TEST(CliTrust, SimulateQuotesCsvNamesPerRfc4180) {
  TempDir dir;
  const std::string file =
      dir.write("m.esm",
                model(R"({"a,\"b": {"type": "unknown", "default": 1.0}})",
                      R"([{"lhs": {"op": "D", "args": ["a,\"b"], "wrt": "t"}, "rhs": 0}])"))
          .string();
  const auto out = dir.path() / "o.csv";
  const CliResult r = run(dir, {"simulate", file, "--tspan", "0", "1", "--output", out.string()});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto lines = lines_of(esi::testing::read_all(out));
  // The header, then without --saveat 101 rows: T0, every hundredth of the span, T1.
  ASSERT_EQ(lines.size(), 102u);
  EXPECT_EQ(lines[0], "t,\"M.a,\"\"b\"");
  EXPECT_EQ(lines[1], "0,1");
  EXPECT_EQ(lines[2], "0.01,1");
  EXPECT_EQ(lines[101], "1,1");
}

// ---- simulate: values that are not finite ----

TEST(CliTrust, SimulateStopsOnAnInfiniteDerivativeNamingItAndTheTime) {
  TempDir dir;
  const std::string file = dir.write("m.esm", kSingularAtStart).string();
  const CliResult r = run(
      dir, {"simulate", file, "--tspan", "0", "1", "--output", (dir.path() / "o.csv").string()});
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(contains(r.err, "NonFinite at t = 0")) << r.err;
  EXPECT_TRUE(contains(r.err, "derivative of M.x is +inf")) << r.err;
}

// y = log(2.2 - x) with x = t: finite up to t = 2, NaN at t = 2.5; the rows before are kept.
TEST(CliTrust, SimulateStopsOnANonFiniteObservedKeepingEarlierRows) {
  TempDir dir;
  const std::string file =
      dir.write("m.esm",
                model(R"({"x": {"type": "unknown", "default": 0.0}, "y": {"type": "unknown"}})",
                      R"([{"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": 1},
          {"lhs": "y", "rhs": {"op": "log", "args": [{"op": "-", "args": [2.2, "x"]}]}}])"))
          .string();
  const auto out = dir.path() / "o.csv";
  const CliResult r = run(dir, {"simulate", file, "--tspan", "0", "3", "--saveat", "0.5",
                                "--method", "RK4", "--dt", "0.25", "--output", out.string()});
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(contains(r.err, "NonFinite at t = 2.5")) << r.err;
  EXPECT_TRUE(contains(r.err, "observed M.y is NaN")) << r.err;
  EXPECT_TRUE(contains(r.err, "last output at t = 2)")) << r.err;
  const auto lines = lines_of(esi::testing::read_all(out));
  ASSERT_EQ(lines.size(), 6u);  // header and t = 0, 0.5, 1, 1.5, 2
  EXPECT_EQ(lines[5].rfind("2,", 0), 0u) << lines[5];
  for (const std::string& l : lines) EXPECT_FALSE(contains(l, "nan")) << l;
}

TEST(CliTrust, SimulateObservedNaNAtTheStart) {
  TempDir dir;
  const std::string file =
      dir.write("m.esm",
                model(R"({"x": {"type": "unknown", "default": 1.0}, "y": {"type": "unknown"}})",
                      R"([{"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": 1},
          {"lhs": "y", "rhs": {"op": "log", "args": [{"op": "-", "args": ["x", 2]}]}}])"))
          .string();
  const CliResult r = run(
      dir, {"simulate", file, "--tspan", "0", "2", "--output", (dir.path() / "o.csv").string()});
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(contains(r.err, "NonFinite at t = 0: observed M.y is NaN")) << r.err;
}

// ---- simulate: --native fallback ----

TEST(CliTrust, SimulateNativeSaysWhenItFallsBackToTheTape) {
  TempDir dir;
  const std::string file = dir.write("m.esm", kDecay).string();
  ::setenv("CXX", "/nonexistent/c++", 1);
  ::setenv("ESI_CACHE_DIR", (dir.path() / "cache").c_str(), 1);  // no cached object to hit
  const CliResult r = run(dir, {"simulate", file, "--tspan", "0", "1", "--native", "--output",
                                (dir.path() / "o.csv").string()});
  ::unsetenv("CXX");
  ::unsetenv("ESI_CACHE_DIR");
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(contains(r.err, "--native was requested, but the run used the interpreter")) << r.err;
  EXPECT_TRUE(contains(r.err, "/nonexistent/c++")) << r.err;
}

// ---- simulate: --set names ----

TEST(CliTrust, SetOfAnUnknownNameSuggestsNearNames) {
  TempDir dir;
  const std::string file = dir.write("m.esm", kDecay).string(),
                    out = (dir.path() / "o.csv").string();
  CliResult r = run(dir, {"simulate", file, "--tspan", "0", "1", "--set", "kk=2", "--output", out});
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(contains(r.err, "unknown_override")) << r.err;
  EXPECT_TRUE(contains(r.err, "did you mean 'M.k'")) << r.err;
  r = run(dir, {"simulate", file, "--tspan", "0", "1", "--set", "M.kx=2", "--output", out});
  EXPECT_TRUE(contains(r.err, "did you mean 'M.k'")) << r.err;
  // The command line is wrong, not the document: no "m.esm:/" location.
  EXPECT_TRUE(r.err.starts_with("esi simulate: error[unknown_override]: --set M.kx: ")) << r.err;
  EXPECT_FALSE(contains(r.err, "m.esm:")) << r.err;
  r = run(dir, {"simulate", file, "--tspan", "0", "1", "--set", "zzzzzz=2", "--output", out});
  EXPECT_EQ(r.status, 1);
  EXPECT_FALSE(contains(r.err, "did you mean")) << r.err;
}

// Typing slips get the message for what was typed.
TEST(CliTrust, CommandLineSlipsAreNamedForWhatWasTyped) {
  TempDir dir;
  const std::string file = dir.write("m.esm", kDecay).string(),
                    out = (dir.path() / "o.csv").string();
  // One number for --tspan, then the next option: not "'--output' is not a finite number".
  CliResult r = run(dir, {"simulate", file, "--tspan", "3600", "--output", out});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "--tspan needs two numbers T0 T1, got only '3600'")) << r.err;
  EXPECT_FALSE(contains(r.err, "finite")) << r.err;
  // A method name in the wrong case: the name meant, not the whole list.
  for (const std::string command : {"simulate", "check"}) {
    r = command == "simulate" ? run(dir, {"simulate", file, "--tspan", "0", "1", "--method", "rodas5p", "--output", out})
                              : run(dir, {"check", "--method", "rodas5p", file});
    EXPECT_EQ(r.status, 2) << command;
    EXPECT_TRUE(contains(r.err, "unknown method 'rodas5p'; did you mean 'Rodas5P'?")) << command << ": " << r.err;
    EXPECT_FALSE(contains(r.err, "known:")) << command << ": " << r.err;
  }
  // Nothing close: the list.
  r = run(dir, {"simulate", file, "--tspan", "0", "1", "--method", "leapfrog", "--output", out});
  EXPECT_TRUE(contains(r.err, "known: Euler")) << r.err;
  // A state without an initial value: --set gives one for the run.
  const std::string no_initial = dir.write("n.esm", model(
      R"({"x": {"type": "unknown"}, "k": {"type": "parameter", "default": 1.0}})",
      R"([{"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": {"op": "*", "args": [{"op": "-", "args": ["k"]}, "x"]}}])")).string();
  r = run(dir, {"simulate", no_initial, "--tspan", "0", "1", "--output", out});
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(contains(r.err, "error[missing_initial_value]")) << r.err;
  EXPECT_TRUE(contains(r.err, "--set")) << r.err;
  r = run(dir, {"simulate", no_initial, "--tspan", "0", "1", "--set", "x=2", "--output", out});
  EXPECT_EQ(r.status, 0) << r.err;
}

// A state the equations drive below zero (a loss that does not vanish with the state) is not
// a tolerance problem, and the warning says so; a numerical undershoot still gets the advice.
TEST(CliTrust, NegativeStatesAreBlamedOnWhatDroveThemThere) {
  TempDir dir;
  const std::string sink = dir.write("sink.esm", model(
      R"({"x": {"type": "unknown", "default": 1.0, "units": "mol/m^3"}, "k": {"type": "parameter", "default": 1.0}})",
      R"([{"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": {"op": "-", "args": ["k"]}}])")).string();
  const std::string out = (dir.path() / "o.csv").string();
  CliResult r = run(dir, {"simulate", sink, "--tspan", "0", "2", "--output", out, "--quiet"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "M.x went negative")) << r.err;
  EXPECT_TRUE(contains(r.err, "driven there by the equations: at that time its rate with M.x = 0 is still -1 [mol/m^3/s]"))
      << r.err;
  EXPECT_FALSE(contains(r.err, "tighten")) << r.err;
  // x' = -10 x by Euler at h = 0.5: x(1 - 5) each step, negative by the method alone.
  const std::string decay = dir.write("decay.esm", model(
      R"({"x": {"type": "unknown", "default": 1.0}, "k": {"type": "parameter", "default": 10.0}})",
      R"([{"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": {"op": "*", "args": [{"op": "-", "args": ["k"]}, "x"]}}])")).string();
  r = run(dir, {"simulate", decay, "--tspan", "0", "2", "--method", "Euler", "--dt", "0.5", "--output", out, "--quiet"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "M.x went negative")) << r.err;
  EXPECT_TRUE(contains(r.err, "tighten --rtol / --atol")) << r.err;
  EXPECT_FALSE(contains(r.err, "driven there")) << r.err;
}

// A Linux file name is bytes: one that is not UTF-8 is still a valid output path, and the
// JSON written beside it (the sidecar, the gradient) stays valid JSON (U+FFFD for the bytes).
TEST(CliTrust, OutputPathsThatAreNotUtf8AreWritten) {
  TempDir dir;
  const std::string file = dir.write("m.esm", kDecay).string();
  const std::string out = (dir.path() / "o\x90ut.csv").string(), gradient = (dir.path() / "g\x90.json").string();
  CliResult r = run(dir, {"simulate", file, "--tspan", "0", "1", "--output", out});
  EXPECT_EQ(r.status, 0) << r.err;
  std::ifstream sidecar(out + ".json");
  ASSERT_TRUE(sidecar.good());
  const nlohmann::json j = nlohmann::json::parse(sidecar);
  EXPECT_NE(j.at("csv").get<std::string>().find("o\xef\xbf\xbdut.csv"), std::string::npos);
  r = run(dir, {"simulate", file, "--tspan", "0", "1", "--loss", "M.x", "--gradient", gradient});
  EXPECT_EQ(r.status, 0) << r.err;
  std::ifstream g(gradient);
  ASSERT_TRUE(g.good());
  EXPECT_TRUE(nlohmann::json::parse(g).contains("gradient"));
}

TEST(CliTrust, SetOfAParameterReplacedByAVariableMapSaysSo) {
  TempDir dir;
  const std::string file =
      dir.write("m.esm", R"({"esm": "1.0.0", "metadata": {"name": "t"}, "models": {
    "A": {"variables": {"x": {"type": "unknown", "default": 1.0}},
          "equations": [{"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": 1}]},
    "B": {"variables": {"p": {"type": "parameter", "default": 2.0}, "y": {"type": "unknown", "default": 0.0}},
          "equations": [{"lhs": {"op": "D", "args": ["y"], "wrt": "t"}, "rhs": "p"}]}},
    "coupling": [{"type": "variable_map", "from": "A.x", "to": "B.p", "transform": "param_to_var"}]})")
          .string();
  for (const std::string name : {"p", "B.p"}) {
    const CliResult r = run(dir, {"simulate", file, "--tspan", "0", "1", "--set", name + "=3",
                                  "--output", (dir.path() / "o.csv").string()});
    EXPECT_EQ(r.status, 1);
    EXPECT_TRUE(contains(r.err, "variable_map from A.x")) << r.err;
    EXPECT_TRUE(contains(r.err, "/coupling/0")) << r.err;
  }
}

// ---- check ----

TEST(CliTrust, CheckSurvivesSymlinkLoopsAndOddNamesAndRunsTheRest) {
  TempDir dir;
  const std::string good = model(
      R"({"x": {"type": "unknown", "default": 1.0}})",
      R"([{"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": 1}])",
      R"("tests": [{"id": "t", "time_span": {"start": 0, "end": 1}, "assertions": [{"variable": "x", "time": 1, "expected": 2}]}])");
  dir.write("docs/good.esm", good);
  dir.write(std::string("docs/odd\xff\xfe.esm"), good);  // not UTF-8
  std::filesystem::create_symlink("loop_b.esm", dir.path() / "docs" / "loop_a.esm");
  std::filesystem::create_symlink("loop_a.esm", dir.path() / "docs" / "loop_b.esm");
  std::filesystem::create_directory_symlink("..", dir.path() / "docs" / "up");  // a directory loop
  const std::string docs = (dir.path() / "docs").string();
  CliResult r = run(dir, {"check", docs});
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(contains(r.out, "loop_a.esm: error[unreadable_file]")) << r.out;
  EXPECT_TRUE(contains(r.out, "2 assertions, 2 passed")) << r.out;  // both real documents ran
  r = run(dir, {"check", "--json", docs});
  EXPECT_EQ(r.status, 1);
  const auto j = nlohmann::json::parse(r.out);  // valid JSON despite the odd name
  EXPECT_EQ(j["summary"]["passed"], 2);
  EXPECT_EQ(j["summary"]["errors"], 2);
}

TEST(CliTrust, CheckReportsMissingPathsAndEmptyFoldersPerEntry) {
  TempDir dir;
  std::filesystem::create_directories(dir.path() / "empty");
  const auto good = dir.write(
      "g.esm",
      model(
          R"({"x": {"type": "unknown", "default": 1.0}})",
          R"([{"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": 1}])",
          R"("tests": [{"id": "t", "time_span": {"start": 0, "end": 1}, "assertions": [{"variable": "x", "time": 1, "expected": 2}]}])"));
  CliResult r = run(dir, {"check", (dir.path() / "empty").string()});
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(contains(r.out, "error[no_esm_documents]")) << r.out;
  r = run(dir, {"check", (dir.path() / "missing.esm").string(), good.string()});
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(contains(r.out, "error[file_not_found]")) << r.out;
  EXPECT_TRUE(contains(r.out, "1 assertions, 1 passed")) << r.out;  // the good file still ran
}

TEST(CliTrust, CheckReportsAnUnreadableFolderAndGoesOn) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads every folder";
  TempDir dir;
  dir.write("docs/locked/a.esm", "{}");
  dir.write("docs/b.esm", "{}");
  std::filesystem::permissions(dir.path() / "docs" / "locked", std::filesystem::perms::none);
  const CliResult r = run(dir, {"check", (dir.path() / "docs").string()});
  std::filesystem::permissions(dir.path() / "docs" / "locked", std::filesystem::perms::owner_all);
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(contains(r.out, "error[unreadable_folder]")) << r.out;
  EXPECT_TRUE(contains(r.out, "2 files")) << r.out;
}

TEST(CliTrust, CheckCountsATestWithoutAssertionsAsAnError) {
  ESI_SKIP_WITHOUT_ESM_SCHEMA();
  TempDir dir;
  const auto file = dir.write(
      "m.esm",
      model(R"({"x": {"type": "unknown", "default": 1.0}})",
            R"([{"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": 1}])",
            R"("tests": [{"id": "empty", "time_span": {"start": 0, "end": 1}, "assertions": []},
                   {"id": "absent", "time_span": {"start": 0, "end": 1}},
                   {"id": "not_an_object_time", "time_span": {"start": 0, "end": 1},
                    "assertions": [{"variable": "x", "time": "1", "expected": 2}]},
                   7])"));
  // Malformed tests make the document invalid, so check refuses it whole with validate's
  // first finding and counts its one authored assertion as not run (structural twin of this
  // case without the schema layer: StructuralTrust tests in tests/esm/test_structural_trust.cpp).
  const CliResult r = run(dir, {"check", "--json", file.string()});
  EXPECT_EQ(r.status, 1);
  const auto j = nlohmann::json::parse(r.out);
  const auto& f = j["files"][0];
  ASSERT_FALSE(f["error"].is_null()) << r.out;
  EXPECT_EQ(f["error"]["code"], "minItems") << r.out;
  EXPECT_EQ(f["error"]["pointer"], "/models/M/tests/0/assertions") << r.out;
  EXPECT_TRUE(f["tests"].empty());
  EXPECT_EQ(j["summary"]["passed"], 0);
  EXPECT_EQ(j["summary"]["skipped"], 1);
  EXPECT_FALSE(contains(r.out, "json.exception")) << r.out;  // no library text
}

TEST(CliTrust, CheckJobsMustBeASmallPositiveInteger) {
  TempDir dir;
  const auto file = dir.write("m.esm", kDecay).string();
  for (const std::string jobs : {"0", "-1", "abc", "1.5", "100000", ""}) {
    const CliResult r = run(dir, {"check", "--jobs", jobs, file});
    EXPECT_EQ(r.status, 2) << jobs;
    EXPECT_TRUE(contains(r.err, "--jobs needs an integer from 1 to 256")) << r.err;
  }
}

}  // namespace

namespace {

TEST(CliTrust, SimulateRefusesToOverwriteTheModelFile) {
  TempDir dir;
  const std::string file = dir.write("m.esm", kDecay).string();
  const CliResult r = run(dir, {"simulate", file, "--tspan", "0", "1", "--output", file});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "is the model file itself")) << r.err;
  EXPECT_EQ(esi::testing::read_all(file), kDecay);
}

TEST(CliTrust, InspectRefusesAnEmptyComponentName) {
  TempDir dir;
  const std::string file = dir.write("m.esm", kDecay).string();
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"inspect", "--component", "", file},
        std::vector<std::string>{"inspect", "--component=", file}}) {
    const CliResult r = run(dir, args);
    EXPECT_EQ(r.status, 2);
    EXPECT_TRUE(contains(r.err, "needs a component name")) << r.err;
  }
}

}  // namespace

namespace {

// /dev/zero would be read forever; check refuses what is not a plain file, per entry.
TEST(CliTrust, CheckRefusesDevicesInsteadOfReadingThem) {
  if (!std::filesystem::exists("/dev/zero")) GTEST_SKIP() << "no /dev/zero";
  TempDir dir;
  const CliResult r = run(dir, {"check", "/dev/zero"});
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(contains(r.out, "error[not_a_regular_file]")) << r.out;
}

}  // namespace
