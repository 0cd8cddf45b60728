// Whole runs with the grid part on threads: the run configuration's `partition.threads`
// (esi run --threads) and the cell split's thread count (esi simulate --threads) now also cut
// the grid's stages into slabs (kernel::make_grid_workspace). Runs on 1, 2 and 3 threads must
// give trajectories equal bit for bit (compared with ==): the reseact chemistry on its PPM
// grid through a Lie schedule and through simulate's split, transport_3d as one "all" leaf,
// and `esi run` of the shipped example (7 x 7 x 72) for a short span, CSV bytes compared.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "esi/esm/flatten.hpp"
#include "esi/esm/load.hpp"
#include "esi/plan/pointwise_split.hpp"
#include "esi/exec/run_config.hpp"
#include "esi/exec/schedule.hpp"
#include "esi/exec/simulate.hpp"
#include "support/reseact_docs.hpp"
#include "support/run_esi.hpp"
#include "support/temp_dir.hpp"

namespace {

using esi::method::MethodId;
using esi::method::ReturnCode;
using nlohmann::json;

json reseact_config(double stop, int threads) {
  return {{"time", {{"start", 0}, {"stop", stop}}},
          {"operators",
           {{"transport", {{"select", {{"locality", {"stencil", "column"}}}}}},
            {"chemistry", {{"select", {{"locality", "pointwise"}}}}}}},
          {"schedule",
           {{"lie",
             {{{"leaf", "transport"},
               {"alg", "SSPRK43"},
               {"control", {{"reltol", 1e-4}, {"abstol", 1e-9}}}},
              {{"leaf", "chemistry"},
               {"alg", "Rodas3"},
               {"control", {{"reltol", 1e-4}, {"abstol", 1e-9}}}}}}}},
          {"step", {{"dt", 300}}},
          {"partition", {{"threads", threads}, {"lanes", 16}}},
          {"output", {{"every", 300}}}};
}

TEST(GridThreadsRun, ReseactLieScheduleIsTheSameOnAnyThreadCount) {
  esi::testing::TempDir dir;
  const esi::testing::Doc d = esi::testing::chemistry_document(dir);  // 7 x 7 x 7
  if (d.file.empty()) GTEST_SKIP() << "corpus not found: set ESI_CORPUS";
  const auto doc = esi::esm::load_resolved(d.file.string());
  const esi::esm::System sys = esi::esm::flatten(doc, d.grid);
  esi::exec::ScheduleOptions o;
  o.document = &doc;
  std::vector<esi::exec::ScheduleResult> runs;
  for (int threads : {1, 2, 3}) {
    runs.push_back(esi::exec::run_schedule(
        sys, esi::exec::parse_run_config(reseact_config(600, threads), "run.json", ""), o));
    ASSERT_EQ(runs.back().trajectory.code, ReturnCode::Success) << runs.back().trajectory.message;
  }
  ASSERT_EQ(runs[0].trajectory.times, (std::vector<double>{0, 300, 600}));
  EXPECT_GT(runs[0].leaves[0].accepted, 0);
  for (std::size_t k = 1; k < runs.size(); ++k) {
    EXPECT_EQ(runs[k].trajectory.values, runs[0].trajectory.values) << k + 1 << " threads";
    EXPECT_EQ(runs[k].leaves[0].accepted, runs[0].leaves[0].accepted);
    EXPECT_EQ(runs[k].leaves[0].rejected, runs[0].leaves[0].rejected);
  }
}

TEST(GridThreadsRun, SimulateSplitIsTheSameOnAnyThreadCount) {
  esi::testing::TempDir dir;
  const esi::testing::Doc d = esi::testing::chemistry_document(dir);
  if (d.file.empty()) GTEST_SKIP() << "corpus not found: set ESI_CORPUS";
  const auto doc = esi::esm::load_resolved(d.file.string());
  const esi::esm::System sys = esi::esm::flatten(doc, d.grid);
  auto run = [&](int threads) {
    esi::exec::SimulateOptions o;
    o.t1 = 600;
    o.saveat = 300;
    o.document = &doc;
    o.integrator.method = MethodId::SSPRK43;
    o.integrator.rtol = 1e-4;
    o.integrator.atol = 1e-9;
    esi::exec::SimulateOptions::CellSplit cs;
    cs.cells.rtol = 1e-4;
    cs.cells.atol = {1e-9};
    cs.cells.threads = threads;
    cs.step = 300;
    o.cell_split = cs;
    return esi::exec::simulate(sys, o);
  };
  const auto one = run(1);
  ASSERT_EQ(one.code, ReturnCode::Success) << one.message;
  for (int threads : {2, 3}) {
    const auto tr = run(threads);
    ASSERT_EQ(tr.code, ReturnCode::Success) << tr.message;
    EXPECT_EQ(tr.values, one.values) << threads << " threads";
  }
}

TEST(GridThreadsRun, Transport3dAsOneLeafIsTheSameOnAnyThreadCount) {
  const esi::testing::ShippedTransport t = esi::testing::shipped_transport();
  if (!t.found) GTEST_SKIP() << "corpus not found: set ESI_CORPUS";
  const esi::esm::ResolvedDocument& doc = t.doc;
  const esi::esm::System sys = esi::esm::flatten(doc, t.grid);
  esi::exec::ScheduleOptions o;
  o.document = &doc;
  std::vector<esi::exec::Trajectory> runs;
  for (int threads : {1, 2, 3}) {
    const json c = {
        {"time", {{"stop", 1200}}},
        {"schedule",
         {{"leaf", "all"}, {"alg", "SSPRK43"}, {"control", {{"reltol", 1e-6}, {"abstol", 1e-8}}}}},
        {"step", {{"dt", 600}}},
        {"partition", {{"threads", threads}}},
        {"output", {{"every", 600}}}};
    runs.push_back(
        esi::exec::run_schedule(sys, esi::exec::parse_run_config(c, "run.json", ""), o).trajectory);
    ASSERT_EQ(runs.back().code, ReturnCode::Success) << runs.back().message;
  }
  for (std::size_t k = 1; k < runs.size(); ++k)
    EXPECT_EQ(runs[k].values, runs[0].values) << k + 1 << " threads";
}

// esi simulate with an explicit method on a gridded model: no split, the whole grid
// right-hand side on SimulateOptions::threads.
TEST(GridThreadsRun, SimulateWithoutSplitIsTheSameOnAnyThreadCount) {
  const esi::testing::ShippedTransport t = esi::testing::shipped_transport();
  if (!t.found) GTEST_SKIP() << "corpus not found: set ESI_CORPUS";
  const esi::esm::ResolvedDocument& doc = t.doc;
  const esi::esm::System sys = esi::esm::flatten(doc, t.grid);
  std::vector<esi::exec::Trajectory> runs;
  for (unsigned threads : {1u, 2u, 3u}) {
    esi::exec::SimulateOptions o;
    o.t1 = 1200;
    o.saveat = 600;
    o.document = &doc;
    o.integrator.method = MethodId::SSPRK43;
    o.integrator.rtol = 1e-6;
    o.integrator.atol = 1e-8;
    o.threads = threads;
    runs.push_back(esi::exec::simulate(sys, o));
    ASSERT_EQ(runs.back().code, ReturnCode::Success) << runs.back().message;
  }
  ASSERT_EQ(runs[0].times, (std::vector<double>{0, 600, 1200}));
  for (std::size_t k = 1; k < runs.size(); ++k) {
    EXPECT_EQ(runs[k].values, runs[0].values) << k + 1 << " threads";
    EXPECT_EQ(runs[k].stats.accepted, runs[0].stats.accepted);
  }
}

// The shipped example as a user runs it (7 x 7 x 72, 3,528 cells), 300 s instead of an hour.
TEST(GridThreadsRun, EsiRunOfTheReseactExampleWritesTheSameValuesOnOneAndTwoThreads) {
  const std::filesystem::path corpus = esi::testing::corpus_dir();
  const std::filesystem::path model =
      corpus / "reseact/prototypes/reseact_3d_chem/reseact_3d_chem.esm";
  const std::filesystem::path examples = std::filesystem::path(ESI_SOURCE_DIR) / "examples/reseact";
  if (corpus.empty() || !std::filesystem::exists(model))
    GTEST_SKIP() << "corpus not found: set ESI_CORPUS";
  esi::testing::TempDir dir;
  json config;
  std::ifstream(examples / "reseact_3d_chem.run.json") >> config;
  config["time"]["stop"] = 300;
  config["output"]["every"] = 300;
  std::filesystem::copy_file(examples / "reseact_3d_chem_inputs.json",
                             dir.path() / "reseact_3d_chem_inputs.json");
  const auto cfg = dir.path() / "run.json";
  std::ofstream(cfg) << config.dump();
  std::vector<std::string> csv;
  for (const char* threads : {"1", "2"}) {
    const auto out = dir.path() / (std::string("out") + threads + ".csv");
    const auto r = esi::testing::run_esi(ESI_BINARY,
                                         {"run", model.string(), "--config", cfg.string(),
                                          "--output", out.string(), "--threads", threads},
                                         dir.path() / "err.txt");
    ASSERT_EQ(r.status, 0) << r.err;
    csv.push_back(esi::testing::read_all(out));
  }
  ASSERT_GT(csv[0].size(), 100000u);  // 2 rows of 42,336 states
  EXPECT_TRUE(csv[0] == csv[1]) << "the CSV written on 2 threads differs from the 1-thread one";
}

}  // namespace
