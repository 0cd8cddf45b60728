// Jacobian assembly (issue 10, seed 004 T2: eval_into <= 2x one RHS evaluation on the same
// lanes): plan::eval_into of the mechanism's operator into each lane layout against one RHS
// evaluation (kernel::run of the compiled RHS), for SuperFast, POLLU and GEOS-Chem fullchem.
//
// The lane-pool pattern: cells in blocks of L lanes, each block's Jacobian written into one
// storage buffer (what the LU then factors), cells' states read in place from a species-major
// array of all cells (a block is a view with stride = cells). Same blocks, same backend for
// both sides of the ratio.
//
// Rows "jacobian/<model>/<layout>/<backend>" with args L. Counters (per cell, best of 7 passes
// over all cells in this thread's CPU time):
//   ns_per_cell  eval_into
//   rhs_ns       one RHS evaluation of the same cells, lanes and backend
//   x_rhs        ns_per_cell / rhs_ns (target <= 2)
//   slots, nnz   storage entries per lane, Jacobian nonzeros

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "esi/esm/flatten.hpp"
#include "esi/esm/load.hpp"
#include "esi/kernel/native.hpp"
#include "esi/linalg/sparse_lu.hpp"
#include "esi/plan/jacobian_assembly.hpp"

#ifndef ESI_DEFAULT_CORPUS
#define ESI_DEFAULT_CORPUS ""
#endif

namespace {

namespace fs = std::filesystem;
using namespace esi::plan;

fs::path gaschem(const std::string& file) {
  const char* env = std::getenv("ESI_CORPUS");
  const fs::path root = (env && *env) ? fs::path(env) : fs::path(ESI_DEFAULT_CORPUS);
  return root / "EarthSciModels/components/gaschem" / file;
}

double thread_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

struct Model {
  std::string error;
  esi::esm::System system;
  std::optional<esi::kernel::Program> rhs, rhs_native;
  std::optional<OperatorJacobian> jac, jac_native;  // native: the value program replaced
  std::optional<esi::linalg::SparseLuPlan> lu;
  std::vector<double> p, u;  // u[s * cells + c]
  std::size_t cells = 0;
};

Model make_model(const std::string& name) {
  Model m;
  const std::string file = name == "superfast" ? "superfast.esm" : name == "pollu" ? "pollu.esm" : "geoschem_fullchem.esm";
  if (!fs::exists(gaschem(file))) {
    m.error = "corpus file not found: " + gaschem(file).string() + " (set ESI_CORPUS)";
    return m;
  }
  m.system = esi::esm::flatten(esi::esm::load_resolved(gaschem(file)));
  const Plan plan = make_plan(m.system, [] {
    PlanOptions o;
    o.validate = false;
    return o;
  }());
  if (plan.operators.size() != 1 || plan.operators[0].block.species.size() != m.system.states.size()) {
    m.error = name + ": expected one operator over every state";
    return m;
  }
  m.rhs = esi::kernel::compile(m.system);
  m.jac = compile_operator_jacobian(m.system, plan, plan.operators[0]);
  m.lu = esi::linalg::plan_sparse_lu({static_cast<int>(m.jac->n()), m.jac->program.row_ptr, m.jac->program.col});
  m.rhs_native = esi::kernel::with_native(*m.rhs);
  m.jac_native = *m.jac;
  m.jac_native->program.values = esi::kernel::with_native(m.jac->program.values);
  for (const auto& v : m.system.parameters) m.p.push_back(v.default_value.value_or(1.0));
  m.cells = name == "fullchem" ? 256 : 4096;
  m.u.assign(m.system.states.size() * m.cells, 0.0);
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> f(0.5, 2.0);
  for (std::size_t i = 0; i < m.system.states.size(); ++i)
    for (std::size_t c = 0; c < m.cells; ++c)
      m.u[i * m.cells + c] = m.system.states[i].default_value.value_or(1.0) * f(rng) + 1e-3;
  return m;
}

Model& model(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Model>> models;
  auto& slot = models[name];
  if (!slot) slot = std::make_unique<Model>(make_model(name));
  return *slot;
}

/// Best of 7 passes, seconds per pass, of f(block start) over all blocks of L cells.
template <class F>
double best_pass(const Model& m, std::size_t L, F&& f) {
  double best = 1e300;
  for (int rep = 0; rep < 8; ++rep) {  // the first pass warms up
    const double t0 = thread_seconds();
    for (std::size_t c = 0; c + L <= m.cells; c += L) f(c);
    const double dt = thread_seconds() - t0;
    if (rep > 0) best = std::min(best, dt);
  }
  return best;
}

// Args: L. Layout by name: "csr", "lane_sparse", "lane_dense".
void BM_Assembly(benchmark::State& state, const std::string& name, const std::string& layout_kind, bool native) {
  Model& m = model(name);
  if (!m.error.empty()) return state.SkipWithError(m.error.c_str());
  const auto L = static_cast<std::size_t>(state.range(0));
  const OperatorJacobian& jac = native ? *m.jac_native : *m.jac;
  const esi::kernel::Program& rhs = native ? *m.rhs_native : *m.rhs;
  if (native && !(jac.program.values.is_native() && rhs.is_native()))
    return state.SkipWithError(jac.program.values.native_status().c_str());
  ScatterPlan layout = layout_kind == "csr"           ? plan_csr(jac)
                       : layout_kind == "lane_sparse" ? plan_lane_sparse(jac, *m.lu)
                                                      : plan_lane_dense(jac);
  if (native && layout.direct) layout.direct = esi::kernel::with_native(*layout.direct);
  JacWorkspace ws = make_workspace(jac, layout, L);
  prepare(jac, layout, ws, m.p);
  esi::linalg::LaneVector<double> out(layout.slots * L);
  const std::size_t n_states = m.system.states.size();
  const std::vector<double> t{0.0};
  auto eval = [&](std::size_t c) {
    eval_into<double>(jac, layout, ws, {m.u.data() + c, n_states, L, m.cells}, t, out.data());
    benchmark::DoNotOptimize(out.data());
  };
  esi::kernel::Workspace rws = rhs.make_workspace(L);
  rhs.prepare(rws, m.p);
  std::vector<double> du(rhs.output_count() * L);
  auto rhs_eval = [&](std::size_t c) {
    esi::kernel::RunArgs<double> a;
    a.u = {m.u.data() + c, n_states, L, m.cells};
    a.t = t;
    a.du = {du.data(), rhs.output_count(), L, L};
    esi::kernel::run(rhs, rws, a);
    benchmark::DoNotOptimize(du.data());
  };
  double jac_s = 0, rhs_s = 0;
  for (auto _ : state) {
    jac_s = best_pass(m, L, eval);
    rhs_s = best_pass(m, L, rhs_eval);
  }
  const double cells = static_cast<double>(m.cells / L * L);
  state.counters["ns_per_cell"] = 1e9 * jac_s / cells;
  state.counters["rhs_ns"] = 1e9 * rhs_s / cells;
  state.counters["x_rhs"] = jac_s / rhs_s;
  state.counters["slots"] = static_cast<double>(layout.slots);
  state.counters["nnz"] = static_cast<double>(jac.nonzeros());
}

const bool registered = [] {
  for (const char* name : {"superfast", "pollu", "fullchem"})
    for (const char* layout : {"csr", "lane_sparse", "lane_dense"}) {
      if (std::string(name) == "fullchem" && std::string(layout) == "lane_dense") continue;  // 272^2 per lane
      for (bool native : {false, true}) {
        const std::string label =
            std::string("jacobian/") + name + "/" + layout + (native ? "/native" : "/tape");
        benchmark::RegisterBenchmark(label.c_str(), BM_Assembly, std::string(name),
                                     std::string(layout), native)
            ->Arg(8)
            ->Arg(16)
            ->Arg(64)
            ->Iterations(1)
            ->Unit(benchmark::kMillisecond);
      }
    }
  return true;
}();

}  // namespace

