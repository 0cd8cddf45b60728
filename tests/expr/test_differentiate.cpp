// differentiate: symbolic derivatives checked against forward-mode dual numbers.
//
// The oracle is an evaluator templated on the number type: over double it evaluates the
// symbolic derivative, over Dual it propagates the exact derivative alongside the value (chain
// rule per op, written independently of differentiate.cpp). Random expressions come from a
// seeded generator whose constructions keep every op inside its domain.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <nlohmann/json.hpp>

#include "esi/core/error.hpp"
#include "esi/expr/differentiate.hpp"
#include "esi/expr/parse.hpp"
#include "esi/expr/simplify.hpp"

namespace {

using esi::expr::NodeId;
using esi::expr::Op;
using esi::expr::Pool;
using nlohmann::json;

// ---------------------------------------------------------------- dual numbers
struct Dual {
  double v = 0, d = 0;
};
double val(double x) { return x; }
double val(const Dual& x) { return x.v; }
Dual operator+(Dual a, Dual b) { return {a.v + b.v, a.d + b.d}; }
Dual operator-(Dual a, Dual b) { return {a.v - b.v, a.d - b.d}; }
Dual operator-(Dual a) { return {-a.v, -a.d}; }
Dual operator*(Dual a, Dual b) { return {a.v * b.v, a.d * b.v + a.v * b.d}; }
Dual operator/(Dual a, Dual b) { return {a.v / b.v, (a.d * b.v - a.v * b.d) / (b.v * b.v)}; }
Dual chain(double v, double slope, Dual a) { return {v, slope * a.d}; }
Dual pow(Dual a, Dual b) {
  const double v = std::pow(a.v, b.v);
  double d = b.v * std::pow(a.v, b.v - 1) * a.d;
  if (b.d != 0) d += v * std::log(a.v) * b.d;
  return {v, d};
}
Dual exp(Dual a) { return chain(std::exp(a.v), std::exp(a.v), a); }
Dual log(Dual a) { return chain(std::log(a.v), 1 / a.v, a); }
Dual log10(Dual a) { return chain(std::log10(a.v), 1 / (a.v * std::log(10.0)), a); }
Dual sqrt(Dual a) { return chain(std::sqrt(a.v), 0.5 / std::sqrt(a.v), a); }
Dual sin(Dual a) { return chain(std::sin(a.v), std::cos(a.v), a); }
Dual cos(Dual a) { return chain(std::cos(a.v), -std::sin(a.v), a); }
Dual tan(Dual a) { const double t = std::tan(a.v); return chain(t, 1 + t * t, a); }
Dual asin(Dual a) { return chain(std::asin(a.v), 1 / std::sqrt(1 - a.v * a.v), a); }
Dual acos(Dual a) { return chain(std::acos(a.v), -1 / std::sqrt(1 - a.v * a.v), a); }
Dual atan(Dual a) { return chain(std::atan(a.v), 1 / (1 + a.v * a.v), a); }
Dual atan2(Dual y, Dual x) {
  return {std::atan2(y.v, x.v), (x.v * y.d - y.v * x.d) / (x.v * x.v + y.v * y.v)};
}
Dual sinh(Dual a) { return chain(std::sinh(a.v), std::cosh(a.v), a); }
Dual cosh(Dual a) { return chain(std::cosh(a.v), std::sinh(a.v), a); }
Dual tanh(Dual a) { const double c = std::cosh(a.v); return chain(std::tanh(a.v), 1 / (c * c), a); }
Dual asinh(Dual a) { return chain(std::asinh(a.v), 1 / std::sqrt(a.v * a.v + 1), a); }
Dual acosh(Dual a) { return chain(std::acosh(a.v), 1 / std::sqrt(a.v * a.v - 1), a); }
Dual atanh(Dual a) { return chain(std::atanh(a.v), 1 / (1 - a.v * a.v), a); }
double sgn(double x) { return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0); }
Dual abs(Dual a) { return chain(std::fabs(a.v), sgn(a.v), a); }

// ------------------------------------------------------- closed functions (spec §9.2)
std::vector<double> const_array(const Pool& pool, NodeId id) {
  return esi::expr::attrs_json(pool, id).at("value").get<std::vector<double>>();
}
/// The segment of `axis` that x (already clamped) falls in: the largest i with axis[i] <= x.
std::size_t segment(const std::vector<double>& axis, double x) {
  std::size_t i = 0;
  while (i + 2 < axis.size() && axis[i + 1] <= x) ++i;
  return i;
}
bool inside(const std::vector<double>& axis, double x) { return x > axis.front() && x < axis.back(); }

/// interp.linear, or (slope = true) interp.linear_slope: 0 where the query is clamped.
double linear(const std::vector<double>& t, const std::vector<double>& a, double x, bool slope) {
  const std::size_t i = segment(a, x);
  if (slope) return inside(a, x) ? (t[i + 1] - t[i]) / (a[i + 1] - a[i]) : 0.0;
  if (x <= a.front()) return t.front();
  if (x >= a.back()) return t.back();
  return t[i] + (x - a[i]) / (a[i + 1] - a[i]) * (t[i + 1] - t[i]);
}

/// interp.bilinear (which = 0), its x slope (1), its y slope (2) or its cross slope (3).
double bilinear(const json& table, const std::vector<double>& ax, const std::vector<double>& ay,
                double x, double y, int which) {
  const double xq = std::clamp(x, ax.front(), ax.back()), yq = std::clamp(y, ay.front(), ay.back());
  const std::size_t i = segment(ax, xq), j = segment(ay, yq);
  auto t = [&](std::size_t a, std::size_t b) { return table[a][b].get<double>(); };
  const double wx = (xq - ax[i]) / (ax[i + 1] - ax[i]), wy = (yq - ay[j]) / (ay[j + 1] - ay[j]);
  const double r0 = t(i, j) + wx * (t(i + 1, j) - t(i, j));
  const double r1 = t(i, j + 1) + wx * (t(i + 1, j + 1) - t(i, j + 1));
  if (which == 0) return r0 + wy * (r1 - r0);
  if (which == 3)
    return inside(ax, x) && inside(ay, y)
               ? (t(i + 1, j + 1) - t(i + 1, j) - t(i, j + 1) + t(i, j)) / ((ax[i + 1] - ax[i]) * (ay[j + 1] - ay[j]))
               : 0.0;
  if (which == 2) return inside(ay, y) ? (r1 - r0) / (ay[j + 1] - ay[j]) : 0.0;
  if (!inside(ax, x)) return 0.0;
  const double s0 = (t(i + 1, j) - t(i, j)) / (ax[i + 1] - ax[i]);
  const double s1 = (t(i + 1, j + 1) - t(i, j + 1)) / (ax[i + 1] - ax[i]);
  return s0 + wy * (s1 - s0);
}

// ------------------------------------------------------------------- evaluator
template <class T>
T lift(double v) {
  if constexpr (std::is_same_v<T, Dual>) return Dual{v, 0};
  else return v;
}

/// Evaluates an expression over T (double or Dual); symbols x, y, z. Memoized per node, so a
/// DAG with shared subtrees costs its size.
template <class T>
struct Eval {
  const Pool& pool;
  std::array<T, 3> env;
  std::unordered_map<NodeId, T> memo{};

  T operator()(NodeId id) {
    if (auto it = memo.find(id); it != memo.end()) return it->second;
    const T v = compute(id);
    memo.emplace(id, v);
    return v;
  }

  /// A primal closed function: value, and for Dual the derivative `slope * d(arg)` summed.
  T blend(double v, std::initializer_list<std::pair<double, T>> slopes) {
    if constexpr (std::is_same_v<T, Dual>) {
      double d = 0;
      for (const auto& [s, arg] : slopes) d += s * arg.d;
      return Dual{v, d};
    } else {
      return v;
    }
  }

  T closed(NodeId id, const std::vector<T>& a) {
    const std::string name(pool.str(pool.node(id).name));
    const auto c = pool.args(id);
    if (name == "datetime.julian_day") return a[0] / lift<T>(86400.0) + lift<T>(2440587.5);
    if (name == "datetime.hour") return lift<T>(std::floor(std::fmod(val(a[0]), 86400.0) / 3600));
    if (name.starts_with("interp.linear")) {
      const auto t = const_array(pool, c[0]), ax = const_array(pool, c[1]);
      const double x = val(a[2]), slope = linear(t, ax, x, true);
      if (name == "interp.linear_slope") return lift<T>(slope);
      return blend(linear(t, ax, x, false), {{slope, a[2]}});
    }
    const json table = esi::expr::attrs_json(pool, c[0]).at("value");
    const auto ax = const_array(pool, c[1]), ay = const_array(pool, c[2]);
    const double x = val(a[3]), y = val(a[4]);
    const double sx = bilinear(table, ax, ay, x, y, 1), sy = bilinear(table, ax, ay, x, y, 2);
    if (name == "interp.bilinear_dx") return lift<T>(sx);
    if (name == "interp.bilinear_dy") return lift<T>(sy);
    if (name == "interp.bilinear_dxy") return lift<T>(bilinear(table, ax, ay, x, y, 3));
    return blend(bilinear(table, ax, ay, x, y, 0), {{sx, a[3]}, {sy, a[4]}});
  }

  T compute(NodeId id) {
    using std::abs, std::exp, std::log, std::log10, std::sqrt, std::sin, std::cos, std::tan,
        std::asin, std::acos, std::atan, std::atan2, std::sinh, std::cosh, std::tanh, std::asinh,
        std::acosh, std::atanh, std::pow;
    const auto& n = pool.node(id);
    std::vector<T> a;
    if (n.op != Op::Const)
      for (NodeId c : pool.args(id)) a.push_back((*this)(c));
    const std::size_t k = a.size();
    auto b01 = [](bool b) { return lift<T>(b ? 1.0 : 0.0); };
    switch (n.op) {
      case Op::Number: return lift<T>(n.number);
      case Op::Symbol: return env.at(static_cast<std::size_t>(pool.str(n.name)[0] - 'x'));
      case Op::Add: { T s = a[0]; for (std::size_t i = 1; i < k; ++i) s = s + a[i]; return s; }
      case Op::Mul: { T s = a[0]; for (std::size_t i = 1; i < k; ++i) s = s * a[i]; return s; }
      case Op::Sub: return k == 1 ? -a[0] : a[0] - a[1];
      case Op::Neg: return -a[0];
      case Op::Div: return a[0] / a[1];
      case Op::Pow: return pow(a[0], a[1]);
      case Op::Exp: return exp(a[0]);
      case Op::Log: return log(a[0]);
      case Op::Log10: return log10(a[0]);
      case Op::Sqrt: return sqrt(a[0]);
      case Op::Abs: return abs(a[0]);
      case Op::Sign: return lift<T>(sgn(val(a[0])));
      case Op::Sin: return sin(a[0]);
      case Op::Cos: return cos(a[0]);
      case Op::Tan: return tan(a[0]);
      case Op::Asin: return asin(a[0]);
      case Op::Acos: return acos(a[0]);
      case Op::Atan: return atan(a[0]);
      case Op::Atan2: return atan2(a[0], a[1]);
      case Op::Sinh: return sinh(a[0]);
      case Op::Cosh: return cosh(a[0]);
      case Op::Tanh: return tanh(a[0]);
      case Op::Asinh: return asinh(a[0]);
      case Op::Acosh: return acosh(a[0]);
      case Op::Atanh: return atanh(a[0]);
      case Op::Min: { T m = a[0]; for (std::size_t i = 1; i < k; ++i) m = val(m) <= val(a[i]) ? m : a[i]; return m; }
      case Op::Max: { T m = a[0]; for (std::size_t i = 1; i < k; ++i) m = val(m) >= val(a[i]) ? m : a[i]; return m; }
      case Op::Floor: return lift<T>(std::floor(val(a[0])));
      case Op::Ceil: return lift<T>(std::ceil(val(a[0])));
      case Op::IfElse: return val(a[0]) != 0 ? a[1] : a[2];
      case Op::Lt: return b01(val(a[0]) < val(a[1]));
      case Op::Le: return b01(val(a[0]) <= val(a[1]));
      case Op::Gt: return b01(val(a[0]) > val(a[1]));
      case Op::Ge: return b01(val(a[0]) >= val(a[1]));
      case Op::Eq: return b01(val(a[0]) == val(a[1]));
      case Op::Ne: return b01(val(a[0]) != val(a[1]));
      case Op::And: { bool b = true; for (const T& v : a) b = b && val(v) != 0; return b01(b); }
      case Op::Or: { bool b = false; for (const T& v : a) b = b || val(v) != 0; return b01(b); }
      case Op::Not: return b01(val(a[0]) == 0);
      case Op::True: return b01(true);
      case Op::Fn: return closed(id, a);
      case Op::Const: return lift<T>(0.0);  // read by `closed` from the node itself
      default: throw std::runtime_error("eval: unsupported op " + std::string(esi::expr::op_name(n.op)));
    }
  }
};

double eval(const Pool& pool, NodeId id, std::array<double, 3> at) {
  return Eval<double>{pool, at}(id);
}
/// The dual-number derivative of `id` along symbol `wrt` (0, 1, 2 = x, y, z) at `at`.
Dual dual(const Pool& pool, NodeId id, std::array<double, 3> at, std::size_t wrt) {
  std::array<Dual, 3> env{};
  for (std::size_t i = 0; i < 3; ++i) env[i] = {at[i], i == wrt ? 1.0 : 0.0};
  return Eval<Dual>{pool, env}(id);
}

// ------------------------------------------------------------ random expressions
NodeId const_node(Pool& pool, const json& value) {
  return esi::expr::parse(pool, json{{"op", "const"}, {"args", json::array()}, {"value", value}}, "", "");
}

/// Random expressions over every scalar op and the closed functions, each op fed only inside its
/// domain: log / sqrt / acosh of |a| + 1.25, asin / acos / atanh / tan of 0.9 tanh(a), general
/// powers of a positive base.
struct Gen {
  Pool& pool;
  std::mt19937_64 rng;
  std::string symbols = "xyz";

  std::size_t pick(std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng); }
  NodeId mk(Op op, std::vector<NodeId> a) { return pool.make(op, a); }
  NodeId fn(const char* name, std::vector<NodeId> a) {
    return pool.make(Op::Fn, a, static_cast<std::uint16_t>(a.size()), pool.intern(name));
  }
  NodeId num() {
    static const double values[] = {0.5, 2.0, 3.0, -1.5, 0.25, 1.0, 10.0, -0.0};
    return pick(8) == 0 ? pool.number(2.0, true) : pool.number(values[pick(std::size(values))]);
  }
  NodeId leaf() {
    if (pick(4) == 0) return num();
    return pool.symbol(std::string(1, symbols[pick(symbols.size())]));
  }
  NodeId pos(NodeId a) { return mk(Op::Add, {mk(Op::Abs, {a}), pool.number(1.25)}); }
  NodeId unit(NodeId a) { return mk(Op::Mul, {pool.number(0.9), mk(Op::Tanh, {a})}); }
  std::vector<NodeId> many(std::size_t k, int depth) {
    std::vector<NodeId> a;
    for (std::size_t i = 0; i < k; ++i) a.push_back(gen(depth - 1));
    return a;
  }
  NodeId condition(int depth) {
    const Op cmp[] = {Op::Lt, Op::Le, Op::Gt, Op::Ge, Op::Eq, Op::Ne};
    const NodeId c = mk(cmp[pick(6)], many(2, depth));
    switch (pick(4)) {
      case 0: return mk(Op::And, {c, mk(cmp[pick(6)], many(2, depth))});
      case 1: return mk(Op::Or, {c, mk(Op::Not, {mk(cmp[pick(6)], many(2, depth))})});
      case 2: return pick(2) ? c : mk(Op::True, {});
      default: return c;
    }
  }
  NodeId closed(int depth) {
    const NodeId x = gen(depth - 1);
    switch (pick(4)) {
      case 0: return fn("interp.linear", {const_node(pool, {1.0, 3.0, -2.0, 0.5}),
                                          const_node(pool, {-1.0, 0.0, 0.5, 2.0}), x});
      case 1: return fn("interp.bilinear", {const_node(pool, json::parse("[[1,2,0],[3,-1,4]]")),
                                            const_node(pool, {-1.0, 1.5}),
                                            const_node(pool, {-2.0, 0.0, 1.0}), x, gen(depth - 1)});
      case 2: return fn("datetime.julian_day", {mk(Op::Mul, {pool.number(1e5), x})});
      default: return fn("datetime.hour", {mk(Op::Mul, {pool.number(1e4), x})});
    }
  }
  NodeId elementary(Op u, NodeId a) {
    switch (u) {
      case Op::Log: case Op::Log10: case Op::Sqrt: case Op::Acosh: return mk(u, {pos(a)});
      case Op::Asin: case Op::Acos: case Op::Atanh: case Op::Tan: return mk(u, {unit(a)});
      default: return mk(u, {a});
    }
  }
  NodeId gen(int depth) {
    if (depth <= 0 || pick(6) == 0) return leaf();
    switch (pick(16)) {
      case 0: case 1: return mk(Op::Add, many(2 + pick(2), depth));
      case 2: case 3: return mk(Op::Mul, many(2 + pick(2), depth));
      case 4: return mk(Op::Sub, many(1 + pick(2), depth));
      case 5: return mk(Op::Neg, many(1, depth));
      case 6: return mk(Op::Div, {gen(depth - 1), pick(2) ? pos(gen(depth - 1)) : mk(Op::Exp, {gen(depth - 1)})});
      case 7: {
        static const double c[] = {2, 3, 0.5, -1, 1.5, -0.5};
        const std::size_t i = pick(6);
        const NodeId base = c[i] == 2 || c[i] == 3 ? gen(depth - 1) : pos(gen(depth - 1));
        return mk(Op::Pow, {base, pool.number(c[i], c[i] == 2)});
      }
      case 8: return mk(Op::Pow, {pos(gen(depth - 1)), mk(Op::Tanh, {gen(depth - 1)})});
      case 9: return mk(pick(2) ? Op::Min : Op::Max, many(2 + pick(2), depth));
      case 10: return mk(Op::IfElse, {condition(depth - 1), gen(depth - 1), gen(depth - 1)});
      case 11: return mk(Op::Mul, {gen(depth - 1), mk(Op::Gt, many(2, depth))});
      case 12: return mk(Op::Atan2, many(2, depth));
      case 13: return closed(depth);
      default: {
        const int first = static_cast<int>(Op::Exp), last = static_cast<int>(Op::Ceil);
        Op u = static_cast<Op>(first + static_cast<int>(pick(static_cast<std::size_t>(last - first + 1))));
        if (u == Op::Atan2 || u == Op::Min || u == Op::Max) u = Op::Abs;
        return elementary(u, gen(depth - 1));
      }
    }
  }
};

NodeId P(Pool& pool, const char* text) { return esi::expr::parse(pool, json::parse(text), "", ""); }

std::size_t reachable(const Pool& pool, NodeId root) {
  std::unordered_set<NodeId> seen;
  std::vector<NodeId> stack{root};
  while (!stack.empty()) {
    const NodeId id = stack.back();
    stack.pop_back();
    if (!seen.insert(id).second) continue;
    for (NodeId c : pool.children(id)) stack.push_back(c);
  }
  return seen.size();
}

NodeId d(Pool& pool, NodeId e, const char* wrt) {
  return esi::expr::differentiate(pool, e, pool.intern(wrt));
}

// ------------------------------------------------------------------------ tests
TEST(ExprDifferentiate, AgreesWithDualNumbersOnRandomExpressions) {
  Pool pool;
  Gen gen{pool, std::mt19937_64(7), "xyz"};
  std::uniform_real_distribution<double> coord(-2, 2);
  const char* names[] = {"x", "y", "z"};
  std::size_t checks = 0, skipped = 0, nonzero = 0;
  for (int i = 0; i < 2500; ++i) {
    const NodeId e = gen.gen(4);
    for (std::size_t w = 0; w < 3; ++w) {
      const NodeId de = d(pool, e, names[w]);
      ASSERT_EQ(esi::expr::simplify(pool, de), de) << "derivative not simplified";
      if (!esi::expr::depends_on(pool, e, pool.intern(names[w]))) {
        ASSERT_EQ(de, pool.number(0.0)) << esi::expr::to_infix(pool, e);
      }
      for (int p = 0; p < 3; ++p) {
        const std::array<double, 3> at{coord(gen.rng), coord(gen.rng), coord(gen.rng)};
        const Dual ref = dual(pool, e, at, w);
        if (!std::isfinite(ref.v) || !std::isfinite(ref.d) || std::fabs(ref.d) > 1e12 ||
            std::fabs(ref.v) > 1e12) {
          ++skipped;
          continue;
        }
        const double got = eval(pool, de, at);
        ASSERT_NEAR(got, ref.d, 1e-12 * std::fabs(ref.d) + 1e-13)
            << "d/d" << names[w] << " " << esi::expr::to_infix(pool, e) << "\n = "
            << esi::expr::to_infix(pool, de) << "\n at " << at[0] << ", " << at[1] << ", " << at[2];
        ++checks;
        nonzero += ref.d != 0;
      }
    }
  }
  RecordProperty("checks", static_cast<int>(checks));
  RecordProperty("skipped", static_cast<int>(skipped));
  RecordProperty("nonzero", static_cast<int>(nonzero));
  EXPECT_GT(checks, 20000u);
  EXPECT_LT(skipped, checks / 10);
  EXPECT_GT(nonzero, checks / 3);
}

TEST(ExprDifferentiate, AbsentVariablesGiveTheZeroNode) {
  Pool pool;
  Gen gen{pool, std::mt19937_64(99), "xz"};
  const NodeId zero = pool.number(0.0);
  const esi::expr::StrId y = pool.intern("y");
  for (int i = 0; i < 1000; ++i) {
    const NodeId e = gen.gen(5);
    ASSERT_FALSE(esi::expr::depends_on(pool, e, y));
    ASSERT_EQ(esi::expr::differentiate(pool, e, y), zero) << esi::expr::to_infix(pool, e);
  }
  // piecewise-constant ops of the variable itself are structural zeros too
  for (const char* t : {R"({"op":"floor","args":["x"]})", R"({"op":"sign","args":["x"]})",
                        R"({"op":"<","args":["x",1]})", R"({"op":"fn","name":"datetime.hour","args":["x"]})",
                        R"({"op":"ifelse","args":[{"op":">","args":["x",0]},1,2]})",
                        R"({"op":"^","args":["x",0]})"})
    EXPECT_EQ(d(pool, P(pool, t), "x"), zero) << t;
  // no zero term survives in a sum: d/dx (x*y + z) is y
  EXPECT_EQ(d(pool, P(pool, R"({"op":"+","args":[{"op":"*","args":["x","y"]},"z"]})"), "x"), pool.symbol("y"));
  EXPECT_TRUE(esi::expr::depends_on(pool, P(pool, R"({"op":"index","args":["u","y"]})"), y));
}

TEST(ExprDifferentiate, PiecewiseOpsFollowTheBranchTaken) {
  Pool pool;
  auto at = [&](const char* text, const char* wrt, std::array<double, 3> p) {
    return eval(pool, d(pool, P(pool, text), wrt), p);
  };
  const char* mn = R"({"op":"min","args":["x","y"]})";
  const char* mx = R"({"op":"max","args":["x","y"]})";
  EXPECT_EQ(at(mn, "x", {1, 1, 0}), 1.0);  // a tie takes the first operand
  EXPECT_EQ(at(mn, "y", {1, 1, 0}), 0.0);
  EXPECT_EQ(at(mx, "x", {1, 1, 0}), 1.0);
  EXPECT_EQ(at(mx, "y", {1, 1, 0}), 0.0);
  EXPECT_EQ(at(R"({"op":"min","args":["y","x"]})", "x", {1, 1, 0}), 0.0);
  const char* mn3 = R"({"op":"min","args":["x","y","z"]})";
  EXPECT_EQ(at(mn3, "x", {2, 2, 2}), 1.0);
  EXPECT_EQ(at(mn3, "y", {2, 2, 2}), 0.0);
  EXPECT_EQ(at(mn3, "z", {3, 3, 2}), 1.0);
  EXPECT_EQ(at(mn3, "y", {3, 1, 2}), 1.0);
  EXPECT_EQ(at(R"({"op":"max","args":["x","y","z"]})", "y", {1, 3, 3}), 1.0);
  EXPECT_EQ(at(R"({"op":"abs","args":["x"]})", "x", {0, 0, 0}), 0.0);
  EXPECT_EQ(at(R"({"op":"abs","args":["x"]})", "x", {-2, 0, 0}), -1.0);
  const char* ie = R"({"op":"ifelse","args":[{"op":"<","args":["x",0]},{"op":"*","args":[3,"x"]},{"op":"^","args":["x",2]}]})";
  EXPECT_EQ(at(ie, "x", {-1, 0, 0}), 3.0);
  EXPECT_EQ(at(ie, "x", {2, 0, 0}), 4.0);
  // sqrt: a zero tangent adds nothing, also at 0. The length of (x, y): y / |(x, y)|, so 4/5
  // at (3, 4), and 0 (not 0/0) at the origin; sqrt(x) at x = 0 keeps its infinite slope.
  const char* len = R"({"op":"sqrt","args":[{"op":"+","args":[{"op":"^","args":["x",2]},{"op":"^","args":["y",2]}]}]})";
  EXPECT_DOUBLE_EQ(at(len, "y", {3, 4, 0}), 0.8);
  EXPECT_EQ(at(len, "y", {0, 0, 0}), 0.0);
  EXPECT_EQ(at(R"({"op":"sqrt","args":["x"]})", "x", {0, 0, 0}), std::numeric_limits<double>::infinity());
}

TEST(ExprDifferentiate, RulesHaveTheDocumentedShape) {
  Pool pool;
  // x^c -> c x^(c-1) dx, and x^2 -> 2 x
  EXPECT_EQ(d(pool, P(pool, R"({"op":"^","args":["x",2]})"), "x"), P(pool, R"({"op":"*","args":[2,"x"]})"));
  EXPECT_EQ(d(pool, P(pool, R"({"op":"^","args":["x",3.5]})"), "x"),
            P(pool, R"({"op":"*","args":[3.5,{"op":"^","args":["x",2.5]}]})"));
  // product rule keeps the other factors in order and drops zero d_i
  EXPECT_EQ(d(pool, P(pool, R"({"op":"*","args":["k","x","y"]})"), "x"), P(pool, R"({"op":"*","args":["k","y"]})"));
  // negation is the spec's unary "-"
  EXPECT_EQ(d(pool, P(pool, R"({"op":"-","args":["y","x"]})"), "x"), pool.number(-1.0));
  EXPECT_EQ(d(pool, P(pool, R"({"op":"cos","args":["x"]})"), "x"),
            P(pool, R"({"op":"-","args":[{"op":"sin","args":["x"]}]})"));
  EXPECT_EQ(d(pool, P(pool, R"({"op":"fn","name":"datetime.julian_day","args":["t"]})"), "t"),
            pool.number(1.0 / 86400.0));
  EXPECT_EQ(d(pool, P(pool, R"({"op":"exp","args":["x"]})"), "x"), P(pool, R"({"op":"exp","args":["x"]})"));
}

TEST(ExprDifferentiate, InterpolationSlopesMatchFiniteDifferences) {
  Pool pool;
  const NodeId lin = P(pool, R"({"op":"fn","name":"interp.linear","args":[
      {"op":"const","args":[],"value":[0,10,30]},{"op":"const","args":[],"value":[0,1,2]},
      {"op":"*","args":[3,"x"]}]})");
  const NodeId dlin = d(pool, lin, "x");
  EXPECT_EQ(pool.node(pool.args(dlin)[0]).op, Op::Fn);
  EXPECT_EQ(pool.str(pool.node(pool.args(dlin)[0]).name), "interp.linear_slope");
  for (double x : {0.1, 0.2, 0.5, 0.6}) {
    const double h = 1e-6;
    const double fd = (eval(pool, lin, {x + h, 0, 0}) - eval(pool, lin, {x - h, 0, 0})) / (2 * h);
    EXPECT_NEAR(eval(pool, dlin, {x, 0, 0}), fd, 1e-6) << x;
  }
  EXPECT_EQ(eval(pool, dlin, {1.0, 0, 0}), 0.0);   // clamped above
  EXPECT_EQ(eval(pool, dlin, {-1.0, 0, 0}), 0.0);  // clamped below
  EXPECT_EQ(d(pool, dlin, "x"), pool.number(0.0));

  const NodeId bil = P(pool, R"({"op":"fn","name":"interp.bilinear","args":[
      {"op":"const","args":[],"value":[[1,2,0],[3,-1,4]]}, {"op":"const","args":[],"value":[-1,1.5]},
      {"op":"const","args":[],"value":[-2,0,1]}, {"op":"sin","args":["x"]}, {"op":"*","args":["x","y"]}]})");
  for (const char* w : {"x", "y"}) {
    const NodeId db = d(pool, bil, w);
    for (std::array<double, 3> p : {std::array<double, 3>{0.3, 0.7, 0}, {-0.4, 2.0, 0}, {1.2, -0.5, 0}}) {
      const double h = 1e-6;
      auto q = p, r = p;
      q[w[0] - 'x'] += h;
      r[w[0] - 'x'] -= h;
      const double fd = (eval(pool, bil, q) - eval(pool, bil, r)) / (2 * h);
      EXPECT_NEAR(eval(pool, db, p), fd, 1e-6) << w << " at " << p[0] << ", " << p[1];
    }
  }
  // Second derivatives (the slopes' own: the cross slope, and 0 along their own axis) against
  // central differences of the first, at points inside cells.
  for (const char* w1 : {"x", "y"})
    for (const char* w2 : {"x", "y"}) {
      const NodeId d1 = d(pool, bil, w1), d2 = d(pool, d1, w2);
      for (std::array<double, 3> p : {std::array<double, 3>{0.3, 0.7, 0}, {-0.4, 2.0, 0}, {1.2, -0.5, 0}}) {
        const double h = 1e-6;
        auto q = p, r = p;
        q[w2[0] - 'x'] += h;
        r[w2[0] - 'x'] -= h;
        const double fd = (eval(pool, d1, q) - eval(pool, d1, r)) / (2 * h);
        EXPECT_NEAR(eval(pool, d2, p), fd, 1e-5 * std::max(1.0, std::abs(fd))) << w1 << w2 << " at " << p[0] << ", " << p[1];
      }
    }
}

TEST(ExprDifferentiate, SharedSubtreesStayLinear) {
  // e_{k+1} = sin(e_k) * e_k + e_k, 40 levels: a tree of 3^40 paths, 4 nodes per level.
  Pool pool;
  NodeId e = pool.symbol("x");
  for (int k = 0; k < 40; ++k)
    e = pool.make(Op::Add, std::vector{pool.make(Op::Mul, std::vector{pool.make(Op::Sin, std::vector{e}), e}), e});
  const std::size_t input = reachable(pool, e), before = pool.size();
  const NodeId de = d(pool, e, "x");
  EXPECT_LT(pool.size() - before, 10 * input);
  EXPECT_LT(reachable(pool, de), 10 * input);
  const std::array<double, 3> at{0.3, 0, 0};
  const Dual ref = dual(pool, e, at, 0);
  EXPECT_NEAR(eval(pool, de, at), ref.d, 1e-12 * std::fabs(ref.d));
}

TEST(ExprDifferentiate, NonScalarOpsAreNotDifferentiable) {
  Pool pool;
  const char* refused[] = {
      R"({"op":"D","args":["x"],"wrt":"t"})",
      R"({"op":"Pre","args":["x"]})",
      R"({"op":"index","args":["u","x"]})",
      R"({"op":"grad","args":["x"],"dim":"lon"})",
      R"({"op":"fn","name":"interp.searchsorted_typo","args":["x"]})",
  };
  for (const char* t : refused) {
    try {
      d(pool, P(pool, t), "x");
      ADD_FAILURE() << "expected not_differentiable for " << t;
    } catch (const esi::Error& err) {
      EXPECT_EQ(err.code(), "not_differentiable") << t;
    }
  }
  // ... unless they do not mention the variable
  for (const char* t : refused) EXPECT_EQ(d(pool, P(pool, t), "w"), pool.number(0.0)) << t;
  EXPECT_EQ(d(pool, P(pool, R"({"op":"*","args":["x",{"op":"index","args":["u",2]}]})"), "x"),
            P(pool, R"({"op":"index","args":["u",2]})"));
}

}  // namespace
