// The oracle evaluator: every scalar op against values computed here, left folds, lazy ifelse,
// closed functions, and a whole flattened system (observeds before states).
#include <gtest/gtest.h>

#include <cmath>

#include "esi/core/error.hpp"
#include "esi/esm/flatten.hpp"
#include "esi/expr/parse.hpp"
#include "esi/kernel/oracle.hpp"
#include "support/temp_dir.hpp"

using esi::kernel::Env;
using esi::kernel::oracle_eval;

namespace {

double ev(const char* json, const Env& env = {{"x", 0.3}, {"y", -2.0}, {"z", 4.0}}) {
  esi::expr::Pool pool;
  const auto id = esi::expr::parse(pool, nlohmann::json::parse(json), "t", "");
  return oracle_eval(pool, id, env);
}

// Defeats compile-time folding: GCC folds libm calls with MPFR (correctly rounded), which can
// differ in the last bit from the run-time libm the evaluator calls.
double rt(double x) {
  volatile double v = x;
  return v;
}

}  // namespace

TEST(Oracle, Arithmetic) {
  EXPECT_EQ(ev(R"({"op": "+", "args": ["x", "y", "z"]})"), (0.3 + -2.0) + 4.0);
  EXPECT_EQ(ev(R"({"op": "*", "args": ["x", "y", "z"]})"), (0.3 * -2.0) * 4.0);
  EXPECT_EQ(ev(R"({"op": "-", "args": ["x", "y"]})"), 2.3);
  EXPECT_EQ(ev(R"({"op": "-", "args": ["x"]})"), -0.3);
  EXPECT_EQ(ev(R"({"op": "neg", "args": ["y"]})"), 2.0);
  EXPECT_EQ(ev(R"({"op": "/", "args": ["x", "z"]})"), 0.3 / 4.0);
  EXPECT_EQ(ev(R"({"op": "^", "args": ["z", 0.5]})"), 2.0);
  EXPECT_EQ(ev(R"({"op": "^", "args": ["y", 3]})"), -8.0);
}

TEST(Oracle, ElementaryFunctions) {
  EXPECT_EQ(ev(R"({"op": "exp", "args": ["x"]})"), std::exp(rt(0.3)));
  EXPECT_EQ(ev(R"({"op": "log10", "args": ["z"]})"), std::log10(rt(4.0)));
  EXPECT_EQ(ev(R"({"op": "atan2", "args": ["x", "y"]})"), std::atan2(rt(0.3), rt(-2.0)));
  EXPECT_EQ(ev(R"({"op": "acosh", "args": ["z"]})"), std::acosh(rt(4.0)));
  EXPECT_EQ(ev(R"({"op": "sign", "args": ["y"]})"), -1.0);
  EXPECT_EQ(ev(R"({"op": "sign", "args": [0]})"), 0.0);
  EXPECT_EQ(ev(R"({"op": "abs", "args": ["y"]})"), 2.0);
  EXPECT_EQ(ev(R"({"op": "floor", "args": ["y"]})"), -2.0);
  EXPECT_EQ(ev(R"({"op": "ceil", "args": ["x"]})"), 1.0);
}

TEST(Oracle, MinMaxFoldLeftAndPropagateNaN) {
  EXPECT_EQ(ev(R"({"op": "min", "args": ["z", "x", "y"]})"), -2.0);
  EXPECT_EQ(ev(R"({"op": "max", "args": ["y", "x", "z"]})"), 4.0);
  const Env nan_env{{"x", NAN}, {"y", 1.0}};
  EXPECT_TRUE(std::isnan(ev(R"({"op": "min", "args": ["x", "y"]})", nan_env)));
  EXPECT_TRUE(std::isnan(ev(R"({"op": "max", "args": ["y", "x"]})", nan_env)));
}

TEST(Oracle, ComparisonsLogicAndLazyIfElse) {
  EXPECT_EQ(ev(R"({"op": "<", "args": ["y", "x"]})"), 1.0);
  EXPECT_EQ(ev(R"({"op": ">=", "args": ["y", "x"]})"), 0.0);
  EXPECT_EQ(ev(R"({"op": "==", "args": ["z", 4]})"), 1.0);
  EXPECT_EQ(ev(R"({"op": "!=", "args": ["z", 4]})"), 0.0);
  EXPECT_EQ(ev(R"({"op": "and", "args": ["x", 0]})"), 0.0);
  EXPECT_EQ(ev(R"({"op": "or", "args": ["x", 0]})"), 1.0);
  EXPECT_EQ(ev(R"({"op": "not", "args": ["x"]})"), 0.0);
  // The branch not taken is never evaluated: its unbound name raises nothing.
  EXPECT_EQ(ev(R"({"op": "ifelse", "args": [{"op": ">", "args": ["x", 0]}, "z", "unbound"]})"), 4.0);
  EXPECT_THROW(ev(R"({"op": "ifelse", "args": [0, "z", "unbound"]})"), esi::Error);
}

TEST(Oracle, ClosedFunctionsAndErrors) {
  EXPECT_EQ(ev(R"({"op": "fn", "name": "interp.linear", "args": [
      {"op": "const", "args": [], "value": [0, 10]}, {"op": "const", "args": [], "value": [0, 1]}, "x"]})"), 3.0);
  EXPECT_EQ(ev(R"({"op": "fn", "name": "datetime.year", "args": [0]})"), 1970.0);
  try {
    ev(R"({"op": "D", "args": ["x"], "wrt": "t"})");
    FAIL();
  } catch (const esi::Error& e) {
    EXPECT_EQ(e.code(), "unsupported_operator");
  }
  try {
    ev(R"({"op": "+", "args": ["x", "nope"]})");
    FAIL();
  } catch (const esi::Error& e) {
    EXPECT_EQ(e.code(), "undefined_variable");
  }
}

TEST(Oracle, RhsEvaluatesObservedsThenStates) {
  esi::testing::TempDir dir;
  const auto file = dir.write("m.esm", R"({"esm": "1.0.0", "metadata": {"name": "t", "authors": ["t"]},
    "models": {"M": {"variables": {
      "x": {"type": "unknown", "default": 1}, "v": {"type": "unknown", "default": 2},
      "k": {"type": "parameter", "default": 3},
      "a": {"type": "unknown"}, "b": {"type": "unknown"}},
     "equations": [
      {"lhs": "a", "rhs": {"op": "*", "args": ["k", "x"]}},
      {"lhs": "b", "rhs": {"op": "+", "args": ["a", "t"]}},
      {"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": {"op": "neg", "args": ["b"]}},
      {"lhs": {"op": "D", "args": ["v"], "wrt": "t"}, "rhs": {"op": "*", "args": ["a", "v"]}}]}}})");
  const esi::esm::System s = esi::esm::flatten(esi::esm::load_resolved(file));
  ASSERT_EQ(s.states.size(), 2u);
  std::vector<double> u(2), p(s.parameters.size()), du(2);
  u[s.state_index("M.x")] = 0.5;
  u[s.state_index("M.v")] = 1.5;
  p[s.parameter_index("M.k")] = 3.0;
  esi::kernel::oracle_rhs(s, u.data(), p.data(), 10.0, du.data());
  EXPECT_EQ(du[s.state_index("M.x")], -(3.0 * 0.5 + 10.0));
  EXPECT_EQ(du[s.state_index("M.v")], 3.0 * 0.5 * 1.5);
}
