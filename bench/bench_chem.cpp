// Per-cell stiff chemistry over many cells (issue 10, item 4): one binary, one run.
//
// Cases (settings of ../shared/research/anchors-heavy.md and anchors.md):
//   superfast_identical  SuperFast, N cells (default 4096) of the document's default state under
//                        its daytime (noon) photolysis, 0..3600 s, rtol 1e-4, atol 1e-9 ppb
//   superfast_hetero     the same with cells from a fixed-seed generator (anchors-heavy §2.2):
//                        T uniform in 220-300 K, 30 % of cells dark (every j = 0), the rest every
//                        j scaled by sin(pi v), v uniform in (0, 1); NO and NO2 times 10^U(0,2);
//                        P fixed at the default
//   pollu                POLLU (corpus pollu.esm, ppb and s), N identical cells of its default
//                        state over its tests' span 0..3600 s, rtol 1e-3, atol 1e-8 ppb
//   fullchem             GEOS-Chem fullchem (corpus geoschem_fullchem.esm, 272 states), M cells
//                        (default 64) around the document's defaults (T, num_density, j_11 and
//                        every initial value perturbed, fixed seed), three chemistry steps of
//                        1200 s (the step size carried from one to the next, as GEOS-Chem's
//                        Hstart; negatives set to 0 between them), rtol 0.5e-2, atol 1e-2
//                        molec/cm3 (in ppb at the densest cell, used for every cell: see
//                        fullchem_atol_ppb)
//
// Rows per case: the lane pool (exec::integrate_cells, Rodas3, tape and native kernels, 1 and 2
// threads), the one-cell-at-a-time Rosenbrock
// (esi::method::Integrator, Rodas3 and ROS3P, analytic Jacobian) and SUNDIALS CVODE (BDF,
// through the same Integrator surface, MethodId::CVODE_BDF) at three tolerances, so rows
// compare at equal achieved error rather than equal nominal tolerance.
//
// Columns:
//   cell-steps/s  steps (accepted + rejected, summed over cells) / wall seconds
//   us/cell/h     wall microseconds per cell per hour of model time
//   steps         per cell: mean, min, max
//   max/rms err   relative error at t1 against a per-cell reference (Rodas4, rtol 1e-10;
//                 fullchem 1e-8; on an evenly spaced subset of cells: --ref-cells) over the
//                 species whose reference value is above the case's floor; failed cells are
//                 left out (and counted)
//   x base        this row's wall time / the first lane-pool row's (or, without the lane pool,
//                 the per-cell Rodas3 row's): ratios against the peers, in-run
// Lane-pool rows are the best of 3 runs; peer rows run once.
//
// Rosenbrock rows (lane pool and per cell) use the I controller of KPP and MICM by default
// (--controller default: the Integrator's PI) and KPP's first step 1e-5 s on SuperFast and
// POLLU; fullchem starts automatic and carries the step between its 1200 s chemistry steps.
// CVODE rows run at atol = 1e-3 x the case's atol (--cvode-atol-factor), scaled with rtol: at
// the case's own atol (1e-9 ppb on SuperFast) BDF lets species far below atol (NO and OH at
// night, 1e-19 and 1e-13 ppb) go negative and diverges on 73 of 256 heterogeneous cells
// (MaxSteps; with CVODE's constraints u >= 0, --cvode-constraints, 21 cells end DtBelowMin);
// at 1e-12 ppb 13 of 4096 cells still fail at rtol 1e-4, none at tighter rtol. --native runs the per-cell peers on compiled C++ kernels
// instead of the tape interpreter.
//
// Per-cell parameters (temperature, pressure, photolysis) are set for each cell before it is
// integrated (Program::prepare with the cell's values; timed, as a chemistry model pays it).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <numbers>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "esi/core/error.hpp"
#include "esi/esm/flatten.hpp"
#include "esi/esm/load.hpp"
#include "esi/kernel/jacobian.hpp"
#include "esi/kernel/native.hpp"
#include "esi/kernel/program.hpp"
#include "esi/method/integrator.hpp"
#include "esi/method/problem.hpp"
#include "esi/exec/lane_pool.hpp"

namespace {

namespace fs = std::filesystem;
using esi::method::MethodId;
using Clock = std::chrono::steady_clock;

double cpu_seconds() { return double(std::clock()) / CLOCKS_PER_SEC; }  // process, all threads

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// ---------------------------------------------------------------------------------------------
// Cells: species-major with the cell index fastest (the lane pool's CellData layout).

struct Cells {
  std::size_t count = 0;
  std::vector<double> states;           ///< state s of cell c at [s * count + c]
  std::vector<double> cell_parameters;  ///< cell parameter k of cell c at [k * count + c]
};

/// A mechanism flattened once, with the names of its per-cell parameters.
struct Mechanism {
  std::string name;
  esi::esm::System system;
  std::vector<std::string> cell_parameter_names;  ///< flat names
  std::vector<int> cell_parameter_index;          ///< in System::parameters
  std::vector<double> parameters;                 ///< defaults, System::parameters order
  std::vector<double> initial;                    ///< default initial state, System order
};

Mechanism load_mechanism(const std::string& name, const fs::path& file,
                         const std::vector<std::string>& cell_parameters) {
  Mechanism m;
  m.name = name;
  m.system = esi::esm::flatten(esi::esm::load_resolved(file));
  for (const auto& v : m.system.parameters) {
    if (!v.default_value) throw std::runtime_error(file.string() + ": parameter without a default: " + v.name);
    m.parameters.push_back(*v.default_value);
  }
  for (const auto& v : m.system.states) {
    if (!v.default_value) throw std::runtime_error(file.string() + ": state without a default: " + v.name);
    m.initial.push_back(*v.default_value);
  }
  for (const auto& p : cell_parameters) {
    const int i = m.system.parameter_index(p);
    if (i < 0) throw std::runtime_error(file.string() + ": no parameter " + p);
    m.cell_parameter_names.push_back(p);
    m.cell_parameter_index.push_back(i);
  }
  return m;
}

int state_of(const Mechanism& m, const std::string& flat) {
  const int i = m.system.state_index(flat);
  if (i < 0) throw std::runtime_error(m.name + ": no state " + flat);
  return i;
}

/// Every cell a copy of the defaults.
Cells identical_cells(const Mechanism& m, std::size_t n) {
  Cells c;
  c.count = n;
  c.states.resize(m.initial.size() * n);
  for (std::size_t s = 0; s < m.initial.size(); ++s)
    std::fill_n(c.states.begin() + s * n, n, m.initial[s]);
  c.cell_parameters.resize(m.cell_parameter_index.size() * n);
  for (std::size_t k = 0; k < m.cell_parameter_index.size(); ++k)
    std::fill_n(c.cell_parameters.begin() + k * n, n, m.parameters[m.cell_parameter_index[k]]);
  return c;
}

/// Uniform in [0, 1) from 53 bits of a fixed-seed mt19937_64 (the same numbers on every
/// standard library, unlike std::uniform_real_distribution).
struct Uniform {
  std::mt19937_64 engine;
  explicit Uniform(std::uint64_t seed) : engine(seed) {}
  double operator()() { return double(engine() >> 11) * 0x1.0p-53; }
  double operator()(double lo, double hi) { return lo + (hi - lo) * (*this)(); }
};

// ---------------------------------------------------------------------------------------------
// One cell at a time through esi::method::Integrator (the peers and the reference).

class CellIntegrator {
 public:
  CellIntegrator(const Mechanism& m, bool native)
      : m_(m),
        rhs_(esi::kernel::compile(m.system)),
        jac_(esi::kernel::compile_jacobian(m.system)),
        rhs_ws_(rhs_.make_workspace(1)),
        jac_ws_(jac_.values.make_workspace(1)),
        p_(m.parameters),
        u_(m.initial.size()) {
    if (native) {  // compiled C++ kernels (cached); the tape stays when no compiler works
      esi::kernel::Program r = esi::kernel::with_native(rhs_), j = esi::kernel::with_native(jac_.values);
      if (r.is_native() && j.is_native()) {
        rhs_ = std::move(r);
        jac_.values = std::move(j);
        rhs_ws_ = rhs_.make_workspace(1);
        jac_ws_ = jac_.values.make_workspace(1);
      } else {
        native_status = r.is_native() ? j.native_status() : r.native_status();
      }
    }
    for (std::size_t i = 0; i < jac_.dofs.size(); ++i)
      if (jac_.dofs[i] != static_cast<int>(i))
        throw std::runtime_error(m.name + ": Jacobian rows are not the states in System order");
    problem_.size = m.initial.size();
    problem_.context = this;
    problem_.rhs = [](void* c, double t, const double* u, double* du) {
      auto* self = static_cast<CellIntegrator*>(c);
      run_one(self->rhs_, self->rhs_ws_, t, u, du, self->problem_.size);
    };
    problem_.jac_row_ptr = jac_.row_ptr;
    problem_.jac_col = jac_.col;
    problem_.jacobian = [](void* c, double t, const double* u, double* values) {
      auto* self = static_cast<CellIntegrator*>(c);
      run_one(self->jac_.values, self->jac_ws_, t, u, values, self->jac_.col.size());
    };
    for (const auto& s : m.system.states) problem_.names.push_back(s.name);
    problem_.autonomous = !rhs_.reads_time();
  }

  std::string native_status;  ///< why native kernels were asked for and not used ("" = fine)

  struct Result {
    long steps = 0;  ///< accepted + rejected
    bool ok = true;
    std::string message;
    double last_dt = 0;
  };

  /// Integrates cell c of `cells` over the chemistry steps [t0, t0 + dt_chem], ... up to t1 (one
  /// Integrator per chemistry step, the next started at the previous one's proposed step) and
  /// writes its final state into `out` (System order).
  Result run(const Cells& cells, std::size_t c, const esi::method::IntegratorOptions& options,
             double t0, double t1, double dt_chem, std::span<double> out) {
    for (std::size_t k = 0; k < m_.cell_parameter_index.size(); ++k)
      p_[m_.cell_parameter_index[k]] = cells.cell_parameters[k * cells.count + c];
    rhs_.prepare(rhs_ws_, p_);
    jac_.values.prepare(jac_ws_, p_);
    for (std::size_t s = 0; s < u_.size(); ++s) u_[s] = cells.states[s * cells.count + c];
    Result r;
    esi::method::IntegratorOptions o = options;
    for (double ta = t0; ta < t1 && r.ok;) {
      const double tb = std::min(t1, ta + dt_chem);
      esi::method::Integrator integ(problem_, o, ta, u_);
      while (integ.t() < tb) {
        const auto rc = integ.step(tb);
        if (rc != esi::method::ReturnCode::Success) {
          r.ok = false;
          r.message = std::string(esi::method::return_code_name(rc)) + ": " + integ.message();
          break;
        }
      }
      r.steps += integ.stats().accepted + integ.stats().rejected;
      std::copy(integ.u().begin(), integ.u().end(), u_.begin());
      // Negative values are set to 0 between chemistry steps (as a chemistry-transport model
      // does before handing concentrations on); CVODE's constraints also refuse a start below 0.
      if (tb < t1)
        for (double& v : u_) v = std::max(v, 0.0);
      r.last_dt = integ.dt();
      o.dt_initial = integ.dt();  // warm start of the next chemistry step
      ta = tb;
    }
    std::copy(u_.begin(), u_.end(), out.begin());
    return r;
  }

 private:
  static void run_one(const esi::kernel::Program& prog, esi::kernel::Workspace& ws, double t,
                      const double* u, double* out, std::size_t rows) {
    esi::kernel::RunArgs<double> a;
    a.u = {u, prog.state_count(), 1, 1};
    a.t = std::span<const double>(&t, 1);
    a.du = {out, rows, 1, 1};
    esi::kernel::run(prog, ws, a);
  }

  const Mechanism& m_;
  esi::kernel::Program rhs_;
  esi::kernel::JacobianProgram jac_;
  esi::kernel::Workspace rhs_ws_, jac_ws_;
  std::vector<double> p_, u_;
  esi::method::OdeProblem problem_;
};

// ---------------------------------------------------------------------------------------------
// Cases, rows and the report.

struct Case {
  std::string name;
  const Mechanism* mechanism = nullptr;
  Cells cells;
  double t0 = 0, t1 = 3600, dt_chem = 3600;  ///< chemistry steps of dt_chem from t0 to t1
  double rtol = 1e-4;
  double atol = 1e-9;
  double error_floor = 1e-6;  ///< species whose reference is at or below it are not scored
  double dt_initial = 0;      ///< first step of the Rosenbrock rows (0 = automatic)
  double reference_rtol = 1e-10;
  std::vector<std::size_t> reference_cells;
  std::vector<double> reference;  ///< reference_cells.size() x states, cell-major
};

struct Row {
  std::string label;
  double wall = 0, cpu = 0;
  long steps_total = 0, steps_min = 0, steps_max = 0;
  std::size_t failed = 0;
  double max_err = 0, rms_err = 0;
  std::string note;
  long lane_slots = 0, rhs_lane_evaluations = 0, factorizations = 0;  ///< lane pool only
  /// FNV-1a of the final states' bytes and of the per-cell step counts (lane pool only): two
  /// builds that print the same digest computed the same bits.
  std::uint64_t digest = 0;
};

struct Settings {
  std::size_t cells = 4096;
  std::size_t fullchem_cells = 64;
  std::size_t reference_cells = 64;
  std::size_t fullchem_reference_cells = 8;
  std::vector<std::string> only;  ///< case names; empty = all
  bool peers = true;
  bool native = false;  ///< per-cell peers on compiled C++ kernels instead of the tape
  std::vector<bool> pool_kernels{false, true};  ///< lane-pool rows: tape (false), native (true)
  std::vector<int> pool_threads{1, 2};
  /// Lanes per lane-pool block: 16 ran every case 10-25 % faster than 8 on the 2-core AVX-512
  /// VM (2026-12-02; two independent vectors per operation hide the LU solve's latency).
  int lanes = 16;
  /// Runs per lane-pool row: the row shows the fastest by wall time; the least CPU time of
  /// all runs is printed beside it (on a loaded machine the steadier figure for A/B rounds).
  int reps = 3;
  esi::method::ControllerKind controller = esi::method::ControllerKind::I;
  bool cvode_constraints = false;  ///< CVODE's inequality constraints u >= 0
  double cvode_atol_factor = 1e-3; ///< CVODE's atol = case atol * this * (rtol / case rtol)
  fs::path corpus;
};

/// Errors over the reference cells that did not fail (`failed`: per cell of the case, or empty).
void score(const Case& k, std::span<const double> finals_cell_major, Row& row,
           const std::vector<char>& failed = {}) {
  const std::size_t n = k.mechanism->initial.size();
  double max_err = 0, sum2 = 0;
  std::size_t count = 0;
  for (std::size_t r = 0; r < k.reference_cells.size(); ++r) {
    if (!failed.empty() && failed[k.reference_cells[r]]) continue;
    for (std::size_t s = 0; s < n; ++s) {
      const double ref = k.reference[r * n + s];
      if (!(std::abs(ref) > k.error_floor)) continue;
      const double e = std::abs(finals_cell_major[r * n + s] - ref) / std::abs(ref);
      max_err = std::max(max_err, std::isfinite(e) ? e : std::numeric_limits<double>::infinity());
      sum2 += e * e;
      ++count;
    }
  }
  row.max_err = max_err;
  row.rms_err = count ? std::sqrt(sum2 / double(count)) : 0;
}

/// Every cell through Integrator with `method` at (rtol, atol); scored on the reference cells.
Row run_per_cell(const Case& k, const Settings& s, MethodId method, double rtol, double atol,
                 const std::string& label) {
  CellIntegrator ci(*k.mechanism, s.native);
  if (!ci.native_status.empty()) std::printf("(native kernels unavailable, tape used: %s)\n", ci.native_status.c_str());
  esi::method::IntegratorOptions o;
  o.method = method;
  o.rtol = rtol;
  o.atol = atol;
  o.max_steps = 50000;
  if (method == MethodId::CVODE_BDF) {
    if (s.cvode_constraints) o.nonnegative = esi::method::DomainPolicy::Reject;
  } else {
    o.controller = s.controller;
    o.dt_initial = k.dt_initial;
  }
  const std::size_t n = k.mechanism->initial.size();
  std::vector<double> finals(n * k.cells.count);
  std::vector<char> failed(k.cells.count, 0);
  Row row;
  row.label = label;
  row.steps_min = std::numeric_limits<long>::max();
  const auto start = Clock::now();
  const double cpu_start = cpu_seconds();
  for (std::size_t c = 0; c < k.cells.count; ++c) {
    const auto r = ci.run(k.cells, c, o, k.t0, k.t1, k.dt_chem, std::span<double>(finals).subspan(c * n, n));
    row.steps_total += r.steps;
    row.steps_min = std::min(row.steps_min, r.steps);
    row.steps_max = std::max(row.steps_max, r.steps);
    if (!r.ok) failed[c] = 1;
    if (!r.ok && row.failed++ == 0) row.note = "cell " + std::to_string(c) + ": " + r.message;
  }
  row.wall = seconds_since(start);
  row.cpu = cpu_seconds() - cpu_start;
  std::vector<double> scored;
  for (std::size_t c : k.reference_cells)
    scored.insert(scored.end(), finals.begin() + c * n, finals.begin() + (c + 1) * n);
  score(k, scored, row, failed);
  return row;
}

void compute_reference(Case& k) {
  CellIntegrator ci(*k.mechanism, false);
  esi::method::IntegratorOptions o;
  o.method = MethodId::Rodas4;
  o.rtol = k.reference_rtol;
  o.atol = k.atol * 1e-6;
  o.max_steps = 2000000;
  const std::size_t n = k.mechanism->initial.size();
  k.reference.assign(k.reference_cells.size() * n, 0);
  for (std::size_t r = 0; r < k.reference_cells.size(); ++r) {
    const auto res = ci.run(k.cells, k.reference_cells[r], o, k.t0, k.t1, k.t1 - k.t0,
                            std::span<double>(k.reference).subspan(r * n, n));
    if (!res.ok)
      throw std::runtime_error(k.name + ": reference failed on cell " +
                               std::to_string(k.reference_cells[r]) + ": " + res.message);
  }
}

Row run_lane_pool(const Case& k, const std::shared_ptr<const esi::exec::CellModel>& model,
                  MethodId method, int threads, int lanes, esi::method::ControllerKind controller,
                  const std::string& label) {
  const Mechanism& m = *k.mechanism;
  const std::size_t n = m.initial.size();
  std::vector<double> states = k.cells.states;
  // The non-cell parameters keep their defaults.
  std::vector<double> parameters = m.parameters;
  std::vector<double> step_size(k.cells.count, 0.0);
  std::vector<std::int32_t> steps(k.cells.count, 0), chem_steps(k.cells.count, 0);
  esi::exec::LanePoolOptions o;
  o.method = method;
  o.rtol = k.rtol;
  o.atol = {k.atol};
  o.threads = threads;
  o.lanes = lanes;
  // Several shards per thread (results do not depend on the shard composition).
  o.shard_cells = std::max<std::size_t>(8, std::min<std::size_t>(256, k.cells.count / 8));
  o.max_steps = 50000;
  o.controller = controller;
  std::fill(step_size.begin(), step_size.end(), k.dt_initial);
  esi::exec::CellData d;
  d.cells = k.cells.count;
  d.states = states;
  d.cell_parameters = k.cells.cell_parameters;
  d.parameters = parameters;
  d.step_size = step_size;
  Row row;
  row.label = label;
  const auto start = Clock::now();
  const double cpu_start = cpu_seconds();
  for (double ta = k.t0; ta < k.t1;) {
    const double tb = std::min(k.t1, ta + k.dt_chem);
    const auto st = esi::exec::integrate_cells(*model, d, ta, tb, o, chem_steps);
    row.lane_slots += st.lane_slots;
    row.rhs_lane_evaluations += st.rhs_evaluations;
    row.factorizations += st.factorizations;
    for (std::size_t c = 0; c < k.cells.count; ++c) steps[c] += chem_steps[c];
    if (st.failed_cells && row.failed == 0) row.note = st.message;
    row.failed = std::max(row.failed, st.failed_cells);
    ta = tb;
    if (ta < k.t1)
      for (double& v : states) v = std::max(v, 0.0);  // as CellIntegrator::run does
  }
  row.wall = seconds_since(start);
  row.cpu = cpu_seconds() - cpu_start;
  row.steps_min = *std::min_element(steps.begin(), steps.end());
  row.steps_max = *std::max_element(steps.begin(), steps.end());
  for (auto s : steps) row.steps_total += s;
  std::uint64_t h = 1469598103934665603ull;
  auto mix = [&h](const void* p, std::size_t bytes) {
    for (std::size_t i = 0; i < bytes; ++i) h = (h ^ static_cast<const unsigned char*>(p)[i]) * 1099511628211ull;
  };
  mix(states.data(), states.size() * sizeof(double));
  mix(steps.data(), steps.size() * sizeof(std::int32_t));
  row.digest = h;
  std::vector<double> scored;
  for (std::size_t c : k.reference_cells)
    for (std::size_t s = 0; s < n; ++s) scored.push_back(states[s * k.cells.count + c]);
  score(k, scored, row);
  return row;
}

void print_header(const Case& k, const std::string& extra) {
  std::printf("\n== %s: %zu cells x %zu states, t %g..%g s in %g s chemistry steps, rtol %g atol %g, "
              "error over %zu reference cells (Rodas4 rtol %g), species > %g%s\n",
              k.name.c_str(), k.cells.count, k.mechanism->initial.size(), k.t0, k.t1, k.dt_chem,
              k.rtol, k.atol, k.reference_cells.size(), k.reference_rtol, k.error_floor, extra.c_str());
  std::printf("%-34s %9s %7s %12s %12s %8s %6s %6s %9s %9s %7s\n", "row", "wall s", "cpu s", "cell-steps/s",
              "us/cell/h", "steps", "min", "max", "max err", "rms err", "x base");
}

void print_row(const Case& k, const Row& r, double base_wall) {
  const double hours = (k.t1 - k.t0) / 3600.0;
  const double n = double(k.cells.count);
  std::printf("%-34s %9.3f %7.3f %12.4g %12.4g %8.1f %6ld %6ld %9.2e %9.2e %7.3f", r.label.c_str(), r.wall, r.cpu,
              double(r.steps_total) / r.wall, r.wall * 1e6 / n / hours, double(r.steps_total) / n,
              r.steps_min, r.steps_max, r.max_err, r.rms_err, base_wall > 0 ? r.wall / base_wall : 0.0);
  if (r.failed) std::printf("  FAILED %zu cells, errors over the others (%s)", r.failed, r.note.c_str());
  std::printf("\n");
  std::fflush(stdout);
}

/// The rows of one case. Base for ratios: the lane pool on one thread when present, else the
/// one-cell-at-a-time Rodas3.
void run_case(Case& k, const Settings& s, const std::vector<double>& cvode_rtols) {
  const auto ref_start = Clock::now();
  compute_reference(k);
  const double ref_wall = seconds_since(ref_start);
  char extra[300];
  std::snprintf(extra, sizeof extra, "\n   Rosenbrock rows: %s controller, first step %s; CVODE rows: atol = %g x (rtol / %g)%s; "
                "reference took %.2f s",
                s.controller == esi::method::ControllerKind::I ? "I (KPP/MICM parity)" : "default PI",
                k.dt_initial > 0 ? std::to_string(k.dt_initial).c_str() : "automatic",
                k.atol * s.cvode_atol_factor, k.rtol, s.cvode_constraints ? ", constraints u >= 0" : "", ref_wall);
  print_header(k, extra);
  double base = 0;
  for (const bool native : s.pool_kernels) {
    std::shared_ptr<const esi::exec::CellModel> model;
    try {
      esi::exec::CellModelOptions mo;
      mo.cell_parameters = k.mechanism->cell_parameter_names;
      mo.native = native;
      mo.native_lanes = s.lanes;
      model = esi::exec::CellModel::build(k.mechanism->system, mo);
      std::printf("lane pool model: %s; %d lanes per block\n", model->describe().c_str(), s.lanes);
    } catch (const esi::Error& e) {
      std::printf("lane pool: CellModel::build refused: %s\n", e.what());
    }
    if (!model) continue;
    double one_thread = 0;
    for (int threads : s.pool_threads) {
      // Best of 3 (these rows are short, and the VM is shared).
      Row r;
      double least_cpu = 0;
      for (int rep = 0; rep < s.reps; ++rep) {
        Row t = run_lane_pool(k, model, MethodId::Rodas3, threads, s.lanes, s.controller,
                              std::string("lane pool ") + (native ? "native " : "") + "Rodas3, " +
                                  std::to_string(threads) + " thread" + (threads > 1 ? "s" : ""));
        if (rep == 0 || t.wall < r.wall) r = t;
        if (rep == 0 || t.cpu < least_cpu) least_cpu = t.cpu;
      }
      if (base == 0) base = r.wall;
      if (threads == 1) one_thread = r.wall;
      print_row(k, r, base);
      std::printf("%-34s least CPU time of %d runs %.4f s (%.4g cell-steps per CPU second)\n", "", s.reps,
                  least_cpu, double(r.steps_total) / least_cpu);
      if (threads == 1)
        std::printf("%-34s lane slots used %.1f %% (steps / lane-steps, padding included); %.2f RHS and %.2f LU "
                    "per cell-step; digest %016llx\n", "", 100.0 * double(r.steps_total) / double(std::max(1L, r.lane_slots)),
                    double(r.rhs_lane_evaluations) / double(std::max(1L, r.steps_total)),
                    double(r.factorizations) / double(std::max(1L, r.steps_total)),
                    static_cast<unsigned long long>(r.digest));
      if (threads == 2 && one_thread > 0)
        std::printf("%-34s two-thread efficiency %.0f %% (1-thread wall / (2 x 2-thread wall)); digest %016llx\n",
                    "", 100.0 * one_thread / (2.0 * r.wall), static_cast<unsigned long long>(r.digest));
      else if (threads == 2)  // --pool-threads 2 alone: no 1-thread row to compare with
        std::printf("%-34s two-thread efficiency: run with 1 thread too; digest %016llx\n", "",
                    static_cast<unsigned long long>(r.digest));
    }
  }
  if (!s.peers) return;
  for (MethodId m : {MethodId::Rodas3, MethodId::ROS3P}) {
    Row r = run_per_cell(k, s, m, k.rtol, k.atol,
                         std::string(s.native ? "per cell native " : "per cell ") + std::string(esi::method::method_info(m).name));
    if (base == 0) base = r.wall;
    print_row(k, r, base);
  }
  if (!esi::method::method_available(MethodId::CVODE_BDF)) {
    std::printf("%-34s (not in this build: no SUNDIALS)\n", "CVODE_BDF");
    return;
  }
  for (double rtol : cvode_rtols) {
    char label[64];
    std::snprintf(label, sizeof label, "CVODE BDF%s rtol %g", s.native ? " native" : "", rtol);
    Row r = run_per_cell(k, s, MethodId::CVODE_BDF, rtol, k.atol * s.cvode_atol_factor * (rtol / k.rtol), label);
    print_row(k, r, base);
  }
}

std::vector<std::size_t> spaced(std::size_t cells, std::size_t want) {
  std::vector<std::size_t> out;
  want = std::min(want, cells);
  for (std::size_t i = 0; i < want; ++i) out.push_back(i * cells / want);
  return out;
}

const std::vector<std::string> kSuperFastCellParameters = {
    "SuperFast.T",      "SuperFast.P",     "SuperFast.jNO2",    "SuperFast.jH2COa",
    "SuperFast.jH2COb", "SuperFast.jH2O2", "SuperFast.jCH3OOH", "SuperFast.jO32OH"};

Cells superfast_hetero_cells(const Mechanism& m, std::size_t n) {
  Cells c = identical_cells(m, n);
  Uniform u(20261201);
  const int no = state_of(m, "SuperFast.NO"), no2 = state_of(m, "SuperFast.NO2");
  for (std::size_t i = 0; i < n; ++i) {
    c.cell_parameters[0 * n + i] = u(220.0, 300.0);  // T
    const bool dark = u() < 0.3;
    const double scale = dark ? 0.0 : std::sin(std::numbers::pi * u());
    for (std::size_t k = 2; k < kSuperFastCellParameters.size(); ++k) c.cell_parameters[k * n + i] *= scale;
    c.states[no * n + i] *= std::pow(10.0, u(0.0, 2.0));
    c.states[no2 * n + i] *= std::pow(10.0, u(0.0, 2.0));
  }
  return c;
}

/// atol 1e-2 molec/cm3 in ppb at the cell's air density (num_density in mol/m3): the largest
/// density of the cells gives the smallest (strictest) value, used for every cell.
double fullchem_atol_ppb(double num_density_mol_m3) {
  const double air_molec_cm3 = num_density_mol_m3 * 6.02214076e23 * 1e-6;
  return 1e-2 / air_molec_cm3 * 1e9;
}

Cells fullchem_cells(const Mechanism& m, std::size_t n) {
  // Cell parameters: T, num_density, j_11 (the ones the document's own tests vary).
  Cells c = identical_cells(m, n);
  Uniform u(20261202);
  for (std::size_t i = 0; i < n; ++i) {
    const double T = u(280.0, 300.0);
    c.cell_parameters[0 * n + i] = T;
    c.cell_parameters[1 * n + i] = 101325.0 / (8.314462618 * T) * u(0.9, 1.0);  // mol/m3
    c.cell_parameters[2 * n + i] = u() < 0.3 ? 0.0 : 0.0149 * std::sin(std::numbers::pi * u());
    for (std::size_t s = 0; s < m.initial.size(); ++s)
      c.states[s * n + i] *= std::pow(10.0, u(-0.3, 0.3));
  }
  return c;
}

bool wanted(const Settings& s, const std::string& name) {
  return s.only.empty() || std::find(s.only.begin(), s.only.end(), name) != s.only.end();
}

int usage() {
  std::fprintf(stderr,
               "usage: esi_bench_chem [--cells N] [--fullchem-cells N] [--ref-cells N]\n"
               "                      [--fullchem-ref-cells N] [--case NAME]... [--no-peers]\n"
               "                      [--native] [--controller I|default] [--cvode-atol-factor F]\n"
               "                      [--cvode-constraints] [--corpus DIR]\n"
               "                      [--pool-kernels tape|native|both] [--pool-threads N]\n"
               "                      [--lanes L] [--reps N]\n"
               "cases: superfast_identical superfast_hetero pollu fullchem (default: all)\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Settings s;
  s.corpus = std::getenv("ESI_CORPUS") ? fs::path(std::getenv("ESI_CORPUS")) : fs::path(ESI_DEFAULT_CORPUS);
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
      return argv[++i];
    };
    try {
      if (a == "--cells") s.cells = std::stoul(value());
      else if (a == "--fullchem-cells") s.fullchem_cells = std::stoul(value());
      else if (a == "--ref-cells") s.reference_cells = std::stoul(value());
      else if (a == "--fullchem-ref-cells") s.fullchem_reference_cells = std::stoul(value());
      else if (a == "--case") s.only.push_back(value());
      else if (a == "--no-peers") s.peers = false;
      else if (a == "--native") s.native = true;
      else if (a == "--pool-kernels") {  // for profiling one kind of row
        const std::string v = value();
        s.pool_kernels.clear();
        if (v != "native") s.pool_kernels.push_back(false);
        if (v != "tape") s.pool_kernels.push_back(true);
      } else if (a == "--pool-threads") s.pool_threads = {std::stoi(value())};
      else if (a == "--lanes") s.lanes = std::stoi(value());
      else if (a == "--reps") s.reps = std::max(1, std::stoi(value()));
      else if (a == "--cvode-constraints") s.cvode_constraints = true;
      else if (a == "--cvode-atol-factor") s.cvode_atol_factor = std::stod(value());
      else if (a == "--controller") {
        const std::string c = value();
        if (c == "I") s.controller = esi::method::ControllerKind::I;
        else if (c == "default") s.controller = esi::method::ControllerKind::Default;
        else return usage();
      }
      else if (a == "--corpus") s.corpus = value();
      else return usage();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "esi_bench_chem: %s\n", e.what());
      return usage();
    }
  }
  if (s.cells == 0 || s.fullchem_cells == 0 || s.reference_cells == 0 || s.fullchem_reference_cells == 0) {
    std::fprintf(stderr, "esi_bench_chem: cell counts must be positive\n");
    return 2;
  }
  const fs::path gaschem = s.corpus / "EarthSciModels/components/gaschem";
  std::printf("build: %s\n", ESI_BUILD_DESCRIPTION);  // the tables below hold for this build
  try {
    if (wanted(s, "superfast_identical") || wanted(s, "superfast_hetero")) {
      const Mechanism sf = load_mechanism("SuperFast", gaschem / "superfast.esm", kSuperFastCellParameters);
      for (const bool hetero : {false, true}) {
        Case k;
        k.name = hetero ? "superfast_hetero" : "superfast_identical";
        if (!wanted(s, k.name)) continue;
        k.mechanism = &sf;
        k.cells = hetero ? superfast_hetero_cells(sf, s.cells) : identical_cells(sf, s.cells);
        k.rtol = 1e-4;
        k.atol = 1e-9;
        k.error_floor = 1e-6;
        k.dt_initial = 1e-5;  // KPP's Hstart (anchors-heavy §2.2)
        k.reference_cells = spaced(s.cells, s.reference_cells);
        run_case(k, s, {1e-4, 1e-5, 1e-6});
      }
    }
    if (wanted(s, "pollu")) {
      const Mechanism pollu = load_mechanism("Pollu", gaschem / "pollu.esm", {});
      Case k;
      k.name = "pollu";
      k.mechanism = &pollu;
      k.cells = identical_cells(pollu, s.cells);
      k.rtol = 1e-3;
      k.atol = 1e-8;
      k.error_floor = 1e-7;
      k.dt_initial = 1e-5;
      k.reference_cells = spaced(s.cells, s.reference_cells);
      run_case(k, s, {1e-3, 1e-4, 1e-5});
    }
    if (wanted(s, "fullchem")) {
      const Mechanism fc = load_mechanism("fullchem", gaschem / "geoschem_fullchem.esm",
                                          {"GEOSChemGasPhase.T", "GEOSChemGasPhase.num_density",
                                           "GEOSChemGasPhase.j_11"});
      Case k;
      k.name = "fullchem";
      k.mechanism = &fc;
      k.cells = fullchem_cells(fc, s.fullchem_cells);
      k.t1 = 3600;
      k.dt_chem = 1200;
      k.rtol = 0.5e-2;
      k.reference_rtol = 1e-8;  // anchors-heavy §1.2 (Rodas4 at rtol 1e-8)
      double max_density = 0;
      for (std::size_t c = 0; c < k.cells.count; ++c) max_density = std::max(max_density, k.cells.cell_parameters[k.cells.count + c]);
      k.atol = fullchem_atol_ppb(max_density);
      k.error_floor = 1e4 * k.atol / 1e-2;  // 1e4 molec/cm3, anchors-heavy §1.3
      k.reference_cells = spaced(k.cells.count, s.fullchem_reference_cells);
      run_case(k, s, {0.5e-2, 0.5e-3, 0.5e-4});
    }
  } catch (const esi::Error& e) {
    std::fprintf(stderr, "esi_bench_chem: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "esi_bench_chem: %s\n", e.what());
    return 1;
  }
  return 0;
}
