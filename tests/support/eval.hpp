// A deliberately naive evaluator for scalar expression DAGs, used by tests as an oracle for
// what flattening produced. It walks the tree recursively (no sharing, no caching).
#pragma once

#include <cmath>
#include <map>
#include <stdexcept>
#include <string>

#include "esi/expr/expr.hpp"

namespace esi::testing {

inline double eval(const expr::Pool& pool, expr::NodeId id, const std::map<std::string, double>& env) {
  using expr::Op;
  const expr::Node& n = pool.node(id);
  auto a = [&](std::size_t i) { return eval(pool, pool.args(id)[i], env); };
  const std::size_t k = pool.args(id).size();
  switch (n.op) {
    case Op::Number: return n.number;
    case Op::Symbol: {
      auto it = env.find(std::string(pool.str(n.name)));
      if (it == env.end()) throw std::runtime_error("unbound symbol " + std::string(pool.str(n.name)));
      return it->second;
    }
    case Op::Add: { double s = 0; for (std::size_t i = 0; i < k; ++i) s += a(i); return s; }
    case Op::Mul: { double s = 1; for (std::size_t i = 0; i < k; ++i) s *= a(i); return s; }
    case Op::Sub: return k == 1 ? -a(0) : a(0) - a(1);
    case Op::Neg: return -a(0);
    case Op::Div: return a(0) / a(1);
    case Op::Pow: return std::pow(a(0), a(1));
    case Op::Exp: return std::exp(a(0));
    case Op::Log: return std::log(a(0));
    case Op::Log10: return std::log10(a(0));
    case Op::Sqrt: return std::sqrt(a(0));
    case Op::Sin: return std::sin(a(0));
    case Op::Cos: return std::cos(a(0));
    case Op::Min: return std::min(a(0), a(1));
    case Op::Max: return std::max(a(0), a(1));
    case Op::Abs: return std::fabs(a(0));
    case Op::IfElse: return a(0) != 0 ? a(1) : a(2);
    case Op::Lt: return a(0) < a(1);
    case Op::Gt: return a(0) > a(1);
    default: throw std::runtime_error("eval: unsupported op " + std::string(expr::op_name(n.op)));
  }
}

}  // namespace esi::testing
