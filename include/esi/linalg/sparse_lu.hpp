// Lane-batched LU factorisation without pivoting, planned once per sparsity pattern
// (architecture.md "linalg"; seeds 002 §6-7, 004). Many small systems with the same pattern
// (one per cell) are factored together, laid out lane-SoA: entry k of lane l at v[k * L + l],
// so every elimination operation is one loop over L lanes that the compiler vectorizes.
//
// Written here rather than taken from Eigen/KLU: those factor one matrix at a time (one
// object, one pivot search and one allocation per cell); a per-cell chemistry step needs the
// same elimination sequence over L cells at once, in a fixed order, with bitwise results that
// do not depend on the lane a cell sits in.
//
// The plan chooses a symmetric elimination order (diagonal pivots) by the Markowitz criterion
// on the symbolic pattern, computes the fill, and records the elimination as a flat list of
// index operations. Numeric work never allocates and never branches on values, except to flag
// lanes whose pivot is tiny or not finite.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <span>
#include <string>
#include <vector>

namespace esi::linalg {

/// Square sparsity pattern in CSR form: the nonzeros of row i are columns col[row_ptr[i] ..
/// row_ptr[i+1]), strictly increasing per row.
struct Pattern {
  int n = 0;
  std::vector<int> row_ptr;  ///< n + 1 entries
  std::vector<int> col;
};

/// The elimination of one pattern, fill included. All indices refer to factor storage: nnz
/// values (L below the diagonal with unit diagonal implied, U on and above it), in the row
/// order of the pivot sequence.
struct SparseLuPlan {
  int n = 0;
  /// order[k] = original index (row and column) eliminated k-th; position[order[k]] = k.
  std::vector<int> order, position;
  /// Factor pattern in pivot order (CSR over permuted rows and columns, columns increasing).
  std::vector<int> row_ptr, col;
  std::vector<int> diag;        ///< factor position of the k-th pivot (permuted row k, col k)
  /// factor position of input nonzero j (input CSR order) of the pattern the plan was made for.
  std::vector<int> from_input;
  /// factor position of the diagonal entry of ORIGINAL index i (present even where the input
  /// pattern lacked it: a shifted matrix s I - J always has a diagonal).
  std::vector<int> diag_of;
  std::size_t input_nonzeros = 0;  ///< nonzeros of the input pattern
  std::size_t fill = 0;            ///< factor nonzeros that the input pattern (plus diagonal) lacks
  /// Flops of one factorisation (per cell), counted as in the textbook elimination: one
  /// division per multiplier (L entry), one multiply-add per update. (lu_factor forms each
  /// multiplier as a product with the pivot's reciprocal: n divisions, `divisions` products.)
  std::size_t divisions = 0, multiply_adds = 0;
  std::size_t solve_multiply_adds = 0;           ///< flops of one forward+back solve (per cell)
  /// U entries one factorisation loads: one per multiply-add row by row, one per pivot-row entry
  /// and group of rows in lu_factor's grouped elimination (per cell).
  std::size_t factor_u_loads = 0;
  /// The elimination as a flat operation list (implementation-defined encoding, used only by
  /// lu_factor / lu_solve).
  std::vector<std::int32_t> ops;
  std::vector<std::int32_t> solve_ops;
  std::size_t nonzeros() const { return col.size(); }
};

/// Markowitz ordering (minimum (r-1)(c-1) over diagonal candidates, ties broken by the
/// smallest original index so the plan is deterministic) and symbolic fill. Diagonal entries
/// are added where the pattern lacks them. Throws esi::Error `invalid_pattern` (n < 0,
/// row_ptr not monotone, columns out of range or not increasing).
SparseLuPlan plan_sparse_lu(const Pattern& pattern);
/// The elimination order plan_sparse_lu chooses, without the factor pattern and operation
/// lists (whose size grows with the flop count): for planners that need only the order.
std::vector<int> markowitz_order(const Pattern& pattern);
/// The same plan for a given elimination order (order[k] = original index eliminated k-th):
/// fill, maps and flops of that order. Throws `invalid_pattern` for a bad pattern or an order
/// that is not a permutation of 0..n-1.
SparseLuPlan plan_sparse_lu_in_order(const Pattern& pattern, std::span<const int> order);
/// The natural order over a full pattern: a dense LU without pivoting (for small blocks and
/// as a test reference of the sparse plan).
SparseLuPlan plan_dense_lu(int n);

/// Lane widths the numeric routines are instantiated for.
inline constexpr int kLuLaneWidths[] = {1, 2, 4, 8, 16, 32, 64};

/// Alignment (bytes) of lane-SoA buffers at which the numeric routines run fastest: an entry's
/// lanes then start on a cache line (at L = 8 doubles, misaligned buffers make lu_factor about
/// 1.6x slower). Results do not depend on it.
inline constexpr std::size_t kLuAlignment = 64;

/// Allocator for such buffers: `LaneVector<double> values(plan.nonzeros() * lanes);`.
template <class T>
struct LaneAllocator {
  using value_type = T;
  LaneAllocator() = default;
  template <class U>
  LaneAllocator(const LaneAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) {
    return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{kLuAlignment}));
  }
  void deallocate(T* p, std::size_t) noexcept { ::operator delete(p, std::align_val_t{kLuAlignment}); }
  template <class U>
  bool operator==(const LaneAllocator<U>&) const noexcept { return true; }
};
template <class T>
using LaneVector = std::vector<T, LaneAllocator<T>>;

/// values: plan.nonzeros() * lanes entries (entry k of lane l at values[k * lanes + l]);
/// factored in place (the L multipliers below the diagonal, U above it and the reciprocal of
/// each pivot on the diagonal: what lu_solve reads). A pivot whose magnitude is <= tiny * (largest magnitude in its row
/// before elimination) or that is not finite marks lane_failed[l] = 1 (other lanes are not
/// affected; a failed lane's values are unspecified). Returns the number of failed lanes.
/// lanes must be one of kLuLaneWidths; lane_failed has `lanes` entries.
template <class T>
int lu_factor(const SparseLuPlan& plan, T* values, int lanes, std::span<std::uint8_t> lane_failed,
              T tiny = T(1e-14));

/// lu_factor of M = shift[l] * I - J, formed in place: `values` holds J in factor storage
/// (entry q of lane l at values[q * lanes + l], 0 at fill and at diagonals J lacks: the
/// layout plan::plan_lane_sparse's value program writes). The same bits as assemble_shifted
/// followed by lu_factor, without the zeroing and scatter passes (each row is negated and
/// shifted in the pass that takes its largest magnitude).
template <class T>
int lu_factor_shifted(const SparseLuPlan& plan, T* values, const T* shift, int lanes,
                      std::span<std::uint8_t> lane_failed, T tiny = T(1e-14));
/// Solves (LU) x = b in place for every lane: x holds b on entry, n * lanes entries, entry i
/// (ORIGINAL index) of lane l at x[i * lanes + l]; the permutation is applied internally.
template <class T>
void lu_solve(const SparseLuPlan& plan, const T* factored, T* x, int lanes);
/// Solves M^T x = b in place with the factors lu_factor left for M (same layout as lu_solve):
/// the transposed solves of a discrete adjoint, without factorizing M^T.
template <class T>
void lu_solve_transposed(const SparseLuPlan& plan, const T* factored, T* x, int lanes);

/// Fills factor storage with M = shift[l] * I - J for every lane: zeros everywhere (fill
/// included), J's input nonzeros (input CSR order, jacobian[j * lanes + l]) negated into
/// place, then shift[l] added on every diagonal.
template <class T>
void assemble_shifted(const SparseLuPlan& plan, const T* jacobian, const T* shift, T* values,
                      int lanes);

/// A short human-readable summary: "n=12 nnz=58 fill=6 div=12 fma=180".
std::string describe(const SparseLuPlan& plan);

}  // namespace esi::linalg
