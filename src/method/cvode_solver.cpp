// CVODE_BDF: SUNDIALS' CVODE (variable-order, variable-step BDF with Newton iteration) behind
// the Integrator's step / interpolate / restart surface.
//
// Each step(t_limit) is one CVode call in CV_ONE_STEP mode with the stop time at t_limit, so a
// call takes exactly one internal step and never passes t_limit (CVODE shortens the step and
// interpolates onto the stop time, CV_TSTOP_RETURN). Dense output inside the last step is
// CVODE's own Nordsieck interpolant (CVodeGetDky), so events and output times are found by the
// same driver code as for every other method. A restart (event, parameter change) is a
// CVodeReInit: order 1 and CVODE's starting step, as after any discontinuity.
//
// The Newton systems use our analytic CSR Jacobian: scattered into a SUNDenseMatrix (dense LU)
// for n <= kDenseLimit, else into a CSR SUNSparseMatrix whose pattern is ours plus the diagonal
// (KLU; its symbolic analysis is reused by every refactorization). Without an analytic
// Jacobian, CVODE forms a dense one by differences. The right-hand side and Jacobian wrappers
// report a non-finite value as a recoverable failure, so CVODE retries with a smaller step and
// finally reports it instead of stepping on NaNs.
//
// Options map onto CVODE's: rtol / atol (scalar), dt_initial, dt_min, dt_max; nonnegative
// (Reject and Clip alike) becomes CVODE's inequality constraints u_i >= 0 (CVODE shrinks a
// step that would leave the domain; it never clips). The controller choice and check_stages
// do not apply; fixed steps (adaptive = false) are refused.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "method/stepper.hpp"
#include "method/support.hpp"

#if ESI_HAVE_SUNDIALS
#include <cvode/cvode.h>
#include <nvector/nvector_serial.h>
#include <sundials/sundials_context.h>
#include <sunlinsol/sunlinsol_dense.h>
#include <sunmatrix/sunmatrix_dense.h>
#if ESI_HAVE_SUNDIALS_KLU
#include <sunlinsol/sunlinsol_klu.h>
#include <sunmatrix/sunmatrix_sparse.h>
#endif
#endif

namespace esi::method::detail {

#if ESI_HAVE_SUNDIALS
namespace {

/// CVODE's name of a return flag ("CV_ERR_FAILURE"); CVODE mallocs it, the caller frees it.
std::string flag_name(int flag) {
  char* name = CVodeGetReturnFlagName(flag);
  std::string out = name ? name : "CV_UNKNOWN";
  std::free(name);
  return out;
}

bool all_finite(const double* v, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    if (!std::isfinite(v[i])) return false;
  return true;
}

/// Our CSR pattern with every diagonal entry added (CVODE forms I - gamma J in place), and
/// where each of our nonzeros lands in it.
struct SparsePattern {
  std::vector<sunindextype> row_ptr, col;
  std::vector<std::size_t> slot_of_value;  // our nonzero k -> index into the merged values
};

SparsePattern with_diagonal(const OdeProblem& p) {
  SparsePattern s;
  const std::size_t n = p.size;
  s.row_ptr.push_back(0);
  s.slot_of_value.resize(p.jac_col.size());
  for (std::size_t i = 0; i < n; ++i) {
    bool diagonal_done = false;
    for (int k = p.jac_row_ptr[i]; k < p.jac_row_ptr[i + 1]; ++k) {
      const auto c = static_cast<std::size_t>(p.jac_col[std::size_t(k)]);
      if (!diagonal_done && c >= i) {
        if (c > i) s.col.push_back(sunindextype(i));
        diagonal_done = true;
      }
      s.slot_of_value[std::size_t(k)] = s.col.size();
      s.col.push_back(sunindextype(c));
    }
    if (!diagonal_done) s.col.push_back(sunindextype(i));
    s.row_ptr.push_back(sunindextype(s.col.size()));
  }
  return s;
}

class CvodeSolver final : public SelfSteppingSolver {
 public:
  CvodeSolver(const OdeProblem& problem, const IntegratorOptions& options, double t0,
              std::span<const double> u0, std::string& error)
      : p_(problem), n_(problem.size), jac_values_(problem.jac_col.size()) {
    error = setup(options, t0, u0);
  }

  ~CvodeSolver() override {
    if (mem_) CVodeFree(&mem_);
    if (ls_) SUNLinSolFree(ls_);
    if (A_) SUNMatDestroy(A_);
    if (constraints_) N_VDestroy(constraints_);
    if (y_) N_VDestroy(y_);
    if (view_) N_VDestroy(view_);
    if (ctx_) SUNContext_Free(&ctx_);
  }

  ReturnCode step(double t_limit, double& t_new, double* u_new, std::string& why,
                  std::size_t& culprit) override {
    last_error_.clear();
    non_finite_at_ = n_;
    double t_reached = t_new;
    int flag = CVodeSetStopTime(mem_, t_limit);
    if (flag >= 0) flag = CVode(mem_, t_limit, y_, &t_reached, CV_ONE_STEP);
    if (flag >= 0) {
      t_new = flag == CV_TSTOP_RETURN ? t_limit : t_reached;
      std::copy(data(y_), data(y_) + n_, u_new);
      return ReturnCode::Success;
    }
    why = "CVODE " + flag_name(flag);
    if (!last_error_.empty()) why += ": " + last_error_;
    culprit = non_finite_at_ < n_ ? non_finite_at_ : largest_weighted_local_error();
    switch (flag) {
      case CV_TOO_MUCH_WORK: return ReturnCode::MaxSteps;
      case CV_LSETUP_FAIL:
      case CV_LSOLVE_FAIL: return ReturnCode::LinearSolveFailed;
      case CV_RHSFUNC_FAIL:
      case CV_FIRST_RHSFUNC_ERR:
      case CV_REPTD_RHSFUNC_ERR:
      case CV_UNREC_RHSFUNC_ERR: return ReturnCode::NonFinite;
      case CV_ILL_INPUT: return ReturnCode::InvalidOptions;
      default: return ReturnCode::DtBelowMin;  // error test, convergence, constraint failures
    }
  }

  void interpolate(double time, double* out) const override {
    N_VSetArrayPointer(out, view_);
    if (CVodeGetDky(mem_, time, 0, view_) < 0)
      std::fill(out, out + n_, std::nan(""));  // outside the last step: a caller bug, made loud
  }

  void restart(double time, const double* u) override {
    base_ = stats();
    std::copy(u, u + n_, data(y_));
    CVodeReInit(mem_, time, y_);
  }

  double proposed_step() const override {
    double h = 0;
    CVodeGetCurrentStep(mem_, &h);
    return h;
  }

  IntegratorStats stats() const override {
    long steps = 0, error_fails = 0, newton_fails = 0, rhs = 0, rhs_ls = 0, jac = 0,
         setups = 0, newton_iters = 0;
    CVodeGetNumSteps(mem_, &steps);
    CVodeGetNumErrTestFails(mem_, &error_fails);
    CVodeGetNumNonlinSolvConvFails(mem_, &newton_fails);
    CVodeGetNumRhsEvals(mem_, &rhs);
    CVodeGetNumLinRhsEvals(mem_, &rhs_ls);
    CVodeGetNumJacEvals(mem_, &jac);
    CVodeGetNumLinSolvSetups(mem_, &setups);
    CVodeGetNumNonlinSolvIters(mem_, &newton_iters);
    IntegratorStats s = base_;
    s.accepted += steps;
    s.rejected += error_fails + newton_fails;  // every attempt CVODE retried
    s.rhs_evaluations += rhs + rhs_ls;         // rhs_ls: difference-quotient Jacobians
    s.jacobian_evaluations += jac;
    s.factorizations += setups;  // each matrix-based setup factorizes I - gamma J
    s.linear_solves += newton_iters;
    return s;
  }

 private:
  static double* data(N_Vector v) { return N_VGetArrayPointer(v); }

  std::string setup(const IntegratorOptions& o, double t0, std::span<const double> u0) {
    if (n_ == 0) return "CVODE_BDF needs at least one state";
    if (SUNContext_Create(nullptr, &ctx_) != 0) return "SUNContext_Create failed";
    y_ = N_VNew_Serial(sunindextype(n_), ctx_);
    view_ = N_VNewEmpty_Serial(sunindextype(n_), ctx_);
    mem_ = CVodeCreate(CV_BDF, ctx_);
    if (!y_ || !view_ || !mem_) return "CVODE could not allocate its memory";
    CVodeSetErrHandlerFn(mem_, &CvodeSolver::keep_error, this);
    std::copy(u0.begin(), u0.end(), data(y_));
    int flag = CVodeInit(mem_, &CvodeSolver::rhs, t0, y_);
    if (flag >= 0) flag = CVodeSetUserData(mem_, this);
    if (flag >= 0 && o.atol_each.empty()) flag = CVodeSStolerances(mem_, o.rtol, o.atol);
    if (flag >= 0 && !o.atol_each.empty()) {
      N_Vector atol = N_VNew_Serial(sunindextype(n_), ctx_);
      if (!atol) return "CVODE could not allocate its memory";
      std::copy(o.atol_each.begin(), o.atol_each.end(), data(atol));
      flag = CVodeSVtolerances(mem_, o.rtol, atol);  // CVODE keeps its own copy
      N_VDestroy(atol);
    }
    if (flag >= 0 && o.dt_initial > 0) flag = CVodeSetInitStep(mem_, o.dt_initial);
    if (flag >= 0 && o.dt_min > 0) flag = CVodeSetMinStep(mem_, o.dt_min);
    if (flag >= 0 && o.dt_max > 0) flag = CVodeSetMaxStep(mem_, o.dt_max);
    if (flag >= 0 && o.nonnegative != DomainPolicy::None) flag = set_nonnegative(o);
    if (flag >= 0) flag = set_linear_solver();
    if (flag < 0)
      return "CVODE setup failed (" + flag_name(flag) + ")" +
             (last_error_.empty() ? "" : ": " + last_error_);
    return {};
  }

  int set_nonnegative(const IntegratorOptions& o) {
    constraints_ = N_VNew_Serial(sunindextype(n_), ctx_);
    double* c = data(constraints_);
    std::fill(c, c + n_, o.nonnegative_components.empty() ? 1.0 : 0.0);  // 1: u_i >= 0
    for (int i : o.nonnegative_components) c[std::size_t(i)] = 1.0;
    return CVodeSetConstraints(mem_, constraints_);
  }

  int set_linear_solver() {
    const bool analytic = p_.jacobian != nullptr;
#if ESI_HAVE_SUNDIALS_KLU
    if (analytic && n_ > kDenseLimit) {
      pattern_ = with_diagonal(p_);
      A_ = SUNSparseMatrix(sunindextype(n_), sunindextype(n_),
                           sunindextype(pattern_.col.size()), CSR_MAT, ctx_);
      if (A_) ls_ = SUNLinSol_KLU(y_, A_, ctx_);
      if (!A_ || !ls_) return CV_MEM_FAIL;
      const int flag = CVodeSetLinearSolver(mem_, ls_, A_);
      return flag < 0 ? flag : CVodeSetJacFn(mem_, &CvodeSolver::sparse_jacobian);
    }
#endif
    A_ = SUNDenseMatrix(sunindextype(n_), sunindextype(n_), ctx_);
    if (A_) ls_ = SUNLinSol_Dense(y_, A_, ctx_);
    if (!A_ || !ls_) return CV_MEM_FAIL;
    const int flag = CVodeSetLinearSolver(mem_, ls_, A_);
    if (flag < 0 || !analytic) return flag;  // no Jacobian: CVODE's dense differences
    return CVodeSetJacFn(mem_, &CvodeSolver::dense_jacobian);
  }

  // Our Jacobian values in CSR order; false (recoverable) when one is not finite.
  bool evaluate_jacobian(double t, N_Vector y) {
    p_.jacobian(p_.context, t, data(y), jac_values_.data());
    return all_finite(jac_values_.data(), jac_values_.size());
  }

  static int rhs(double t, N_Vector y, N_Vector ydot, void* user) {
    auto& self = *static_cast<CvodeSolver*>(user);
    double* du = data(ydot);
    self.p_.rhs(self.p_.context, t, data(y), du);
    for (std::size_t i = 0; i < self.n_; ++i)
      if (!std::isfinite(du[i])) {
        self.non_finite_at_ = i;
        return 1;  // recoverable: CVODE retries with a smaller step
      }
    return 0;
  }

  static int dense_jacobian(double t, N_Vector y, N_Vector, SUNMatrix J, void* user, N_Vector,
                            N_Vector, N_Vector) {
    auto& self = *static_cast<CvodeSolver*>(user);
    if (!self.evaluate_jacobian(t, y)) return 1;
    SUNMatZero(J);
    const auto& row_ptr = self.p_.jac_row_ptr;
    for (std::size_t i = 0; i < self.n_; ++i)
      for (int k = row_ptr[i]; k < row_ptr[i + 1]; ++k)
        SM_COLUMN_D(J, self.p_.jac_col[std::size_t(k)])[i] = self.jac_values_[std::size_t(k)];
    return 0;
  }

#if ESI_HAVE_SUNDIALS_KLU
  // CVODE zeroes a sparse matrix (pattern included) before asking for it: write it whole.
  static int sparse_jacobian(double t, N_Vector y, N_Vector, SUNMatrix J, void* user, N_Vector,
                             N_Vector, N_Vector) {
    auto& self = *static_cast<CvodeSolver*>(user);
    if (!self.evaluate_jacobian(t, y)) return 1;
    const SparsePattern& s = self.pattern_;
    std::copy(s.row_ptr.begin(), s.row_ptr.end(), SM_INDEXPTRS_S(J));
    std::copy(s.col.begin(), s.col.end(), SM_INDEXVALS_S(J));
    double* values = SM_DATA_S(J);
    std::fill(values, values + s.col.size(), 0.0);
    for (std::size_t k = 0; k < s.slot_of_value.size(); ++k)
      values[s.slot_of_value[k]] = self.jac_values_[k];
    return 0;
  }
#endif

  static void keep_error(int, const char*, const char*, char* message, void* user) {
    static_cast<CvodeSolver*>(user)->last_error_ = message;  // reported through step(), not stderr
  }

  std::size_t largest_weighted_local_error() const {
    N_Vector weights = N_VNew_Serial(sunindextype(n_), ctx_);
    N_Vector errors = N_VNew_Serial(sunindextype(n_), ctx_);
    std::size_t worst = 0;
    if (weights && errors && CVodeGetErrWeights(mem_, weights) >= 0 &&
        CVodeGetEstLocalErrors(mem_, errors) >= 0) {
      double largest = -1;
      for (std::size_t i = 0; i < n_; ++i) {
        const double e = std::abs(data(errors)[i] * data(weights)[i]);
        if (!std::isfinite(e)) return N_VDestroy(weights), N_VDestroy(errors), i;
        if (e > largest) largest = e, worst = i;
      }
    }
    if (weights) N_VDestroy(weights);
    if (errors) N_VDestroy(errors);
    return worst;
  }

  const OdeProblem& p_;
  std::size_t n_;
  SUNContext ctx_ = nullptr;
  void* mem_ = nullptr;
  N_Vector y_ = nullptr, constraints_ = nullptr;
  N_Vector view_ = nullptr;  // no storage of its own: points at interpolate()'s output
  SUNMatrix A_ = nullptr;
  SUNLinearSolver ls_ = nullptr;
  std::vector<double> jac_values_;
  SparsePattern pattern_;
  IntegratorStats base_;           // counts before the last CVodeReInit (which zeroes CVODE's)
  std::string last_error_;         // CVODE's last error message
  std::size_t non_finite_at_ = 0;  // first component of a non-finite rhs (n_: none)
};

}  // namespace

std::unique_ptr<SelfSteppingSolver> make_cvode_solver(const OdeProblem& problem,
                                                      const IntegratorOptions& options,
                                                      double t0, std::span<const double> u0,
                                                      std::string& error) {
  auto solver = std::make_unique<CvodeSolver>(problem, options, t0, u0, error);
  if (!error.empty()) return nullptr;
  return solver;
}

#else  // built without SUNDIALS

std::unique_ptr<SelfSteppingSolver> make_cvode_solver(const OdeProblem&, const IntegratorOptions&,
                                                      double, std::span<const double>,
                                                      std::string& error) {
  error = "CVODE_BDF is not available: esi was built without SUNDIALS (install libsundials-dev "
          "and reconfigure)";
  return nullptr;
}

#endif

}  // namespace esi::method::detail
