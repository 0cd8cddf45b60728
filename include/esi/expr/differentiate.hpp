// Symbolic partial derivatives, for analytic Jacobians and their sparsity.
//
// `differentiate(pool, e, wrt)` is ∂e/∂wrt, where `wrt` names a Symbol (every other symbol is
// held fixed), built in the same pool and kept small by the exact rules of simplify.hpp. It
// must exist because the implicit methods need Jacobians whose sparsity is exact: wherever `e`
// does not mention `wrt` the result is exactly the Number 0 node (`pool.number(0.0)`, compare
// ids), and zero terms are dropped structurally rather than multiplied out. Every scalar op of
// expr.hpp has a rule; the derivative of a piecewise op is the derivative of the branch taken:
//   ifelse(c, a, b) -> ifelse(c, da, db);     min(a, b) -> ifelse(a <= b, da, db) (a tie takes
//   the first operand), max(a, b) -> ifelse(a >= b, da, db), n-ary min / max as left folds;
//   abs(a) -> sign(a) * da (0 at a = 0);  sqrt(a) -> ifelse(da == 0, 0, da / (2 sqrt(a))) (a
//   zero tangent adds nothing, also at a = 0);  sign, floor, ceil, comparisons, and / or / not,
//   true -> 0;  a ^ c with a Number c -> c * a^(c-1) * da;  a ^ b -> b * a^(b-1) * da
//   + a^b * log(a) * db with structurally zero terms dropped;  n-ary * -> the sum over i of
//   (product of the other operands, in order) * d_i, skipping zero d_i; negation is unary `-`.
// Closed functions (spec §9.2): datetime.julian_day(t) -> dt / 86400, the other datetime.* and
// interp.searchsorted -> 0; interp.linear(table, axis, x) -> fn interp.linear_slope(table, axis,
// x) * dx; interp.bilinear(table, ax, ay, x, y) -> fn interp.bilinear_dx(...) * dx +
// fn interp.bilinear_dy(...) * dy. Those three are internal closed functions (same arguments):
// the slope of the segment / cell the primal evaluation uses, 0 along an axis where the query is
// clamped. interp.linear_slope differentiates to 0; bilinear_dx -> fn interp.bilinear_dxy(...)
// * dy and bilinear_dy -> bilinear_dxy * dx (the cell's cross slope; the lookup is linear along
// each axis within a cell), bilinear_dxy -> 0. Any non-scalar node (D, ic, Pre, array and query ops, open-tier ops) that mentions `wrt`,
// throws esi::Error `not_differentiable`; a node that does not mention `wrt` gives 0 whatever
// its op. The input is simplified first; the walk is memoized per node within a call, so a DAG
// with shared subtrees gives a result linear in its size. Tests: tests/expr/test_differentiate.cpp.
#pragma once

#include <span>
#include <vector>

#include "esi/expr/expr.hpp"

namespace esi::expr {

/// ∂e/∂wrt, with `wrt` the interned name of a Symbol.
NodeId differentiate(Pool& pool, NodeId e, StrId wrt);

/// Reverse accumulation: the gradient of sum_i weights[i] * roots[i] with respect to each
/// Symbol named in `wrt` (one result per entry of `wrt`, the Number 0 node where nothing
/// depends on it). With weights that are symbols of their own this is a vector-Jacobian
/// product w^T (d roots / d wrt) as one expression DAG whose size is a small multiple of the
/// roots' (the adjoint of every shared subexpression is formed once), where the forward rules
/// above would give every entry of the Jacobian. Each node's local partial by one operand is
/// `differentiate`'s own rule (the same branch conventions), so the values equal the
/// Jacobian's up to rounding. Roots are simplified first, as `differentiate` does; a kNoNode
/// root contributes nothing. Throws what `differentiate` throws.
std::vector<NodeId> differentiate_reverse(Pool& pool, std::span<const NodeId> roots,
                                          std::span<const NodeId> weights,
                                          std::span<const StrId> wrt);

/// Whether any Symbol node named `wrt` is reachable from `e` through children (args and fields).
/// Memoized per call; the structural sparsity test behind `differentiate`.
bool depends_on(const Pool& pool, NodeId e, StrId wrt);

}  // namespace esi::expr
