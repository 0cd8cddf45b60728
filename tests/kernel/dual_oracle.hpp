// Forward-mode dual numbers over the oracle's semantics: the reference for analytic Jacobians.
// Column j of d(RHS)/du is one evaluation with state j seeded by 1. Piecewise ops follow the
// branch the value takes; a closed lookup uses the kernel's slope helpers (tested separately);
// a zero tangent stays zero through inf and NaN values (strong zeros).
#pragma once

#include <cmath>
#include <string>
#include <unordered_map>

#include "esi/core/error.hpp"
#include "esi/esm/system.hpp"
#include "esi/expr/parse.hpp"
#include "esi/kernel/closed_functions.hpp"

namespace esi::testing {

struct Dual {
  double v = 0, d = 0;
};

class DualOracle {
 public:
  DualOracle(const esm::System& s, const double* u, const double* p, double t, std::size_t seed)
      : s_(s) {
    for (std::size_t i = 0; i < s.states.size(); ++i) env_[s.states[i].name] = {u[i], i == seed ? 1.0 : 0.0};
    for (std::size_t i = 0; i < s.parameters.size(); ++i) env_[s.parameters[i].name] = {p[i], 0};
    env_["t"] = {t, 0};
    for (std::size_t i = 0; i < s.observed.size(); ++i) {
      try {
        env_[s.observed[i].name] = eval(s.observed_rhs[i]);
      } catch (const Error&) {  // reads an algebraic unknown: stays unbound
      }
    }
  }

  Dual eval(expr::NodeId id) {
    if (auto it = memo_.find(id); it != memo_.end()) return it->second;
    const Dual r = compute(id);
    memo_[id] = r;
    return r;
  }

 private:
  using Op = expr::Op;
  Dual arg(expr::NodeId id, std::size_t i) { return eval(s_.pool.args(id)[i]); }

  // Strong zeros: a zero tangent contributes nothing even when the value is inf or NaN, as a
  // structurally absent term in the symbolic derivative (x / 0 with constant 0 has d = dx / 0).
  static double times(double x, double dx) { return dx == 0 ? 0.0 : x * dx; }
  static Dual mul(Dual a, Dual b) { return {a.v * b.v, times(b.v, a.d) + times(a.v, b.d)}; }
  static Dual div(Dual a, Dual b) {
    return {a.v / b.v, times(1 / b.v, a.d) - times(a.v / (b.v * b.v), b.d)};
  }
  static Dual chain(double v, double dv, Dual a) { return {v, times(dv, a.d)}; }
  static Dual pick(bool first, Dual a, Dual b) { return first ? a : b; }

  Dual fold(expr::NodeId id, Dual (*f)(Dual, Dual)) {
    const auto a = s_.pool.args(id);
    Dual acc = eval(a[0]);
    for (std::size_t i = 1; i < a.size(); ++i) acc = f(acc, eval(a[i]));
    return acc;
  }

  Dual closed(expr::NodeId id) {
    using kernel::ClosedFn;
    const ClosedFn f = kernel::closed_fn_from_name(s_.pool.str(s_.pool.node(id).name));
    const kernel::ClosedTable tab = kernel::extract_table(s_.pool, id, f);
    const auto a = s_.pool.args(id);
    if (kernel::is_datetime(f)) {
      const Dual x = eval(a[0]);
      return {kernel::datetime(f, x.v), f == ClosedFn::JulianDay ? x.d / 86400.0 : 0.0};
    }
    if (f == ClosedFn::SearchSorted) return {kernel::searchsorted(eval(a[0]).v, tab.axis_x), 0};
    if (f == ClosedFn::Linear) {
      const Dual x = eval(a[2]);
      return {kernel::interp_linear(tab.values, tab.axis_x, x.v),
              kernel::interp_linear_slope(tab.values, tab.axis_x, x.v) * x.d};
    }
    const Dual x = eval(a[3]), y = eval(a[4]);
    return {kernel::interp_bilinear(tab.values, tab.axis_x, tab.axis_y, x.v, y.v),
            kernel::interp_bilinear_dx(tab.values, tab.axis_x, tab.axis_y, x.v, y.v) * x.d +
                kernel::interp_bilinear_dy(tab.values, tab.axis_x, tab.axis_y, x.v, y.v) * y.d};
  }

  Dual compute(expr::NodeId id);
  Dual elementary(expr::NodeId id);

  const esm::System& s_;
  std::unordered_map<std::string, Dual> env_;
  std::unordered_map<expr::NodeId, Dual> memo_;
};

inline Dual DualOracle::compute(expr::NodeId id) {
  const expr::Node& n = s_.pool.node(id);
  const std::size_t k = s_.pool.args(id).size();
  auto flag = [](bool b) { return Dual{b ? 1.0 : 0.0, 0.0}; };
  switch (n.op) {
    case Op::Number: return {n.number, 0};
    case Op::True: return {1, 0};
    case Op::Symbol: {
      auto it = env_.find(std::string(s_.pool.str(n.name)));
      if (it == env_.end()) throw Error("undefined_variable", "", "", std::string(s_.pool.str(n.name)));
      return it->second;
    }
    case Op::Add: return fold(id, [](Dual a, Dual b) { return Dual{a.v + b.v, a.d + b.d}; });
    case Op::Sub:
      if (k == 1) return {-arg(id, 0).v, -arg(id, 0).d};
      return fold(id, [](Dual a, Dual b) { return Dual{a.v - b.v, a.d - b.d}; });
    case Op::Neg: return {-arg(id, 0).v, -arg(id, 0).d};
    case Op::Mul: return fold(id, mul);
    case Op::Div: return div(arg(id, 0), arg(id, 1));
    case Op::Pow: {
      const Dual a = arg(id, 0), b = arg(id, 1);
      const double v = std::pow(a.v, b.v);
      const double d = times(b.v * std::pow(a.v, b.v - 1), a.d) + times(v * std::log(a.v), b.d);
      return {v, d};
    }
    case Op::Min:
      return fold(id, [](Dual a, Dual b) { return pick(a.v <= b.v || a.v != a.v, a, b); });
    case Op::Max:
      return fold(id, [](Dual a, Dual b) { return pick(a.v >= b.v || a.v != a.v, a, b); });
    case Op::IfElse: return arg(id, 0).v != 0 ? arg(id, 1) : arg(id, 2);
    case Op::Lt: return flag(arg(id, 0).v < arg(id, 1).v);
    case Op::Le: return flag(arg(id, 0).v <= arg(id, 1).v);
    case Op::Gt: return flag(arg(id, 0).v > arg(id, 1).v);
    case Op::Ge: return flag(arg(id, 0).v >= arg(id, 1).v);
    case Op::Eq: return flag(arg(id, 0).v == arg(id, 1).v);
    case Op::Ne: return flag(arg(id, 0).v != arg(id, 1).v);
    case Op::And: return flag(arg(id, 0).v != 0 && arg(id, 1).v != 0);
    case Op::Or: return flag(arg(id, 0).v != 0 || arg(id, 1).v != 0);
    case Op::Not: return flag(arg(id, 0).v == 0);
    case Op::Fn: return closed(id);
    case Op::D: {
      const int s = s_.state_index(std::string(s_.pool.str(s_.pool.node(s_.pool.args(id)[0]).name)));
      return eval(s_.state_rhs[s]);
    }
    default: return elementary(id);
  }
}

inline Dual DualOracle::elementary(expr::NodeId id) {
  const expr::Node& n = s_.pool.node(id);
  const Dual a = arg(id, 0);
  const double x = a.v;
  switch (n.op) {
    case Op::Exp: return chain(std::exp(x), std::exp(x), a);
    case Op::Log: return chain(std::log(x), 1 / x, a);
    case Op::Log10: return chain(std::log10(x), 1 / (x * std::log(10.0)), a);
    case Op::Sqrt: return chain(std::sqrt(x), 0.5 / std::sqrt(x), a);
    case Op::Abs: return chain(std::fabs(x), x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0), a);
    case Op::Sign: return {x > 0 ? 1.0 : (x < 0 ? -1.0 : x), 0};
    case Op::Sin: return chain(std::sin(x), std::cos(x), a);
    case Op::Cos: return chain(std::cos(x), -std::sin(x), a);
    case Op::Tan: return chain(std::tan(x), 1 + std::tan(x) * std::tan(x), a);
    case Op::Asin: return chain(std::asin(x), 1 / std::sqrt(1 - x * x), a);
    case Op::Acos: return chain(std::acos(x), -1 / std::sqrt(1 - x * x), a);
    case Op::Atan: return chain(std::atan(x), 1 / (1 + x * x), a);
    case Op::Atan2: {
      const Dual b = arg(id, 1);
      const double r2 = a.v * a.v + b.v * b.v;
      return {std::atan2(a.v, b.v), times(b.v / r2, a.d) - times(a.v / r2, b.d)};
    }
    case Op::Sinh: return chain(std::sinh(x), std::cosh(x), a);
    case Op::Cosh: return chain(std::cosh(x), std::sinh(x), a);
    case Op::Tanh: return chain(std::tanh(x), 1 - std::tanh(x) * std::tanh(x), a);
    case Op::Asinh: return chain(std::asinh(x), 1 / std::sqrt(x * x + 1), a);
    case Op::Acosh: return chain(std::acosh(x), 1 / std::sqrt(x * x - 1), a);
    case Op::Atanh: return chain(std::atanh(x), 1 / (1 - x * x), a);
    case Op::Floor: return {std::floor(x), 0};
    case Op::Ceil: return {std::ceil(x), 0};
    default:
      throw Error("unsupported_operator", "", "", "dual oracle: " + std::string(expr::op_name(n.op)));
  }
}

}  // namespace esi::testing
