// Lane-SoA vector operations of a Rosenbrock stage (issue 10's lane pools): the per-stage work
// around the LU, for L systems at once (entry i of lane l at v[i * L + l]).
//
// Here rather than in exec/lane_pool.cpp so that they share the LU kernels' build: one kernel
// per lane width with AVX2 and AVX-512 clones chosen at load time (the library itself is built
// for baseline x86-64, where these loops would run two doubles at a time), and no FMA
// contraction. Every lane gets the same scalar operations in the same order whatever the width
// or the clone, so results are bitwise independent of both.
#pragma once

#include <cstddef>
#include <cstdint>

namespace esi::linalg {

/// out = base + sum_{j < count, w[j] != 0} w[j] * k_j over n entries of `lanes` lanes, where
/// k_j = k + j * k_stride; per entry the sum starts at 0 and adds the terms in j order, then
/// base (null: no base) is added in front. lanes is one of kLuLaneWidths.
void lane_combination(std::size_t n, int lanes, const double* base, const double* k,
                      std::size_t k_stride, const double* w, int count, double* out);

/// A Rosenbrock stage's right-hand side: out = (f + coupling) + scale[l] * ft, where coupling
/// = sum_{j < count, c[j] != 0} coef[j * lanes + l] * k_j (starting at 0, j order) and
/// k_j = k + j * k_stride. A null ft leaves the f_t term out: for f_t = +0 the same bits, since
/// coupling starts at +0 and so f + coupling is never -0.
void lane_stage_rhs(std::size_t n, int lanes, const double* f, const double* ft, const double* k,
                    std::size_t k_stride, const double* c, int count, const double* coef,
                    const double* scale, double* out);

/// The end of a Rosenbrock step in one pass: with b (non-null), u1 = u0 + sum_j b[j] k_j as
/// lane_combination writes it (else u1 is read as given); the error estimate e = sum_j
/// btilde[j] k_j (lane_combination without base, not stored) and its lane_error_norms into
/// out / nonfinite, the same bits as those calls in sequence.
void lane_step_end(std::size_t n, int lanes, const double* u0, const double* k,
                   std::size_t k_stride, const double* b, const double* btilde, int stages,
                   const double* atol, double rtol, double* u1, double* out,
                   std::uint8_t* nonfinite);

/// to[i * lanes + l] = from[i * lanes + l] for the lanes l with take[l] != 0, over n entries
/// (the other lanes keep theirs): a lane pool's accepted steps, copied all at once.
void lane_select(std::size_t n, int lanes, const std::uint8_t* take, const double* from,
                 double* to);

/// Hairer's weighted RMS per lane: out[l] = sqrt(sum_i w_i^2 / n) with w_i = e_i / (atol[i] +
/// rtol * max(|u0_i|, |u1_i|)), summed in i order; nonfinite[l] = 1 where some u1_i is inf or
/// NaN, else 0.
void lane_error_norms(std::size_t n, int lanes, const double* e, const double* u0,
                      const double* u1, const double* atol, double rtol, double* out,
                      std::uint8_t* nonfinite);

}  // namespace esi::linalg
