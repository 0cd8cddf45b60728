// Forward-mode dual numbers with sparse gradients (the planner's independent derivative) and the
// additive-term splitter.
#include <algorithm>
#include <cmath>
#include <string>

#include "esi/core/error.hpp"
#include "esi/kernel/closed_functions.hpp"
#include "plan/plan_internal.hpp"

namespace esi::plan::detail {
namespace {

using expr::NodeId;
using expr::Op;
using Grad = std::vector<std::pair<std::int64_t, double>>;

// Strong zeros: a zero tangent contributes nothing even when its factor is inf or NaN (as a
// structurally absent term of the symbolic derivative).
double times(double x, double dx) { return dx == 0 ? 0.0 : x * dx; }

/// a * A + b * B, merged by state index.
Grad combine(double a, const Grad& A, double b, const Grad& B) {
  Grad out;
  out.reserve(A.size() + B.size());
  std::size_t i = 0, j = 0;
  while (i < A.size() || j < B.size()) {
    if (j == B.size() || (i < A.size() && A[i].first < B[j].first)) {
      out.emplace_back(A[i].first, times(a, A[i].second));
      ++i;
    } else if (i == A.size() || B[j].first < A[i].first) {
      out.emplace_back(B[j].first, times(b, B[j].second));
      ++j;
    } else {
      out.emplace_back(A[i].first, times(a, A[i].second) + times(b, B[j].second));
      ++i, ++j;
    }
  }
  return out;
}

Grad scaled(double a, const Grad& A) {
  Grad out = A;
  for (auto& [k, d] : out) d = times(a, d);
  return out;
}

SparseDual chain(double v, double dv, const SparseDual& a) { return {v, scaled(dv, a.d)}; }
SparseDual flag(bool b) { return {b ? 1.0 : 0.0, {}}; }

}  // namespace

SparseDual DualEvaluator::eval(NodeId id) {
  if (auto it = memo_.find(id); it != memo_.end()) return it->second;
  SparseDual r = compute(id);
  memo_[id] = r;
  return r;
}

SparseDual DualEvaluator::closed(NodeId id) {
  using kernel::ClosedFn;
  const ClosedFn f = kernel::closed_fn_from_name(pool_.str(pool_.node(id).name));
  const kernel::ClosedTable tab = kernel::extract_table(pool_, id, f);
  const auto a = pool_.args(id);
  if (kernel::is_datetime(f)) {
    const SparseDual x = eval(a[0]);
    return {kernel::datetime(f, x.v), f == ClosedFn::JulianDay ? scaled(1.0 / 86400.0, x.d) : Grad{}};
  }
  if (f == ClosedFn::SearchSorted) return {kernel::searchsorted(eval(a[0]).v, tab.axis_x), {}};
  if (f == ClosedFn::Linear) {
    const SparseDual x = eval(a[2]);
    return chain(kernel::interp_linear(tab.values, tab.axis_x, x.v),
                 kernel::interp_linear_slope(tab.values, tab.axis_x, x.v), x);
  }
  if (f != ClosedFn::Bilinear) {
    // The derivative helpers (linear_slope, bilinear_dx / _dy / _dxy) appear only in
    // symbolic derivatives, not in the right-hand sides this evaluates: no tangent is formed.
    std::vector<double> scalars;
    const int tables = kernel::closed_fn_table_args(f);
    for (std::size_t i = static_cast<std::size_t>(tables); i < a.size(); ++i) scalars.push_back(eval(a[i]).v);
    return {kernel::eval_closed(f, tab, scalars.data()), {}};
  }
  const SparseDual x = eval(a[3]), y = eval(a[4]);
  return {kernel::interp_bilinear(tab.values, tab.axis_x, tab.axis_y, x.v, y.v),
          combine(kernel::interp_bilinear_dx(tab.values, tab.axis_x, tab.axis_y, x.v, y.v), x.d,
                  kernel::interp_bilinear_dy(tab.values, tab.axis_x, tab.axis_y, x.v, y.v), y.d)};
}

SparseDual DualEvaluator::compute(NodeId id) {
  const expr::Node n = pool_.node(id);
  const auto args = pool_.args(id);
  auto arg = [&](std::size_t i) { return eval(args[i]); };
  switch (n.op) {
    case Op::Number: return {n.number, {}};
    case Op::True: return {1, {}};
    case Op::Symbol: return resolve_(id);
    case Op::Add: {
      SparseDual acc = arg(0);
      for (std::size_t i = 1; i < args.size(); ++i) {
        const SparseDual b = arg(i);
        acc = {acc.v + b.v, combine(1, acc.d, 1, b.d)};
      }
      return acc;
    }
    case Op::Sub: {
      if (args.size() == 1) {
        const SparseDual a = arg(0);
        return {-a.v, scaled(-1, a.d)};
      }
      SparseDual acc = arg(0);
      for (std::size_t i = 1; i < args.size(); ++i) {
        const SparseDual b = arg(i);
        acc = {acc.v - b.v, combine(1, acc.d, -1, b.d)};
      }
      return acc;
    }
    case Op::Neg: {
      const SparseDual a = arg(0);
      return {-a.v, scaled(-1, a.d)};
    }
    case Op::Mul: {
      SparseDual acc = arg(0);
      for (std::size_t i = 1; i < args.size(); ++i) {
        const SparseDual b = arg(i);
        acc = {acc.v * b.v, combine(b.v, acc.d, acc.v, b.d)};
      }
      return acc;
    }
    case Op::Div: {
      const SparseDual a = arg(0), b = arg(1);
      return {a.v / b.v, combine(1 / b.v, a.d, -(a.v / (b.v * b.v)), b.d)};
    }
    case Op::Pow: {
      const SparseDual a = arg(0), b = arg(1);
      const double v = std::pow(a.v, b.v);
      Grad d = scaled(b.v * std::pow(a.v, b.v - 1), a.d);
      if (!b.d.empty()) d = combine(1, d, v * std::log(a.v), b.d);
      return {v, std::move(d)};
    }
    case Op::Min: {
      SparseDual acc = arg(0);
      for (std::size_t i = 1; i < args.size(); ++i) {
        SparseDual b = arg(i);
        if (!(acc.v <= b.v || acc.v != acc.v)) acc = std::move(b);
      }
      return acc;
    }
    case Op::Max: {
      SparseDual acc = arg(0);
      for (std::size_t i = 1; i < args.size(); ++i) {
        SparseDual b = arg(i);
        if (!(acc.v >= b.v || acc.v != acc.v)) acc = std::move(b);
      }
      return acc;
    }
    case Op::IfElse: return arg(0).v != 0 ? arg(1) : arg(2);
    case Op::Lt: return flag(arg(0).v < arg(1).v);
    case Op::Le: return flag(arg(0).v <= arg(1).v);
    case Op::Gt: return flag(arg(0).v > arg(1).v);
    case Op::Ge: return flag(arg(0).v >= arg(1).v);
    case Op::Eq: return flag(arg(0).v == arg(1).v);
    case Op::Ne: return flag(arg(0).v != arg(1).v);
    case Op::And: return flag(arg(0).v != 0 && arg(1).v != 0);
    case Op::Or: return flag(arg(0).v != 0 || arg(1).v != 0);
    case Op::Not: return flag(arg(0).v == 0);
    case Op::Fn: return closed(id);
    default: return elementary(id);
  }
}

SparseDual DualEvaluator::elementary(NodeId id) {
  const expr::Node n = pool_.node(id);
  if (!expr::is_scalar_op(n.op) || pool_.args(id).empty())
    throw Error("unsupported_operator", "", "",
                "the planner's dual-number check cannot evaluate '" + std::string(expr::op_name(n.op)) + "'");
  const SparseDual a = eval(pool_.args(id)[0]);
  const double x = a.v;
  switch (n.op) {
    case Op::Exp: return chain(std::exp(x), std::exp(x), a);
    case Op::Log: return chain(std::log(x), 1 / x, a);
    case Op::Log10: return chain(std::log10(x), 1 / (x * std::log(10.0)), a);
    case Op::Sqrt: return chain(std::sqrt(x), 0.5 / std::sqrt(x), a);
    case Op::Abs: return chain(std::fabs(x), x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0), a);
    case Op::Sign: return {x > 0 ? 1.0 : (x < 0 ? -1.0 : x), {}};
    case Op::Sin: return chain(std::sin(x), std::cos(x), a);
    case Op::Cos: return chain(std::cos(x), -std::sin(x), a);
    case Op::Tan: return chain(std::tan(x), 1 + std::tan(x) * std::tan(x), a);
    case Op::Asin: return chain(std::asin(x), 1 / std::sqrt(1 - x * x), a);
    case Op::Acos: return chain(std::acos(x), -1 / std::sqrt(1 - x * x), a);
    case Op::Atan: return chain(std::atan(x), 1 / (1 + x * x), a);
    case Op::Atan2: {
      const SparseDual b = eval(pool_.args(id)[1]);
      const double r2 = a.v * a.v + b.v * b.v;
      return {std::atan2(a.v, b.v), combine(b.v / r2, a.d, -a.v / r2, b.d)};
    }
    case Op::Sinh: return chain(std::sinh(x), std::cosh(x), a);
    case Op::Cosh: return chain(std::cosh(x), std::sinh(x), a);
    case Op::Tanh: return chain(std::tanh(x), 1 - std::tanh(x) * std::tanh(x), a);
    case Op::Asinh: return chain(std::asinh(x), 1 / std::sqrt(x * x + 1), a);
    case Op::Acosh: return chain(std::acosh(x), 1 / std::sqrt(x * x - 1), a);
    case Op::Atanh: return chain(std::atanh(x), 1 / (1 - x * x), a);
    case Op::Floor: return {std::floor(x), {}};
    case Op::Ceil: return {std::ceil(x), {}};
    default:
      throw Error("unsupported_operator", "", "",
                  "the planner's dual-number check cannot evaluate '" + std::string(expr::op_name(n.op)) + "'");
  }
}

std::vector<NodeId> additive_terms(expr::Pool& pool, NodeId root, bool distribute) {
  std::unordered_map<NodeId, std::vector<NodeId>> memo;
  std::function<const std::vector<NodeId>&(NodeId)> terms = [&](NodeId e) -> const std::vector<NodeId>& {
    if (auto it = memo.find(e); it != memo.end()) return it->second;
    const expr::Node n = pool.node(e);
    const std::vector<NodeId> args(pool.args(e).begin(), pool.args(e).end());
    std::vector<NodeId> out;
    auto negated = [&](const std::vector<NodeId>& ts) {
      std::vector<NodeId> r;
      for (NodeId t : ts) {
        const expr::Node& tn = pool.node(t);
        r.push_back(tn.op == Op::Neg ? pool.args(t)[0] : pool.make(Op::Neg, std::vector<NodeId>{t}));
      }
      return r;
    };
    if (n.op == Op::Add) {
      for (NodeId a : args) {
        const auto ts = terms(a);
        out.insert(out.end(), ts.begin(), ts.end());
      }
    } else if (n.op == Op::Sub && args.size() >= 2) {
      out = terms(args[0]);
      for (std::size_t i = 1; i < args.size(); ++i) {
        const auto ts = negated(terms(args[i]));
        out.insert(out.end(), ts.begin(), ts.end());
      }
    } else if ((n.op == Op::Sub || n.op == Op::Neg) && args.size() == 1) {
      const auto inner = terms(args[0]);
      out = inner.size() > 1 ? negated(inner) : std::vector<NodeId>{e};
    } else if (distribute && n.op == Op::Mul) {
      int additive = -1, count = 0;
      for (std::size_t i = 0; i < args.size(); ++i)
        if (terms(args[i]).size() > 1) additive = static_cast<int>(i), ++count;
      if (count == 1) {
        for (NodeId t : std::vector<NodeId>(terms(args[additive]))) {
          std::vector<NodeId> f = args;
          f[additive] = t;
          out.push_back(pool.make(Op::Mul, f));
        }
      }
    } else if (distribute && n.op == Op::Div && terms(args[0]).size() > 1) {
      for (NodeId t : std::vector<NodeId>(terms(args[0])))
        out.push_back(pool.make(Op::Div, std::vector<NodeId>{t, args[1]}));
    }
    if (out.empty() || out.size() > kMaxTerms) out = {e};
    return memo.emplace(e, std::move(out)).first->second;
  };
  return terms(root);
}

NodeId sum_of(expr::Pool& pool, const std::vector<NodeId>& terms) {
  if (terms.empty()) return pool.number(0.0);
  if (terms.size() == 1) return terms[0];
  return pool.make(Op::Add, terms);
}

std::string owner_component(const std::string& name, const std::vector<std::string>& components) {
  std::string best;
  for (const auto& c : components)
    if (c.size() > best.size() && name.size() > c.size() && name.compare(0, c.size(), c) == 0 && name[c.size()] == '.')
      best = c;
  return best;
}

}  // namespace esi::plan::detail
