// Pass 5 in the per-region form: at sampled non-default states and a fixed set of cells (every
// boundary kind of cell along each axis, then a fixed-seed sample), the operators' right-hand
// sides, evaluated by a tree walk over the relative expressions with sparse dual numbers, sum
// to the compiled grid program's right-hand side (kernel::grid_rhs), and every nonzero of each
// operator's dual-number Jacobian row lies inside its footprint.
#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <unordered_map>

#include "esi/core/error.hpp"
#include "esi/kernel/grid.hpp"
#include "esi/kernel/oracle.hpp"
#include "plan/plan_internal.hpp"

namespace esi::plan::detail {
namespace {

using Kind = esm::System::GridEquation::Kind;
constexpr double kTolerance = 1e-12;
constexpr std::size_t kMaxFailures = 8;

std::string num(double x) {
  std::ostringstream s;
  s.precision(17);
  s << x;
  return s.str();
}

std::string base_axis(std::string a) {
  if (a.size() > 6 && a.compare(a.size() - 6, 6, "_nodes") == 0) a.resize(a.size() - 6);
  return a;
}

std::int64_t linear(const std::vector<std::int64_t>& pos, const std::vector<std::int64_t>& extents) {
  std::int64_t k = 0, stride = 1;
  for (std::size_t d = 0; d < pos.size(); ++d) {
    k += (pos[d] - 1) * stride;
    stride *= extents[d];
  }
  return k;
}

/// Evaluates relative expressions at cells, with the observed arrays' cells computed on demand
/// (once per state) and states as dual variables.
class GridOracle {
 public:
  GridOracle(const esm::System& s, const std::vector<double>& y, const std::vector<double>& p, double t)
      : s_(s), y_(y), p_(p), t_(t) {
    for (std::size_t k = 0; k < s.arrays.size(); ++k) array_of_[s.arrays[k].name] = k;
    for (std::size_t k = 0; k < s.grid.size(); ++k)
      for (std::size_t j = 0; j < s.grid[k].targets.size(); ++j)
        (s.grid[k].kind == Kind::Observed ? observed_eq_ : tendency_eq_)[s.grid[k].targets[j]] = {k, j};
    for (std::size_t i = 0; i < s.parameters.size(); ++i) param_of_[s.parameters[i].name] = i;
    for (std::size_t i = 0; i < s.observed.size(); ++i) scalar_observed_[s.observed[i].name] = i;
    for (std::size_t i = 0; i < s.states.size(); ++i)
      if (s.states[i].array.empty()) scalar_state_[s.states[i].name] = i;
  }

  /// `e` at cell `cell` of an array over `extents`.
  SparseDual at(NodeId e, const std::vector<std::int64_t>& cell) {
    DualEvaluator ev(s_.pool, [&](NodeId sym) { return resolve(sym, cell); });
    return ev.eval(e);
  }

  /// Row `target` (a state array) of the tendency equation at `cell`, from its own regions.
  SparseDual tendency(const std::string& target, const std::vector<std::int64_t>& cell) {
    const auto [k, j] = tendency_eq_.at(target);
    return at(region_rhs(s_.grid[k], j, cell), cell);
  }

 private:
  static NodeId region_rhs(const esm::System::GridEquation& g, std::size_t j, const std::vector<std::int64_t>& cell) {
    for (const auto& r : g.regions) {
      bool inside = true;
      for (std::size_t d = 0; d < cell.size() && inside; ++d) inside = r.lo[d] <= cell[d] && cell[d] <= r.hi[d];
      if (inside) return r.rhs[j];
    }
    throw Error("internal_error", g.file, g.pointer, "no region holds a cell of " + g.targets[j]);
  }

  const RelativeRead& parsed(NodeId sym) {
    if (auto it = parsed_.find(sym); it != parsed_.end()) return it->second;
    RelativeRead r;
    if (!esm::parse_relative_read(std::string(s_.pool.str(s_.pool.node(sym).name)), r)) r.array.clear();
    return parsed_.emplace(sym, std::move(r)).first->second;
  }

  SparseDual resolve(NodeId sym, const std::vector<std::int64_t>& cell) {
    const RelativeRead& r = parsed(sym);
    if (r.array.empty()) return scalar(std::string(s_.pool.str(s_.pool.node(sym).name)));
    std::vector<std::int64_t> pos(r.axis.size());
    for (std::size_t j = 0; j < r.axis.size(); ++j) pos[j] = r.axis[j] >= 0 ? cell[r.axis[j]] + r.offset[j] : r.offset[j];
    if (r.array == "$index") return {static_cast<double>(pos[0]), {}};
    const esm::System::Array& a = s_.arrays[array_of_.at(r.array)];
    const std::int64_t lin = linear(pos, a.extents);
    if (a.parameter) return {a.values[lin], {}};
    if (a.first_state >= 0) {
      const std::int64_t idx = a.first_state + lin;
      return {y_[idx], {{idx, 1.0}}};
    }
    const auto key = std::make_pair(array_of_.at(r.array), lin);
    if (auto it = cells_.find(key); it != cells_.end()) return it->second;
    const auto [k, j] = observed_eq_.at(r.array);
    SparseDual v = at(region_rhs(s_.grid[k], j, pos), pos);
    return cells_.emplace(key, std::move(v)).first->second;
  }

  SparseDual scalar(const std::string& name) {
    if (name == "t") return {t_, {}};
    if (auto it = param_of_.find(name); it != param_of_.end()) return {p_[it->second], {}};
    if (auto it = scalar_state_.find(name); it != scalar_state_.end())
      return {y_[it->second], {{static_cast<std::int64_t>(it->second), 1.0}}};
    if (auto it = scalar_observed_.find(name); it != scalar_observed_.end()) {
      if (auto m = scalar_memo_.find(name); m != scalar_memo_.end()) return m->second;
      SparseDual v = at(s_.observed_rhs[it->second], {});
      return scalar_memo_.emplace(name, std::move(v)).first->second;
    }
    throw Error("undefined_variable", "", "", "the planner's check found no value for '" + name + "'");
  }

  const esm::System& s_;
  const std::vector<double>& y_;
  const std::vector<double>& p_;
  double t_;
  std::unordered_map<std::string, std::size_t> array_of_, param_of_, scalar_observed_, scalar_state_;
  std::unordered_map<std::string, std::pair<std::size_t, std::size_t>> observed_eq_, tendency_eq_;
  std::unordered_map<NodeId, RelativeRead> parsed_;
  std::map<std::pair<std::size_t, std::int64_t>, SparseDual> cells_;
  std::unordered_map<std::string, SparseDual> scalar_memo_;
};

/// The cells checked: every combination of the positions 1, 2, 3, middle, n-2, n-1, n along
/// each axis (each boundary kind of a stencil of radius up to 3), all cells of a small grid,
/// thinned to `max_cells` by a fixed-seed draw.
std::vector<std::vector<std::int64_t>> cells_to_check(const std::vector<std::int64_t>& extents, std::size_t max_cells,
                                                      std::mt19937_64& rng) {
  std::vector<std::vector<std::int64_t>> per_axis;
  for (std::int64_t n : extents) {
    std::set<std::int64_t> p;
    if (n <= 9) {
      for (std::int64_t k = 1; k <= n; ++k) p.insert(k);
    } else {
      for (std::int64_t k : {std::int64_t{1}, std::int64_t{2}, std::int64_t{3}, (n + 1) / 2, n - 2, n - 1, n}) p.insert(k);
    }
    per_axis.emplace_back(p.begin(), p.end());
  }
  std::vector<std::vector<std::int64_t>> cells{{}};
  for (const auto& positions : per_axis) {
    std::vector<std::vector<std::int64_t>> next;
    for (const auto& c : cells)
      for (std::int64_t k : positions) {
        auto d = c;
        d.push_back(k);
        next.push_back(std::move(d));
      }
    cells = std::move(next);
  }
  if (cells.size() > max_cells) {
    std::shuffle(cells.begin(), cells.end(), rng);
    cells.resize(max_cells);
    std::sort(cells.begin(), cells.end());
  }
  return cells;
}

}  // namespace

void validate_grid(esm::System& s, Plan& plan, const PlanOptions& options) {
  Validation& v = plan.validation;
  v.ran = true;
  v.seed = options.seed;
  v.samples = options.samples;
  auto fail = [&](const std::string& what) {
    if (v.failures.size() < kMaxFailures) v.failures.push_back(what);
  };
  std::mt19937_64 rng(options.seed);
  const kernel::GridProgram program = kernel::compile_grid(s);
  const std::vector<double> p = parameter_values(s);
  kernel::GridWorkspace ws = kernel::make_grid_workspace(program, s, p);
  std::vector<double> y0(s.states.size());
  for (std::size_t i = 0; i < s.states.size(); ++i) y0[i] = s.states[i].default_value.value_or(1.0);
  kernel::grid_initial(program, ws, y0);

  // Which state array a state index belongs to, and where.
  struct Span {
    std::int64_t first;
    const esm::System::Array* array;
  };
  std::vector<Span> spans;
  for (const auto& a : s.arrays)
    if (!a.parameter && a.first_state >= 0) spans.push_back({a.first_state, &a});
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.first < b.first; });
  auto locate = [&](std::int64_t idx, std::vector<std::int64_t>& pos) -> const esm::System::Array* {
    auto it = std::upper_bound(spans.begin(), spans.end(), idx, [](std::int64_t i, const Span& sp) { return i < sp.first; });
    if (it == spans.begin()) return nullptr;
    --it;
    std::int64_t rest = idx - it->first, n = 1;
    for (auto e : it->array->extents) n *= e;
    if (rest >= n) return nullptr;
    pos.clear();
    for (auto e : it->array->extents) {
      pos.push_back(rest % e + 1);
      rest /= e;
    }
    return it->array;
  };
  std::unordered_map<std::string, const esm::System::Array*> array_by_name;
  for (const auto& a : s.arrays) array_by_name[a.name] = &a;

  v.max_analytic_error = 0;
  const auto cells = cells_to_check(plan.extents, options.max_cells, rng);
  v.cells_checked = cells.size();
  std::uniform_real_distribution<double> factor(0.5, 2.0);
  for (int sample = 0; sample < options.samples; ++sample) {
    std::vector<double> y(y0);
    for (double& x : y) x = (std::isfinite(x) && x != 0 ? x : 1.0) * factor(rng);
    const double t = 3600.0 * (sample + 1);
    std::vector<double> flat(s.states.size(), 0.0);
    kernel::grid_rhs(program, ws, t, y, flat);
    GridOracle oracle(s, y, p, t);
    std::map<std::pair<std::string, std::vector<std::int64_t>>, std::pair<double, double>> sums;  // (sum, sum |.|)
    std::vector<std::int64_t> pos;
    for (Operator& op : plan.operators) {
      if (op.measured_reach.empty())
        for (const auto& a : plan.axes) op.measured_reach.push_back(AxisReach{a, 0, 0, false});
      for (std::size_t r = 0; r < op.rows.size(); ++r) {
        const esm::System::Array* row_array = array_by_name.at(op.rows[r]);
        for (const auto& cell : cells) {
          if (cell.size() != row_array->extents.size()) continue;
          bool inside = true;
          for (std::size_t d = 0; d < cell.size(); ++d) inside = inside && cell[d] <= row_array->extents[d];
          if (!inside) continue;
          const SparseDual value = op.rhs[r] == expr::kNoNode ? oracle.tendency(op.rows[r], cell) : oracle.at(op.rhs[r], cell);
          op.sampled_gershgorin = std::max(op.sampled_gershgorin, row_abs_sum(value.d));
          // Pointwise blocks: the symbolic entries (what an assembled Jacobian evaluates)
          // against the dual numbers, relative to the row's largest dual entry.
          if (op.locality == Locality::Pointwise && !op.block_entries.empty()) {
            const auto& b = op.block;
            const int br = static_cast<int>(std::find(b.species.begin(), b.species.end(), op.rows[r]) - b.species.begin());
            double scale = 0;
            for (const auto& [idx, d] : value.d)
              if (std::isfinite(d)) scale = std::max(scale, std::fabs(d));
            for (int k = b.row_ptr[br]; k < b.row_ptr[br + 1]; ++k) {
              const esm::System::Array* col = array_by_name.at(b.species[b.col[k]]);
              const std::int64_t idx = col->first_state + linear(cell, col->extents);
              auto it = std::lower_bound(value.d.begin(), value.d.end(), idx,
                                         [](const std::pair<std::int64_t, double>& e, std::int64_t i) { return e.first < i; });
              const double want = it != value.d.end() && it->first == idx ? it->second : 0.0;
              const double got = oracle.at(op.block_entries[k], cell).v;
              ++v.analytic_entries;
              if (got == want || (std::isnan(got) && std::isnan(want))) continue;
              const double err = std::fabs(got - want) / std::max(scale, 1e-300);
              v.max_analytic_error = std::max(v.max_analytic_error, err);
              if (!(err <= kTolerance))
                fail("operator '" + op.name + "': symbolic d " + op.rows[r] + " / d " + col->name + " = " + num(got) +
                     ", dual numbers give " + num(want) + " (sample " + std::to_string(sample) + ")");
            }
          }
          auto& acc = sums[{op.rows[r], cell}];
          acc.first += value.v;
          acc.second += std::fabs(value.v);
          for (const auto& [idx, d] : value.d) {
            if (d == 0 || std::isnan(d)) continue;
            ++v.jacobian_nonzeros;
            const esm::System::Array* read = locate(idx, pos);
            if (read)
              for (std::size_t k = 0; k < plan.axes.size(); ++k) {
                std::size_t j = 0;
                while (j < read->axes.size() && base_axis(read->axes[j]) != base_axis(plan.axes[k])) ++j;
                if (j == read->axes.size()) continue;
                const std::int64_t off = pos[j] - cell[k];
                op.measured_reach[k].minus = std::max(op.measured_reach[k].minus, -off);
                op.measured_reach[k].plus = std::max(op.measured_reach[k].plus, off);
              }
            bool covered = false;
            for (const auto& f : op.footprint) {
              if (!read || f.row != op.rows[r] || f.read != read->name) continue;
              covered = true;
              for (std::size_t k = 0; k < plan.axes.size() && covered; ++k) {
                // The read array's index along this grid axis (by name), relative to the row.
                std::size_t j = 0;
                while (j < read->axes.size() && base_axis(read->axes[j]) != base_axis(plan.axes[k])) ++j;
                if (j == read->axes.size() || f.unbounded[k]) continue;
                const std::int64_t off = pos[j] - cell[k];
                covered = f.lo[k] <= off && off <= f.hi[k];
              }
              if (covered) break;
            }
            if (!covered) {
              ++v.outside_pattern;
              std::string where;
              for (auto c : cell) where += (where.empty() ? "" : ",") + std::to_string(c);
              fail("operator '" + op.name + "': d " + op.rows[r] + "[" + where + "] / d " + s.states[idx].name + " = " +
                   num(d) + " lies outside its footprint (sample " + std::to_string(sample) + ")");
            }
          }
        }
      }
    }
    for (const auto& [key, acc] : sums) {
      const esm::System::Array* a = array_by_name.at(key.first);
      const double want = flat[a->first_state + linear(key.second, a->extents)];
      const double err = std::fabs(acc.first - want) / std::max({std::fabs(want), acc.second, 1e-300});
      ++v.rows_checked;
      if (!std::isfinite(want) || !std::isfinite(acc.first)) {
        if (v.rows_not_finite++ == 0) {
          std::string where;
          for (auto c : key.second) where += (where.empty() ? "" : ",") + std::to_string(c);
          fail("d " + key.first + "[" + where + "] is not finite at sample " + std::to_string(sample) +
               " (compiled " + num(want) + ", operators " + num(acc.first) +
               "); give the parameters it reads finite values (esi plan --set NAME=VALUE)");
        }
        continue;
      }
      v.max_sum_error = std::max(v.max_sum_error, err);
      if (!(err <= kTolerance)) {
        std::string where;
        for (auto c : key.second) where += (where.empty() ? "" : ",") + std::to_string(c);
        fail("d " + key.first + "[" + where + "]: the operators sum to " + num(acc.first) +
             " but the compiled right-hand side is " + num(want) + " (sample " + std::to_string(sample) + ")");
      }
    }
  }
}

}  // namespace esi::plan::detail
