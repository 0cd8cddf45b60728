// Exact simplification: constant folding and the algebraic identities that cannot change a
// result.
//
// The kernel evaluates an expression in IEEE-754 binary64 in a fixed way: n-ary `+` and `*` are
// left folds in argument order (a single argument is returned as is), `^` is std::pow and the
// elementary functions are the <cmath> ones, comparisons yield 1.0 / 0.0, `and` / `or` / `not`
// and `ifelse` treat any value != 0 as true. `simplify` rewrites a DAG into one that evaluates
// to the bitwise-identical double for EVERY assignment of its symbols, -0.0, ±inf and NaN
// included (a NaN keeps its sign and payload: x / -1 -> -x is refused for that). So it folds a node
// only when all operands are numbers and the result is finite and convention-independent (no
// NaN or ±0 ties for min/max, no ±0 or NaN for sign), folds only a LEADING run of numbers in a
// left fold (`1 + 2 + x` -> `3 + x`, never `x + 1 + 2` -> `x + 3`), and applies only identities
// exact for every input; each rule is listed with its proof in simplify.cpp. `fn` nodes are left
// unfolded. Non-scalar nodes are kept, with their children simplified. One bottom-up pass,
// memoized per call, so a shared subtree is visited once; the result is a fixed point
// (simplify(simplify(e)) == simplify(e)). Tests: tests/expr/test_simplify.cpp.
#pragma once

#include <span>

#include "esi/expr/expr.hpp"

namespace esi::expr {

/// The simplified form of `root` (an existing or newly interned node of `pool`).
NodeId simplify(Pool& pool, NodeId root);

/// Interns the node (op, children, ...) after applying the rules of `simplify` at its top level.
/// The children must already be simplified; then the result is too. For passes that build
/// expressions (differentiate) and want them small without a second walk.
NodeId make_simplified(Pool& pool, Op op, std::span<const NodeId> children,
                       std::uint16_t arg_count, StrId name = 0, StrId attrs = 0);

}  // namespace esi::expr
