// Gridded documents today (issue 9, first part): every array cell becomes a scalar equation at
// flatten, so the front end's cost grows with the grid. This bench measures it on the reseact
// transport prototype (monotone PPM advection in three directions, imported rule files) with its
// NLON/NLAT/NLEV bindings rewritten to N x N x N:
//   BM_GridFrontEnd/N  load + flatten + compile of the RHS tape (what every run pays first);
//                      counters: cells, states, lane instructions, ns per cell.
//   BM_GridRhs/N       one whole-grid RHS (tape, one lane: the whole grid is one column) per
//                      iteration, with the peer in the same run: a streaming copy of the same
//                      state vector (bytes read + written), reported as the RHS's effective
//                      bandwidth against the copy's.
// This is the baseline the per-region programs (FlattenOptions::grid, bench/bench_grid.cpp)
// replace.
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>

#include "esi/esm/flatten.hpp"
#include "esi/esm/load.hpp"
#include "corpus_link.hpp"
#include "esi/kernel/program.hpp"

#ifndef ESI_DEFAULT_CORPUS
#define ESI_DEFAULT_CORPUS ""
#endif

namespace {

namespace fs = std::filesystem;

fs::path corpus() {
  const char* env = std::getenv("ESI_CORPUS");
  return (env && *env) ? fs::path(env) : fs::path(ESI_DEFAULT_CORPUS);
}

/// transport_3d.esm with its grid bindings set to n, written beside a link to the rule library
/// so its relative imports resolve; dA/dB from the GEOS-FP table (first n layers, as the
/// document's description says).
struct Grid {
  fs::path file;
  nlohmann::json inputs;
  std::string error;
};

Grid transport_document(int n) {
  Grid g;
  const fs::path src = corpus() / "reseact/prototypes/transport_3d/transport_3d.esm";
  const fs::path table = corpus() / "reseact/prototypes/reseact_3d/hybrid_coefs.json";
  if (!fs::exists(src) || !fs::exists(table)) {
    g.error = "corpus not found (set ESI_CORPUS)";
    return g;
  }
  const fs::path root = fs::temp_directory_path() / "esi_bench_arrays";
  fs::create_directories(root / "reseact/prototypes/t");
  const fs::path lib = root / "EarthSciDiscretizations";
  link_corpus_library(corpus() / "EarthSciDiscretizations", lib);
  nlohmann::json doc;
  std::ifstream(src) >> doc;
  for (auto& imp : doc["models"]["Transport3D"]["expression_template_imports"])
    imp["bindings"] = {{"NLON", n}, {"NLAT", n}, {"NLEV", n}};
  g.file = root / "reseact/prototypes/t" / ("transport_" + std::to_string(n) + ".esm");
  std::ofstream(g.file) << doc.dump();
  nlohmann::json h;
  std::ifstream(table) >> h;
  for (const char* k : {"dA", "dB"}) {
    nlohmann::json v = nlohmann::json::array();
    for (int i = 0; i < n; ++i) v.push_back(h[k][i]);
    g.inputs[std::string("Transport3D.") + k] = v;
  }
  return g;
}

/// Flattening options with the grid's inputs, or false (the benchmark skipped) without a corpus.
bool grid_or_skip(benchmark::State& state, Grid& g, esi::esm::FlattenOptions& fo) {
  g = transport_document(static_cast<int>(state.range(0)));
  if (!g.error.empty()) {
    state.SkipWithError(g.error.c_str());
    return false;
  }
  fo.inputs = g.inputs;
  return true;
}

void BM_GridFrontEnd(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  Grid g;
  esi::esm::FlattenOptions fo;
  if (!grid_or_skip(state, g, fo)) return;
  std::size_t states = 0, instructions = 0;
  double seconds = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    const auto doc = esi::esm::load_resolved(g.file);
    const auto sys = esi::esm::flatten(doc, fo);
    const auto program = esi::kernel::compile(sys);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    states = sys.states.size();
    instructions = program.stats().lane_instructions;
    benchmark::DoNotOptimize(instructions);
  }
  const double cells = double(n) * n * n;
  state.counters["cells"] = cells;
  state.counters["states"] = static_cast<double>(states);
  state.counters["lane_instructions"] = static_cast<double>(instructions);
  state.counters["s_per_run"] = seconds / static_cast<double>(state.iterations());
  state.counters["us_per_cell"] = 1e6 * seconds / static_cast<double>(state.iterations()) / cells;
}

void BM_GridRhs(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  Grid g;
  esi::esm::FlattenOptions fo;
  if (!grid_or_skip(state, g, fo)) return;
  const auto doc = esi::esm::load_resolved(g.file);
  const auto sys = esi::esm::flatten(doc, fo);
  const auto program = esi::kernel::compile(sys);
  std::vector<double> p;
  for (const auto& v : sys.parameters) p.push_back(v.default_value.value_or(0.0));
  std::vector<double> u(sys.states.size()), du(sys.states.size()), copy(sys.states.size());
  for (std::size_t i = 0; i < u.size(); ++i) u[i] = sys.states[i].default_value.value_or(1.0) + 1.0 + 1e-3 * double(i % 7);
  auto ws = program.make_workspace(1);
  program.prepare(ws, p);
  const double t = 0.0;
  esi::kernel::RunArgs<double> args;
  args.u = {u.data(), u.size(), 1, 1};
  args.t = {&t, 1};
  args.du = {du.data(), du.size(), 1, 1};
  double rhs_s = 0, copy_s = 0;
  for (auto _ : state) {
    auto start = std::chrono::steady_clock::now();
    esi::kernel::run(program, ws, args);
    rhs_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    start = std::chrono::steady_clock::now();
    std::memcpy(copy.data(), u.data(), u.size() * sizeof(double));
    benchmark::ClobberMemory();
    copy_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    benchmark::DoNotOptimize(du.data());
  }
  const double it = static_cast<double>(state.iterations());
  const double bytes = 2.0 * sizeof(double) * static_cast<double>(u.size());  // read u, write du
  const double cells = double(n) * n * n;
  state.counters["ns_per_cell"] = 1e9 * rhs_s / it / cells;
  state.counters["rhs_GBps"] = bytes / (rhs_s / it) / 1e9;
  state.counters["copy_GBps"] = bytes / (copy_s / it) / 1e9;
  state.counters["rhs_vs_copy"] = (bytes / (rhs_s / it)) / (bytes / (copy_s / it));
}

}  // namespace

BENCHMARK(BM_GridFrontEnd)->Arg(7)->Arg(10)->Arg(14)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_GridRhs)->Arg(7)->Arg(14)->Unit(benchmark::kMicrosecond);

