// Planning the lane-batched LU: pattern checks, the Markowitz order, symbolic fill and the
// flat operation lists lu_factor / lu_solve walk (the encodings are described at the top of
// lu_factor.cpp and sparse_lu_numeric.cpp).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "esi/core/error.hpp"
#include "esi/linalg/sparse_lu.hpp"
#include "linalg/lanes.hpp"

namespace esi::linalg {
namespace {

[[noreturn]] void invalid(const std::string& pointer, const std::string& message) {
  throw Error("invalid_pattern", "", pointer, message);
}

void check_pattern(const Pattern& p) {
  if (p.n < 0) invalid("/n", "the pattern has n = " + std::to_string(p.n) + " rows; n must be >= 0");
  const auto n = static_cast<std::size_t>(p.n);
  if (p.row_ptr.size() != n + 1)
    invalid("/row_ptr", "row_ptr has " + std::to_string(p.row_ptr.size()) + " entries; a pattern of " +
                            std::to_string(n) + " rows needs n + 1 = " + std::to_string(n + 1));
  if (p.row_ptr[0] != 0)
    invalid("/row_ptr/0", "row_ptr must start at 0, not " + std::to_string(p.row_ptr[0]));
  for (std::size_t i = 0; i < n; ++i)
    if (p.row_ptr[i + 1] < p.row_ptr[i])
      invalid(pointer_join("/row_ptr", i + 1),
              "row_ptr decreases at row " + std::to_string(i) + " (" +
                  std::to_string(p.row_ptr[i]) + " then " + std::to_string(p.row_ptr[i + 1]) + ")");
  if (static_cast<std::size_t>(p.row_ptr[n]) != p.col.size())
    invalid(pointer_join("/row_ptr", n),
            "row_ptr ends at " + std::to_string(p.row_ptr[n]) + " but col has " +
                std::to_string(p.col.size()) + " entries");
  for (std::size_t i = 0; i < n; ++i)
    for (int k = p.row_ptr[i]; k < p.row_ptr[i + 1]; ++k) {
      const int c = p.col[k];
      if (c < 0 || c >= p.n)
        invalid(pointer_join("/col", static_cast<std::size_t>(k)),
                "column " + std::to_string(c) + " of row " + std::to_string(i) +
                    " is outside 0.." + std::to_string(p.n - 1));
      if (k > p.row_ptr[i] && c <= p.col[k - 1])
        invalid(pointer_join("/col", static_cast<std::size_t>(k)),
                "the columns of row " + std::to_string(i) + " are not strictly increasing (" +
                    std::to_string(p.col[k - 1]) + " then " + std::to_string(c) + ")");
    }
}

/// Symbolic elimination with diagonal pivots. Rows keep every column they ever hold (the
/// final factor pattern); counts follow the active submatrix only (the Markowitz criterion).
/// With `markowitz`, an ordered set of (cost, index) over the active indices gives the next
/// pivot in O(log n): the same choice as a scan for the least cost, smallest index first.
class Elimination {
 public:
  Elimination(const Pattern& p, bool markowitz)
      : n_(p.n), rows_(p.n), cols_(p.n), rcount_(p.n), ccount_(p.n), active_(p.n, 1),
        markowitz_(markowitz) {
    for (int i = 0; i < n_; ++i) {
      auto& row = rows_[i];
      row.assign(p.col.begin() + p.row_ptr[i], p.col.begin() + p.row_ptr[i + 1]);
      if (!std::binary_search(row.begin(), row.end(), i))
        row.insert(std::lower_bound(row.begin(), row.end(), i), i);
      for (int j : row) cols_[j].push_back(i);
      rcount_[i] = static_cast<std::int64_t>(row.size());
    }
    for (int j = 0; j < n_; ++j) ccount_[j] = static_cast<std::int64_t>(cols_[j].size());
    if (markowitz_) {
      key_.resize(n_);
      for (int i = 0; i < n_; ++i) queue_.emplace(key_[i] = cost(i), i);
    }
  }

  /// The active index of least (r-1)(c-1); the smallest index among equals.
  int markowitz_choice() const { return queue_.begin()->second; }

  void eliminate(int p) {
    active_[p] = 0;
    if (markowitz_) queue_.erase({key_[p], p});
    pivot_cols_.clear();
    for (int j : rows_[p])
      if (active_[j]) pivot_cols_.push_back(j), --ccount_[j];
    for (int i : cols_[p]) {
      if (!active_[i]) continue;
      --rcount_[i];
      touched_.push_back(i);
      auto& row = rows_[i];
      added_.clear();
      std::set_difference(pivot_cols_.begin(), pivot_cols_.end(), row.begin(), row.end(),
                          std::back_inserter(added_));
      if (added_.empty()) continue;
      merged_.clear();
      std::merge(row.begin(), row.end(), added_.begin(), added_.end(), std::back_inserter(merged_));
      for (int j : added_) cols_[j].push_back(i), ++ccount_[j], touched_.push_back(j);
      rcount_[i] += static_cast<std::int64_t>(added_.size());
      row.swap(merged_);
    }
    if (markowitz_) {
      for (int j : pivot_cols_) rekey(j);
      for (int i : touched_) rekey(i);
    }
    touched_.clear();
  }

  const std::vector<int>& row(int i) const { return rows_[i]; }

 private:
  std::int64_t cost(int i) const { return (rcount_[i] - 1) * (ccount_[i] - 1); }
  void rekey(int i) {
    const std::int64_t k = cost(i);
    if (k == key_[i]) return;
    queue_.erase({key_[i], i});
    queue_.emplace(key_[i] = k, i);
  }

  int n_;
  std::vector<std::vector<int>> rows_, cols_;  // cols_ unsorted: only scanned
  std::vector<std::int64_t> rcount_, ccount_;
  std::vector<char> active_;
  bool markowitz_;
  std::set<std::pair<std::int64_t, int>> queue_;  // (cost, index) of the active indices
  std::vector<std::int64_t> key_;                 // each active index's cost in queue_
  std::vector<int> pivot_cols_, merged_, added_, touched_;
};

/// Factor pattern, maps, flop counts and operation lists once the order and fill are known.
SparseLuPlan finish_plan(const Pattern& p, std::vector<int> order, const Elimination& elim) {
  SparseLuPlan plan;
  const int n = p.n;
  plan.n = n;
  plan.order = std::move(order);
  plan.position.assign(n, -1);
  for (int k = 0; k < n; ++k) plan.position[plan.order[k]] = k;
  plan.row_ptr.assign(n + 1, 0);
  plan.diag.assign(n, -1);
  for (int k = 0; k < n; ++k) {
    const auto& row = elim.row(plan.order[k]);
    const auto start = plan.col.size();
    for (int j : row) plan.col.push_back(plan.position[j]);
    std::sort(plan.col.begin() + static_cast<std::ptrdiff_t>(start), plan.col.end());
    plan.row_ptr[k + 1] = static_cast<int>(plan.col.size());
    const auto d = std::lower_bound(plan.col.begin() + static_cast<std::ptrdiff_t>(start), plan.col.end(), k);
    plan.diag[k] = static_cast<int>(d - plan.col.begin());
  }
  if (plan.col.size() > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
    invalid("", "the LU factor of this pattern has more than 2^31 nonzeros");

  auto find = [&](int k, int c) {
    const auto b = plan.col.begin() + plan.row_ptr[k], e = plan.col.begin() + plan.row_ptr[k + 1];
    const auto it = std::lower_bound(b, e, c);
    ESI_ASSERT(it != e && *it == c);
    return static_cast<int>(it - plan.col.begin());
  };
  plan.input_nonzeros = p.col.size();
  plan.from_input.resize(p.col.size());
  std::size_t missing_diagonals = 0;
  for (int i = 0; i < n; ++i) {
    bool has_diagonal = false;
    for (int q = p.row_ptr[i]; q < p.row_ptr[i + 1]; ++q) {
      plan.from_input[q] = find(plan.position[i], plan.position[p.col[q]]);
      has_diagonal |= p.col[q] == i;
    }
    missing_diagonals += has_diagonal ? 0 : 1;
  }
  plan.diag_of.resize(n);
  for (int i = 0; i < n; ++i) plan.diag_of[i] = plan.diag[plan.position[i]];
  plan.fill = plan.col.size() - p.col.size() - missing_diagonals;

  // Factor operations, kFactorRowGroup rows at a time (the encoding: lu_factor.cpp). For each
  // group, the pivots its L entries name, increasing; for each pivot the group rows that hold
  // it (their L positions) and, for every U entry of the pivot row, those rows' targets.
  std::vector<int> where_in_group(static_cast<std::size_t>(n) * kFactorRowGroup, -1);
  std::vector<int> pivots, holders;
  for (int k0 = 0; k0 < n; k0 += kFactorRowGroup) {
    const int k1 = std::min(n, k0 + kFactorRowGroup);
    // factor position of column c in group row k, -1 where that row has none
    auto where = [&](int k, int c) -> int& {
      return where_in_group[static_cast<std::size_t>(k - k0) * n + c];
    };
    pivots.clear();
    for (int k = k0; k < k1; ++k) {
      for (int q = plan.row_ptr[k]; q < plan.row_ptr[k + 1]; ++q) where(k, plan.col[q]) = q;
      for (int q = plan.row_ptr[k]; q < plan.diag[k]; ++q) pivots.push_back(plan.col[q]);
    }
    std::sort(pivots.begin(), pivots.end());
    pivots.erase(std::unique(pivots.begin(), pivots.end()), pivots.end());
    plan.ops.push_back(static_cast<std::int32_t>(pivots.size()));
    for (const int c : pivots) {
      holders.clear();
      for (int k = std::max(k0, c + 1); k < k1; ++k)
        if (where(k, c) >= 0) holders.push_back(k);
      plan.ops.push_back(c);
      plan.ops.push_back(static_cast<std::int32_t>(holders.size()));
      for (const int k : holders) plan.ops.push_back(where(k, c));
      plan.divisions += holders.size();
      for (int s = plan.diag[c] + 1; s < plan.row_ptr[c + 1]; ++s) {
        ++plan.factor_u_loads;
        for (const int k : holders) {
          const int t = where(k, plan.col[s]);
          ESI_ASSERT(t >= 0);  // the symbolic fill put every update target in row k
          plan.ops.push_back(t);
          ++plan.multiply_adds;
        }
      }
    }
    for (int k = k0; k < k1; ++k)
      for (int q = plan.row_ptr[k]; q < plan.row_ptr[k + 1]; ++q) where(k, plan.col[q]) = -1;
  }
  // Solve operations: the ORIGINAL index of each factor entry's column, so substitution works
  // on x in original order without a permutation pass.
  plan.solve_ops.resize(plan.col.size());
  for (std::size_t q = 0; q < plan.col.size(); ++q) plan.solve_ops[q] = plan.order[plan.col[q]];
  plan.solve_multiply_adds = plan.col.size() - static_cast<std::size_t>(n);
  return plan;
}

}  // namespace

namespace {
std::vector<int> eliminate_markowitz(const Pattern& pattern, Elimination& elim) {
  std::vector<int> order;
  order.reserve(pattern.n);
  for (int k = 0; k < pattern.n; ++k) {
    const int p = elim.markowitz_choice();
    order.push_back(p);
    elim.eliminate(p);
  }
  return order;
}
}  // namespace

SparseLuPlan plan_sparse_lu(const Pattern& pattern) {
  check_pattern(pattern);
  Elimination elim(pattern, /*markowitz=*/true);
  auto order = eliminate_markowitz(pattern, elim);
  return finish_plan(pattern, std::move(order), elim);
}

std::vector<int> markowitz_order(const Pattern& pattern) {
  check_pattern(pattern);
  Elimination elim(pattern, /*markowitz=*/true);
  return eliminate_markowitz(pattern, elim);
}

SparseLuPlan plan_sparse_lu_in_order(const Pattern& pattern, std::span<const int> order) {
  check_pattern(pattern);
  std::vector<char> seen(pattern.n, 0);
  if (order.size() != static_cast<std::size_t>(pattern.n))
    invalid("", "the elimination order has " + std::to_string(order.size()) +
                    " entries; the pattern has " + std::to_string(pattern.n) + " rows");
  for (std::size_t k = 0; k < order.size(); ++k) {
    if (order[k] < 0 || order[k] >= pattern.n || seen[order[k]])
      invalid("", "the elimination order is not a permutation of 0.." +
                      std::to_string(pattern.n - 1) + " (entry " + std::to_string(k) + ")");
    seen[order[k]] = 1;
  }
  Elimination elim(pattern, /*markowitz=*/false);
  for (int p : order) elim.eliminate(p);
  return finish_plan(pattern, std::vector<int>(order.begin(), order.end()), elim);
}

SparseLuPlan plan_dense_lu(int n) {
  if (n < 0) invalid("/n", "a dense LU of n = " + std::to_string(n) + " rows; n must be >= 0");
  Pattern full;
  full.n = n;
  full.row_ptr.resize(static_cast<std::size_t>(n) + 1);
  full.col.reserve(static_cast<std::size_t>(n) * n);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) full.col.push_back(j);
    full.row_ptr[i + 1] = static_cast<int>(full.col.size());
  }
  std::vector<int> natural(n);
  for (int i = 0; i < n; ++i) natural[i] = i;
  return plan_sparse_lu_in_order(full, natural);
}

std::string describe(const SparseLuPlan& plan) {
  return "n=" + std::to_string(plan.n) + " nnz=" + std::to_string(plan.nonzeros()) +
         " fill=" + std::to_string(plan.fill) + " div=" + std::to_string(plan.divisions) +
         " fma=" + std::to_string(plan.multiply_adds);
}

}  // namespace esi::linalg
