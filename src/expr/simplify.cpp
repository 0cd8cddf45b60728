// Exact simplification (see simplify.hpp). Every rule below states why it is bitwise exact for
// every double input, -0.0, ±inf and NaN included, under the kernel's evaluation order.
#include "esi/expr/simplify.hpp"

#include <bit>
#include <cmath>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

namespace esi::expr {
namespace {

bool same_bits(double a, double b) {
  return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}

/// A constant operand: a Number, or `true` (which evaluates to 1.0).
bool constant(const Pool& pool, NodeId id, double& value) {
  const Node& n = pool.node(id);
  if (n.op == Op::Number) {
    value = n.number;
    return true;
  }
  if (n.op == Op::True) {
    value = 1.0;
    return true;
  }
  return false;
}

/// A Number node whose value has exactly the bits of `value` (so 0.0 and -0.0 differ).
bool is_number(const Pool& pool, NodeId id, double value) {
  const Node& n = pool.node(id);
  return n.op == Op::Number && same_bits(n.number, value);
}

bool is_negation(const Pool& pool, NodeId id) {
  const Node& n = pool.node(id);
  return n.op == Op::Neg || (n.op == Op::Sub && n.arg_count == 1);
}

bool has_nan(std::span<const double> a) {
  for (double v : a)
    if (std::isnan(v)) return true;
  return false;
}

/// min / max over constants, folded only where every convention agrees: std::min, fmin and
/// Julia's min differ on NaN operands and on which zero they return for min(+0, -0).
std::optional<double> fold_extremum(bool is_min, std::span<const double> a) {
  if (a.size() < 2 || has_nan(a)) return std::nullopt;
  bool pos_zero = false, neg_zero = false;
  for (double v : a) {
    pos_zero |= same_bits(v, 0.0);
    neg_zero |= same_bits(v, -0.0);
  }
  if (pos_zero && neg_zero) return std::nullopt;
  double r = a[0];
  for (std::size_t i = 1; i < a.size(); ++i) r = is_min ? (a[i] < r ? a[i] : r) : (a[i] > r ? a[i] : r);
  return r;
}

/// Truth-valued ops over constants; a NaN operand is left to the kernel's convention.
std::optional<double> fold_logic(Op op, std::span<const double> a) {
  if (has_nan(a)) return std::nullopt;
  const std::size_t k = a.size();
  auto b = [](bool t) { return t ? 1.0 : 0.0; };
  switch (op) {
    case Op::Lt: if (k == 2) return b(a[0] < a[1]); break;
    case Op::Le: if (k == 2) return b(a[0] <= a[1]); break;
    case Op::Gt: if (k == 2) return b(a[0] > a[1]); break;
    case Op::Ge: if (k == 2) return b(a[0] >= a[1]); break;
    case Op::Eq: if (k == 2) return b(a[0] == a[1]); break;
    case Op::Ne: if (k == 2) return b(a[0] != a[1]); break;
    case Op::And: {
      if (k == 0) break;
      bool t = true;
      for (double v : a) t = t && v != 0;
      return b(t);
    }
    case Op::Or: {
      if (k == 0) break;
      bool t = false;
      for (double v : a) t = t || v != 0;
      return b(t);
    }
    case Op::Not: if (k == 1) return b(a[0] == 0); break;
    default: break;
  }
  return std::nullopt;
}

std::optional<double> fold_unary(Op op, double x) {
  switch (op) {
    case Op::Neg: return -x;
    case Op::Exp: return std::exp(x);
    case Op::Log: return std::log(x);
    case Op::Log10: return std::log10(x);
    case Op::Sqrt: return std::sqrt(x);
    case Op::Abs: return std::fabs(x);
    case Op::Sin: return std::sin(x);
    case Op::Cos: return std::cos(x);
    case Op::Tan: return std::tan(x);
    case Op::Asin: return std::asin(x);
    case Op::Acos: return std::acos(x);
    case Op::Atan: return std::atan(x);
    case Op::Sinh: return std::sinh(x);
    case Op::Cosh: return std::cosh(x);
    case Op::Tanh: return std::tanh(x);
    case Op::Asinh: return std::asinh(x);
    case Op::Acosh: return std::acosh(x);
    case Op::Atanh: return std::atanh(x);
    case Op::Floor: return std::floor(x);
    case Op::Ceil: return std::ceil(x);
    case Op::Sign:
      // sign(-0.0) is -0.0 in Julia and +0.0 elsewhere, sign(NaN) varies: fold neither.
      if (std::isnan(x) || same_bits(x, -0.0)) return std::nullopt;
      return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0);
    default: return std::nullopt;
  }
}

/// The kernel's value of `op` over constant operands, or nullopt when the op is not folded here.
std::optional<double> fold(Op op, std::span<const double> a) {
  const std::size_t k = a.size();
  switch (op) {
    case Op::Add: case Op::Mul: {
      if (k == 0) return std::nullopt;
      double r = a[0];  // left fold in argument order, no identity element
      for (std::size_t i = 1; i < k; ++i) r = op == Op::Add ? r + a[i] : r * a[i];
      return r;
    }
    case Op::Sub:
      if (k == 1) return -a[0];
      if (k == 2) return a[0] - a[1];
      return std::nullopt;
    case Op::Div: if (k == 2) return a[0] / a[1]; return std::nullopt;
    case Op::Pow: if (k == 2) return std::pow(a[0], a[1]); return std::nullopt;
    case Op::Atan2: if (k == 2) return std::atan2(a[0], a[1]); return std::nullopt;
    case Op::Min: return fold_extremum(true, a);
    case Op::Max: return fold_extremum(false, a);
    case Op::Lt: case Op::Le: case Op::Gt: case Op::Ge: case Op::Eq: case Op::Ne:
    case Op::And: case Op::Or: case Op::Not:
      return fold_logic(op, a);
    default:
      if (k == 1) return fold_unary(op, a[0]);
      return std::nullopt;
  }
}

/// Folded results of integer-literal operands stay integer literals where the op keeps them
/// integral (index arithmetic reads them back as integers).
bool integer_result(const Pool& pool, Op op, std::span<const NodeId> args, double r) {
  switch (op) {
    case Op::Add: case Op::Sub: case Op::Mul: case Op::Neg: case Op::Min: case Op::Max:
    case Op::Abs:
      break;
    default:
      return false;
  }
  for (NodeId a : args)
    if (!pool.node(a).integer_literal) return false;
  return r == std::trunc(r) && std::fabs(r) <= 9007199254740992.0 && !same_bits(r, -0.0);
}

/// Folds a node whose operands are all constants; kNoNode when it must stay.
NodeId try_fold(Pool& pool, Op op, std::span<const NodeId> args) {
  if (args.empty() || op == Op::IfElse) return kNoNode;  // `true` keeps its spelling
  std::vector<double> values(args.size());
  for (std::size_t i = 0; i < args.size(); ++i)
    if (!constant(pool, args[i], values[i])) return kNoNode;
  const std::optional<double> r = fold(op, values);
  if (!r || !std::isfinite(*r)) return kNoNode;  // non-finite results are not Number nodes
  return pool.number(*r, integer_result(pool, op, args, *r));
}

/// Replaces the leading run of constant operands of a left fold (+, *, min, max) by its value:
/// `1 + 2 + x` is `(1 + 2) + x`, so folding the prefix is evaluation, not re-association.
void fold_prefix(Pool& pool, Op op, std::vector<NodeId>& args) {
  std::size_t run = 0;
  double v = 0;
  while (run < args.size() && constant(pool, args[run], v)) ++run;
  if (run < 2) return;
  const NodeId folded = try_fold(pool, op, std::span<const NodeId>(args.data(), run));
  if (folded == kNoNode) return;
  args.erase(args.begin(), args.begin() + static_cast<std::ptrdiff_t>(run));
  args.insert(args.begin(), folded);
}

/// + and *: fold the constant prefix, then drop the operands that cannot change the fold.
/// + drops -0.0: x + (-0.0) == x for every x (IEEE 754 §6.3: +0 + -0 = +0, -0 + -0 = -0 under
///   round-to-nearest; NaN propagates unchanged), and (-0.0) + x == x by commutativity. NOT +0:
///   -0.0 + 0.0 is +0.0.
/// * drops 1.0: x * 1 == 1 * x == x exactly for every x (-0.0, ±inf, NaN included). NOT 0:
///   x * 0 is NaN for x = ±inf or NaN and -0.0 for negative x.
/// With everything dropped the fold's value is the dropped constant (-0.0 or 1.0); a single
/// remaining operand is the value of the fold itself (the kernel uses no identity element).
NodeId simplify_sum_or_product(Pool& pool, Op op, std::span<const NodeId> in) {
  std::vector<NodeId> args(in.begin(), in.end());
  fold_prefix(pool, op, args);
  const double neutral = op == Op::Add ? -0.0 : 1.0;
  std::erase_if(args, [&](NodeId a) { return is_number(pool, a, neutral); });
  if (args.empty()) return pool.number(neutral);
  if (args.size() == 1) return args[0];
  return pool.make(op, args);
}

/// min / max: the constant prefix folds (fold_extremum's conditions), min(x, x, ..., x) == x
/// (whichever operand any convention returns, it has x's bits), a single operand is itself.
NodeId simplify_extremum(Pool& pool, Op op, std::span<const NodeId> in) {
  std::vector<NodeId> args(in.begin(), in.end());
  fold_prefix(pool, op, args);
  bool all_same = true;
  for (NodeId a : args) all_same = all_same && a == args[0];
  if (all_same) return args[0];
  return pool.make(op, args);
}

/// Negation (`neg`, unary `-`) flips the sign bit: neg(neg(x)) == x bitwise, NaN included.
NodeId simplify_negation(Pool& pool, Op op, std::span<const NodeId> args) {
  if (is_negation(pool, args[0])) return pool.args(args[0])[0];
  return pool.make(op, args);
}

/// x - (+0.0) == x + (-0.0) == x for every x (IEEE defines x - y as x + (-y)). NOT x - (-0.0)
/// (-0.0 - -0.0 is +0.0) and NOT 0 - x -> -x (0 - 0 is +0.0, and a NaN keeps its sign).
NodeId simplify_difference(Pool& pool, std::span<const NodeId> args) {
  if (args.size() == 1) return simplify_negation(pool, Op::Sub, args);
  if (args.size() == 2 && is_number(pool, args[1], 0.0)) return args[0];
  return pool.make(Op::Sub, args);
}

/// x / 1 == x exactly for every x (division is correctly rounded and x is representable).
/// NOT x / -1 -> -x: a NaN dividend keeps its sign bit through the division.
NodeId simplify_quotient(Pool& pool, std::span<const NodeId> args) {
  if (args.size() == 2 && is_number(pool, args[1], 1.0)) return args[0];
  return pool.make(Op::Div, args);
}

/// std::pow (C11 F.10.4.4): pow(x, ±0) == 1 for every x, NaN included; pow(+1, y) == 1 for
/// every y, NaN included; pow(x, 1) == x (±0, ±inf and NaN by Annex F, finite x because the
/// exact result x is representable and glibc's pow errs by under 1 ulp).
NodeId simplify_power(Pool& pool, std::span<const NodeId> args) {
  if (args.size() != 2) return pool.make(Op::Pow, args);
  if (is_number(pool, args[1], 0.0) || is_number(pool, args[1], -0.0)) return pool.number(1.0);
  if (is_number(pool, args[0], 1.0)) return pool.number(1.0);
  if (is_number(pool, args[1], 1.0)) return args[0];
  return pool.make(Op::Pow, args);
}

/// fabs clears the sign bit: abs(-x) == abs(abs(x)) == abs(x) bitwise, NaN included.
NodeId simplify_abs(Pool& pool, std::span<const NodeId> args) {
  const Node& a = pool.node(args[0]);
  if (a.op == Op::Abs) return args[0];
  if (is_negation(pool, args[0])) {
    const NodeId inner = pool.args(args[0])[0];
    return make_simplified(pool, Op::Abs, std::span<const NodeId>(&inner, 1), 1);
  }
  return pool.make(Op::Abs, args);
}

/// ifelse(c, a, b) evaluates to a when c != 0 (a NaN condition included) and b otherwise, so a
/// constant condition selects its branch; ifelse(c, a, a) is a whatever c is (no side effects).
NodeId simplify_ifelse(Pool& pool, std::span<const NodeId> args) {
  if (args.size() != 3) return pool.make(Op::IfElse, args);
  double c = 0;
  if (constant(pool, args[0], c)) return c != 0 ? args[1] : args[2];
  if (args[1] == args[2]) return args[1];
  return pool.make(Op::IfElse, args);
}

}  // namespace

NodeId make_simplified(Pool& pool, Op op, std::span<const NodeId> children,
                       std::uint16_t arg_count, StrId name, StrId attrs) {
  if (!is_scalar_op(op) || children.size() != arg_count || name != 0 || attrs != 0)
    return pool.make(op, children, arg_count, name, attrs);
  if (const NodeId folded = try_fold(pool, op, children); folded != kNoNode) return folded;
  const std::size_t k = children.size();
  switch (op) {
    case Op::Add: case Op::Mul:
      if (k >= 1) return simplify_sum_or_product(pool, op, children);
      break;
    case Op::Min: case Op::Max:
      if (k >= 2) return simplify_extremum(pool, op, children);
      break;
    case Op::Neg:
      if (k == 1) return simplify_negation(pool, op, children);
      break;
    case Op::Sub: return simplify_difference(pool, children);
    case Op::Div: return simplify_quotient(pool, children);
    case Op::Pow: return simplify_power(pool, children);
    case Op::Abs:
      if (k == 1) return simplify_abs(pool, children);
      break;
    case Op::IfElse: return simplify_ifelse(pool, children);
    default: break;
  }
  return pool.make(op, children, arg_count);
}

namespace {

struct Simplifier {
  Pool& pool;
  std::unordered_map<NodeId, NodeId> memo;

  NodeId run(NodeId id) {
    if (auto it = memo.find(id); it != memo.end()) return it->second;
    const Node n = pool.node(id);  // copied: the pool grows below
    NodeId out = id;
    if (n.child_count > 0) {
      const auto kids_in = pool.children(id);
      std::vector<NodeId> kids(kids_in.begin(), kids_in.end());
      for (NodeId& c : kids) c = run(c);
      out = make_simplified(pool, n.op, kids, n.arg_count, n.name, n.attrs);
    }
    memo.emplace(id, out);
    return out;
  }
};

}  // namespace

NodeId simplify(Pool& pool, NodeId root) {
  Simplifier s{pool, {}};
  return s.run(root);
}

}  // namespace esi::expr
