// Pass 5 in the scalar form: at sampled non-default states (fixed seed) the operators sum to
// the flat right-hand side (the oracle), every operator's dual-number Jacobian lies inside its
// declared block pattern, and the analytic Jacobian (kernel::compile_jacobian, a compiled
// program) equals the dual-number one.
#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>
#include <unordered_map>

#include "esi/core/error.hpp"
#include "esi/kernel/jacobian.hpp"
#include "esi/kernel/oracle.hpp"
#include "plan/plan_internal.hpp"

namespace esi::plan::detail {
namespace {

constexpr double kTolerance = 1e-12;
constexpr std::size_t kMaxFailures = 8;

void fail(Validation& v, const std::string& what) {
  if (v.failures.size() < kMaxFailures) v.failures.push_back(what);
}

std::string num(double x) {
  std::ostringstream s;
  s.precision(17);
  s << x;
  return s.str();
}

}  // namespace

/// A state away from the document's initial values: each value times a factor in [0.5, 2)
/// (1 where no value is given), so no test passes only because a species starts at 0.
std::vector<double> sampled_state(const esm::System& s, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> f(0.5, 2.0);
  std::vector<double> u;
  u.reserve(s.states.size());
  for (const auto& v : s.states) {
    const double base = v.default_value && std::isfinite(*v.default_value) && *v.default_value != 0 ? *v.default_value : 1.0;
    u.push_back(base * f(rng));
  }
  return u;
}

std::vector<double> parameter_values(const esm::System& s) {
  std::vector<double> p;
  for (const auto& v : s.parameters) p.push_back(v.default_value.value_or(1.0));
  return p;
}

void validate_scalar(esm::System& s, Plan& plan, const PlanOptions& options) {
  Validation& v = plan.validation;
  v.ran = true;
  v.seed = options.seed;
  v.samples = options.samples;
  std::unordered_map<std::string, int> state_of, param_of, observed_of;
  for (std::size_t i = 0; i < s.states.size(); ++i) state_of[s.states[i].name] = static_cast<int>(i);
  for (std::size_t i = 0; i < s.parameters.size(); ++i) param_of[s.parameters[i].name] = static_cast<int>(i);
  for (std::size_t i = 0; i < s.observed.size(); ++i) observed_of[s.observed[i].name] = static_cast<int>(i);

  // The analytic Jacobian of the whole system, compiled once.
  const kernel::JacobianProgram jac = kernel::compile_jacobian(s);
  kernel::Workspace ws = jac.values.make_workspace(1);
  std::vector<int> dof_pos(s.states.size(), -1);
  for (std::size_t k = 0; k < jac.dofs.size(); ++k) dof_pos[jac.dofs[k]] = static_cast<int>(k);

  std::mt19937_64 rng(options.seed);
  const std::vector<double> p = parameter_values(s);
  jac.values.prepare(ws, p);
  v.max_analytic_error = 0;
  for (int sample = 0; sample < options.samples; ++sample) {
    const std::vector<double> u = sampled_state(s, rng);
    const double t = 3600.0 * (sample + 1);
    std::vector<double> flat(s.states.size());
    kernel::oracle_rhs(s, u.data(), p.data(), t, flat.data());

    DualEvaluator* self = nullptr;
    DualEvaluator eval(s.pool, [&](NodeId id) -> SparseDual {
      const std::string name(s.pool.str(s.pool.node(id).name));
      if (auto it = state_of.find(name); it != state_of.end()) return {u[it->second], {{it->second, 1.0}}};
      if (auto it = param_of.find(name); it != param_of.end()) return {p[it->second], {}};
      if (name == "t") return {t, {}};
      if (auto it = observed_of.find(name); it != observed_of.end()) return self->eval(s.observed_rhs[it->second]);
      throw Error("undefined_variable", "", "", "the planner's check found no value for '" + name + "'");
    });
    self = &eval;

    // Sum of the operators against the flat right-hand side, and each operator's pattern.
    std::vector<double> sum(s.states.size(), 0.0), magnitude(s.states.size(), 0.0);
    std::vector<std::vector<std::pair<std::int64_t, double>>> full(s.states.size());
    for (Operator& op : plan.operators) {
      std::unordered_map<std::string, int> block_pos;
      for (std::size_t k = 0; k < op.block.species.size(); ++k) block_pos[op.block.species[k]] = static_cast<int>(k);
      for (std::size_t r = 0; r < op.rows.size(); ++r) {
        const int row = state_of.at(op.rows[r]);
        const SparseDual value = eval.eval(op.rhs[r]);
        sum[row] += value.v;
        magnitude[row] += std::fabs(value.v);
        const int br = block_pos.at(op.rows[r]);
        op.sampled_gershgorin = std::max(op.sampled_gershgorin, row_abs_sum(value.d));
        for (const auto& [col, d] : value.d) {
          if (d == 0 || std::isnan(d)) continue;
          ++v.jacobian_nonzeros;
          const int bc = block_pos.count(s.states[col].name) ? block_pos.at(s.states[col].name) : -1;
          const auto b = op.block.col.begin() + op.block.row_ptr[br], e = op.block.col.begin() + op.block.row_ptr[br + 1];
          if (bc < 0 || !std::binary_search(b, e, bc)) {
            ++v.outside_pattern;
            fail(v, "operator '" + op.name + "': d " + op.rows[r] + " / d " + s.states[col].name + " = " + num(d) +
                        " at sample " + std::to_string(sample) + " lies outside its pattern");
          }
        }
        auto& acc = full[row];
        std::vector<std::pair<std::int64_t, double>> merged;
        std::merge(acc.begin(), acc.end(), value.d.begin(), value.d.end(), std::back_inserter(merged),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
        acc.clear();
        for (const auto& e : merged) {
          if (!acc.empty() && acc.back().first == e.first) acc.back().second += e.second;
          else acc.push_back(e);
        }
      }
    }
    for (std::size_t i = 0; i < s.states.size(); ++i) {
      if (s.state_rhs[i] == expr::kNoNode) continue;
      const double scale = std::max({std::fabs(flat[i]), magnitude[i], 1e-300});
      const double err = std::fabs(sum[i] - flat[i]) / scale;
      ++v.rows_checked;
      if (!std::isfinite(flat[i]) || !std::isfinite(sum[i])) {
        if (v.rows_not_finite++ == 0)
          fail(v, "d " + s.states[i].name + " is not finite at sample " + std::to_string(sample) +
                      " (right-hand side " + num(flat[i]) + ", operators " + num(sum[i]) +
                      "); give the parameters it reads finite values");
        continue;
      }
      v.max_sum_error = std::max(v.max_sum_error, err);
      if (!(err <= kTolerance))
        fail(v, "d " + s.states[i].name + ": the operators sum to " + num(sum[i]) + " but the right-hand side is " +
                    num(flat[i]) + " at sample " + std::to_string(sample));
    }

    // Analytic Jacobian values against the dual-number rows (relative to the row's largest
    // dual entry: entries far below it carry the rounding of the large ones).
    std::vector<double> usoa(u), values(jac.col.size(), 0.0);
    kernel::RunArgs<double> a;
    a.u = {usoa.data(), jac.values.state_count(), 1, 1};
    std::vector<double> tt{t};
    a.t = tt;
    a.du = {values.data(), jac.values.output_count(), 1, 1};
    kernel::run(jac.values, ws, a);
    for (std::size_t r = 0; r < jac.dofs.size(); ++r) {
      const int row = jac.dofs[r];
      std::unordered_map<std::int64_t, double> dual(full[row].begin(), full[row].end());
      double scale = 0;
      for (const auto& [c, d] : full[row])
        if (std::isfinite(d)) scale = std::max(scale, std::fabs(d));
      for (int k = jac.row_ptr[r]; k < jac.row_ptr[r + 1]; ++k) {
        const int col = jac.dofs[jac.col[k]];
        const double want = dual.count(col) ? dual[col] : 0.0, got = values[k];
        dual.erase(col);
        ++v.analytic_entries;
        if ((std::isnan(want) && std::isnan(got)) || want == got) continue;
        const double err = std::fabs(got - want) / std::max(scale, 1e-300);
        v.max_analytic_error = std::max(v.max_analytic_error, err);
        if (!(err <= kTolerance))
          fail(v, "analytic d " + s.states[row].name + " / d " + s.states[col].name + " = " + num(got) +
                      ", dual numbers give " + num(want) + " at sample " + std::to_string(sample));
      }
      for (const auto& [col, d] : dual)
        if (d != 0 && !std::isnan(d) && dof_pos[col] >= 0)
          fail(v, "the analytic Jacobian lacks d " + s.states[row].name + " / d " + s.states[col].name + " = " + num(d));
    }
  }
}

}  // namespace esi::plan::detail
