#include "method/derivatives.hpp"

#include <algorithm>

namespace esi::method::detail {
namespace {

std::vector<int> rows_of(const std::vector<int>& row_ptr) {
  std::vector<int> rows(row_ptr.empty() ? 0 : std::size_t(row_ptr.back()));
  for (std::size_t i = 0; i + 1 < row_ptr.size(); ++i)
    std::fill(rows.begin() + row_ptr[i], rows.begin() + row_ptr[i + 1], int(i));
  return rows;
}

}  // namespace

Derivatives::Derivatives(const OdeProblem& problem, SweepResult& counts)
    : problem_(problem), counts_(counts), n_(problem.size),
      jac_row_(rows_of(problem.jac_row_ptr)), param_row_(rows_of(problem.param_row_ptr)) {}

Derivatives::Point* Derivatives::find(double key, const double* u) {
  auto same = [&](const Point& p) { return p.valid && p.t == key && std::equal(p.u.begin(), p.u.end(), u); };
  for (Point& p : batch_)
    if (same(p)) return &p;
  for (int s = 0; s < 2; ++s)
    if (same(points_[s])) {
      next_ = 1 - s;  // the other point is the older one
      return &points_[s];
    }
  return nullptr;
}

void Derivatives::at(double t, const double* u) {
  // An autonomous problem's derivatives do not depend on t: a point is its state alone.
  const double key = problem_.autonomous ? 0.0 : t;
  if (Point* p = find(key, u)) {
    current_ = p;
    return;
  }
  Point& p = points_[next_];
  next_ = 1 - next_;
  current_ = &p;
  p.t = key;
  p.u.assign(u, u + n_);
  p.valid = true;
  p.has_jac = p.has_pjac = p.has_hess = false;
  p.time = t;
}

void Derivatives::at_points(std::span<const double> times, std::span<const double* const> states) {
  current_ = &points_[0];  // batch_ is rebuilt below
  for (Point& p : batch_) p.valid = false;  // kept, with their buffers, for the next step
  if (problem_.first_derivatives_lanes == nullptr || times.empty()) return;
  const std::size_t count = times.size(), nj = problem_.jac_col.size(), np = problem_.param_col.size();
  const bool params = parameters_wanted_ && problem_.parameter_count > 0;
  batch_u_.resize(count * n_);
  for (std::size_t k = 0; k < count; ++k) std::copy(states[k], states[k] + n_, batch_u_.begin() + long(k * n_));
  batch_jac_.resize(count * nj);
  batch_pjac_.resize(params ? count * np : 0);
  problem_.first_derivatives_lanes(problem_.context, count, times.data(), batch_u_.data(), batch_jac_.data(),
                                   params ? batch_pjac_.data() : nullptr);
  ++counts_.stats.jacobian_evaluations;
  ++counts_.point_batches;
  if (batch_.size() < count) batch_.resize(count);
  for (std::size_t k = 0; k < count; ++k) {
    Point& p = batch_[k];
    p.t = problem_.autonomous ? 0.0 : times[k];
    p.time = times[k];
    p.u.assign(states[k], states[k] + n_);
    p.jac.assign(batch_jac_.begin() + long(k * nj), batch_jac_.begin() + long((k + 1) * nj));
    p.has_jac = true;
    p.has_pjac = params;
    if (params) p.pjac.assign(batch_pjac_.begin() + long(k * np), batch_pjac_.begin() + long((k + 1) * np));
    p.has_hess = false;
    p.valid = true;
  }
}

void Derivatives::at(double t, const double* u, const double* jacobian) {
  at(t, u);
  Point& p = current();
  if (p.has_jac || jacobian == nullptr) return;
  p.jac.assign(jacobian, jacobian + problem_.jac_col.size());
  p.has_jac = true;
}

// Both at once where the problem offers it: a sweep asks for J^T w and (df/dp)^T w at every
// stage point.
bool Derivatives::need_both() {
  Point& p = current();
  if (p.has_jac || p.has_pjac || problem_.first_derivatives == nullptr) return false;
  p.jac.resize(problem_.jac_col.size());
  p.pjac.resize(problem_.param_col.size());
  problem_.first_derivatives(problem_.context, p.time, p.u.data(), p.jac.data(), p.pjac.data());
  ++counts_.stats.jacobian_evaluations;
  p.has_jac = p.has_pjac = true;
  return true;
}

void Derivatives::need_jac() {
  Point& p = current();
  if (p.has_jac || (parameters_wanted_ && need_both())) return;
  p.jac.resize(problem_.jac_col.size());
  problem_.jacobian(problem_.context, p.time, p.u.data(), p.jac.data());
  ++counts_.stats.jacobian_evaluations;
  p.has_jac = true;
}

void Derivatives::need_pjac() {
  Point& p = current();
  if (p.has_pjac || (problem_.parameter_count > 0 && need_both())) return;
  p.pjac.resize(problem_.param_col.size());
  if (problem_.parameter_jacobian && !p.pjac.empty())
    problem_.parameter_jacobian(problem_.context, p.time, p.u.data(), p.pjac.data());
  p.has_pjac = true;
}

void Derivatives::need_hess() {
  Point& p = current();
  if (p.has_hess) return;
  p.hu.resize(problem_.hess_u_entry.size());
  p.hp.resize(problem_.hess_p_entry.size());
  problem_.second_derivatives(problem_.context, p.time, p.u.data(), p.hu.data(), p.hp.data());
  ++counts_.second_order_evaluations;
  p.has_hess = true;
}

void Derivatives::jv(const double* v, double* out) {
  need_jac();
  const double* a = current().jac.data();
  for (std::size_t i = 0; i < n_; ++i) {
    double acc = 0;
    for (int k = problem_.jac_row_ptr[i]; k < problem_.jac_row_ptr[i + 1]; ++k)
      acc += a[k] * v[problem_.jac_col[k]];
    out[i] += acc;
  }
}

void Derivatives::jtw(const double* w, double* out) {
  need_jac();
  ++counts_.jacobian_transpose_products;
  const double* a = current().jac.data();
  for (std::size_t i = 0; i < n_; ++i) {
    if (w[i] == 0.0) continue;
    for (int k = problem_.jac_row_ptr[i]; k < problem_.jac_row_ptr[i + 1]; ++k)
      out[problem_.jac_col[k]] += a[k] * w[i];
  }
}

void Derivatives::vjp(const double* w, double* out, double* mu) {
  if (std::all_of(w, w + n_, [](double x) { return x == 0.0; })) return;
  const bool params = mu != nullptr && problem_.parameter_count > 0;
  const Point& p = current();
  const bool held = p.has_jac && (!params || p.has_pjac);
  if (held || problem_.vector_jacobian_product == nullptr || (params && !problem_.vjp_parameters)) {
    jtw(w, out);
    if (params) ptw(w, mu);
    return;
  }
  vjp_u_.resize(n_);
  vjp_p_.resize(problem_.vjp_parameters ? problem_.parameter_count : 0);
  problem_.vector_jacobian_product(problem_.context, p.time, p.u.data(), w, vjp_u_.data(),
                                   vjp_p_.empty() ? nullptr : vjp_p_.data());
  ++counts_.vector_jacobian_products;
  for (std::size_t i = 0; i < n_; ++i) out[i] += vjp_u_[i];
  if (params)
    for (std::size_t k = 0; k < vjp_p_.size(); ++k) mu[k] += vjp_p_[k];
}

void Derivatives::pv(const double* dp, double* out) {
  if (problem_.parameter_count == 0 || dp == nullptr) return;
  need_pjac();
  const double* a = current().pjac.data();
  for (std::size_t k = 0; k < param_row_.size(); ++k) out[param_row_[k]] += a[k] * dp[problem_.param_col[k]];
}

void Derivatives::ptw(const double* w, double* mu) {
  if (problem_.parameter_count == 0 || mu == nullptr) return;
  need_pjac();
  const double* a = current().pjac.data();
  for (std::size_t k = 0; k < param_row_.size(); ++k) mu[problem_.param_col[k]] += a[k] * w[param_row_[k]];
}

void Derivatives::hessian_tangent(const double* du, const double* dp, const double* v, double* out) {
  need_hess();
  const Point& p = current();
  for (std::size_t q = 0; q < p.hu.size(); ++q) {
    const int e = problem_.hess_u_entry[q];
    out[jac_row_[e]] += p.hu[q] * du[problem_.hess_u_state[q]] * v[problem_.jac_col[e]];
  }
  if (dp == nullptr) return;
  for (std::size_t q = 0; q < p.hp.size(); ++q) {
    const int e = problem_.hess_p_entry[q];
    out[jac_row_[e]] += p.hp[q] * dp[problem_.hess_p_param[q]] * v[problem_.jac_col[e]];
  }
}

void Derivatives::hessian_adjoint(const double* w, const double* v, double* grad_u, double* grad_p) {
  need_hess();
  const Point& p = current();
  for (std::size_t q = 0; q < p.hu.size(); ++q) {
    const int e = problem_.hess_u_entry[q];
    grad_u[problem_.hess_u_state[q]] += p.hu[q] * w[jac_row_[e]] * v[problem_.jac_col[e]];
  }
  if (grad_p == nullptr) return;
  for (std::size_t q = 0; q < p.hp.size(); ++q) {
    const int e = problem_.hess_p_entry[q];
    grad_p[problem_.hess_p_param[q]] += p.hp[q] * w[jac_row_[e]] * v[problem_.jac_col[e]];
  }
}

void Derivatives::add_outer(const double* w, const double* v, double* W) const {
  for (std::size_t e = 0; e < jac_row_.size(); ++e) W[e] += w[jac_row_[e]] * v[problem_.jac_col[e]];
}

void Derivatives::hessian_adjoint_weighted(const double* W, double* grad_u, double* grad_p) {
  need_hess();
  const Point& p = current();
  for (std::size_t q = 0; q < p.hu.size(); ++q) grad_u[problem_.hess_u_state[q]] += p.hu[q] * W[problem_.hess_u_entry[q]];
  if (grad_p == nullptr) return;
  for (std::size_t q = 0; q < p.hp.size(); ++q) grad_p[problem_.hess_p_param[q]] += p.hp[q] * W[problem_.hess_p_entry[q]];
}

}  // namespace esi::method::detail
