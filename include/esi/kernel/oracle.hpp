// The tree-walk oracle: a plain recursive evaluator of a system's expressions, kept obviously
// correct so that compiled programs can be checked against it. Slow by design (a hash-map
// environment, tables re-read from JSON on every call); use it in tests and diagnostics only.
//
// Semantics pinned here and matched by the tape: n-ary + and * and min/max fold left from the
// first argument; comparisons and and/or/not yield 1.0 / 0.0 with "!= 0" as truth (so a NaN
// condition is true); `ifelse` evaluates only the branch taken; min/max propagate NaN.
#pragma once

#include <string>
#include <unordered_map>

#include "esi/esm/system.hpp"
#include "esi/expr/expr.hpp"

namespace esi::kernel {

using Env = std::unordered_map<std::string, double>;

/// Value of `id` with every Symbol looked up in `env` (flat names and `t`). Throws esi::Error
/// `undefined_variable` for an unbound name and `unsupported_operator` for a non-scalar op.
double oracle_eval(const expr::Pool& pool, expr::NodeId id, const Env& env);

/// The environment of one RHS call: states, parameters and `t`, then every observed in order
/// (an observed that reads an algebraic unknown is left unbound). `u` has
/// system.states.size() entries, `p` system.parameters.size().
Env oracle_env(const esm::System& system, const double* u, const double* p, double t);

/// du[i] = state_rhs[i] evaluated at (u, p, t), observeds first; D(x, t) of a state x on a
/// right-hand side evaluates x's right-hand side.
void oracle_rhs(const esm::System& system, const double* u, const double* p, double t, double* du);

}  // namespace esi::kernel
