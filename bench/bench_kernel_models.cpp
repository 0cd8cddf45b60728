// Per-cell RHS and Jacobian cost of whole documents (SuperFast, GEOS-Chem fullchem), tape and
// native, for L in {1, 8, 32, 128}, plus what compiling them costs (issue 3, item 5).
//
// Counters:
//   ns_per_cell    one evaluation per cell, best of 5 batches (f64)
//   rhs_ns         the RHS of the same backend and L, measured in the same run (Jacobian rows)
//   x_rhs          ns_per_cell / rhs_ns: Jacobian cost in RHS evaluations (seed 004 T2: <= 2)
//   nnz            Jacobian nonzeros per cell
// The compile rows time `compile` (tape), `compile_jacobian` and a native compile into an
// empty temporary cache (so it measures the compiler, not a cache hit).

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <unistd.h>
#include <random>

#include <benchmark/benchmark.h>

#include "esi/esm/flatten.hpp"
#include "esi/kernel/jacobian.hpp"
#include "esi/kernel/native.hpp"

#ifndef ESI_DEFAULT_CORPUS
#define ESI_DEFAULT_CORPUS ""
#endif

namespace {

namespace fs = std::filesystem;
using namespace esi::kernel;
using Clock = std::chrono::steady_clock;

fs::path corpus_file(const std::string& rel) {
  const char* env = std::getenv("ESI_CORPUS");
  const fs::path root = (env && *env) ? fs::path(env) : fs::path(ESI_DEFAULT_CORPUS);
  return root / "EarthSciModels/components/gaschem" / rel;
}

struct Model {
  esi::esm::System system;
  std::optional<Program> rhs, rhs_native, jac_native;
  std::optional<JacobianProgram> jac;
  std::vector<double> p, u;  // u[s * cells + c]
  std::size_t cells = 0;
  std::string error;
};

Model make_model(const std::string& file, std::size_t cells) {
  Model m;
  if (!fs::exists(corpus_file(file))) {
    m.error = "corpus file not found: " + corpus_file(file).string() + " (set ESI_CORPUS)";
    return m;
  }
  m.system = esi::esm::flatten(esi::esm::load_resolved(corpus_file(file)));
  m.rhs = compile(m.system);
  m.jac = compile_jacobian(m.system);
  m.rhs_native = with_native(*m.rhs);
  m.jac_native = with_native(m.jac->values);
  for (const auto& v : m.system.parameters) m.p.push_back(v.default_value.value_or(1.0));
  m.cells = cells;
  m.u.assign(m.system.states.size() * cells, 0.0);
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> f(0.5, 2.0);
  for (std::size_t i = 0; i < m.system.states.size(); ++i)
    for (std::size_t c = 0; c < cells; ++c)
      m.u[i * cells + c] = m.system.states[i].default_value.value_or(1.0) * f(rng) + 1e-3;
  return m;
}

/// Cells in the fullchem runs: 1024 by default, $ESI_BENCH_FULLCHEM_CELLS to change.
std::size_t fullchem_cells() {
  const char* env = std::getenv("ESI_BENCH_FULLCHEM_CELLS");
  return env && *env ? static_cast<std::size_t>(std::atol(env)) : 1024;
}

Model& model(const std::string& name) {
  static std::map<std::string, Model> models;
  auto it = models.find(name);
  if (it == models.end())
    it = models.emplace(name, make_model(name == "superfast" ? "superfast.esm" : "geoschem_fullchem.esm",
                                         name == "superfast" ? 4096 : fullchem_cells())).first;
  return it->second;
}

/// Best-of-5 ns per cell of `program` at width L.
double ns_per_cell(const Program& program, const Model& m, std::size_t L) {
  Workspace ws = program.make_workspace(L);
  program.prepare(ws, m.p);
  std::vector<double> out(program.output_count() * m.cells);
  const double t = 0.0;
  RunArgs<double> a;
  a.u = {m.u.data(), m.system.states.size(), m.cells, m.cells};
  a.t = std::span(&t, 1);
  a.du = {out.data(), program.output_count(), m.cells, m.cells};
  run(program, ws, a);  // warm up
  double best = 1e300;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = Clock::now();
    for (int k = 0; k < 5; ++k) run(program, ws, a);
    benchmark::DoNotOptimize(out.data());
    const std::chrono::duration<double, std::nano> dt = Clock::now() - t0;
    best = std::min(best, dt.count() / (5.0 * static_cast<double>(m.cells)));
  }
  return best;
}

// Args: L, native (0/1), jacobian (0/1).
void BM_Eval(benchmark::State& state, const std::string& name) {
  Model& m = model(name);
  if (!m.error.empty()) return state.SkipWithError(m.error.c_str());
  const auto L = static_cast<std::size_t>(state.range(0));
  const bool native = state.range(1) != 0, jacobian = state.range(2) != 0;
  const Program& rhs = native ? *m.rhs_native : *m.rhs;
  const Program& prog = jacobian ? (native ? *m.jac_native : m.jac->values) : rhs;
  if (native && !prog.is_native()) return state.SkipWithError(prog.native_status().c_str());
  double ns = 0;
  for (auto _ : state) ns = ns_per_cell(prog, m, L);
  state.counters["ns_per_cell"] = ns;
  if (jacobian) {
    const double r = ns_per_cell(rhs, m, L);
    state.counters["rhs_ns"] = r;
    state.counters["x_rhs"] = ns / r;
    state.counters["nnz"] = static_cast<double>(m.jac->col.size());
  }
}

void register_evals() {
  for (const char* name : {"superfast", "fullchem"})
    for (int jac : {0, 1})
      for (int native : {0, 1}) {
        const std::string label = std::string(name) + (jac ? "/jacobian" : "/rhs") +
                                  (native ? "_native" : "_tape");
        auto* b = benchmark::RegisterBenchmark(label.c_str(), BM_Eval, std::string(name));
        for (int L : {1, 8, 32, 128}) b->Args({L, native, jac});
        b->Iterations(1)->Unit(benchmark::kMillisecond);
      }
}

// Compile costs of fullchem: tape RHS, Jacobian, and native (empty cache) for both.
void BM_CompileFullchem(benchmark::State& state) {
  if (!fs::exists(corpus_file("geoschem_fullchem.esm")))
    return state.SkipWithError("corpus not found (set ESI_CORPUS)");
  const auto sys = esi::esm::flatten(esi::esm::load_resolved(corpus_file("geoschem_fullchem.esm")));
  auto seconds = [](auto f) {
    const auto t0 = Clock::now();
    f();
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };
  std::optional<Program> rhs_opt;
  std::optional<JacobianProgram> jac_opt;
  for (auto _ : state) {
    state.counters["tape_rhs_s"] = seconds([&] { rhs_opt = compile(sys); });
    state.counters["tape_jac_s"] = seconds([&] { jac_opt = compile_jacobian(sys); });
  }
  const Program& rhs = *rhs_opt;
  const JacobianProgram& jac = *jac_opt;
  NativeOptions fresh;
  fresh.cache_dir = (fs::temp_directory_path() / ("esi-bench-cache-" + std::to_string(::getpid()))).string();
  state.counters["native_rhs_s"] = seconds([&] { benchmark::DoNotOptimize(with_native(rhs, fresh)); });
  state.counters["native_jac_s"] = seconds([&] { benchmark::DoNotOptimize(with_native(jac.values, fresh)); });
  state.counters["cached_rhs_s"] = seconds([&] { benchmark::DoNotOptimize(with_native(rhs, fresh)); });
  state.counters["rhs_lane_instr"] = static_cast<double>(rhs.stats().lane_instructions);
  state.counters["jac_lane_instr"] = static_cast<double>(jac.values.stats().lane_instructions);
  std::error_code ec;
  fs::remove_all(fresh.cache_dir, ec);
}

const bool registered = [] {
  register_evals();
  benchmark::RegisterBenchmark("fullchem/compile", BM_CompileFullchem)->Iterations(1)->Unit(benchmark::kMillisecond);
  return true;
}();

}  // namespace

