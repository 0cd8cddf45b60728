// Ctrl-C during `esi simulate`: the run stops after the step in progress with exit status
// 130, and the CSV holds every row reached as complete lines (a valid file), the last one at
// the time the run was stopped; the sidecar says Interrupted. And the progress line a terminal
// (and only a terminal) sees on a long run.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/run_esi.hpp"
#include "support/temp_dir.hpp"

namespace {

/// `cells` cells decaying at rate k = 1e-3: x = exp(-k t) in every cell.
std::filesystem::path decay_document(const esi::testing::TempDir& dir, int cells) {
  return dir.write("decay.esm", R"({"esm": "1.0.0", "metadata": {"name": "d"},
    "index_sets": {"i": {"kind": "interval", "size": )" + std::to_string(cells) + R"(}},
    "models": {"D": {"variables": {"x": {"type": "unknown", "shape": ["i"], "default": 1.0},
                                   "k": {"type": "parameter", "default": 1e-3}},
                     "equations": [{"lhs": {"op": "D", "args": ["x"], "wrt": "t"},
                                    "rhs": {"op": "*", "args": [{"op": "-", "args": ["k"]}, "x"]}}]}}})");
}

TEST(CliInterrupt, SigintEndsTheRunWithAValidCsvAndStatus130) {
  if (std::system("command -v timeout >/dev/null 2>&1") != 0) GTEST_SKIP() << "no timeout(1)";
  esi::testing::TempDir dir;
  // 5000 decaying cells, Euler at dt = 1e-3 over 10^3 s (10^6 steps of 5000 cells): far longer
  // than the test waits.
  const auto model = decay_document(dir, 5000);
  const auto csv = dir.path() / "out.csv";
  const auto err = dir.path() / "err.txt";
  const auto r = esi::testing::run_esi(
      "timeout", {"--preserve-status", "-s", "INT", "1.5", ESI_BINARY, "simulate", model.string(), "--tspan", "0",
                  "1e3", "--saveat", "1", "--method", "Euler", "--dt", "1e-3", "--output", csv.string()},
      err);
  EXPECT_EQ(r.status, 130) << r.err;
  EXPECT_NE(r.err.find("interrupted"), std::string::npos) << r.err;
  const std::string text = esi::testing::read_all(csv);
  ASSERT_FALSE(text.empty());
  ASSERT_EQ(text.back(), '\n');  // no half-written line
  std::istringstream lines(text);
  std::string line;
  std::getline(lines, line);
  EXPECT_EQ(line.substr(0, 9), "t,D.x[1],");
  double last_t = -1, rows = 0;
  while (std::getline(lines, line)) {
    const auto comma = line.find(',');
    ASSERT_NE(comma, std::string::npos) << line;
    const double t = std::stod(line.substr(0, comma));
    const double x = std::stod(line.substr(comma + 1, line.find(',', comma + 1) - comma - 1));
    EXPECT_GT(t, last_t);
    EXPECT_NEAR(x, std::exp(-1e-3 * t), 1e-6);  // Euler's error at this step is far below
    EXPECT_EQ(std::count(line.begin(), line.end(), ','), 5000) << "a complete row";
    last_t = t;
    ++rows;
  }
  EXPECT_GT(rows, 2);
  EXPECT_LT(last_t, 1e3);
  const auto sidecar = nlohmann::json::parse(esi::testing::read_all(dir.path() / "out.csv.json"));
  EXPECT_NE(sidecar.dump().find("Interrupted"), std::string::npos);
}

/// The data lines of a CSV file (after the header); fails on a line that does not end.
std::vector<std::string> data_lines(const std::filesystem::path& csv) {
  const std::string text = esi::testing::read_all(csv);
  std::vector<std::string> out;
  if (text.empty()) return out;
  EXPECT_EQ(text.back(), '\n') << "half a line at the end of " << csv;
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

TEST(CliInterrupt, KilledOrInterruptedRunsLeaveThePrefixOfTheFullRun) {
  if (std::system("command -v timeout >/dev/null 2>&1") != 0) GTEST_SKIP() << "no timeout(1)";
  esi::testing::TempDir dir;
  const auto model = decay_document(dir, 5000);
  auto args = [&](const std::filesystem::path& out, const std::string& t1) {
    return std::vector<std::string>{"simulate", model.string(), "--tspan", "0", t1, "--saveat", "1",
                                    "--method", "Euler", "--dt", "1e-3", "--output", out.string(), "-q"};
  };
  // The uninterrupted run (about 10 s here); the cut runs stop after 1.5 s, well before it ends.
  const auto full = dir.path() / "full.csv";
  ASSERT_EQ(esi::testing::run_esi(ESI_BINARY, args(full, "200")).status, 0);
  const std::vector<std::string> reference = data_lines(full);
  ASSERT_EQ(reference.size(), 201u);
  for (const char* signal : {"INT", "KILL"}) {
    const auto cut = dir.path() / (std::string("cut_") + signal + ".csv");
    std::vector<std::string> a = {"--preserve-status", "-s", signal, "1.5", ESI_BINARY};
    for (const auto& x : args(cut, "200")) a.push_back(x);
    const auto r = esi::testing::run_esi("timeout", a);
    EXPECT_EQ(r.status, std::string(signal) == "INT" ? 130 : 137) << signal;
    std::vector<std::string> rows = data_lines(cut);
    if (std::string(signal) == "INT" && !rows.empty()) rows.pop_back();  // the state at the stop
    ASSERT_GT(rows.size(), 2u) << signal;
    ASSERT_LT(rows.size(), reference.size()) << signal << ": the run was not cut";
    for (std::size_t k = 0; k < rows.size(); ++k) ASSERT_EQ(rows[k], reference[k]) << signal << " row " << k;
  }
}

TEST(CliProgress, ATerminalSeesAProgressLineOnLongRunsAndAFileDoesNot) {
  if (std::system("command -v script >/dev/null 2>&1") != 0) GTEST_SKIP() << "no script(1) for a pseudo-terminal";
  esi::testing::TempDir dir;
  const auto model = decay_document(dir, 2000);
  const auto csv = dir.path() / "out.csv";
  // A run of a few seconds: Euler over 3e5 steps of 2000 cells.
  const std::string run = esi::testing::shell_quote(ESI_BINARY) + " simulate " +
                          esi::testing::shell_quote(model.string()) +
                          " --tspan 0 300 --saveat 10 --method Euler --dt 1e-3 --output " +
                          esi::testing::shell_quote(csv.string());
  const auto tty = dir.path() / "tty.txt";
  ASSERT_EQ(std::system(("script -qefc " + esi::testing::shell_quote(run) + " " +
                         esi::testing::shell_quote(tty.string()) + " >/dev/null 2>&1").c_str()),
            0);
  const std::string seen = esi::testing::read_all(tty);
  const auto at = seen.find("\resi simulate: t = ");
  ASSERT_NE(at, std::string::npos) << seen;
  EXPECT_NE(seen.find("of 300 ("), std::string::npos);
  // Without a terminal (stderr to a file) no progress line.
  const auto err = dir.path() / "err.txt";
  const auto r = esi::testing::run_esi(ESI_BINARY, {"simulate", model.string(), "--tspan", "0", "300", "--saveat", "10",
                                                    "--method", "Euler", "--dt", "1e-3", "--output", csv.string()},
                                       err);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err.find("\r"), std::string::npos);
}

}  // namespace
