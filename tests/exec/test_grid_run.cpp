// Whole runs of a gridded document as per-region programs (FlattenOptions::grid) against the
// same run with one equation per cell: the same explicit method takes the same steps on the
// same bits, so trajectories are compared with ==. And the transport gate of the reseact
// prototype (q = mq/m exactly 1, dev exactly 0) holds for an hour of SSPRK43.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "esi/esm/flatten.hpp"
#include "esi/esm/load.hpp"
#include "esi/exec/simulate.hpp"
#include "exec/model.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;

/// transport_3d with its bundled inputs, flattened to cells and to per-region programs.
struct Transport3d {
  esi::esm::ResolvedDocument doc;
  esi::esm::System cells, grid;
};

std::optional<Transport3d> transport_3d() {
  const fs::path corpus = esi::testing::corpus_dir();
  const fs::path file = corpus / "reseact/prototypes/transport_3d/transport_3d.esm";
  const fs::path inputs = fs::path(ESI_SOURCE_DIR) / "examples/reseact/transport_3d_inputs.json";
  if (corpus.empty() || !fs::exists(file)) return std::nullopt;
  Transport3d t;
  t.doc = esi::esm::load_resolved(file.string());
  esi::esm::FlattenOptions cells;
  std::ifstream(inputs) >> cells.inputs;
  esi::esm::FlattenOptions grid = cells;
  grid.grid = true;
  t.cells = esi::esm::flatten(t.doc, cells);
  t.grid = esi::esm::flatten(t.doc, grid);
  return t;
}

TEST(GridRun, Transport3dHourOfSsprk43EqualsCellsAndKeepsItsGate) {
  const auto t = transport_3d();
  if (!t) GTEST_SKIP() << "corpus not found: set ESI_CORPUS";
  const auto& doc = t->doc;
  const esi::esm::System &sc = t->cells, &sg = t->grid;
  ASSERT_FALSE(sg.grid.empty());
  ASSERT_TRUE(sc.grid.empty());

  esi::exec::SimulateOptions o;
  o.t0 = 0;
  o.t1 = 3600;
  o.saveat = 1200;
  o.integrator.method = esi::method::MethodId::SSPRK43;
  o.document = &doc;
  const auto tc = esi::exec::simulate(sc, o);
  const auto tg = esi::exec::simulate(sg, o);
  ASSERT_EQ(tc.code, esi::method::ReturnCode::Success) << tc.message;
  ASSERT_EQ(tg.code, esi::method::ReturnCode::Success) << tg.message;
  EXPECT_FALSE(tg.grid_summary.empty());
  EXPECT_EQ(tc.stats.accepted, tg.stats.accepted);
  EXPECT_EQ(tc.stats.rejected, tg.stats.rejected);
  ASSERT_EQ(tc.times, tg.times);
  ASSERT_EQ(tc.state_count, tg.state_count);
  // Same states, possibly in another order: compare by name.
  std::map<std::string, std::size_t> at;
  for (std::size_t j = 0; j < tg.state_count; ++j) at[tg.names[j]] = j;
  const std::size_t nc = tc.names.size(), ng = tg.names.size();
  std::size_t gate_cells = 0;
  for (std::size_t k = 0; k < tc.times.size(); ++k)
    for (std::size_t j = 0; j < tc.state_count; ++j) {
      const double c = tc.values[k * nc + j], g = tg.values[k * ng + at.at(tc.names[j])];
      ASSERT_EQ(c, g) << tc.names[j] << " at t = " << tc.times[k];
      const std::string& name = tc.names[j];
      if (name.rfind("Transport3D.dev[", 0) == 0) {
        ASSERT_EQ(g, 0.0) << name;
      } else if (name.rfind("Transport3D.mq[", 0) == 0) {
        const std::string m = "Transport3D.m" + name.substr(std::string("Transport3D.mq").size());
        ASSERT_EQ(g, tg.values[k * ng + at.at(m)]) << name << " (q = mq/m must stay exactly 1)";
        ++gate_cells;
      }
    }
  EXPECT_EQ(gate_cells, tc.times.size() * 343);
}

// A gridded model is built, started and named without an entry per cell: its state arrays stay
// lazy runs (esm::StateList), and its initial state and state names are those of the same
// document flattened to cells, by name.
TEST(GridRun, AGridModelStartsWithoutAnEntryPerCell) {
  const auto t = transport_3d();
  if (!t) GTEST_SKIP() << "corpus not found: set ESI_CORPUS";
  const auto& doc = t->doc;
  const esi::esm::System &sc = t->cells, &sg = t->grid;
  ASSERT_FALSE(sg.grid.empty());
  const auto mc = esi::exec::detail::build_model(sc, &doc, false, true, false, 1);
  const auto mg = esi::exec::detail::build_model(sg, &doc, false, true, false, 1);
  const std::vector<double> uc = mc->initial_state(), ug = mg->initial_state();
  EXPECT_EQ(mg->system.states.materialized_runs(), 0u);
  ASSERT_EQ(uc.size(), ug.size());
  for (std::size_t j = 0; j < uc.size(); ++j) {
    const std::string& name = sc.states[j].name;
    const int at = mg->system.state_index(name);
    ASSERT_GE(at, 0) << name;
    ASSERT_EQ(uc[j], ug[static_cast<std::size_t>(at)]) << name;
    ASSERT_EQ(mg->problem.name_of(static_cast<std::size_t>(at)), name);
  }
  EXPECT_EQ(mg->system.states.materialized_runs(), 0u);
}

}  // namespace
