// Private pieces of the planner shared by its passes.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "esi/esm/relative_read.hpp"
#include "esi/esm/system.hpp"
#include "esi/plan/plan.hpp"

namespace esi::plan::detail {

using expr::NodeId;

/// Forward-mode dual number with a sparse gradient: value and d(value)/d(state k) for the
/// states k it depends on (sorted by k). One evaluation gives a whole Jacobian row, so a
/// gridded operator's row at a cell costs one walk of its expression.
struct SparseDual {
  double v = 0;
  std::vector<std::pair<std::int64_t, double>> d;
};

/// sum_j |d_j| over a row's finite derivatives: the row's term of a Gershgorin bound.
inline double row_abs_sum(const std::vector<std::pair<std::int64_t, double>>& d) {
  double sum = 0;
  for (const auto& e : d)
    if (std::isfinite(e.second)) sum += std::fabs(e.second);
  return sum;
}

/// Evaluates expressions of `pool` with the oracle's semantics (left folds, the branch taken
/// for piecewise ops, strong zeros: a zero tangent contributes nothing even through inf / NaN
/// values). Symbols are looked up through `resolve`, called once per distinct name.
class DualEvaluator {
 public:
  using Resolve = std::function<SparseDual(expr::NodeId symbol)>;
  DualEvaluator(const expr::Pool& pool, Resolve resolve) : pool_(pool), resolve_(std::move(resolve)) {}
  SparseDual eval(expr::NodeId id);

 private:
  SparseDual compute(expr::NodeId id);
  SparseDual elementary(expr::NodeId id);
  SparseDual closed(expr::NodeId id);
  const expr::Pool& pool_;
  Resolve resolve_;
  std::unordered_map<expr::NodeId, SparseDual> memo_;
};

/// Additive terms of `e`: sums, differences and negations are split; with `distribute`, a
/// product with exactly one additive factor and a quotient with an additive numerator are
/// distributed over it (at most kMaxTerms terms per node, beyond which the node stays whole).
std::vector<expr::NodeId> additive_terms(expr::Pool& pool, expr::NodeId e, bool distribute);
inline constexpr std::size_t kMaxTerms = 64;

/// The sum of `terms` (0 when empty) as one node.
expr::NodeId sum_of(expr::Pool& pool, const std::vector<expr::NodeId>& terms);

using esm::RelativeRead;  // the relative-read names of grid regions (esi/esm/relative_read.hpp)

/// The component of `name` among `components` (longest path that prefixes it followed by a
/// dot); "" when none.
std::string owner_component(const std::string& name, const std::vector<std::string>& components);

/// Plans a scalar system (box model, reaction system): pass 1-4.
void plan_scalar(esm::System& system, Plan& plan);
/// Plans a system in the per-region form: passes 1-4.
void plan_grid(esm::System& system, Plan& plan);
/// Pass 5 for each form.
void validate_scalar(esm::System& system, Plan& plan, const PlanOptions& options);
void validate_grid(esm::System& system, Plan& plan, const PlanOptions& options);

/// A state away from the document's initial values (each value times a factor in [0.5, 2),
/// 1 where none is given) and the parameters' values (1 where none is given).
std::vector<double> sampled_state(const esm::System& s, std::mt19937_64& rng);
std::vector<double> parameter_values(const esm::System& s);

/// Writes the CSR pattern of `block` (row_ptr, col) from per-row (column, entry) lists, each
/// row sorted by column here; returns the entries in CSR order.
std::vector<expr::NodeId> fill_block_rows(BlockPattern& block,
                                          std::vector<std::vector<std::pair<int, expr::NodeId>>>& by_row);

/// Structure of a block: Markowitz LU summary (linalg) and the Gershgorin bound, from the
/// symbolic entries entry[k] (CSR order of `block`).
void plan_block_structure(esm::System& system, Operator& op, const std::vector<expr::NodeId>& entries);

}  // namespace esi::plan::detail
