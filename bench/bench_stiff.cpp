// Whole stiff integrations of three problems of the Test Set for IVP Solvers (POLLU, HIRES,
// ROBER; documents in tests/problems/) by our Integrator (Rodas5P, Rodas4) against SUNDIALS
// 6.4.1: CVODE (variable-order BDF, Newton with a dense direct solver) and ARKODE's ARKStep
// (its default implicit DIRK, same linear solver). All three integrate the same compiled kernel
// Program as right-hand side and take the same analytic Jacobian (the compiled JacobianProgram,
// CSR values scattered into a SUNDenseMatrix for SUNDIALS), at the same tolerances: rtol 1e-8
// and a per-problem scalar atol (the ones tests/problems/test_problem_solutions.cpp uses), from
// the test set's t0 to its t_end, one full integration per iteration (solver setup included).
// Rows under "<problem>_native" run every solver on the native (compiled C++) kernels instead of
// the tape; the bench then measures the integrators more than the interpreter.
//
// Counters:
//   steps        accepted steps (ours: + rejected in `rejected`; SUNDIALS: internal steps)
//   rhs, jac     calls of the compiled RHS and Jacobian programs (counted at the callback, so
//                the three solvers are counted the same way)
//   max_rel      largest |y_i - ref_i| / |ref_i| at t_end over components with |ref_i| above
//                1e3 * atol (the rest are below what the tolerance controls), against the test
//                set's published reference solution (tests/problems/reference.json)
//   x_cvode      CPU time per integration (this thread's, best over the iterations) / CVODE's
//                on the same problem (best of 3, measured in the same run). Thread CPU time, not
//                wall time, so a loaded machine skews the ratio less.
//
// Needs esi::exec (which brings esi::method) and SUNDIALS: built only when ESI_BENCH_STIFF is
// defined by CMake. The problem files are located relative to this source file.
#if defined(ESI_BENCH_STIFF)

#include <algorithm>
#include <ctime>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include <arkode/arkode_arkstep.h>
#include <cvode/cvode.h>
#include <nvector/nvector_serial.h>
#include <sunlinsol/sunlinsol_dense.h>
#include <sunmatrix/sunmatrix_dense.h>

#include "../tests/problems/compiled_problem.hpp"
#include "../tests/problems/problems.hpp"
#include "esi/method/integrator.hpp"

namespace {

namespace fs = std::filesystem;
using esi::problems::CompiledProblem;
using esi::problems::Reference;

constexpr double kRtol = 1e-8;
/// Per-problem atol: below the smallest reference component resolved relatively (see
/// test_problem_solutions.cpp): ROBER's y2 ends at 8e-14, HIRES's smallest is 6e-5, POLLU's O3P
/// 4e-9 (O1D at 4e-18 is quasi-steady and follows O3).
const std::map<std::string, double> kAtol{{"rober", 1e-20}, {"hires", 1e-14}, {"pollu", 1e-17}};

fs::path problems_dir() { return fs::path(__FILE__).parent_path().parent_path() / "tests/problems"; }

struct Problem {
  Reference ref;
  std::unique_ptr<CompiledProblem> cp;
  std::vector<double> jac_values;  // scratch for the CSR values (SUNDIALS Jacobian callback)
  std::string error;
};

Problem& problem(const std::string& key) {
  static std::map<std::string, Problem> cache;
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  Problem p;
  // "pollu_native": the same problem with native kernels for every solver.
  const bool native = key.ends_with("_native");
  const std::string base = native ? key.substr(0, key.size() - 7) : key;
  try {
    p.ref = esi::problems::load_references(problems_dir()).at(base);
    p.cp = CompiledProblem::load(p.ref.file, p.ref.states);
    if (native)
      if (std::string why = p.cp->use_native(); !why.empty()) p.error = why;
    p.jac_values.resize(p.cp->jacobian_program().col.size());
  } catch (const std::exception& e) {
    p.error = std::string("cannot set up ") + key + ": " + e.what();
  }
  return cache.emplace(key, std::move(p)).first->second;
}

/// Largest relative error at t_end over components the tolerance resolves (System-order y).
double max_rel_error(const Problem& p, const double* y_system, double atol) {
  const auto y = p.cp->from_system(std::vector<double>(y_system, y_system + p.cp->size()));
  double worst = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    const double want = p.ref.reference[i];
    if (std::fabs(want) > 1e3 * atol) worst = std::max(worst, std::fabs(y[i] - want) / std::fabs(want));
  }
  return worst;
}

struct Outcome {
  long steps = 0, rejected = 0;
  double max_rel = 0;
  std::string error;
};

// ---- our Integrator ----------------------------------------------------------------------

Outcome solve_ours(Problem& p, esi::method::MethodId method) {
  using namespace esi::method;
  const OdeProblem ode = p.cp->ode_problem();
  IntegratorOptions opt;
  opt.method = method;
  opt.rtol = kRtol;
  opt.atol = kAtol.at(p.ref.key);
  Integrator integ(ode, opt, p.ref.t0, p.cp->to_system(p.ref.y0));
  Outcome out;
  while (integ.t() < p.ref.t_end) {
    const ReturnCode rc = integ.step(p.ref.t_end);
    if (rc != ReturnCode::Success) {
      out.error = std::string(return_code_name(rc)) + ": " + integ.message();
      return out;
    }
  }
  out.steps = integ.stats().accepted;
  out.rejected = integ.stats().rejected;
  out.max_rel = max_rel_error(p, integ.u().data(), opt.atol);
  return out;
}

// ---- SUNDIALS ------------------------------------------------------------------------------

int sundials_rhs(realtype t, N_Vector y, N_Vector ydot, void* user) {
  auto* p = static_cast<Problem*>(user);
  p->cp->rhs(t, N_VGetArrayPointer(y), N_VGetArrayPointer(ydot));
  return 0;
}

int sundials_jac(realtype t, N_Vector y, N_Vector /*fy*/, SUNMatrix J, void* user, N_Vector,
                 N_Vector, N_Vector) {
  auto* p = static_cast<Problem*>(user);
  p->cp->jacobian(t, N_VGetArrayPointer(y), p->jac_values.data());
  SUNMatZero(J);
  const auto& jac = p->cp->jacobian_program();
  for (std::size_t r = 0; r + 1 < jac.row_ptr.size(); ++r)
    for (int k = jac.row_ptr[r]; k < jac.row_ptr[r + 1]; ++k)
      SM_ELEMENT_D(J, static_cast<sunindextype>(r), jac.col[k]) = p->jac_values[k];
  return 0;
}

/// One solver's worth of SUNDIALS objects, freed in reverse order.
struct SunObjects {
  SUNContext ctx = nullptr;
  N_Vector y = nullptr;
  SUNMatrix A = nullptr;
  SUNLinearSolver LS = nullptr;
  void* mem = nullptr;
  void (*free_mem)(void**) = nullptr;

  explicit SunObjects(Problem& p) {
    SUNContext_Create(nullptr, &ctx);
    const auto n = static_cast<sunindextype>(p.cp->size());
    y = N_VNew_Serial(n, ctx);
    const auto u0 = p.cp->to_system(p.ref.y0);
    std::copy(u0.begin(), u0.end(), N_VGetArrayPointer(y));
    A = SUNDenseMatrix(n, n, ctx);
    LS = SUNLinSol_Dense(y, A, ctx);
  }
  ~SunObjects() {
    if (mem && free_mem) free_mem(&mem);
    if (LS) SUNLinSolFree(LS);
    if (A) SUNMatDestroy(A);
    if (y) N_VDestroy(y);
    if (ctx) SUNContext_Free(&ctx);
  }
};

Outcome solve_cvode(Problem& p) {
  SunObjects s(p);
  const double atol = kAtol.at(p.ref.key);
  s.mem = CVodeCreate(CV_BDF, s.ctx);
  s.free_mem = CVodeFree;
  Outcome out;
  if (CVodeInit(s.mem, sundials_rhs, p.ref.t0, s.y) < 0 ||
      CVodeSStolerances(s.mem, kRtol, atol) < 0 || CVodeSetUserData(s.mem, &p) < 0 ||
      CVodeSetLinearSolver(s.mem, s.LS, s.A) < 0 || CVodeSetJacFn(s.mem, sundials_jac) < 0 ||
      CVodeSetMaxNumSteps(s.mem, 10'000'000) < 0 || CVodeSetStopTime(s.mem, p.ref.t_end) < 0) {
    out.error = "CVODE setup failed";
    return out;
  }
  realtype t = p.ref.t0;
  const int flag = CVode(s.mem, p.ref.t_end, s.y, &t, CV_NORMAL);
  if (flag < 0) {
    out.error = "CVode returned " + std::to_string(flag);
    return out;
  }
  long steps = 0, fails = 0;
  CVodeGetNumSteps(s.mem, &steps);
  CVodeGetNumErrTestFails(s.mem, &fails);
  out.steps = steps;
  out.rejected = fails;
  out.max_rel = max_rel_error(p, N_VGetArrayPointer(s.y), atol);
  return out;
}

Outcome solve_arkode(Problem& p) {
  SunObjects s(p);
  const double atol = kAtol.at(p.ref.key);
  // Implicit only (fe = NULL): ARKStep's default DIRK for the order it picks (4).
  s.mem = ARKStepCreate(nullptr, sundials_rhs, p.ref.t0, s.y, s.ctx);
  s.free_mem = ARKStepFree;
  Outcome out;
  if (!s.mem || ARKStepSStolerances(s.mem, kRtol, atol) < 0 ||
      ARKStepSetUserData(s.mem, &p) < 0 || ARKStepSetLinearSolver(s.mem, s.LS, s.A) < 0 ||
      ARKStepSetJacFn(s.mem, sundials_jac) < 0 ||
      ARKStepSetMaxNumSteps(s.mem, 10'000'000) < 0 ||
      ARKStepSetStopTime(s.mem, p.ref.t_end) < 0) {
    out.error = "ARKStep setup failed";
    return out;
  }
  realtype t = p.ref.t0;
  const int flag = ARKStepEvolve(s.mem, p.ref.t_end, s.y, &t, ARK_NORMAL);
  if (flag < 0) {
    out.error = "ARKStepEvolve returned " + std::to_string(flag);
    return out;
  }
  long steps = 0, fails = 0;
  ARKStepGetNumSteps(s.mem, &steps);
  ARKStepGetNumErrTestFails(s.mem, &fails);
  out.steps = steps;
  out.rejected = fails;
  out.max_rel = max_rel_error(p, N_VGetArrayPointer(s.y), atol);
  return out;
}

// ---- timing and the benchmark bodies -------------------------------------------------------

/// This thread's CPU time [s].
double thread_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

enum class Solver { Rodas5P, Rodas4, CVODE, ARKODE };

Outcome solve(Solver which, Problem& p) {
  switch (which) {
    case Solver::Rodas5P: return solve_ours(p, esi::method::MethodId::Rodas5P);
    case Solver::Rodas4: return solve_ours(p, esi::method::MethodId::Rodas4);
    case Solver::CVODE: return solve_cvode(p);
    case Solver::ARKODE: return solve_arkode(p);
  }
  return {};
}

/// CVODE's time per integration [s] on `key`, best of 3, measured once per run.
double cvode_seconds(const std::string& key) {
  static std::map<std::string, double> cache;
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  Problem& p = problem(key);
  double best = 1e300;
  for (int rep = 0; rep < 3 && p.error.empty(); ++rep) {
    const double t0 = thread_seconds();
    benchmark::DoNotOptimize(solve_cvode(p));
    best = std::min(best, thread_seconds() - t0);
  }
  return cache[key] = best;
}

void BM_Stiff(benchmark::State& state, const std::string& key, Solver which) {
  Problem& p = problem(key);
  if (!p.error.empty()) {
    state.SkipWithError(p.error.c_str());
    return;
  }
  const double cvode = cvode_seconds(key);
  Outcome last;
  long rhs0 = 0, jac0 = 0;
  double best = 1e300;
  for (auto _ : state) {
    rhs0 = p.cp->rhs_calls;
    jac0 = p.cp->jacobian_calls;
    const double t0 = thread_seconds();
    last = solve(which, p);
    best = std::min(best, thread_seconds() - t0);
    if (!last.error.empty()) {
      state.SkipWithError(last.error.c_str());
      return;
    }
  }
  state.counters["steps"] = static_cast<double>(last.steps);
  state.counters["rejected"] = static_cast<double>(last.rejected);
  state.counters["rhs"] = static_cast<double>(p.cp->rhs_calls - rhs0);
  state.counters["jac"] = static_cast<double>(p.cp->jacobian_calls - jac0);
  state.counters["max_rel"] = last.max_rel;
  state.counters["x_cvode"] = best / cvode;
}

void register_all() {
  for (const char* key : {"pollu", "hires", "rober", "pollu_native", "hires_native", "rober_native"}) {
    for (auto [name, which] : {std::pair{"Rodas5P", Solver::Rodas5P}, std::pair{"Rodas4", Solver::Rodas4},
                               std::pair{"CVODE_BDF", Solver::CVODE},
                               std::pair{"ARKODE_DIRK", Solver::ARKODE}}) {
      benchmark::RegisterBenchmark((std::string("Stiff/") + key + "/" + name).c_str(), BM_Stiff,
                                   std::string(key), which)
          ->Unit(benchmark::kMillisecond);
    }
  }
}

const int registered = (register_all(), 0);

}  // namespace

#endif  // ESI_BENCH_STIFF
