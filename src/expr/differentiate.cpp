// Symbolic partial derivatives (see differentiate.hpp for the conventions).
//
// One memoized recursive walk over the simplified input. Every derivative node is built with
// make_simplified from simplified children, so the result is already a fixed point of simplify.
// Structural zeros are the canonical Number 0 node: a subtree that does not mention `wrt` maps
// to it before any rule runs, and the builders below drop zero terms and factors.
#include "esi/expr/differentiate.hpp"

#include <initializer_list>
#include <string>
#include <unordered_set>
#include <unordered_map>
#include <vector>

#include "esi/core/error.hpp"
#include "esi/expr/simplify.hpp"
#include "esi/expr/substitute.hpp"

namespace esi::expr {
namespace {

/// Memoized reachability of a Symbol named `wrt`. The memo is a hash map, not a vector over the
/// pool, so a Jacobian's many calls each cost the size of their expression, not of the pool.
class Dependence {
 public:
  Dependence(const Pool& pool, StrId wrt) : pool_(pool), wrt_(wrt) {}

  bool operator()(NodeId id) {
    if (auto it = memo_.find(id); it != memo_.end()) return it->second;
    const Node& n = pool_.node(id);
    bool dep = n.op == Op::Symbol && n.name == wrt_;
    if (!dep)
      for (NodeId c : pool_.children(id))
        if ((*this)(c)) {
          dep = true;
          break;
        }
    memo_.emplace(id, dep);
    return dep;
  }

 private:
  const Pool& pool_;
  StrId wrt_;
  std::unordered_map<NodeId, bool> memo_;
};

class Differ {
 public:
  Differ(Pool& pool, StrId wrt)
      : pool_(pool), wrt_(wrt), dep_(pool, wrt), zero_(pool.number(0.0)), one_(pool.number(1.0)) {}

  NodeId d(NodeId e) {
    if (!dep_(e)) return zero_;
    if (auto it = memo_.find(e); it != memo_.end()) return it->second;
    NodeId r = rule(e);
    const Node& n = pool_.node(r);
    if (n.op == Op::Number && n.number == 0.0) r = zero_;  // one zero node, whatever its spelling
    memo_.emplace(e, r);
    return r;
  }

 private:
  // ---- builders: make_simplified plus the structural-zero conventions of a derivative ----
  NodeId make(Op op, std::initializer_list<NodeId> a) {
    return make_simplified(pool_, op, std::span<const NodeId>(a.begin(), a.size()),
                           static_cast<std::uint16_t>(a.size()));
  }
  NodeId make(Op op, const std::vector<NodeId>& a) {
    return make_simplified(pool_, op, a, static_cast<std::uint16_t>(a.size()));
  }
  NodeId num(double v) { return pool_.number(v); }
  bool zero(NodeId id) const { return id == zero_; }
  NodeId neg(NodeId x) { return zero(x) ? zero_ : make(Op::Sub, {x}); }
  NodeId times(NodeId x, NodeId y) { return zero(x) || zero(y) ? zero_ : make(Op::Mul, {x, y}); }
  NodeId over(NodeId x, NodeId y) { return zero(x) ? zero_ : make(Op::Div, {x, y}); }
  NodeId minus(NodeId x, NodeId y) {
    if (zero(y)) return x;
    return zero(x) ? neg(y) : make(Op::Sub, {x, y});
  }
  NodeId sum(const std::vector<NodeId>& terms) {
    std::vector<NodeId> kept;
    for (NodeId t : terms)
      if (!zero(t)) kept.push_back(t);
    if (kept.empty()) return zero_;
    return kept.size() == 1 ? kept[0] : make(Op::Add, kept);
  }
  NodeId square(NodeId x) { return make(Op::Pow, {x, num(2.0)}); }
  NodeId unary(Op op, NodeId x) { return make(op, {x}); }

  [[noreturn]] void refuse(NodeId e, const std::string& why) {
    const Node& n = pool_.node(e);
    std::string op(n.op == Op::Other || n.op == Op::Fn ? pool_.str(n.name) : op_name(n.op));
    throw Error("not_differentiable", "", "",
                "cannot differentiate '" + op + "' with respect to '" +
                    std::string(pool_.str(wrt_)) + "': " + why);
  }
  void arity(NodeId e, std::size_t k) {
    if (pool_.args(e).size() != k)
      refuse(e, "expected " + std::to_string(k) + " operands, found " +
                    std::to_string(pool_.args(e).size()));
  }
  std::vector<NodeId> args(NodeId e) {
    const auto a = pool_.args(e);  // copied: the pool grows while we differentiate
    return {a.begin(), a.end()};
  }

  NodeId rule(NodeId e);
  NodeId arithmetic(NodeId e, const std::vector<NodeId>& a);
  NodeId product(const std::vector<NodeId>& a);
  NodeId power(NodeId e, NodeId base, NodeId exponent);
  NodeId elementary(NodeId e, NodeId a);
  NodeId extremum(NodeId e, const std::vector<NodeId>& a);
  NodeId closed_function(NodeId e, const std::vector<NodeId>& a);

  Pool& pool_;
  StrId wrt_;
  Dependence dep_;
  NodeId zero_, one_;
  std::unordered_map<NodeId, NodeId> memo_;
};

NodeId Differ::rule(NodeId e) {
  const Node n = pool_.node(e);
  const std::vector<NodeId> a = args(e);
  switch (n.op) {
    case Op::Symbol: return n.name == wrt_ ? one_ : zero_;
    case Op::Number: case Op::True: return zero_;
    case Op::Add: case Op::Sub: case Op::Neg: case Op::Mul: case Op::Div: case Op::Pow:
      return arithmetic(e, a);
    case Op::Sign: case Op::Floor: case Op::Ceil: case Op::Lt: case Op::Le: case Op::Gt:
    case Op::Ge: case Op::Eq: case Op::Ne: case Op::And: case Op::Or: case Op::Not:
      return zero_;  // piecewise constant: the branch taken has derivative 0
    case Op::IfElse:
      arity(e, 3);
      return make(Op::IfElse, {a[0], d(a[1]), d(a[2])});
    case Op::Min: case Op::Max:
      if (a.size() < 2) refuse(e, "min / max need at least two operands");
      return extremum(e, a);
    case Op::Atan2: {  // atan2(y, x): (x dy - y dx) / (x^2 + y^2)
      arity(e, 2);
      const NodeId numer = minus(times(a[1], d(a[0])), times(a[0], d(a[1])));
      return over(numer, make(Op::Add, {square(a[1]), square(a[0])}));
    }
    case Op::Fn: return closed_function(e, a);
    default:
      if (n.op >= Op::Exp && n.op <= Op::Atanh) {
        arity(e, 1);
        return elementary(e, a[0]);
      }
      refuse(e, "it is not a scalar operator");
  }
}

NodeId Differ::arithmetic(NodeId e, const std::vector<NodeId>& a) {
  switch (pool_.node(e).op) {
    case Op::Add: {
      std::vector<NodeId> terms;
      for (NodeId x : a) terms.push_back(d(x));
      return sum(terms);
    }
    case Op::Neg:
      arity(e, 1);
      return neg(d(a[0]));
    case Op::Sub: {  // unary negation, or the left fold a0 - a1 - ...
      if (a.empty()) refuse(e, "no operands");
      if (a.size() == 1) return neg(d(a[0]));
      NodeId acc = d(a[0]);
      for (std::size_t i = 1; i < a.size(); ++i) acc = minus(acc, d(a[i]));
      return acc;
    }
    case Op::Mul: return product(a);
    case Op::Div:  // d(a/b) = (da - (a/b) db) / b, reusing the node a/b itself
      arity(e, 2);
      return over(minus(d(a[0]), times(e, d(a[1]))), a[1]);
    default:
      arity(e, 2);
      return power(e, a[0], a[1]);
  }
}

/// d(a0 * ... * an) = sum_i (a0 ... a_{i-1} a_{i+1} ... an) * d_i, skipping zero d_i.
NodeId Differ::product(const std::vector<NodeId>& a) {
  std::vector<NodeId> terms;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const NodeId di = d(a[i]);
    if (zero(di)) continue;
    std::vector<NodeId> factors;
    for (std::size_t j = 0; j < a.size(); ++j)
      if (j != i) factors.push_back(a[j]);
    factors.push_back(di);
    terms.push_back(make(Op::Mul, factors));
  }
  return sum(terms);
}

/// a^c with a Number c: c a^(c-1) da. General a^b: b a^(b-1) da + a^b log(a) db.
NodeId Differ::power(NodeId e, NodeId base, NodeId exponent) {
  const NodeId da = d(base);
  const Node& x = pool_.node(exponent);
  if (x.op == Op::Number) {
    if (zero(da)) return zero_;
    const NodeId c1 = pool_.number(x.number - 1.0, x.integer_literal);
    return make(Op::Mul, {exponent, make(Op::Pow, {base, c1}), da});
  }
  const NodeId db = d(exponent);
  NodeId t1 = zero_, t2 = zero_;
  if (!zero(da)) {
    const NodeId b1 = make(Op::Sub, {exponent, one_});
    t1 = make(Op::Mul, {exponent, make(Op::Pow, {base, b1}), da});
  }
  if (!zero(db)) t2 = make(Op::Mul, {e, unary(Op::Log, base), db});
  return sum({t1, t2});
}

NodeId Differ::elementary(NodeId e, NodeId a) {
  const NodeId da = d(a);
  if (zero(da)) return zero_;
  switch (pool_.node(e).op) {
    case Op::Exp: return times(e, da);
    case Op::Log: return over(da, a);
    case Op::Log10: return over(da, make(Op::Mul, {a, unary(Op::Log, num(10.0))}));
    case Op::Sqrt: {
      // 0 where the tangent da is 0, also at a = 0 where the quotient is 0/0: sqrt(u^2 + v^2)
      // at u = v = 0 (a calm wind speed) would otherwise put NaN into the Jacobian.
      const NodeId q = over(da, make(Op::Mul, {num(2.0), e}));
      return make(Op::IfElse, {make(Op::Eq, {da, zero_}), zero_, q});
    }
    case Op::Abs: return times(unary(Op::Sign, a), da);  // sign(0) = 0: the convention at a kink
    case Op::Sin: return times(unary(Op::Cos, a), da);
    case Op::Cos: return neg(times(unary(Op::Sin, a), da));
    case Op::Tan: return over(da, square(unary(Op::Cos, a)));
    case Op::Asin: case Op::Acos: {  // 1 - a^2 as (1 - a)(1 + a): no cancellation near |a| = 1
      const NodeId r = unary(Op::Sqrt, make(Op::Mul, {make(Op::Sub, {one_, a}),
                                                     make(Op::Add, {one_, a})}));
      const NodeId q = over(da, r);
      return pool_.node(e).op == Op::Asin ? q : neg(q);
    }
    case Op::Atan: return over(da, make(Op::Add, {one_, square(a)}));
    case Op::Sinh: return times(unary(Op::Cosh, a), da);
    case Op::Cosh: return times(unary(Op::Sinh, a), da);
    case Op::Tanh: return over(da, square(unary(Op::Cosh, a)));
    case Op::Asinh: return over(da, unary(Op::Sqrt, make(Op::Add, {square(a), one_})));
    case Op::Acosh:
      return over(da, unary(Op::Sqrt, make(Op::Mul, {make(Op::Sub, {a, one_}),
                                                     make(Op::Add, {a, one_})})));
    case Op::Atanh:
      return over(da, make(Op::Mul, {make(Op::Sub, {one_, a}), make(Op::Add, {one_, a})}));
    default:
      refuse(e, "no derivative rule");  // unreachable: every op in [Exp, Atanh] is above
  }
}

/// min / max are left folds: m_k = min(m_{k-1}, a_k) takes m_{k-1} on a tie, so
/// d m_k = ifelse(m_{k-1} <= a_k, d m_{k-1}, d a_k) (>= for max), m_1 = a_1.
NodeId Differ::extremum(NodeId e, const std::vector<NodeId>& a) {
  const Op op = pool_.node(e).op;
  const Op keep_first = op == Op::Min ? Op::Le : Op::Ge;
  NodeId acc = a[0];
  NodeId dacc = d(a[0]);
  for (std::size_t k = 1; k < a.size(); ++k) {
    const NodeId dk = d(a[k]);
    if (!(zero(dacc) && zero(dk))) dacc = make(Op::IfElse, {make(keep_first, {acc, a[k]}), dacc, dk});
    if (k + 1 < a.size())
      acc = make(op, std::vector<NodeId>(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(k + 1)));
  }
  return dacc;
}

NodeId Differ::closed_function(NodeId e, const std::vector<NodeId>& a) {
  const Node n = pool_.node(e);
  const std::string name(pool_.str(n.name));
  const auto kids = pool_.children(e);
  const std::vector<NodeId> children(kids.begin(), kids.end());
  auto call = [&](const char* fn) {
    return pool_.make(Op::Fn, children, n.arg_count, pool_.intern(fn), n.attrs);
  };
  auto constant_tables = [&](std::size_t count) {
    for (std::size_t i = 0; i < count; ++i)
      if (dep_(a[i])) refuse(e, "its table and axis arguments must be constants");
  };
  if (name == "datetime.julian_day") {
    arity(e, 1);
    return over(d(a[0]), num(86400.0));
  }
  if (name.starts_with("datetime.") || name == "interp.searchsorted" ||
      name == "interp.linear_slope")
    return zero_;  // integer-valued, or constant on every segment
  if (name == "interp.linear") {
    arity(e, 3);
    constant_tables(2);
    return times(call("interp.linear_slope"), d(a[2]));
  }
  if (name == "interp.bilinear") {
    arity(e, 5);
    constant_tables(3);
    return sum({times(call("interp.bilinear_dx"), d(a[3])),
                times(call("interp.bilinear_dy"), d(a[4]))});
  }
  // Within a cell the lookup is a + b x + c y + e x y: its x slope varies along y only, its y
  // slope along x only, by the cross slope e, which is constant on the cell.
  if (name == "interp.bilinear_dx" || name == "interp.bilinear_dy") {
    arity(e, 5);
    constant_tables(3);
    return times(call("interp.bilinear_dxy"), d(a[name == "interp.bilinear_dx" ? 4 : 3]));
  }
  if (name == "interp.bilinear_dxy") return zero_;
  refuse(e, "no derivative rule for this closed function");
}

}  // namespace

NodeId differentiate(Pool& pool, NodeId e, StrId wrt) {
  const NodeId s = simplify(pool, e);
  Differ differ(pool, wrt);
  return differ.d(s);
}

namespace {

/// The adjoint sweep of differentiate_reverse over one DAG.
class ReverseSweep {
 public:
  ReverseSweep(Pool& pool, std::span<const StrId> wrt)
      : pool_(pool), wrt_(wrt.begin(), wrt.end()), wrt_order_(wrt.begin(), wrt.end()),
        zero_(pool.number(0.0)) {}

  std::vector<NodeId> run(std::span<const NodeId> roots, std::span<const NodeId> weights) {
    if (roots.size() != weights.size())
      throw Error("invalid_argument", "", "", "differentiate_reverse: one weight per root");
    std::vector<NodeId> simplified;
    for (std::size_t i = 0; i < roots.size(); ++i) {
      simplified.push_back(roots[i] == kNoNode ? kNoNode : simplify(pool_, roots[i]));
      if (simplified.back() != kNoNode) order_from(simplified.back());
    }
    for (std::size_t i = 0; i < roots.size(); ++i)
      if (simplified[i] != kNoNode && depends(simplified[i])) terms_[simplified[i]].push_back(weights[i]);
    // order_ lists every operand before the nodes that use it: walked backwards, a node's
    // adjoint is complete before it is handed on to its operands.
    for (std::size_t k = order_.size(); k-- > 0;) propagate(order_[k]);
    std::vector<NodeId> out;
    for (StrId s : wrt_order_) {
      const NodeId sym = pool_.symbol(pool_.str(s));
      const auto it = adjoint_.find(sym);
      out.push_back(it == adjoint_.end() ? zero_ : it->second);
    }
    return out;
  }

 private:
  bool depends(NodeId id) const {
    const auto it = depends_.find(id);
    return it != depends_.end() && it->second;
  }

  /// Post-order of the nodes under `root` that depend on a `wrt` symbol, and that dependence.
  void order_from(NodeId root) {
    if (depends_.count(root)) return;
    std::vector<std::pair<NodeId, std::size_t>> stack{{root, 0}};
    while (!stack.empty()) {
      auto& [id, next] = stack.back();
      const auto kids = pool_.children(id);
      if (next < kids.size()) {
        const NodeId c = kids[next++];
        if (!depends_.count(c)) stack.emplace_back(c, 0);
        continue;
      }
      const Node& n = pool_.node(id);
      bool dep = n.op == Op::Symbol && wrt_.count(n.name) > 0;
      for (NodeId c : kids) dep = dep || depends(c);
      depends_.emplace(id, dep);
      if (dep) order_.push_back(id);
      stack.pop_back();
    }
  }

  NodeId mul(NodeId a, NodeId b) {
    const NodeId kids[2] = {a, b};
    return make_simplified(pool_, Op::Mul, kids, 2);
  }
  NodeId negate(NodeId a) {
    const NodeId kids[1] = {a};
    return make_simplified(pool_, Op::Sub, kids, 1);
  }

  /// The adjoint of node `id` (the sum of what its users handed it) goes to its operands.
  void propagate(NodeId id) {
    const auto t = terms_.find(id);
    if (t == terms_.end()) return;
    std::vector<NodeId> terms = std::move(t->second);
    terms_.erase(t);
    const NodeId bar = terms.size() == 1
                           ? terms[0]
                           : make_simplified(pool_, Op::Add, terms, static_cast<std::uint16_t>(terms.size()));
    const Node n = pool_.node(id);
    if (n.op == Op::Symbol) {
      adjoint_[id] = bar;
      return;
    }
    const std::vector<NodeId> kids(pool_.children(id).begin(), pool_.children(id).end());
    for (std::size_t k = n.arg_count; k < kids.size(); ++k)
      if (depends(kids[k]))
        throw Error("not_differentiable", "", "",
                    "cannot differentiate '" + std::string(op_name(n.op)) +
                        "': an attribute of it depends on a variable");
    for (std::size_t k = 0; k < n.arg_count; ++k) {
      if (!depends(kids[k])) continue;
      const NodeId partial = local_partial(n, kids, k);
      if (partial == zero_) continue;
      NodeId contribution;
      const Node& pn = pool_.node(partial);
      if (pn.op == Op::Number && pn.number == 1.0) contribution = bar;
      else if (pn.op == Op::Number && pn.number == -1.0) contribution = negate(bar);
      else contribution = mul(bar, partial);
      terms_[kids[k]].push_back(contribution);
    }
  }

  /// d node / d operand k: sums, differences and products directly, every other op by
  /// `differentiate` of the node with its dependent operands replaced by placeholder symbols.
  // Not an ESM identifier (a space and '#'), so no model symbol is captured.
  static constexpr const char* placeholder_prefix = "reverse operand #";

  NodeId local_partial(const Node& n, const std::vector<NodeId>& kids, std::size_t k) {
    switch (n.op) {
      case Op::Add: return pool_.number(1.0);
      case Op::Sub: return pool_.number(n.arg_count == 1 || k == 1 ? -1.0 : 1.0);
      case Op::Neg: return pool_.number(-1.0);
      case Op::Mul: {
        std::vector<NodeId> others;
        for (std::size_t j = 0; j < n.arg_count; ++j)
          if (j != k) others.push_back(kids[j]);
        if (others.empty()) return pool_.number(1.0);
        if (others.size() == 1) return others[0];
        return make_simplified(pool_, Op::Mul, others, static_cast<std::uint16_t>(others.size()));
      }
      default: break;
    }
    std::vector<NodeId> shallow_kids = kids;
    std::unordered_map<StrId, NodeId> back;
    for (std::size_t j = 0; j < n.arg_count; ++j) {
      if (!depends(kids[j])) continue;
      const StrId name = pool_.intern(placeholder_prefix + std::to_string(j));
      shallow_kids[j] = pool_.symbol(pool_.str(name));
      back.emplace(name, kids[j]);
    }
    const NodeId shallow = pool_.make(n.op, shallow_kids, n.arg_count, n.name, n.attrs);
    const NodeId d = differentiate(pool_, shallow, pool_.intern(placeholder_prefix + std::to_string(k)));
    if (d == zero_) return zero_;
    std::unordered_map<NodeId, NodeId> memo;
    return substitute(pool_, d, back, memo);
  }

  Pool& pool_;
  std::unordered_set<StrId> wrt_;
  std::vector<StrId> wrt_order_;
  NodeId zero_;
  std::unordered_map<NodeId, bool> depends_;
  std::vector<NodeId> order_;
  std::unordered_map<NodeId, std::vector<NodeId>> terms_;
  std::unordered_map<NodeId, NodeId> adjoint_;
};

}  // namespace

std::vector<NodeId> differentiate_reverse(Pool& pool, std::span<const NodeId> roots,
                                          std::span<const NodeId> weights,
                                          std::span<const StrId> wrt) {
  ReverseSweep sweep(pool, wrt);
  return sweep.run(roots, weights);
}

bool depends_on(const Pool& pool, NodeId e, StrId wrt) {
  Dependence dep(pool, wrt);
  return dep(e);
}

}  // namespace esi::expr
