// Derivative programs (kernel/derivatives.hpp) against hyper-dual numbers: df/dp, and the
// second derivatives of the Jacobian's nonzeros by states and by parameters, on a model of
// every differentiable operator, the five stiff test-set problems (through CompiledProblem's
// OdeProblem callbacks) and every reaction system of the corpus, GEOS-Chem fullchem included.
//
// The oracle evaluates the right-hand sides once per seed pair in hyper-dual arithmetic
// (value, two tangents a and b, and their mixed term ab): f.b is a first derivative along b
// and f.ab the second derivative along a and b, exact to rounding, independent of the symbolic
// differentiation under test. Small systems are checked entry by entry (a = e_j, b = e_k or
// e_p: every d J_ij / d u_k and d J_ij / d p); large ones through the gradient of w^T J v
// (a = v, b = each unit vector), which still checks every state and parameter direction and
// that no nonzero is missing from the pattern.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <initializer_list>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "esi/core/error.hpp"
#include "esi/esm/flatten.hpp"
#include "esi/esm/load.hpp"
#include "esi/kernel/closed_functions.hpp"
#include "esi/kernel/derivatives.hpp"
#include "kernel/kernel_cases.hpp"
#include "problems/compiled_problem.hpp"
#include "problems/problems.hpp"

namespace fs = std::filesystem;
using namespace esi::kernel;
using esi::esm::System;
using esi::expr::NodeId;
using esi::expr::Op;

namespace {

// ---- hyper-dual numbers over the oracle's semantics ------------------------------------------

/// A value, its tangents along a and b, and its mixed second derivative ab.
struct Q {
  double v = 0, a = 0, b = 0, ab = 0;
};

// Strong zeros, as in dual_oracle.hpp: a zero tangent contributes nothing even through an
// infinite or NaN factor, as a structurally absent term of the symbolic derivative.
double tm(double x, double d) {
  return d == 0 ? 0.0 : x * d;
}

/// f(x, y) with its first and second partials.
struct Partials2 {
  double f, fx, fy, fxx, fxy, fyy;
};

Q q_abs(Q x) {
  return {std::fabs(x.v), std::fabs(x.a), std::fabs(x.b), std::fabs(x.ab)};
}
Q q_add(Q x, Q y) {
  return {x.v + y.v, x.a + y.a, x.b + y.b, x.ab + y.ab};
}
Q q_sub(Q x, Q y) {
  return {x.v - y.v, x.a - y.a, x.b - y.b, x.ab - y.ab};
}
Q q_mul(Q x, Q y) {
  return {x.v * y.v, tm(y.v, x.a) + tm(x.v, y.a), tm(y.v, x.b) + tm(x.v, y.b),
          tm(y.v, x.ab) + tm(x.a, y.b) + tm(x.b, y.a) + tm(x.v, y.ab)};
}
/// f(x) with f' = f1 and f'' = f2.
Q q_chain(double f, double f1, double f2, Q x) {
  return {f, tm(f1, x.a), tm(f1, x.b), tm(f2, x.a * x.b) + tm(f1, x.ab)};
}
Q q_chain2(const Partials2& d, Q x, Q y) {
  return {d.f, tm(d.fx, x.a) + tm(d.fy, y.a), tm(d.fx, x.b) + tm(d.fy, y.b),
          tm(d.fx, x.ab) + tm(d.fy, y.ab) + tm(d.fxx, x.a * x.b) +
              tm(d.fxy, x.a * y.b + x.b * y.a) + tm(d.fyy, y.a * y.b)};
}

/// A hyper-dual number and, in `mag`, the same computed on magnitudes (every term's absolute
/// value summed, as problems.hpp's Magnitude does for values): the scale on which rounding and
/// cancellation act on each part, so tolerances need not guess it.
struct HD : Q {
  Q mag;
};
HD make(Q q, Q mag) {
  HD h;
  static_cast<Q&>(h) = q;
  h.mag = mag;
  return h;
}
HD leaf(double v, double a = 0, double b = 0, double ab = 0) {
  return make({v, a, b, ab}, q_abs({v, a, b, ab}));
}
HD add(HD x, HD y) {
  return make(q_add(x, y), q_add(x.mag, y.mag));
}
HD sub(HD x, HD y) {
  return make(q_sub(x, y), q_add(x.mag, y.mag));
}
HD neg(HD x) {
  return make({-x.v, -x.a, -x.b, -x.ab}, x.mag);
}
HD mul(HD x, HD y) {
  return make(q_mul(x, y), q_mul(x.mag, y.mag));
}
HD chain(double f, double f1, double f2, HD x) {
  return make(q_chain(f, f1, f2, x), q_chain(std::fabs(f), std::fabs(f1), std::fabs(f2), x.mag));
}
HD chain2(const Partials2& d, HD x, HD y) {
  const Partials2 m{std::fabs(d.f),   std::fabs(d.fx),  std::fabs(d.fy),
                    std::fabs(d.fxx), std::fabs(d.fxy), std::fabs(d.fyy)};
  return make(q_chain2(d, x, y), q_chain2(m, x.mag, y.mag));
}

HD div(HD x, HD y) {
  const double r = 1 / y.v;
  return mul(x, chain(r, -r * r, 2 * r * r * r, y));
}
bool constant(HD x) {
  return x.a == 0 && x.b == 0 && x.ab == 0;
}
HD power(HD x, HD y) {
  if (constant(y)) {
    const double c = y.v;
    const double f2 = c == 0 || c == 1 ? 0.0 : c * (c - 1) * std::pow(x.v, c - 2);
    return chain(std::pow(x.v, c), c == 0 ? 0.0 : c * std::pow(x.v, c - 1), f2, x);
  }
  const double f = std::pow(x.v, y.v), l = std::log(x.v), xm1 = std::pow(x.v, y.v - 1);
  return chain2({f, y.v * xm1, f * l, y.v * (y.v - 1) * std::pow(x.v, y.v - 2), xm1 * (1 + y.v * l),
                 f * l * l},
                x, y);
}
HD atan2_hd(HD y, HD x) {
  const double r2 = x.v * x.v + y.v * y.v, r4 = r2 * r2;
  // atan2 as f(y, x): f_y = x / r2, f_x = -y / r2.
  return chain2({std::atan2(y.v, x.v), x.v / r2, -y.v / r2, -2 * x.v * y.v / r4,
                 (y.v * y.v - x.v * x.v) / r4, 2 * x.v * y.v / r4},
                y, x);
}

/// Evaluates a System's right-hand sides in hyper-dual numbers with given tangents.
class HyperDualOracle {
 public:
  explicit HyperDualOracle(const System& s) : s_(s), bind_(s.pool.string_count()) {
    auto set = [&](const std::string& name, Kind k, std::size_t i) {
      const auto id = s.pool.find_string(name);
      if (id != 0) bind_[id] = {k, i};
    };
    for (std::size_t i = 0; i < s.states.size(); ++i) set(s.states[i].name, Kind::State, i);
    for (std::size_t i = 0; i < s.parameters.size(); ++i) set(s.parameters[i].name, Kind::Param, i);
    for (std::size_t i = 0; i < s.observed.size(); ++i) set(s.observed[i].name, Kind::Observed, i);
    set("t", Kind::Time, 0);
    memo_.resize(s.pool.size());
    stamp_.assign(s.pool.size(), 0);
  }

  /// Tangents: ua / ub per state, pa / pb per parameter.
  struct Seeds {
    std::vector<double> ua, ub, pa, pb;
  };

  std::vector<HD> rhs(const double* u, const double* p, double t, const Seeds& seeds) {
    u_ = u, p_ = p, t_ = t, seeds_ = &seeds;
    ++generation_;
    std::vector<HD> out;
    for (NodeId r : s_.state_rhs) out.push_back(eval(r));
    return out;
  }

 private:
  enum class Kind { None, State, Param, Observed, Time };
  struct Binding {
    Kind kind = Kind::None;
    std::size_t index = 0;
  };

  HD eval(NodeId id) {
    if (stamp_[id] == generation_) return memo_[id];
    const HD r = compute(id);
    stamp_[id] = generation_;
    memo_[id] = r;
    return r;
  }
  HD arg(NodeId id, std::size_t i) { return eval(s_.pool.args(id)[i]); }
  HD fold(NodeId id, HD (*f)(HD, HD)) {
    const auto a = s_.pool.args(id);
    HD acc = eval(a[0]);
    for (std::size_t i = 1; i < a.size(); ++i) acc = f(acc, eval(a[i]));
    return acc;
  }

  HD symbol(NodeId id) {
    const Binding& b = bind_[s_.pool.node(id).name];
    const Seeds& sd = *seeds_;
    switch (b.kind) {
      case Kind::State:
        return leaf(u_[b.index], sd.ua[b.index], sd.ub[b.index]);
      case Kind::Param:
        return leaf(p_[b.index], sd.pa[b.index], sd.pb[b.index]);
      case Kind::Observed:
        return eval(s_.observed_rhs[b.index]);
      case Kind::Time:
        return leaf(t_);
      default:
        throw esi::Error("undefined_variable", "", "",
                         std::string(s_.pool.str(s_.pool.node(id).name)));
    }
  }

  HD closed(NodeId id);
  HD compute(NodeId id);
  HD elementary(Op op, HD x);

  const System& s_;
  std::vector<Binding> bind_;
  std::vector<HD> memo_;
  std::vector<std::uint32_t> stamp_;
  std::uint32_t generation_ = 0;
  const double *u_ = nullptr, *p_ = nullptr;
  double t_ = 0;
  const Seeds* seeds_ = nullptr;
};

/// d^2 f / dx dy of a bilinear lookup, written out here from the table (the oracle's own, not
/// kernel::interp_bilinear_dxy): within the cell [x_i, x_i+1] x [y_j, y_j+1] holding the query,
/// f = a + b x + c y + e x y and e = (f11 - f10 - f01 + f00) / (hx hy); 0 where the query is
/// clamped along either axis (outside the table, or on its last node).
double cross_slope(const ClosedTable& tab, double x, double y) {
  const auto& ax = tab.axis_x;
  const auto& ay = tab.axis_y;
  if (!(x >= ax.front() && x < ax.back() && y >= ay.front() && y < ay.back())) return 0.0;
  std::size_t i = 0, j = 0;
  while (!(x < ax[i + 1])) ++i;
  while (!(y < ay[j + 1])) ++j;
  const std::size_t ny = ay.size();
  const auto f = [&](std::size_t r, std::size_t c) { return tab.values[r * ny + c]; };
  return (f(i + 1, j + 1) - f(i + 1, j) - f(i, j + 1) + f(i, j)) / ((ax[i + 1] - ax[i]) * (ay[j + 1] - ay[j]));
}

HD HyperDualOracle::closed(NodeId id) {
  const ClosedFn f = closed_fn_from_name(s_.pool.str(s_.pool.node(id).name));
  const ClosedTable tab = extract_table(s_.pool, id, f);
  const auto a = s_.pool.args(id);
  if (is_datetime(f)) {
    const HD x = eval(a[0]);
    return chain(datetime(f, x.v), f == ClosedFn::JulianDay ? 1 / 86400.0 : 0.0, 0.0, x);
  }
  if (f == ClosedFn::SearchSorted) return leaf(searchsorted(eval(a[0]).v, tab.axis_x));
  if (f == ClosedFn::Linear) {  // piecewise linear: no second derivative of its own
    const HD x = eval(a[2]);
    return chain(interp_linear(tab.values, tab.axis_x, x.v),
                 interp_linear_slope(tab.values, tab.axis_x, x.v), 0.0, x);
  }
  const HD x = eval(a[3]), y = eval(a[4]);
  const double dx = interp_bilinear_dx(tab.values, tab.axis_x, tab.axis_y, x.v, y.v);
  const double dy = interp_bilinear_dy(tab.values, tab.axis_x, tab.axis_y, x.v, y.v);
  return chain2({interp_bilinear(tab.values, tab.axis_x, tab.axis_y, x.v, y.v), dx, dy, 0,
                 cross_slope(tab, x.v, y.v), 0},
                x, y);
}

HD HyperDualOracle::compute(NodeId id) {
  const esi::expr::Node& n = s_.pool.node(id);
  const std::size_t k = s_.pool.args(id).size();
  auto flag = [](bool b) { return leaf(b ? 1.0 : 0.0); };
  auto pick = [](bool first, HD a, HD b) { return first ? a : b; };
  switch (n.op) {
    case Op::Number:
      return leaf(n.number);
    case Op::True:
      return leaf(1);
    case Op::Symbol:
      return symbol(id);
    case Op::Add:
      return fold(id, add);
    case Op::Sub:
      return k == 1 ? neg(arg(id, 0)) : fold(id, sub);
    case Op::Neg:
      return neg(arg(id, 0));
    case Op::Mul:
      return fold(id, mul);
    case Op::Div:
      return div(arg(id, 0), arg(id, 1));
    case Op::Pow:
      return power(arg(id, 0), arg(id, 1));
    case Op::Atan2:
      return atan2_hd(arg(id, 0), arg(id, 1));
    case Op::Min:
      return fold(id, [](HD a, HD b) { return a.v <= b.v || a.v != a.v ? a : b; });
    case Op::Max:
      return fold(id, [](HD a, HD b) { return a.v >= b.v || a.v != a.v ? a : b; });
    case Op::IfElse:
      return pick(arg(id, 0).v != 0, arg(id, 1), arg(id, 2));
    case Op::Lt:
      return flag(arg(id, 0).v < arg(id, 1).v);
    case Op::Le:
      return flag(arg(id, 0).v <= arg(id, 1).v);
    case Op::Gt:
      return flag(arg(id, 0).v > arg(id, 1).v);
    case Op::Ge:
      return flag(arg(id, 0).v >= arg(id, 1).v);
    case Op::Eq:
      return flag(arg(id, 0).v == arg(id, 1).v);
    case Op::Ne:
      return flag(arg(id, 0).v != arg(id, 1).v);
    case Op::And:
      return flag(arg(id, 0).v != 0 && arg(id, 1).v != 0);
    case Op::Or:
      return flag(arg(id, 0).v != 0 || arg(id, 1).v != 0);
    case Op::Not:
      return flag(arg(id, 0).v == 0);
    case Op::Fn:
      return closed(id);
    case Op::D:
      return eval(s_.state_rhs[bind_[s_.pool.node(s_.pool.args(id)[0]).name].index]);
    default:
      return elementary(n.op, arg(id, 0));
  }
}

HD HyperDualOracle::elementary(Op op, HD a) {
  const double x = a.v;
  switch (op) {
    case Op::Exp:
      return chain(std::exp(x), std::exp(x), std::exp(x), a);
    case Op::Log:
      return chain(std::log(x), 1 / x, -1 / (x * x), a);
    case Op::Log10:
      return chain(std::log10(x), 1 / (x * std::log(10.0)), -1 / (x * x * std::log(10.0)), a);
    case Op::Sqrt:
      return chain(std::sqrt(x), 0.5 / std::sqrt(x), -0.25 / (x * std::sqrt(x)), a);
    case Op::Abs:
      return chain(std::fabs(x), x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0), 0.0, a);
    case Op::Sign:
      return leaf(x > 0 ? 1.0 : (x < 0 ? -1.0 : x));
    case Op::Sin:
      return chain(std::sin(x), std::cos(x), -std::sin(x), a);
    case Op::Cos:
      return chain(std::cos(x), -std::sin(x), -std::cos(x), a);
    case Op::Tan: {
      const double t = std::tan(x), s = 1 + t * t;
      return chain(t, s, 2 * t * s, a);
    }
    case Op::Asin:
      return chain(std::asin(x), 1 / std::sqrt(1 - x * x), x / std::pow(1 - x * x, 1.5), a);
    case Op::Acos:
      return chain(std::acos(x), -1 / std::sqrt(1 - x * x), -x / std::pow(1 - x * x, 1.5), a);
    case Op::Atan:
      return chain(std::atan(x), 1 / (1 + x * x), -2 * x / ((1 + x * x) * (1 + x * x)), a);
    case Op::Sinh:
      return chain(std::sinh(x), std::cosh(x), std::sinh(x), a);
    case Op::Cosh:
      return chain(std::cosh(x), std::sinh(x), std::cosh(x), a);
    case Op::Tanh: {
      const double t = std::tanh(x), s = 1 - t * t;
      return chain(t, s, -2 * t * s, a);
    }
    case Op::Asinh:
      return chain(std::asinh(x), 1 / std::sqrt(x * x + 1), -x / std::pow(x * x + 1, 1.5), a);
    case Op::Acosh:
      return chain(std::acosh(x), 1 / std::sqrt(x * x - 1), -x / std::pow(x * x - 1, 1.5), a);
    case Op::Atanh:
      return chain(std::atanh(x), 1 / (1 - x * x), 2 * x / ((1 - x * x) * (1 - x * x)), a);
    case Op::Floor:
      return leaf(std::floor(x));
    case Op::Ceil:
      return leaf(std::ceil(x));
    default:
      throw esi::Error("unsupported_operator", "", "", std::string(esi::expr::op_name(op)));
  }
}

// ---- the programs under test ----------------------------------------------------------------

struct Derivatives {
  JacobianProgram jac;
  ParameterJacobianProgram dfdp;
  SecondDerivativeProgram second;
  double jacobian_seconds = 0, derivative_seconds = 0;  ///< compile times
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

Derivatives compile_derivatives(const System& s) {
  const auto start = std::chrono::steady_clock::now();
  JacobianProgram jac = compile_jacobian(s);
  const double jacobian_seconds = seconds_since(start);
  const auto derivatives_start = std::chrono::steady_clock::now();
  const std::vector<int> params = differentiable_parameters(s);
  ParameterJacobianProgram dfdp = compile_parameter_jacobian(s, params);
  SecondDerivativeProgram second = compile_second_derivatives(jac, params);
  return {std::move(jac), std::move(dfdp), std::move(second), jacobian_seconds,
          seconds_since(derivatives_start)};
}

/// "N setup + M lane instructions" of a program.
std::string tape_size(const Program& p) {
  const Program::Stats st = p.stats();
  return std::to_string(st.setup_instructions) + " setup + " +
         std::to_string(st.time_instructions + st.lane_instructions) +
         " time and lane instructions";
}

std::vector<double> run_program(const Program& prog, const std::vector<double>& u,
                                const std::vector<double>& p, double t) {
  if (prog.output_count() == 0) return {};
  Workspace ws = prog.make_workspace(1);
  prog.prepare(ws, p);
  return esi::testing::run_whole(prog, ws, u, 1, {t});
}

/// Program values at one point: df/dp nonzeros, then second derivatives by u and by p.
struct Values {
  std::vector<double> dfdp, hu, hp;
};

Values values_at(const Derivatives& d, const std::vector<double>& u, const std::vector<double>& p,
                 double t) {
  Values out;
  out.dfdp = run_program(d.dfdp.values, u, p, t);
  const std::vector<double> h = run_program(d.second.values, u, p, t);
  const auto nu = static_cast<std::ptrdiff_t>(d.second.u_entry.size());
  out.hu.assign(h.begin(), h.begin() + nu);
  out.hp.assign(h.begin() + nu, h.end());
  return out;
}

// ---- comparison -------------------------------------------------------------------------------

struct Tally {
  double max_rel = 0;
  long compared = 0, nonfinite = 0;
  std::string failure;

  static std::string show(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", x);
    return buf;
  }

  /// got vs want on `scale`; both non-finite counts as agreement only when both are.
  void check(double got, double want, double scale, double tol, const std::string& what) {
    if (!std::isfinite(got) || !std::isfinite(want)) {
      ++nonfinite;
      if (std::isfinite(want) && failure.empty()) failure = what + ": program " + show(got);
      return;
    }
    ++compared;
    const double err = std::fabs(got - want) / std::max(scale, 1e-300);
    if (scale > 0) max_rel = std::max(max_rel, err);
    if (!(err <= tol) && got != want && failure.empty())
      failure = what + ": program " + show(got) + " oracle " + show(want) + " scale " + show(scale);
  }
};

constexpr double kTol = 1e-10;

/// The System-order test point and the directions of the contraction check.
struct Point {
  std::vector<double> u, p, w, v;
  double t = 3600;
};

Point point_for(const System& s, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Point x;
  x.u = esi::testing::perturbed(s.states, rng);
  x.p = esi::testing::defaults(s.parameters);
  std::uniform_real_distribution<double> r(-1, 1);
  // v relative to each state and w relative to each row's state: the terms of w^T J v are then
  // of like size across rows (J_ij u_j / u_i), so a wrong small entry is not lost among large.
  for (double ui : x.u) {
    const double scale = ui != 0 ? std::fabs(ui) : 1.0;
    x.v.push_back(r(rng) * scale);
    x.w.push_back(r(rng) / scale);
  }
  return x;
}

/// Seeds with tangent a = `a_u` over states and tangent b along one state or parameter.
HyperDualOracle::Seeds seeds(const System& s, const std::vector<double>& a_u, bool b_param,
                             std::size_t b_index) {
  HyperDualOracle::Seeds sd{a_u, std::vector<double>(s.states.size(), 0.0),
                            std::vector<double>(s.parameters.size(), 0.0),
                            std::vector<double>(s.parameters.size(), 0.0)};
  (b_param ? sd.pb : sd.ub)[b_index] = 1.0;
  return sd;
}

std::vector<int> entry_rows(const JacobianProgram& jac) {
  std::vector<int> row(jac.col.size());
  for (std::size_t r = 0; r + 1 < jac.row_ptr.size(); ++r)
    for (int e = jac.row_ptr[r]; e < jac.row_ptr[r + 1]; ++e) row[e] = static_cast<int>(r);
  return row;
}

// Tolerances are relative to the magnitude of the terms of the oracle's value (HD::mag), or
// of the program's sum: where terms cancel the value itself is rounding (the O(1D) branching
// ratio k1 M / sum(ki M) of fullchem and box.esm does not depend on the pressure in M; its
// derivative by P is 1e-31 against terms of 1e-15).

/// One column of df/dp (oracle f.b with b = e_p) against the CSR values; zero off the pattern.
void check_dfdp_column(const System& s, const Derivatives& d, const Values& val, std::size_t k,
                       const std::vector<HD>& f, Tally& tally) {
  const int param = d.dfdp.parameters[k];
  for (std::size_t i = 0; i < f.size(); ++i) {
    double got = 0, scale = f[i].mag.b;
    for (int q = d.dfdp.row_ptr[i]; q < d.dfdp.row_ptr[i + 1]; ++q)
      if (d.dfdp.col[q] == static_cast<int>(k)) got = val.dfdp[q];
    scale = std::max(scale, std::fabs(got));
    if (got == 0 && f[i].b != f[i].b) continue;  // 0 * inf through an absent factor
    tally.check(got, f[i].b, scale, kTol,
                "d " + s.states[i].name + " / d " + s.parameters[param].name);
  }
}

/// grad of w^T J v along one direction (state k, or parameter position k) from the program's
/// second derivatives, with the sum of the magnitudes of its terms.
std::pair<double, double> program_gradient(const Derivatives& d, const Values& val, const Point& x,
                                           const std::vector<int>& row, bool param, std::size_t k) {
  const auto& entry = param ? d.second.p_entry : d.second.u_entry;
  const auto& along = param ? d.second.p_param : d.second.u_state;
  const auto& h = param ? val.hp : val.hu;
  double g = 0, mag = 0;
  for (std::size_t q = 0; q < h.size(); ++q) {
    if (along[q] != static_cast<int>(k)) continue;
    const int e = entry[q];
    const double term = x.w[row[e]] * x.v[d.jac.col[e]] * h[q];
    g += term;
    mag += std::fabs(term);
  }
  return {g, mag};
}

/// Contraction check: a = v, b = each state and each parameter direction.
Tally check_contracted(const System& s, const Derivatives& d, const Point& x) {
  Tally tally;
  const Values val = values_at(d, x.u, x.p, x.t);
  HyperDualOracle oracle(s);
  const std::vector<int> row = entry_rows(d.jac);
  auto direction = [&](bool param, std::size_t k, std::size_t b_index, const std::string& name) {
    const auto f = oracle.rhs(x.u.data(), x.p.data(), x.t, seeds(s, x.v, param, b_index));
    double want = 0, want_mag = 0;
    for (std::size_t i = 0; i < f.size(); ++i) {
      want += x.w[i] * f[i].ab;
      want_mag += std::fabs(x.w[i]) * f[i].mag.ab;
    }
    const auto [got, mag] = program_gradient(d, val, x, row, param, k);
    tally.check(got, want, std::max(mag, want_mag), kTol, "d(w'Jv) / d " + name);
    if (param) check_dfdp_column(s, d, val, k, f, tally);
  };
  for (std::size_t k = 0; k < s.states.size(); ++k) direction(false, k, k, s.states[k].name);
  for (std::size_t k = 0; k < d.dfdp.parameters.size(); ++k) {
    const auto pi = static_cast<std::size_t>(d.dfdp.parameters[k]);
    direction(true, k, pi, s.parameters[pi].name);
  }
  return tally;
}

/// Entry-by-entry check: a = e_j, b = e_k (or a parameter): f_i.ab = d J_ij / d (u_k or p).
Tally check_entries(const System& s, const Derivatives& d, const Point& x) {
  Tally tally;
  const Values val = values_at(d, x.u, x.p, x.t);
  HyperDualOracle oracle(s);
  const std::size_t n = s.states.size(), np = d.dfdp.parameters.size();
  // program[(i, j, direction)] from the sparse second derivatives
  std::map<std::tuple<int, int, int>, double> program;
  const std::vector<int> row = entry_rows(d.jac);
  for (std::size_t q = 0; q < val.hu.size(); ++q)
    program[{row[d.second.u_entry[q]], d.jac.col[d.second.u_entry[q]], d.second.u_state[q]}] =
        val.hu[q];
  for (std::size_t q = 0; q < val.hp.size(); ++q)
    program[{row[d.second.p_entry[q]], d.jac.col[d.second.p_entry[q]],
             static_cast<int>(n) + d.second.p_param[q]}] = val.hp[q];
  for (std::size_t j = 0; j < n; ++j) {
    std::vector<double> a(n, 0.0);
    a[j] = 1.0;
    for (std::size_t dir = 0; dir < n + np; ++dir) {
      const bool param = dir >= n;
      const std::size_t b_index =
          param ? static_cast<std::size_t>(d.dfdp.parameters[dir - n]) : dir;
      const auto f = oracle.rhs(x.u.data(), x.p.data(), x.t, seeds(s, a, param, b_index));
      for (std::size_t i = 0; i < n; ++i) {
        const auto it =
            program.find({static_cast<int>(i), static_cast<int>(j), static_cast<int>(dir)});
        const double got = it == program.end() ? 0.0 : it->second;
        if (got == 0 && f[i].ab != f[i].ab) continue;  // 0 * inf through an absent factor
        const std::string wrt = param ? s.parameters[b_index].name : s.states[b_index].name;
        tally.check(got, f[i].ab, std::max(f[i].mag.ab, std::fabs(got)), kTol,
                    "d2 " + s.states[i].name + " / d " + s.states[j].name + " d " + wrt);
      }
      if (param && j == 0) check_dfdp_column(s, d, val, dir - n, f, tally);
    }
  }
  return tally;
}

/// The reverse-accumulated w^T J and w^T df/dp (compile_vector_jacobian_product) against the
/// same products summed from the CSR programs' values, each on the magnitude of its terms.
Tally check_vector_jacobian_product(const System& s, const Derivatives& d, const Point& x) {
  Tally tally;
  const VectorJacobianProgram vjp = compile_vector_jacobian_product(d.jac, d.dfdp.parameters);
  EXPECT_EQ(vjp.values.output_count(), d.jac.dofs.size() + d.dfdp.parameters.size());
  EXPECT_EQ(vjp.values.forcing_names().size(), x.w.size());
  std::vector<esi::kernel::ForcingField<double>> weights;
  for (const double& wi : x.w) weights.push_back({&wi, 1});
  Workspace ws = vjp.values.make_workspace(1);
  vjp.values.prepare(ws, x.p);
  const std::vector<double> got = esi::testing::run_whole<double>(vjp.values, ws, x.u, 1, {x.t}, weights);
  const std::vector<double> jac = run_program(d.jac.values, x.u, x.p, x.t);
  const std::vector<double> dfdp = run_program(d.dfdp.values, x.u, x.p, x.t);
  const std::size_t n = d.jac.dofs.size();
  std::vector<double> want(got.size(), 0.0), mag(got.size(), 0.0);
  const std::vector<int> row = entry_rows(d.jac);
  for (std::size_t e = 0; e < jac.size(); ++e) {
    const double term = x.w[row[e]] * jac[e];
    want[d.jac.col[e]] += term;
    mag[d.jac.col[e]] += std::fabs(term);
  }
  for (std::size_t r = 0; r + 1 < d.dfdp.row_ptr.size(); ++r)
    for (int q = d.dfdp.row_ptr[r]; q < d.dfdp.row_ptr[r + 1]; ++q) {
      const double term = x.w[r] * dfdp[q];
      want[n + d.dfdp.col[q]] += term;
      mag[n + d.dfdp.col[q]] += std::fabs(term);
    }
  // Where a derivative's terms cancel inside one CSR entry (box.esm's branching ratio by P), the
  // entries' magnitudes understate the rounding: the oracle's magnitudes of the terms bound it.
  HyperDualOracle oracle(s);
  const std::vector<double> no_tangent(s.states.size(), 0.0);
  for (std::size_t k = 0; k < got.size(); ++k) {
    const bool param = k >= n;
    const auto index = static_cast<std::size_t>(param ? d.dfdp.parameters[k - n] : d.jac.dofs[k]);
    const auto f = oracle.rhs(x.u.data(), x.p.data(), x.t, seeds(s, no_tangent, param, index));
    double terms = 0;
    for (std::size_t i = 0; i < f.size(); ++i) terms += std::fabs(x.w[i]) * f[i].mag.b;
    mag[k] = std::max(mag[k], terms);
  }
  for (std::size_t k = 0; k < got.size(); ++k) {
    const std::string what = k < n ? "(w'J) " + s.states[d.jac.dofs[k]].name
                                   : "(w'df/dp) " + s.parameters[d.dfdp.parameters[k - n]].name;
    tally.check(got[k], want[k], std::max(mag[k], std::fabs(got[k])), 1e-12, what);
  }
  return tally;
}

/// Every check at the points of `seeds`: second derivatives entry by entry and contracted,
/// and the reverse-accumulated products, each to 1e-12 of its terms.
void expect_every_check(const System& s, const Derivatives& d, std::initializer_list<std::uint64_t> seeds,
                        const std::string& label) {
  for (std::uint64_t seed : seeds) {
    const Point x = point_for(s, seed);
    for (const Tally& t : {check_entries(s, d, x), check_contracted(s, d, x), check_vector_jacobian_product(s, d, x)}) {
      EXPECT_EQ(t.failure, "") << label << ", seed " << seed;
      EXPECT_EQ(t.nonfinite, 0) << label << ", seed " << seed;
      EXPECT_LT(t.max_rel, 1e-12) << label << ", seed " << seed;
    }
  }
}

/// Entry by entry when the system is small, through w^T J v otherwise.
Tally check_system(const System& s, const Derivatives& d, std::uint64_t seed) {
  const Point x = point_for(s, seed);
  const std::size_t n = s.states.size();
  if (n * (n + d.dfdp.parameters.size()) <= 4000) return check_entries(s, d, x);
  return check_contracted(s, d, x);
}

// ---- systems ----------------------------------------------------------------------------------

using esi::testing::cst;
using esi::testing::ddt;
using esi::testing::eq;
using esi::testing::fn;
using esi::testing::op;
using esi::testing::sum;

/// Every operator with a second derivative, parameters among the operands, an observed between.
System every_operator_system() {
  esi::testing::json vars = {{"x", {{"type", "unknown"}, {"default", 0.7}}},
                             {"y", {{"type", "unknown"}, {"default", 0.4}}},
                             {"z", {{"type", "unknown"}, {"default", 1.3}}},
                             {"k", {{"type", "parameter"}, {"default", 2.5}}},
                             {"T", {{"type", "parameter"}, {"default", 290.0}}},
                             {"c", {{"type", "parameter"}, {"default", 1.5}}},
                             {"r", {{"type", "unknown"}}}};
  esi::testing::json eqs = esi::testing::json::array();
  eqs.push_back(eq("r", op("*", {"k", "x", "y", op("exp", {op("/", {op("neg", {"T"}), 300})})})));
  eqs.push_back(eq(ddt("x"), sum({op("neg", {"r"}),
                                  op("*", {op("sin", {"x"}), op("cos", {op("*", {"c", "y"})})}),
                                  op("tan", {op("/", {"z", 4})}), op("^", {"x", 2.5}),
                                  op("^", {"y", "c"}), op("^", {"c", "z"})})));
  eqs.push_back(
      eq(ddt("y"), sum({"r", op("*", {op("sqrt", {op("*", {"c", "y"})}), op("log", {"x"})}),
                        op("log10", {op("*", {"z", "k"})}), op("atan2", {"x", op("*", {"c", "y"})}),
                        op("abs", {op("-", {"x", "y"})}), op("/", {"x", op("+", {"y", "k"})}),
                        op("ifelse", {op(">", {"x", "y"}), op("asin", {op("/", {"x", 4})}),
                                      op("acos", {op("/", {"y", "k"})})})})));
  eqs.push_back(eq(
      ddt("z"),
      sum({op("atan", {op("*", {"z", "c"})}),
           op("*", {op("sinh", {op("/", {"x", 3})}), op("cosh", {op("/", {"y", 3})})}),
           op("tanh", {op("*", {"k", "z"})}), op("asinh", {"x"}),
           op("acosh", {op("+", {"z", "c"})}), op("atanh", {op("/", {"y", 4})}),
           op("min", {"x", "y", op("*", {"c", "z"})}), op("max", {op("*", {"x", "k"}), "y"}),
           op("floor", {op("*", {"x", 3})}), op("sign", {"y"}),
           op("*", {"k", fn("interp.linear", {cst({1, 3, 2, 5}), cst({0, 0.5, 1, 2}), "y"})})})));
  return esi::testing::system_from_json(
      {{"models", {{"M", {{"variables", vars}, {"equations", eqs}}}}}});
}

/// y' = bilinear(table, ax, ay, T, x): a lookup along a parameter and a state.
System bilinear_system() {
  esi::testing::json vars = {{"x", {{"type", "unknown"}, {"default", 0.7}}},
                             {"y", {{"type", "unknown"}, {"default", 0.4}}},
                             {"T", {{"type", "parameter"}, {"default", 0.5}}}};
  esi::testing::json eqs = esi::testing::json::array();
  eqs.push_back(eq(ddt("x"), op("neg", {"x"})));
  eqs.push_back(eq(ddt("y"), fn("interp.bilinear", {cst({{1, 2, 3}, {4, 5, 7}}), cst({0, 1}),
                                                    cst({0, 1, 2}), "T", "x"})));
  return esi::testing::system_from_json(
      {{"models", {{"M", {{"variables", vars}, {"equations", eqs}}}}}});
}

fs::path problems_dir() {
  return fs::path(ESI_SOURCE_DIR) / "tests/problems";
}

}  // namespace

TEST(Derivatives, HandCheckedParameterJacobian) {
  // A + B -> C at k1 * exp(-E / T); C -> A at k2.
  const auto s = esi::testing::system_from(R"("models": {"M": {"variables": {
      "A": {"type": "unknown", "default": 1}, "B": {"type": "unknown", "default": 2},
      "C": {"type": "unknown", "default": 3}, "k1": {"type": "parameter", "default": 0.5},
      "k2": {"type": "parameter", "default": 4}, "E": {"type": "parameter", "default": 100},
      "T": {"type": "parameter", "default": 300}, "r1": {"type": "unknown"}},
    "equations": [
      {"lhs": "r1", "rhs": {"op": "*", "args": ["k1", {"op": "exp", "args": [
          {"op": "/", "args": [{"op": "neg", "args": ["E"]}, "T"]}]}, "A", "B"]}},
      {"lhs": {"op": "D", "args": ["A"], "wrt": "t"},
       "rhs": {"op": "-", "args": [{"op": "*", "args": ["k2", "C"]}, "r1"]}},
      {"lhs": {"op": "D", "args": ["B"], "wrt": "t"}, "rhs": {"op": "neg", "args": ["r1"]}},
      {"lhs": {"op": "D", "args": ["C"], "wrt": "t"},
       "rhs": {"op": "-", "args": ["r1", {"op": "*", "args": ["k2", "C"]}]}}]}})");
  const std::vector<int> params = differentiable_parameters(s);
  ASSERT_EQ(params.size(), 4u);
  const ParameterJacobianProgram dfdp = compile_parameter_jacobian(s, params);
  const int B = s.state_index("M.B"), k2 = s.parameter_index("M.k2");
  // Row B reads k1, E and T (through r1) but not k2: three nonzeros; rows A and C all four.
  EXPECT_EQ(dfdp.row_ptr[B + 1] - dfdp.row_ptr[B], 3);
  EXPECT_EQ(dfdp.col.size(), 11u);
  for (int q = dfdp.row_ptr[B]; q < dfdp.row_ptr[B + 1]; ++q)
    EXPECT_NE(dfdp.parameters[dfdp.col[q]], k2);
  const std::vector<double> u{1.5, 2.5, 0.25}, p = esi::testing::defaults(s.parameters);
  const auto v = run_program(dfdp.values, u, p, 0.0);
  const double arr = std::exp(-100.0 / 300.0);
  const int k1 = s.parameter_index("M.k1"), T = s.parameter_index("M.T");
  auto at = [&](int r, int param) {
    for (int q = dfdp.row_ptr[r]; q < dfdp.row_ptr[r + 1]; ++q)
      if (dfdp.parameters[dfdp.col[q]] == param) return v[q];
    return -1e300;
  };
  EXPECT_DOUBLE_EQ(at(B, k1), -arr * u[0] * u[1]);
  EXPECT_DOUBLE_EQ(at(B, T), -0.5 * arr * (100.0 / (300.0 * 300.0)) * u[0] * u[1]);
  EXPECT_DOUBLE_EQ(at(s.state_index("M.C"), k2), -u[2]);
}

TEST(Derivatives, EveryOperatorMatchesHyperDualNumbers) {
  const System s = every_operator_system();
  const Derivatives d = compile_derivatives(s);
  EXPECT_EQ(d.dfdp.parameters.size(), 3u);
  EXPECT_GT(d.second.u_entry.size(), 0u);
  EXPECT_GT(d.second.p_entry.size(), 0u);
  expect_every_check(s, d, {1u, 2u, 3u}, "every operator");
}

TEST(Derivatives, PatternsAreSortedAndEntryMajor) {
  const System s = every_operator_system();
  const Derivatives d = compile_derivatives(s);
  for (std::size_t r = 0; r + 1 < d.dfdp.row_ptr.size(); ++r)
    for (int q = d.dfdp.row_ptr[r] + 1; q < d.dfdp.row_ptr[r + 1]; ++q)
      EXPECT_LT(d.dfdp.col[q - 1], d.dfdp.col[q]);
  auto entry_major = [](const std::vector<int>& entry, const std::vector<int>& along) {
    for (std::size_t q = 1; q < entry.size(); ++q)
      if (entry[q - 1] > entry[q] || (entry[q - 1] == entry[q] && along[q - 1] >= along[q]))
        return false;
    return true;
  };
  EXPECT_TRUE(entry_major(d.second.u_entry, d.second.u_state));
  EXPECT_TRUE(entry_major(d.second.p_entry, d.second.p_param));
  EXPECT_EQ(d.second.values.output_count(), d.second.u_entry.size() + d.second.p_entry.size());
}

TEST(Derivatives, ChosenParametersAreTheColumns) {
  const System s = every_operator_system();
  const JacobianProgram jac = compile_jacobian(s);
  const std::vector<int> params{s.parameter_index("M.c"), s.parameter_index("M.k")};  // any order
  const ParameterJacobianProgram dfdp = compile_parameter_jacobian(s, params);
  const SecondDerivativeProgram second = compile_second_derivatives(jac, params);
  EXPECT_EQ(dfdp.parameters, params);
  for (int c : dfdp.col) EXPECT_LT(c, 2);
  for (int c : second.p_param) EXPECT_LT(c, 2);
  // The column of c equals the full program's column of c.
  const Derivatives all = compile_derivatives(s);
  const Point x = point_for(s, 5);
  const auto mine = run_program(dfdp.values, x.u, x.p, x.t);
  const auto full = run_program(all.dfdp.values, x.u, x.p, x.t);
  const int c_full = static_cast<int>(
      std::find(all.dfdp.parameters.begin(), all.dfdp.parameters.end(), params[0]) -
      all.dfdp.parameters.begin());
  for (std::size_t r = 0; r < s.states.size(); ++r) {
    double a = 0, b = 0;
    for (int q = dfdp.row_ptr[r]; q < dfdp.row_ptr[r + 1]; ++q)
      if (dfdp.col[q] == 0) a = mine[q];
    for (int q = all.dfdp.row_ptr[r]; q < all.dfdp.row_ptr[r + 1]; ++q)
      if (all.dfdp.col[q] == c_full) b = full[q];
    EXPECT_EQ(a, b) << s.states[r].name;
  }
}

TEST(Derivatives, InvalidParametersAreRefused) {
  const System s = every_operator_system();
  const JacobianProgram jac = compile_jacobian(s);
  for (const std::vector<int>& bad :
       {std::vector<int>{-1}, std::vector<int>{99}, std::vector<int>{0, 0}}) {
    for (int which = 0; which < 2; ++which) {
      try {
        if (which == 0)
          (void)compile_parameter_jacobian(s, bad);
        else
          (void)compile_second_derivatives(jac, bad);
        ADD_FAILURE() << "accepted";
      } catch (const esi::Error& e) {
        EXPECT_EQ(e.code(), "invalid_parameter");
      }
    }
  }
}

TEST(Derivatives, DifferentiableParametersExcludeForcingAndChangingOnes) {
  System s = every_operator_system();
  const int k = s.parameter_index("M.k"), T = s.parameter_index("M.T"),
            c = s.parameter_index("M.c");
  auto sorted = [](std::vector<int> v) {  // System::parameters order
    std::sort(v.begin(), v.end());
    return v;
  };
  EXPECT_EQ(differentiable_parameters(s), sorted({k, T, c}));
  CompileOptions o;
  o.forcing = {"M.T"};
  EXPECT_EQ(differentiable_parameters(s, o), sorted({k, c}));
  s.parameters[static_cast<std::size_t>(k)].cadence =
      esi::esm::Cadence::Discrete;  // events change it
  s.parameters[static_cast<std::size_t>(c)].cadence = esi::esm::Cadence::Brownian;  // noise
  EXPECT_EQ(differentiable_parameters(s), (std::vector<int>{T}));
  s.parameters[static_cast<std::size_t>(c)].cadence = esi::esm::Cadence::Sampled;  // held in a run
  EXPECT_EQ(differentiable_parameters(s), sorted({T, c}));
}

// The lookup's slopes have their own derivatives (the cross slope): second derivatives through
// interp.bilinear along a state and a parameter, and through the every-operator model's lookup
// that reads two states, equal the hyper-dual oracle's (which writes the cross slope out).
TEST(Derivatives, BilinearLookupsHaveSecondDerivatives) {
  for (const System& s : {bilinear_system(), esi::testing::system_from(esi::testing::all_ops_model())}) {
    const Derivatives d = compile_derivatives(s);
    EXPECT_GT(d.second.u_entry.size() + d.second.p_entry.size(), 0u);
    expect_every_check(s, d, {1u, 2u, 3u, 4u}, "bilinear");
  }
  // The cross slope itself: a cell of f = 1 + 2x + 3y + 5xy has e = 5; clamped axes give 0.
  const std::vector<double> ax{0, 1, 3}, ay{0, 2}, table{1, 1 + 3 * 2, 1 + 2 * 1, 1 + 2 + 6 + 10,
                                                          1 + 6, 1 + 6 + 6 + 30};
  EXPECT_DOUBLE_EQ(esi::kernel::interp_bilinear_dxy(table, ax, ay, 0.5, 1.0), 5.0);
  EXPECT_DOUBLE_EQ(esi::kernel::interp_bilinear_dxy(table, ax, ay, 2.0, 0.5), 5.0);
  EXPECT_EQ(esi::kernel::interp_bilinear_dxy(table, ax, ay, -1.0, 1.0), 0.0);
  EXPECT_EQ(esi::kernel::interp_bilinear_dxy(table, ax, ay, 2.0, 2.5), 0.0);
  EXPECT_TRUE(std::isnan(esi::kernel::interp_bilinear_dxy(table, ax, ay, std::nan(""), 1.0)));
}

TEST(Derivatives, TestSetProblemsMatchHyperDualNumbers) {
  const auto refs = esi::problems::load_references(problems_dir());
  ASSERT_EQ(refs.size(), 5u);
  for (const auto& [key, ref] : refs) {
    auto c = esi::problems::CompiledProblem::load(ref.file, ref.states);
    c->enable_derivatives();
    const esi::method::OdeProblem prob = c->ode_problem();
    const System& s = c->system();
    const Derivatives d{c->jacobian_program(), c->parameter_jacobian_program(),
                        c->second_derivative_program()};
    ASSERT_EQ(prob.parameter_count, d.dfdp.parameters.size()) << key;
    ASSERT_EQ(prob.param_row_ptr.size(), s.states.size() + 1) << key;
    // The callbacks give the programs' values.
    const Point x = point_for(s, 31);
    std::vector<double> dfdp(prob.param_col.size()), hu(prob.hess_u_entry.size()),
        hp(prob.hess_p_entry.size());
    prob.parameter_jacobian(prob.context, x.t, x.u.data(), dfdp.data());
    prob.second_derivatives(prob.context, x.t, x.u.data(), hu.data(), hp.data());
    const Values val = values_at(d, x.u, x.p, x.t);
    EXPECT_EQ(dfdp, val.dfdp) << key;
    EXPECT_EQ(hu, val.hu) << key;
    EXPECT_EQ(hp, val.hp) << key;
    expect_every_check(s, d, {31u, 32u}, key);
    std::cout << "[derivatives] " << key << ": " << s.states.size() << " states, "
              << d.dfdp.parameters.size() << " parameters, " << d.dfdp.col.size()
              << " df/dp nonzeros, " << d.second.u_entry.size() << " + " << d.second.p_entry.size()
              << " second derivatives\n";
  }
}

TEST(Derivatives, CorpusReactionSystemsMatchHyperDualNumbers) {
  const fs::path corpus = esi::testing::corpus_dir();
  if (corpus.empty()) GTEST_SKIP() << "corpus not found: set ESI_CORPUS";
  int checked = 0, refused = 0;
  double max_rel = 0;
  bool fullchem = false;
  for (const auto& f : esi::testing::corpus_documents(corpus)) {
    System s;
    try {
      const auto doc = esi::esm::load_resolved(f);
      if (doc.library_only) continue;
      esi::esm::FlattenOptions per_region;  // a grid's cells would take minutes to flatten
      per_region.grid = true;
      s = esi::esm::flatten(doc, per_region);
      if (s.reactions.empty() || !s.grid.empty() || !esi::esm::validate_file(f).valid()) continue;
      (void)compile(s);  // documents the RHS compiler refuses are not derivative cases
    } catch (const esi::Error&) {
      continue;
    }
    const std::string rel = fs::relative(f, corpus).generic_string();
    try {
      const Derivatives d = compile_derivatives(s);
      const Tally t = check_system(s, d, 77);
      EXPECT_EQ(t.failure, "") << rel;
      const Tally vjp = check_vector_jacobian_product(s, d, point_for(s, 79));
      EXPECT_EQ(vjp.failure, "") << rel;
      EXPECT_EQ(vjp.nonfinite, 0) << rel;
      // The fused J + df/dp program the sweeps use gives the two programs' values.
      const Point x = point_for(s, 78);
      const std::vector<double> both = run_program(compile_first_derivatives(d.jac, d.dfdp), x.u, x.p, x.t);
      std::vector<double> apart = run_program(d.jac.values, x.u, x.p, x.t);
      const std::vector<double> fp = run_program(d.dfdp.values, x.u, x.p, x.t);
      apart.insert(apart.end(), fp.begin(), fp.end());
      ASSERT_EQ(both.size(), apart.size()) << rel;
      for (std::size_t k = 0; k < both.size(); ++k)
        EXPECT_LE(std::fabs(both[k] - apart[k]), 1e-14 * std::max(std::fabs(both[k]), std::fabs(apart[k])))
            << rel << " output " << k;
      max_rel = std::max(max_rel, t.max_rel);
      ++checked;
      if (rel.find("geoschem_fullchem") != std::string::npos) {
        fullchem = true;
        std::cout << "[derivatives] fullchem: " << s.states.size() << " states, "
                  << d.dfdp.parameters.size() << " parameters, " << d.jac.col.size()
                  << " Jacobian nonzeros, " << d.dfdp.col.size() << " df/dp nonzeros, "
                  << d.second.u_entry.size() << " + " << d.second.p_entry.size()
                  << " second derivatives (by u + by p); compiled in " << d.jacobian_seconds
                  << " s (Jacobian) + " << d.derivative_seconds << " s (both derivative "
                  << "programs); tapes: Jacobian " << tape_size(d.jac.values) << ", df/dp "
                  << tape_size(d.dfdp.values) << ", second derivatives "
                  << tape_size(d.second.values) << ", J + df/dp "
                  << tape_size(compile_first_derivatives(d.jac, d.dfdp)) << ", w'J and w'df/dp "
                  << tape_size(compile_vector_jacobian_product(d.jac, d.dfdp.parameters).values) << "; "
                  << t.compared << " values compared\n";
      }
    } catch (const esi::Error& e) {
      // A closed function without a second derivative: refused, and located.
      EXPECT_EQ(e.code(), "adjoint_unsupported_function") << rel << ": " << e.what();
      EXPECT_FALSE(e.diagnostic().pointer.empty()) << rel;
      ++refused;
    }
  }
  std::cout << "[derivatives corpus] " << checked << " reaction systems checked, " << refused
            << " refused (no second derivative), max error " << max_rel << "\n";
  EXPECT_TRUE(fullchem);
  EXPECT_GT(checked, 5);
}
