#include "esi/kernel/oracle.hpp"

#include <cmath>

#include "esi/core/error.hpp"
#include "esi/expr/parse.hpp"
#include "esi/kernel/closed_functions.hpp"
#include "kernel/scalar_ops.hpp"

namespace esi::kernel {
namespace {

using expr::NodeId;
using expr::Op;

// Memoized by node id: identical subtrees are one node, and the environment is fixed for the
// whole walk, so a cached value is exactly what a fresh walk would compute. Without it a DAG
// with nested shared templates would cost exponential time.
struct Walker {
  const expr::Pool& pool;
  const Env& env;
  const esm::System* sys = nullptr;  // for D(state, t) on a right-hand side
  std::unordered_map<NodeId, double> memo;
  int depth = 0;

  double arg(NodeId id, std::size_t i) { return eval(pool.args(id)[i]); }

  double eval(NodeId id) {
    if (auto it = memo.find(id); it != memo.end()) return it->second;
    const double v = compute(id);
    memo.emplace(id, v);
    return v;
  }

  double symbol(NodeId id) {
    const std::string name(pool.str(pool.node(id).name));
    auto it = env.find(name);
    if (it == env.end())
      throw Error("undefined_variable", "", "", "oracle: no value for '" + name + "'");
    return it->second;
  }

  template <class F>
  double fold(NodeId id, F f) {
    const auto a = pool.args(id);
    if (a.empty()) unsupported(id, "with no arguments");
    double s = eval(a[0]);
    for (std::size_t i = 1; i < a.size(); ++i) s = f(s, eval(a[i]));
    return s;
  }

  [[noreturn]] void unsupported(NodeId id, const std::string& why) {
    const Op op = pool.node(id).op;
    throw Error("unsupported_operator", "", "",
                "oracle: operator '" + std::string(op == Op::Other ? pool.str(pool.node(id).name)
                                                                   : expr::op_name(op)) +
                    "' " + why);
  }

  double closed(NodeId id) {
    const ClosedFn f = closed_fn_from_name(pool.str(pool.node(id).name));
    const ClosedTable table = extract_table(pool, id, f);  // re-read per call: slow is fine
    const auto a = pool.args(id);
    double scalars[2] = {0, 0};
    if (f == ClosedFn::SearchSorted) scalars[0] = eval(a[0]);
    else
      for (std::size_t i = closed_fn_table_args(f), k = 0; i < a.size(); ++i, ++k)
        scalars[k] = eval(a[i]);
    return eval_closed(f, table, scalars);
  }

  // D(x, t) of a state x on a right-hand side is x's tendency.
  double derivative(NodeId id) {
    const auto a = pool.args(id);
    const expr::Node& n = pool.node(id);
    if (sys && a.size() == 1 && pool.node(a[0]).op == Op::Symbol &&
        (n.name == 0 || pool.str(n.name) == "t")) {
      const int k = sys->state_index(std::string(pool.str(pool.node(a[0]).name)));
      if (k >= 0) {
        if (++depth > 64) unsupported(id, "reaches itself through time derivatives");
        const double v = eval(sys->state_rhs[k]);
        --depth;
        return v;
      }
    }
    unsupported(id, "is not the time derivative of a state");
  }

  double compute(NodeId id);
  double elementary(NodeId id);
};

double Walker::compute(NodeId id) {
  using detail::truth;
  const expr::Node& n = pool.node(id);
  const std::size_t k = pool.args(id).size();
  switch (n.op) {
    case Op::Number: return n.number;
    case Op::Symbol: return symbol(id);
    case Op::True: return 1.0;
    case Op::Add: return fold(id, [](double a, double b) { return a + b; });
    case Op::Mul: return fold(id, [](double a, double b) { return a * b; });
    case Op::Sub: return k == 1 ? -arg(id, 0) : fold(id, [](double a, double b) { return a - b; });
    case Op::Neg: return -arg(id, 0);
    case Op::Div: return arg(id, 0) / arg(id, 1);
    case Op::Pow: return std::pow(arg(id, 0), arg(id, 1));
    case Op::Min: return fold(id, detail::op_min<double>);
    case Op::Max: return fold(id, detail::op_max<double>);
    case Op::IfElse: return arg(id, 0) != 0.0 ? arg(id, 1) : arg(id, 2);
    case Op::Lt: return truth<double>(arg(id, 0) < arg(id, 1));
    case Op::Le: return truth<double>(arg(id, 0) <= arg(id, 1));
    case Op::Gt: return truth<double>(arg(id, 0) > arg(id, 1));
    case Op::Ge: return truth<double>(arg(id, 0) >= arg(id, 1));
    case Op::Eq: return truth<double>(arg(id, 0) == arg(id, 1));
    case Op::Ne: return truth<double>(arg(id, 0) != arg(id, 1));
    case Op::And: return fold(id, [](double a, double b) { return truth<double>(a != 0 && b != 0); });
    case Op::Or: return fold(id, [](double a, double b) { return truth<double>(a != 0 || b != 0); });
    case Op::Not: return truth<double>(arg(id, 0) == 0.0);
    case Op::Fn: return closed(id);
    case Op::D: return derivative(id);
    case Op::Const: {
      const auto v = expr::attrs_json(pool, id).value("value", nlohmann::json());
      if (!v.is_number()) unsupported(id, "with an array value outside a closed-function table");
      return v.get<double>();
    }
    default: return elementary(id);
  }
}

double Walker::elementary(NodeId id) {
  const expr::Node& n = pool.node(id);
  if (pool.args(id).size() != (n.op == Op::Atan2 ? 2u : 1u) || n.op < Op::Exp || n.op > Op::Ceil)
    unsupported(id, "is not a scalar operator the evaluator supports");
  const double x = arg(id, 0);
  switch (n.op) {
    case Op::Exp: return std::exp(x);
    case Op::Log: return std::log(x);
    case Op::Log10: return std::log10(x);
    case Op::Sqrt: return std::sqrt(x);
    case Op::Abs: return std::fabs(x);
    case Op::Sign: return detail::op_sign(x);
    case Op::Sin: return std::sin(x);
    case Op::Cos: return std::cos(x);
    case Op::Tan: return std::tan(x);
    case Op::Asin: return std::asin(x);
    case Op::Acos: return std::acos(x);
    case Op::Atan: return std::atan(x);
    case Op::Atan2: return std::atan2(x, arg(id, 1));
    case Op::Sinh: return std::sinh(x);
    case Op::Cosh: return std::cosh(x);
    case Op::Tanh: return std::tanh(x);
    case Op::Asinh: return std::asinh(x);
    case Op::Acosh: return std::acosh(x);
    case Op::Atanh: return std::atanh(x);
    case Op::Floor: return std::floor(x);
    case Op::Ceil: return std::ceil(x);
    default: unsupported(id, "is not a scalar operator the evaluator supports");
  }
}

}  // namespace

double oracle_eval(const expr::Pool& pool, NodeId id, const Env& env) {
  Walker w{pool, env};
  return w.eval(id);
}

namespace {

double eval_in(const esm::System& s, NodeId id, const Env& env) {
  Walker w{s.pool, env, &s};
  return w.eval(id);
}

}  // namespace

Env oracle_env(const esm::System& s, const double* u, const double* p, double t) {
  Env env;
  for (std::size_t i = 0; i < s.states.size(); ++i) env[s.states[i].name] = u[i];
  for (std::size_t i = 0; i < s.parameters.size(); ++i) env[s.parameters[i].name] = p[i];
  env["t"] = t;
  // Observeds in dependency order: each reads only what is already bound. One that reads an
  // algebraic unknown has no value here and stays unbound (reading it fails in turn).
  for (std::size_t i = 0; i < s.observed.size(); ++i) {
    try {
      env[s.observed[i].name] = eval_in(s, s.observed_rhs[i], env);
    } catch (const Error& e) {
      if (e.code() != "undefined_variable") throw;
    }
  }
  return env;
}

void oracle_rhs(const esm::System& s, const double* u, const double* p, double t, double* du) {
  const Env env = oracle_env(s, u, p, t);
  for (std::size_t i = 0; i < s.states.size(); ++i) du[i] = eval_in(s, s.state_rhs[i], env);
}

}  // namespace esi::kernel
