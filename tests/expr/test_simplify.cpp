// simplify: folds constants, applies only exact identities, never changes a value's bits.
//
// The oracle is a small evaluator with the kernel's conventions (left folds, std::pow, 1.0 / 0.0
// comparisons, truth as != 0); the property test compares the bits of the original and the
// simplified expression on random expressions at points that include -0.0, ±inf and NaN.
#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <nlohmann/json.hpp>

#include "esi/expr/parse.hpp"
#include "esi/expr/simplify.hpp"

namespace {

using esi::expr::NodeId;
using esi::expr::Op;
using esi::expr::Pool;
using nlohmann::json;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// The kernel's semantics over doubles; symbols are x, y, z. Memoized per node.
struct Eval {
  const Pool& pool;
  std::array<double, 3> env;
  std::unordered_map<NodeId, double> memo;

  double operator()(NodeId id) {
    if (auto it = memo.find(id); it != memo.end()) return it->second;
    const double v = compute(id);
    memo.emplace(id, v);
    return v;
  }

  double compute(NodeId id) {
    const auto& n = pool.node(id);
    std::vector<double> a;
    for (NodeId c : pool.args(id)) a.push_back((*this)(c));
    const std::size_t k = a.size();
    auto t = [](bool b) { return b ? 1.0 : 0.0; };
    switch (n.op) {
      case Op::Number: return n.number;
      case Op::Symbol: return env.at(static_cast<std::size_t>(pool.str(n.name)[0] - 'x'));
      case Op::Add: { double s = a[0]; for (std::size_t i = 1; i < k; ++i) s += a[i]; return s; }
      case Op::Mul: { double s = a[0]; for (std::size_t i = 1; i < k; ++i) s *= a[i]; return s; }
      case Op::Sub: return k == 1 ? -a[0] : a[0] - a[1];
      case Op::Neg: return -a[0];
      case Op::Div: return a[0] / a[1];
      case Op::Pow: return std::pow(a[0], a[1]);
      case Op::Exp: return std::exp(a[0]);
      case Op::Log: return std::log(a[0]);
      case Op::Log10: return std::log10(a[0]);
      case Op::Sqrt: return std::sqrt(a[0]);
      case Op::Abs: return std::fabs(a[0]);
      case Op::Sign: return a[0] > 0 ? 1.0 : (a[0] < 0 ? -1.0 : a[0]);  // Julia's sign
      case Op::Sin: return std::sin(a[0]);
      case Op::Cos: return std::cos(a[0]);
      case Op::Tan: return std::tan(a[0]);
      case Op::Asin: return std::asin(a[0]);
      case Op::Acos: return std::acos(a[0]);
      case Op::Atan: return std::atan(a[0]);
      case Op::Atan2: return std::atan2(a[0], a[1]);
      case Op::Sinh: return std::sinh(a[0]);
      case Op::Cosh: return std::cosh(a[0]);
      case Op::Tanh: return std::tanh(a[0]);
      case Op::Asinh: return std::asinh(a[0]);
      case Op::Acosh: return std::acosh(a[0]);
      case Op::Atanh: return std::atanh(a[0]);
      case Op::Min: { double m = a[0]; for (double v : a) m = v < m ? v : m; return m; }
      case Op::Max: { double m = a[0]; for (double v : a) m = v > m ? v : m; return m; }
      case Op::Floor: return std::floor(a[0]);
      case Op::Ceil: return std::ceil(a[0]);
      case Op::IfElse: return a[0] != 0 ? a[1] : a[2];
      case Op::Lt: return t(a[0] < a[1]);
      case Op::Le: return t(a[0] <= a[1]);
      case Op::Gt: return t(a[0] > a[1]);
      case Op::Ge: return t(a[0] >= a[1]);
      case Op::Eq: return t(a[0] == a[1]);
      case Op::Ne: return t(a[0] != a[1]);
      case Op::And: { bool b = true; for (double v : a) b = b && v != 0; return t(b); }
      case Op::Or: { bool b = false; for (double v : a) b = b || v != 0; return t(b); }
      case Op::Not: return t(a[0] == 0);
      case Op::True: return 1.0;
      default: throw std::runtime_error("eval: unsupported op");
    }
  }
};

std::uint64_t bits(double v) { return std::bit_cast<std::uint64_t>(v); }

/// Random expressions over every scalar op, rich in the constants the rules look at.
struct Gen {
  Pool& pool;
  std::mt19937_64 rng;

  std::size_t pick(std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng); }

  NodeId leaf() {
    static const double values[] = {0.0, -0.0, 1.0, -1.0, 2.0, 0.5, 3.0, 10.0, 1e308, 5e-324, -2.5};
    switch (pick(4)) {
      case 0: return pool.symbol(std::string(1, static_cast<char>('x' + pick(3))));
      case 1: return pool.number(static_cast<double>(pick(3)), true);  // integer literals 0, 1, 2
      default: return pool.number(values[pick(std::size(values))]);
    }
  }

  NodeId make(Op op, std::size_t k, int depth) {
    std::vector<NodeId> a;
    for (std::size_t i = 0; i < k; ++i) a.push_back(gen(depth - 1));
    return pool.make(op, a);
  }

  NodeId gen(int depth) {
    if (depth <= 0 || pick(5) == 0) return leaf();
    const std::size_t r = pick(12);
    if (r == 0) {  // the shapes of the identities, on purpose
      const NodeId x = gen(depth - 1);
      const NodeId ops[] = {pool.make(Op::Neg, std::vector{pool.make(Op::Neg, std::vector{x})}),
                            pool.make(Op::Sub, std::vector{pool.make(Op::Sub, std::vector{x})}),
                            pool.make(Op::IfElse, std::vector{gen(depth - 1), x, x}),
                            pool.make(Op::Abs, std::vector{pool.make(Op::Neg, std::vector{x})}),
                            pool.make(Op::Min, std::vector{x, x})};
      return ops[pick(std::size(ops))];
    }
    if (r <= 3) return make(pick(2) ? Op::Add : Op::Mul, 1 + pick(4), depth);
    if (r == 4) return make(Op::Sub, 1 + pick(2), depth);
    if (r == 5) {
      const Op bin[] = {Op::Div, Op::Pow, Op::Atan2, Op::Lt, Op::Le, Op::Gt, Op::Ge, Op::Eq, Op::Ne};
      return make(bin[pick(std::size(bin))], 2, depth);
    }
    if (r == 6) return make(pick(2) ? Op::Min : Op::Max, 2 + pick(2), depth);
    if (r == 7) return make(Op::IfElse, 3, depth);
    if (r == 8) {
      const std::size_t l = pick(4);
      if (l == 3) return pool.make(Op::True, std::vector<NodeId>{});
      return make(l == 0 ? Op::And : l == 1 ? Op::Or : Op::Not, l == 2 ? 1 : 1 + pick(3), depth);
    }
    const auto first = static_cast<int>(Op::Neg), last = static_cast<int>(Op::Ceil);
    Op u = static_cast<Op>(first + static_cast<int>(pick(static_cast<std::size_t>(last - first + 1))));
    if (u == Op::Atan2 || u == Op::Min || u == Op::Max) u = Op::Sign;
    return make(u, 1, depth);
  }
};

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

NodeId P(Pool& pool, const char* text) { return esi::expr::parse(pool, json::parse(text), "", ""); }

TEST(ExprSimplify, NeverChangesBitsOnRandomExpressionsAndSpecialValues) {
  Pool pool;
  Gen gen{pool, std::mt19937_64(20240611)};
  const double specials[] = {0.0, -0.0, kInf, -kInf, kNaN, -kNaN, 1.0, -1.0, 0.5, 2.0, 1e308, 5e-324};
  std::size_t checks = 0, shrunk = 0;
  for (int e = 0; e < 3000; ++e) {
    const NodeId orig = gen.gen(5);
    const NodeId simp = esi::expr::simplify(pool, orig);
    ASSERT_EQ(esi::expr::simplify(pool, simp), simp) << "not a fixed point: " << esi::expr::to_infix(pool, orig);
    ASSERT_LE(reachable(pool, simp), reachable(pool, orig));
    shrunk += simp != orig;
    for (int p = 0; p < 12; ++p) {
      std::array<double, 3> env{};
      for (double& v : env)
        v = gen.pick(2) ? specials[gen.pick(std::size(specials))]
                        : std::uniform_real_distribution<double>(-3, 3)(gen.rng);
      Eval a{pool, env, {}}, b{pool, env, {}};
      const double va = a(orig), vb = b(simp);
      ASSERT_EQ(bits(va), bits(vb))
          << esi::expr::to_infix(pool, orig) << "\n -> " << esi::expr::to_infix(pool, simp)
          << "\n at x=" << env[0] << " y=" << env[1] << " z=" << env[2] << ": " << va << " vs " << vb;
      ++checks;
    }
  }
  EXPECT_EQ(checks, 36000u);
  EXPECT_GT(shrunk, 1000u);  // the generator does exercise the rules
}

TEST(ExprSimplify, FoldsConstantSubtrees) {
  Pool pool;
  EXPECT_EQ(esi::expr::simplify(pool, P(pool, R"({"op":"+","args":[1,2]})")), pool.number(3, true));
  EXPECT_EQ(esi::expr::simplify(pool, P(pool, R"({"op":"*","args":[2.5,4]})")), pool.number(10.0));
  EXPECT_EQ(esi::expr::simplify(pool, P(pool, R"({"op":"*","args":[{"op":"sin","args":["x"]},{"op":"+","args":[{"op":"*","args":[2,3]},1]}]})")),
            P(pool, R"({"op":"*","args":[{"op":"sin","args":["x"]},7]})"));
  EXPECT_EQ(esi::expr::simplify(pool, P(pool, R"({"op":"sin","args":[0.5]})")), pool.number(std::sin(0.5)));
  EXPECT_EQ(esi::expr::simplify(pool, P(pool, R"({"op":"^","args":[2,0.5]})")), pool.number(std::pow(2.0, 0.5)));
  EXPECT_EQ(esi::expr::simplify(pool, P(pool, R"({"op":"-","args":[0.0]})")), pool.number(-0.0));
  EXPECT_EQ(esi::expr::simplify(pool, P(pool, R"({"op":"<","args":[1,2]})")), pool.number(1.0));
  EXPECT_EQ(esi::expr::simplify(pool, P(pool, R"({"op":"and","args":[1,0]})")), pool.number(0.0));
  EXPECT_EQ(esi::expr::simplify(pool, P(pool, R"({"op":"not","args":[0]})")), pool.number(1.0));
  EXPECT_EQ(esi::expr::simplify(pool, P(pool, R"({"op":"sign","args":[-3]})")), pool.number(-1.0));
  EXPECT_EQ(esi::expr::simplify(pool, P(pool, R"({"op":"sign","args":[0.0]})")), pool.number(0.0));
  EXPECT_EQ(esi::expr::simplify(pool, P(pool, R"({"op":"min","args":[3,1,2]})")), pool.number(1, true));
  EXPECT_EQ(esi::expr::simplify(pool, P(pool, R"({"op":"ifelse","args":[{"op":"true","args":[]},"a","b"]})")),
            pool.symbol("a"));
  EXPECT_EQ(esi::expr::simplify(pool, P(pool, R"({"op":"ifelse","args":[{"op":">","args":[1,2]},"a","b"]})")),
            pool.symbol("b"));
  // inside non-scalar nodes too
  EXPECT_EQ(esi::expr::simplify(pool, P(pool, R"({"op":"index","args":["u",{"op":"+","args":[1,1]}]})")),
            P(pool, R"({"op":"index","args":["u",2]})"));
}

TEST(ExprSimplify, FoldsOnlyTheLeadingConstantsOfALeftFold) {
  Pool pool;
  const char* kept[] = {
      R"({"op":"+","args":[{"op":"+","args":["x",1]},2]})",  // (x + 1) + 2 is not x + 3
      R"({"op":"+","args":["x",1,2]})",
      R"({"op":"*","args":["x",2,3]})",
      R"({"op":"min","args":["x",1,2]})",
  };
  for (const char* t : kept) EXPECT_EQ(esi::expr::simplify(pool, P(pool, t)), P(pool, t)) << t;
  EXPECT_EQ(esi::expr::simplify(pool, P(pool, R"({"op":"+","args":[1,2,"x"]})")),
            P(pool, R"({"op":"+","args":[3,"x"]})"));
  EXPECT_EQ(esi::expr::simplify(pool, P(pool, R"({"op":"*","args":[2,0.5,"x"]})")), pool.symbol("x"));
}

TEST(ExprSimplify, AppliesTheExactIdentities) {
  Pool pool;
  const NodeId x = pool.symbol("x");
  const std::pair<const char*, NodeId> cases[] = {
      {R"({"op":"*","args":["x",1]})", x},
      {R"({"op":"*","args":[1,"x"]})", x},
      {R"({"op":"*","args":[1.0,"x",1]})", x},
      {R"({"op":"/","args":["x",1]})", x},
      {R"({"op":"^","args":["x",1]})", x},
      {R"({"op":"^","args":["x",0]})", pool.number(1.0)},
      {R"({"op":"^","args":["x",-0.0]})", pool.number(1.0)},
      {R"({"op":"^","args":[1,"x"]})", pool.number(1.0)},
      {R"({"op":"neg","args":[{"op":"neg","args":["x"]}]})", x},
      {R"({"op":"-","args":[{"op":"-","args":["x"]}]})", x},
      {R"({"op":"-","args":[{"op":"neg","args":["x"]}]})", x},
      {R"({"op":"-","args":["x",0.0]})", x},
      {R"({"op":"+","args":["x",-0.0]})", x},
      {R"({"op":"+","args":[-0.0,"x"]})", x},
      {R"({"op":"+","args":["x"]})", x},
      {R"({"op":"*","args":["x"]})", x},
      {R"({"op":"ifelse","args":[1,"x","y"]})", x},
      {R"({"op":"ifelse","args":[0,"y","x"]})", x},
      {R"({"op":"ifelse","args":[{"op":"<","args":["y",0]},"x","x"]})", x},
      {R"({"op":"max","args":["x","x"]})", x},
      {R"({"op":"abs","args":[{"op":"-","args":["x"]}]})", P(pool, R"({"op":"abs","args":["x"]})")},
      {R"({"op":"abs","args":[{"op":"abs","args":["x"]}]})", P(pool, R"({"op":"abs","args":["x"]})")},
  };
  for (const auto& [text, expected] : cases)
    EXPECT_EQ(esi::expr::simplify(pool, P(pool, text)), expected) << text;
}

TEST(ExprSimplify, KeepsWhatIsNotExact) {
  Pool pool;
  const char* kept[] = {
      R"({"op":"+","args":["x",0.0]})",           // -0.0 + 0.0 is +0.0
      R"({"op":"+","args":[0,"x"]})",
      R"({"op":"*","args":["x",0]})",             // inf * 0 is NaN
      R"({"op":"-","args":["x",-0.0]})",
      R"({"op":"-","args":[0,"x"]})",
      R"({"op":"/","args":["x",-1]})",            // a NaN keeps its sign through /
      R"({"op":"^","args":["x",2]})",
      R"({"op":"==","args":["x","x"]})",          // NaN
      R"({"op":"/","args":[1,0]})",               // inf is not folded
      R"({"op":"/","args":[0,0]})",
      R"({"op":"log","args":[0]})",
      R"({"op":"sqrt","args":[-1]})",
      R"({"op":"*","args":[1e308,10]})",
      R"({"op":"min","args":[0.0,-0.0]})",        // conventions disagree on the zero returned
      R"({"op":"sign","args":[-0.0]})",
      R"({"op":"fn","name":"datetime.year","args":[0]})",
      R"({"op":"true","args":[]})",
  };
  for (const char* t : kept) EXPECT_EQ(esi::expr::simplify(pool, P(pool, t)), P(pool, t)) << t;
}

TEST(ExprSimplify, VisitsASharedSubtreeOnce) {
  // e_{k+1} = e_k + e_k * 1, 80 levels: 2^80 paths, 3 nodes per level.
  Pool pool;
  NodeId e = pool.symbol("x");
  NodeId expected = e;
  for (int k = 0; k < 80; ++k) {
    e = pool.make(Op::Add, std::vector{e, pool.make(Op::Mul, std::vector{e, pool.number(1.0)})});
    expected = pool.make(Op::Add, std::vector{expected, expected});
  }
  const std::size_t before = pool.size();
  EXPECT_EQ(esi::expr::simplify(pool, e), expected);
  EXPECT_LE(pool.size(), before + 10);
}

TEST(ExprSimplify, MakeSimplifiedAppliesTheTopLevelRules) {
  Pool pool;
  const NodeId x = pool.symbol("x");
  const NodeId one = pool.number(1.0);
  const std::vector<NodeId> args{one, x, one};
  EXPECT_EQ(esi::expr::make_simplified(pool, Op::Mul, args, 3), x);
  const std::vector<NodeId> consts{pool.number(2.0), pool.number(3.0)};
  EXPECT_EQ(esi::expr::make_simplified(pool, Op::Pow, consts, 2), pool.number(8.0));
}

}  // namespace
