// `esi analyze`: a document's inline analyses (spec §6.7) run as a sweep, written as CSV per
// run, plotted with PLplot in forked processes, listed in index.html; hostile analyses located.
#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/cli_dir_test.hpp"
#include "support/run_esi.hpp"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Result = esi::testing::CliResult;

class Analyze : public esi::testing::CliDirTest {
 protected:
  void TearDown() override {
    CliDirTest::TearDown();
    ::unsetenv("PLPLOT_DRV_DIR");
  }
};

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(line);
  return lines;
}

std::vector<std::string> fields_of(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string f; std::getline(in, f, ',');) out.push_back(f);
  return out;
}

/// dx/dt = -k x, x(0) = 2: x(T) = 2 exp(-k T). The analysis sweeps k over 3 values to T = 2.
std::string decay_document(const std::string& analysis) {
  return R"({
  "esm": "0.1.0",
  "metadata": {"name": "Decay"},
  "models": {
    "Box": {
      "variables": {
        "x": {"type": "unknown", "units": "mol/mol", "default": 1.0},
        "k": {"type": "parameter", "units": "1/s", "default": 0.1}
      },
      "equations": [
        {"lhs": {"op": "D", "args": ["x"], "wrt": "t"},
         "rhs": {"op": "*", "args": [{"op": "-", "args": ["k"]}, "x"]}}
      ],
      "analyses": [)" + analysis + R"(]
    }
  }
})";
}

const char* kSweep = R"json({
  "id": "decay_sweep",
  "description": "Exponential decay for three rates.",
  "initial_state": {"x": 2.0},
  "time_span": {"start": 0, "end": 2},
  "parameter_sweep": {"type": "cartesian",
    "dimensions": [{"parameter": "k", "values": [0.5, 1.0, 2.0]}]},
  "plots": [
    {"id": "x_vs_t", "type": "line", "description": "x over time",
     "x": {"variable": "t", "label": "time (s)"}, "y": {"variable": "x", "label": "x (mol/mol)"}},
    {"id": "final_x", "type": "scatter", "x": {"variable": "k"}, "y": {"variable": "x"}}
  ]
})json";

TEST_F(Analyze, SweepWritesOneCsvPerRunWithTheExactDecay) {
  const std::string doc = write("decay.esm", decay_document(kSweep));
  const fs::path out = dir_ / "out";
  const Result r = run({"analyze", doc, "--out", out.string(), "-q"});
  ASSERT_EQ(r.status, 0) << r.err;
  const double ks[] = {0.5, 1.0, 2.0};
  for (int i = 0; i < 3; ++i) {
    const fs::path csv = out / "decay_sweep" / ("run_000" + std::to_string(i + 1) + ".csv");
    ASSERT_TRUE(fs::exists(csv)) << csv;
    const auto lines = lines_of(esi::testing::read_all(csv));
    ASSERT_EQ(lines.size(), 102u);  // header and 101 output times
    EXPECT_EQ(lines[0], "t,Box.x");
    EXPECT_EQ(lines[1], "0,2");      // initial_state overrides the default 1
    const auto last = fields_of(lines.back());
    ASSERT_EQ(last.size(), 2u);
    EXPECT_EQ(last[0], "2");
    EXPECT_NEAR(std::stod(last[1]), 2.0 * std::exp(-ks[i] * 2.0), 1e-6) << "k = " << ks[i];
  }
  const auto runs = lines_of(esi::testing::read_all(out / "decay_sweep" / "runs.csv"));
  ASSERT_EQ(runs.size(), 4u);
  EXPECT_EQ(runs[0], "run,k,file,rows,status");
  EXPECT_EQ(runs[1], "1,0.5,run_0001.csv,101,ok");
  EXPECT_EQ(runs[3], "3,2,run_0003.csv,101,ok");
  // The scatter against the swept k holds each run's final x.
  const json plots = json::parse(esi::testing::read_all(out / "decay_sweep" / "plots.json"));
  ASSERT_EQ(plots["plots"].size(), 2u);
  const json& scatter = plots["plots"][1];
  ASSERT_EQ(scatter["lines"].size(), 1u);
  EXPECT_EQ(scatter["lines"][0]["x"], json({0.5, 1.0, 2.0}));
  EXPECT_NEAR(scatter["lines"][0]["y"][2].get<double>(), 2.0 * std::exp(-4.0), 1e-6);
  EXPECT_EQ(scatter["xlabel"], "k [1/s]");  // no label: the name and its units
  const json& line = plots["plots"][0];
  EXPECT_EQ(line["lines"].size(), 3u);
  EXPECT_EQ(line["lines"][1]["label"], "k=1");
  EXPECT_EQ(line["ylabel"], "x (mol/mol)");
  EXPECT_TRUE(fs::exists(out / "index.html"));
  EXPECT_NE(esi::testing::read_all(out / "index.html").find("Exponential decay for three rates."), std::string::npos);
}

// A sweep over a time-like parameter of a run centuries long, one member of which blows up:
// time is plotted in years and the swept values in the legend too (not 10^9 s), and the member
// that stopped says where and why in its legend and carries `ended_early` (the plot marks its
// last point) instead of a line that just ends.
TEST_F(Analyze, LongRunsReadInYearsAndAStoppedMemberIsMarked) {
  const std::string doc = write("blowup.esm", R"({
  "esm": "0.1.0",
  "metadata": {"name": "Blowup"},
  "models": {
    "Box": {
      "variables": {
        "x": {"type": "unknown", "units": "1", "default": 1.0},
        "tau": {"type": "parameter", "units": "s", "default": 1e9}
      },
      "equations": [
        {"lhs": {"op": "D", "args": ["x"], "wrt": "t"},
         "rhs": {"op": "/", "args": [{"op": "*", "args": ["x", "x"]}, "tau"]}}
      ],
      "analyses": [{
        "id": "centuries",
        "time_span": {"start": 0, "end": 6.31152e9},
        "parameter_sweep": {"type": "cartesian",
          "dimensions": [{"parameter": "tau", "values": [-1e9, 1e9]}]},
        "plots": [{"id": "x_vs_t", "type": "line", "x": {"variable": "t"}, "y": {"variable": "x"}}]
      }]
    }
  }
})");
  const fs::path out = dir_ / "out";
  const Result r = run({"analyze", doc, "--out", out.string(), "-q"});
  EXPECT_EQ(r.status, 0) << r.err;
  const json plots = json::parse(esi::testing::read_all(out / "centuries" / "plots.json"));
  const json* plot = nullptr;
  for (const json& p : plots["plots"].is_array() ? plots["plots"] : plots)
    if (p.value("id", "") == "x_vs_t") plot = &p;
  ASSERT_NE(plot, nullptr) << plots.dump();
  EXPECT_EQ((*plot)["xlabel"], "t [yr]");
  const json& lines = (*plot)["lines"];
  ASSERT_EQ(lines.size(), 2u);
  // x = 1 / (1 + t / 1e9 s): decays over the 200 years (200 yr = 6.31152e9 s).
  EXPECT_EQ(lines[0]["label"], "tau=-31.69 yr");
  EXPECT_NEAR(lines[0]["x"].back().get<double>(), 200.0, 1e-9);
  EXPECT_FALSE(lines[0].contains("ended_early"));
  // x = 1 / (1 - t / 1e9 s) blows up at 31.69 years: stopped there, and says so.
  const std::string label = lines[1]["label"];
  EXPECT_EQ(label.rfind("tau=31.69 yr [stopped at t = ", 0), 0u) << label;
  EXPECT_NE(label.find(" yr: "), std::string::npos) << label;
  ASSERT_TRUE(lines[1].contains("ended_early"));
  const double stopped = lines[1]["x"].back().get<double>();
  EXPECT_GT(stopped, 20.0);
  EXPECT_LE(stopped, 31.69);
}

TEST_F(Analyze, JobsDoNotChangeTheOutput) {
  const std::string doc = write("decay.esm", decay_document(kSweep));
  ASSERT_EQ(run({"analyze", doc, "--out", (dir_ / "j1").string(), "--jobs", "1", "-q"}).status, 0);
  ASSERT_EQ(run({"analyze", doc, "--out", (dir_ / "j2").string(), "--jobs", "2", "-q"}).status, 0);
  for (const char* f : {"run_0001.csv", "run_0002.csv", "run_0003.csv", "runs.csv", "x_vs_t.png", "x_vs_t.svg",
                        "final_x.png", "final_x.svg"})
    EXPECT_EQ(esi::testing::read_all(dir_ / "j1" / "decay_sweep" / f),
              esi::testing::read_all(dir_ / "j2" / "decay_sweep" / f))
        << f;
}

TEST_F(Analyze, PlotsAreDrawn) {
  const std::string doc = write("decay.esm", decay_document(kSweep));
  const fs::path out = dir_ / "out";
  const Result r = run({"analyze", doc, "--out", out.string(), "-q"});
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* f : {"x_vs_t.png", "x_vs_t.svg", "final_x.png", "final_x.svg"}) {
    const fs::path p = out / "decay_sweep" / f;
    ASSERT_TRUE(fs::exists(p)) << p;
    EXPECT_GT(fs::file_size(p), 1000u) << p;
  }
  EXPECT_EQ(esi::testing::read_all(out / "decay_sweep" / "x_vs_t.png").substr(1, 3), "PNG");
  EXPECT_NE(esi::testing::read_all(out / "index.html").find("decay_sweep/x_vs_t.png"), std::string::npos);
  // The axis label with its units, as text in the SVG (the svg device writes characters as
  // numeric references).
  std::string label;
  for (char c : std::string("k [1/s]")) {
    char ref[16];
    std::snprintf(ref, sizeof ref, "&#x%x;", static_cast<unsigned char>(c));
    label += ref;
  }
  EXPECT_NE(esi::testing::read_all(out / "decay_sweep" / "final_x.svg").find(label), std::string::npos);
}

// A second run over unchanged data needs no drawing at all: with no PLplot device to draw
// with, it still says nothing was skipped, keeps both images of each plot and lists them in
// index.html. A plot whose image is gone, or whose data changed, is drawn again (and with no
// device reported skipped).
TEST_F(Analyze, UnchangedDataIsNotDrawnAgain) {
  const std::string doc = write("decay.esm", decay_document(kSweep));
  const fs::path out = dir_ / "out";
  const fs::path folder = out / "decay_sweep";
  ASSERT_EQ(run({"analyze", doc, "--out", out.string(), "-q"}).status, 0);
  const std::string png = esi::testing::read_all(folder / "x_vs_t.png");
  const std::string svg = esi::testing::read_all(folder / "final_x.svg");
  const json first = json::parse(esi::testing::read_all(folder / "plots.json"));
  const std::string hash = first["plots"][0]["hash"].get<std::string>();
  EXPECT_EQ(hash.size(), 16u);
  EXPECT_EQ(esi::testing::read_all(folder / "x_vs_t.hash"), hash + "\n");
  EXPECT_FALSE(first["plots"][0].contains("unchanged"));

  ::setenv("PLPLOT_DRV_DIR", (dir_ / "no_drivers").c_str(), 1);  // anything to draw would be skipped
  const Result again = run({"analyze", doc, "--out", out.string()});
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_EQ(again.err.find("skipped"), std::string::npos) << again.err;
  EXPECT_NE(again.err.find("2 plots (2 unchanged)"), std::string::npos) << again.err;
  EXPECT_EQ(esi::testing::read_all(folder / "x_vs_t.png"), png);
  EXPECT_EQ(esi::testing::read_all(folder / "final_x.svg"), svg);
  const json second = json::parse(esi::testing::read_all(folder / "plots.json"));
  EXPECT_EQ(second["plots"][0]["hash"], hash);
  EXPECT_EQ(second["plots"][0]["unchanged"], true);
  const std::string index = esi::testing::read_all(out / "index.html");
  EXPECT_NE(index.find("decay_sweep/x_vs_t.png"), std::string::npos);
  EXPECT_NE(index.find("decay_sweep/final_x.svg"), std::string::npos);

  fs::remove(folder / "final_x.svg");  // one image gone: that plot needs drawing
  const Result missing = run({"analyze", doc, "--out", out.string()});
  EXPECT_NE(missing.err.find("plots skipped"), std::string::npos) << missing.err;
  EXPECT_NE(missing.err.find("2 plots (1 unchanged)"), std::string::npos) << missing.err;

  // Other data (k's values) gives another hash, whatever the images beside it.
  std::string changed = kSweep;
  changed.replace(changed.find("[0.5, 1.0, 2.0]"), 15, "[0.5, 1.0, 3.0]");
  const std::string doc2 = write("decay2.esm", decay_document(changed));
  const Result other = run({"analyze", doc2, "--out", out.string()});
  EXPECT_NE(other.err.find("plots skipped"), std::string::npos) << other.err;
  EXPECT_EQ(other.err.find("unchanged"), std::string::npos) << other.err;
  EXPECT_NE(json::parse(esi::testing::read_all(folder / "plots.json"))["plots"][0]["hash"], hash);
}

// Drawing processes are forked as plots come, one per 16 plots and one per plots.json at most,
// up to --jobs, whose default is the machine's cores: two plots get one process whatever
// --jobs says. Every plot is drawn whichever process had it, and the images do not depend on
// how many processes drew them.
TEST_F(Analyze, DrawingProcessesFollowThePlotsUpToJobsWhichDefaultsToTheCores) {
  std::string analyses;  // four analyses of nine plots each: four plots.json, 36 plots
  for (int a = 1; a <= 4; ++a) {
    std::string list;
    for (int p = 1; p <= 9; ++p)
      list += std::string(p > 1 ? ", " : "") + R"({"id": "p)" + std::to_string(p) +
              R"(", "type": "line", "x": {"variable": "t"}, "y": {"variable": "x"}})";
    analyses += std::string(a > 1 ? ", " : "") + R"({"id": "a)" + std::to_string(a) +
                R"(", "time_span": {"start": 0, "end": )" + std::to_string(a) + R"(}, "plots": [)" + list + "]}";
  }
  fs::create_directories(dir_ / "many");
  fs::create_directories(dir_ / "two");
  const std::string many = write("many/many.esm", decay_document(analyses));
  write("two/two.esm", decay_document(kSweep));
  // The summary of a folder's run counts the processes.
  const auto processes = [&](const std::string& folder, const std::vector<std::string>& extra) {
    fs::remove_all(dir_ / "out");  // everything is drawn again
    std::vector<std::string> args{"analyze", (dir_ / folder).string(), "--out", (dir_ / "out").string()};
    args.insert(args.end(), extra.begin(), extra.end());
    const Result r = run(args);
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.err.find("skipped"), std::string::npos) << r.err;
    const std::size_t at = r.err.find(" drawing process");
    EXPECT_NE(at, std::string::npos) << r.err;
    const std::size_t open = r.err.rfind('(', at);
    return at == std::string::npos || open == std::string::npos ? 0 : std::stoul(r.err.substr(open + 1, at - open - 1));
  };
  EXPECT_EQ(processes("many", {"--jobs", "1"}), 1u);
  std::vector<std::string> one;
  for (int a = 1; a <= 4; ++a)
    for (int p = 1; p <= 9; ++p) one.push_back(esi::testing::read_all(dir_ / "out" / "many" / ("a" + std::to_string(a)) / ("p" + std::to_string(p) + ".png")));
  EXPECT_EQ(processes("many", {"--jobs", "8"}), 3u);  // 36 plots: the third starts at the 33rd
  EXPECT_EQ(processes("two", {"--jobs", "8"}), 1u);   // 2 plots
  const std::size_t cores = std::max(1u, std::thread::hardware_concurrency());
  EXPECT_EQ(processes("many", {}), std::min<std::size_t>(cores, 3));
  // Every plot of the default run was drawn, whichever process had it, as one process drew it.
  for (int a = 1; a <= 4; ++a)
    for (int p = 1; p <= 9; ++p) {
      const fs::path stem = dir_ / "out" / "many" / ("a" + std::to_string(a)) / ("p" + std::to_string(p));
      EXPECT_TRUE(fs::exists(stem.string() + ".png") && fs::exists(stem.string() + ".svg")) << stem;
      EXPECT_TRUE(fs::exists(stem.string() + ".hash")) << stem;
      EXPECT_TRUE(esi::testing::read_all(stem.string() + ".png") == one[static_cast<std::size_t>((a - 1) * 9 + p - 1)])
          << stem;
    }
}

// A plot whose image cannot be written (a folder in its place) is reported, located, and left
// out of index.html; the other plot of the analysis is still drawn and listed.
TEST_F(Analyze, APlotThatCannotBeWrittenIsReportedAndTheOthersAreDrawn) {
  const std::string doc = write("decay.esm", decay_document(kSweep));
  const fs::path out = dir_ / "out";
  fs::create_directories(out / "decay_sweep" / "x_vs_t.png");
  const Result r = run({"analyze", doc, "--out", out.string()});
  ASSERT_EQ(r.status, 0) << r.err;
  const std::size_t failed = r.err.find("error[output_write_failed]");
  ASSERT_NE(failed, std::string::npos) << r.err;
  const std::size_t line = r.err.rfind('\n', failed) + 1;  // npos + 1: the first line
  EXPECT_EQ(r.err.compare(line, (out / "decay_sweep" / "x_vs_t.png").string().size(),
                          (out / "decay_sweep" / "x_vs_t.png").string()),
            0)
      << r.err;
  EXPECT_NE(r.err.find("plots skipped: some plots could not be drawn"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::exists(out / "decay_sweep" / "final_x.png"));
  EXPECT_TRUE(fs::exists(out / "decay_sweep" / "final_x.hash"));
  EXPECT_FALSE(fs::exists(out / "decay_sweep" / "x_vs_t.hash"));
  const std::string index = esi::testing::read_all(out / "index.html");
  EXPECT_NE(index.find("decay_sweep/final_x.png"), std::string::npos);
  EXPECT_EQ(index.find("decay_sweep/x_vs_t.png"), std::string::npos);
  EXPECT_NE(index.find("1 plot(s) skipped: some plots could not be drawn"), std::string::npos);
}

// PLplot finds its devices (plug-ins) in PLPLOT_DRV_DIR: without them the data is still
// written and the command says why the plots were skipped.
TEST_F(Analyze, WithoutPLplotsDevicesTheDataIsWrittenAndThePlotsAreSkipped) {
  const std::string doc = write("decay.esm", decay_document(kSweep));
  ::setenv("PLPLOT_DRV_DIR", (dir_ / "no_drivers").c_str(), 1);
  const fs::path out = dir_ / "out";
  const Result r = run({"analyze", doc, "--out", out.string()});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("plots skipped: PLplot has no 'memcairo' device"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::exists(out / "decay_sweep" / "run_0003.csv"));
  EXPECT_FALSE(fs::exists(out / "decay_sweep" / "x_vs_t.png"));
}

TEST_F(Analyze, SingleRunWritesDataCsvAndAppliesParameters) {
  const std::string doc = write("one.esm", decay_document(R"({
    "id": "one", "parameters": {"k": 3.0}, "time_span": {"start": 0, "end": 1}})"));
  const fs::path out = dir_ / "out";
  ASSERT_EQ(run({"analyze", doc, "--out", out.string(), "-q"}).status, 0);
  const auto lines = lines_of(esi::testing::read_all(out / "one" / "data.csv"));
  ASSERT_EQ(lines.size(), 102u);
  EXPECT_NEAR(std::stod(fields_of(lines.back())[1]), std::exp(-3.0), 1e-6);
}

TEST_F(Analyze, UnknownAnalysisIdIsAnError) {
  const std::string doc = write("decay.esm", decay_document(kSweep));
  const Result r = run({"analyze", doc, "--analysis", "nope", "--out", (dir_ / "out").string()});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("error[unknown_analysis]"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("known: decay_sweep"), std::string::npos) << r.err;
}

TEST_F(Analyze, SweepOverAnUnknownParameterIsLocated) {
  const std::string doc = write("bad.esm", decay_document(R"({
    "id": "bad", "time_span": {"start": 0, "end": 1},
    "parameter_sweep": {"type": "cartesian", "dimensions": [{"parameter": "kk", "values": [1, 2]}]}})"));
  const Result r = run({"analyze", doc, "--out", (dir_ / "out").string()});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("error[unknown_override]"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("/models/Box/analyses/0/parameter_sweep/dimensions/0/parameter"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("'kk'"), std::string::npos) << r.err;
}

TEST_F(Analyze, LogRangeFromZeroIsLocated) {
  // The schema cannot say that a log-scale range needs positive ends (§6.7.3): esi does.
  const std::string doc = write("bad.esm", decay_document(R"({
    "id": "bad", "time_span": {"start": 0, "end": 1},
    "parameter_sweep": {"type": "cartesian", "dimensions": [
      {"parameter": "k", "range": {"start": 0, "stop": 1, "count": 3, "scale": "log"}}]}})"));
  const Result r = run({"analyze", doc, "--out", (dir_ / "out").string()});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("error[invalid_analysis]"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("/models/Box/analyses/0/parameter_sweep/dimensions/0/range/start"), std::string::npos)
      << r.err;
}

TEST_F(Analyze, MalformedAnalysisIsRefusedWithItsPointer) {
  // No time_span: refused by the checking pipeline (schema), like every command refuses it.
  const std::string doc = write("bad.esm", decay_document(R"({"id": "bad"})"));
  const Result r = run({"analyze", doc, "--out", (dir_ / "out").string()});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("/models/Box/analyses/0"), std::string::npos) << r.err;
}

TEST_F(Analyze, PlotOfAnUnknownVariableIsLocated) {
  const std::string doc = write("bad.esm", decay_document(R"({
    "id": "p", "time_span": {"start": 0, "end": 1},
    "plots": [{"id": "q", "type": "line", "x": {"variable": "t"}, "y": {"variable": "nope"}}]})"));
  const Result r = run({"analyze", doc, "--out", (dir_ / "out").string()});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("error[invalid_plot]"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("/models/Box/analyses/0/plots/0/y/variable"), std::string::npos) << r.err;
}

TEST_F(Analyze, HeatmapOverTwoSweptParametersHoldsEachRunsFinalValue) {
  // dx/dt = s - k x, x(0) = 2: x(1) = s/k + (2 - s/k) exp(-k).
  const std::string doc = write("heat.esm", R"({
  "esm": "0.1.0", "metadata": {"name": "Heat"},
  "models": {"Box": {
    "variables": {"x": {"type": "unknown", "default": 2.0},
                  "k": {"type": "parameter", "default": 1.0}, "s": {"type": "parameter", "default": 0.0}},
    "equations": [{"lhs": {"op": "D", "args": ["x"], "wrt": "t"},
                   "rhs": {"op": "-", "args": ["s", {"op": "*", "args": ["k", "x"]}]}}],
    "analyses": [{"id": "grid", "time_span": {"start": 0, "end": 1},
      "parameter_sweep": {"type": "cartesian", "dimensions": [
        {"parameter": "k", "range": {"start": 1, "stop": 4, "count": 3, "scale": "log"}},
        {"parameter": "s", "values": [0, 1]}]},
      "plots": [{"id": "h", "type": "heatmap", "x": {"variable": "k"}, "y": {"variable": "s"},
                 "value": {"variable": "x", "reduce": "final"}},
                {"id": "by_k", "type": "line", "x": {"variable": "k"}, "y": {"variable": "x"}},
                {"id": "by_s", "type": "line", "x": {"variable": "s"}, "y": {"variable": "x"}},
                {"id": "by_t", "type": "line", "x": {"variable": "t"}, "y": {"variable": "x"}}]}]}}})");
  const fs::path out = dir_ / "out";
  const Result r = run({"analyze", doc, "--out", out.string(), "-q"});
  ASSERT_EQ(r.status, 0) << r.err;
  const json h = json::parse(esi::testing::read_all(out / "grid" / "plots.json"))["plots"][0];
  ASSERT_EQ(h["x"].size(), 3u);  // log range: 1, 2, 4 (the ends exactly as authored)
  EXPECT_EQ(h["x"][0].get<double>(), 1.0);
  EXPECT_NEAR(h["x"][1].get<double>(), 2.0, 1e-15);
  EXPECT_EQ(h["x"][2].get<double>(), 4.0);
  ASSERT_EQ(h["y"], json({0.0, 1.0}));
  EXPECT_EQ(h["xscale"], "log");
  EXPECT_EQ(h["yscale"], "linear");
  // Line plots against a swept parameter follow its spacing too; against time they do not.
  const json plots = json::parse(esi::testing::read_all(out / "grid" / "plots.json"))["plots"];
  EXPECT_EQ(plots[1]["xscale"], "log");
  EXPECT_EQ(plots[1]["lines"][0]["x"].size(), 3u);
  EXPECT_EQ(plots[2]["xscale"], "linear");
  EXPECT_FALSE(plots[3].contains("xscale"));
  for (int iy = 0; iy < 2; ++iy)
    for (int ix = 0; ix < 3; ++ix) {
      const double k = h["x"][ix], src = h["y"][iy];
      EXPECT_NEAR(h["z"][iy][ix].get<double>(), src / k + (2 - src / k) * std::exp(-k), 1e-6) << k << " " << src;
    }
  // Sweep order: the last dimension (s) varies fastest.
  const auto runs = lines_of(esi::testing::read_all(out / "grid" / "runs.csv"));
  ASSERT_EQ(runs.size(), 7u);
  EXPECT_EQ(runs[1].substr(0, 6), "1,1,0,");
  EXPECT_EQ(runs[2].substr(0, 6), "2,1,1,");
  EXPECT_EQ(runs[3].substr(0, 2), "3,");
  EXPECT_EQ(runs[3].substr(runs[3].find(",run_") - 2, 7), ",0,run_");
}

TEST_F(Analyze, SweepPointsReuseOneCompiledModelWithoutCarryingValuesOver) {
  // dx/dt = s - k x with s = 2 k (an observed of the swept k, which has no default)
  // and x(0) swept: x(1) = 2 + (x0 - 2) exp(-k). The model is compiled once per worker, so a
  // derived parameter or an initial value left from the previous point would show here.
  const std::string doc = write("reuse.esm", R"({
  "esm": "0.1.0", "metadata": {"name": "Reuse"},
  "models": {"Box": {
    "variables": {"x": {"type": "unknown", "default": 5.0},
                  "k": {"type": "parameter"},
                  "s": {"type": "unknown"}, "x_out": {"type": "unknown"}},
    "equations": [{"lhs": "s", "rhs": {"op": "*", "args": [2, "k"]}}, {"lhs": "x_out", "rhs": "x"},
                  {"lhs": {"op": "D", "args": ["x"], "wrt": "t"},
                   "rhs": {"op": "-", "args": ["s", {"op": "*", "args": ["k", "x"]}]}}],
    "analyses": [{"id": "grid", "time_span": {"start": 0, "end": 1},
      "parameter_sweep": {"type": "cartesian", "dimensions": [
        {"parameter": "k", "values": [0.5, 2, 1]}, {"parameter": "x", "values": [5, -1, 7]}]},
      "plots": [{"id": "h", "type": "heatmap", "x": {"variable": "k"}, "y": {"variable": "x"},
                 "value": {"variable": "x_out", "reduce": "final"}}]}]}}})");
  for (const char* jobs : {"1", "2"}) {
    const fs::path out = dir_ / (std::string("out") + jobs);
    const Result r = run({"analyze", doc, "--out", out.string(), "-q", "--jobs", jobs});
    ASSERT_EQ(r.status, 0) << r.err;
    const json h = json::parse(esi::testing::read_all(out / "grid" / "plots.json"))["plots"][0];
    ASSERT_EQ(h["x"].size(), 3u);
    ASSERT_EQ(h["y"].size(), 3u);
    for (std::size_t iy = 0; iy < 3; ++iy)
      for (std::size_t ix = 0; ix < 3; ++ix) {
        const double k = h["x"][ix], x0 = h["y"][iy];
        EXPECT_NEAR(h["z"][iy][ix].get<double>(), 2 + (x0 - 2) * std::exp(-k), 1e-5) << k << " " << x0;
      }
  }
  // The same trajectories whatever the worker count (each worker reuses its own model).
  EXPECT_EQ(esi::testing::read_all(dir_ / "out1" / "grid" / "run_0005.csv"),
            esi::testing::read_all(dir_ / "out2" / "grid" / "run_0005.csv"));
}

// A folder: every document with analyses gets its own folder below --out (its path below the
// folder named, without .esm), documents without analyses are counted, one index links all;
// the plots of every document are drawn by the same plot processes.
TEST_F(Analyze, AFolderOfDocumentsIsAnalyzedIntoOneTree) {
  fs::create_directories(dir_ / "models" / "sub");
  write("models/a.esm", decay_document(kSweep));
  write("models/sub/b.esm", decay_document(kSweep));
  std::string plain = decay_document(kSweep);
  plain.replace(plain.find("\"analyses\": ["), std::string("\"analyses\": [").size() + std::string(kSweep).size() + 1,
                "\"tests\": []");
  write("models/plain.esm", plain);
  const fs::path out = dir_ / "out";
  const Result r = run({"analyze", (dir_ / "models").string(), "--out", out.string(), "--jobs", "2"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("2 documents with analyses (1 without), 2 analyses"), std::string::npos) << r.err;
  for (const char* sub : {"a", "sub/b"}) {
    const fs::path csv = out / sub / "decay_sweep" / "run_0003.csv";
    ASSERT_TRUE(fs::exists(csv)) << csv;
    const auto last = fields_of(lines_of(esi::testing::read_all(csv)).back());
    EXPECT_NEAR(std::stod(last[1]), 2.0 * std::exp(-2.0 * 2.0), 1e-6) << sub;
    EXPECT_TRUE(fs::exists(out / sub / "index.html")) << sub;
  }
  const std::string index = esi::testing::read_all(out / "index.html");
  EXPECT_NE(index.find("a/index.html"), std::string::npos) << index;
  EXPECT_NE(index.find("sub/b/index.html"), std::string::npos) << index;
  EXPECT_FALSE(fs::exists(out / "plain"));
}

// initial_state may name an unknown its equation defines (y = 2 x): like esi check's
// initial_conditions, the value is at most a guess; y follows from x.
TEST_F(Analyze, InitialStateOfAnUnknownDefinedByItsEquationFollowsTheEquation) {
  std::string doc = decay_document(R"json({"id": "guess", "time_span": {"start": 0, "end": 1},
      "initial_state": {"x": 3.0, "y": 99.0},
      "plots": [{"id": "y_vs_t", "type": "line", "x": {"variable": "t"}, "y": {"variable": "y"}}]})json");
  doc.replace(doc.find(R"("k": {)"), 0, R"("y": {"type": "unknown", "units": "mol/mol"}, )");
  const std::string eq = R"(, {"lhs": "y", "rhs": {"op": "*", "args": [2, "x"]}})";
  doc.insert(doc.find("\n      ],\n      \"analyses\""), eq);
  const std::string file = write("guess.esm", doc);
  const fs::path out = dir_ / "out";
  const Result r = run({"analyze", file, "--out", out.string(), "-q"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto lines = lines_of(esi::testing::read_all(out / "guess" / "data.csv"));
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(lines[0], "t,Box.x,Box.y");
  EXPECT_EQ(lines[1], "0,3,6");  // y = 2 x at t = 0, not the 99 given
  // A name that is no variable at all is still an error with its pointer.
  std::string bad = doc;
  bad.replace(bad.find(R"("y": 99.0)"), 4, R"("zz")");
  const Result rb = run({"analyze", write("bad.esm", bad), "--out", (dir_ / "o2").string(), "-q"});
  EXPECT_EQ(rb.status, 1);
  EXPECT_NE(rb.err.find("/analyses/0/initial_state/zz"), std::string::npos) << rb.err;
}

TEST_F(Analyze, UsageErrors) {
  EXPECT_EQ(run({"analyze"}).status, 2);
  EXPECT_EQ(run({"analyze", "x.esm", "--jobs", "0"}).status, 2);
  EXPECT_EQ(run({"analyze", "x.esm", "--bogus"}).status, 2);
  const Result help = run({"help", "analyze"});
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.out.find("usage: esi analyze"), std::string::npos);
}

}  // namespace
