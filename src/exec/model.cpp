// Compiling a System for one run: index-0 algebraic unknowns substituted, parameter and
// initial values resolved, RHS / Jacobian / observed programs built, OdeProblem callbacks.
#include "exec/model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "esi/core/error.hpp"
#include "esi/expr/differentiate.hpp"
#include "esi/kernel/native.hpp"

namespace esi::exec::detail {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

template <class T>
kernel::LaneView<T> column_view(T* data, std::size_t rows) {
  return kernel::LaneView<T>{data, rows, 1, 1};
}

expr::NodeId replace_symbol(expr::Pool& pool, expr::NodeId root, expr::StrId name,
                            expr::NodeId with,
                            std::unordered_map<expr::NodeId, expr::NodeId>& memo) {
  if (auto m = memo.find(root); m != memo.end()) return m->second;
  const expr::Node n = pool.node(root);
  expr::NodeId result = root;
  if (n.op == expr::Op::Symbol) {
    if (n.name == name) result = with;
  } else if (n.child_count > 0) {
    std::vector<expr::NodeId> kids(pool.children(root).begin(), pool.children(root).end());
    bool changed = false;
    for (auto& k : kids) {
      const expr::NodeId r = replace_symbol(pool, k, name, with, memo);
      changed |= r != k;
      k = r;
    }
    if (changed) result = pool.make(n.op, kids, n.arg_count, n.name, n.attrs);
  }
  memo[root] = result;
  return result;
}

/// Solves implicit equations for algebraic unknowns by substitution, so they become observeds:
/// `y = f` (or `f = y`) with y a bare unknown, or an equation linear in its one unknown a,
/// lhs - rhs = c0 + c1 * a with c1 free of a, giving a = -(lhs - rhs)|a=0 / c1. Anything else
/// (a nonlinear constraint, coupled unknowns) needs a DAE solver.
class AlgebraicEliminator {
 public:
  explicit AlgebraicEliminator(esm::System& sys) : sys_(sys) {
    for (const auto& v : sys.algebraic) pending_.insert(v.name);
  }

  void run() {
    std::vector<esm::FlatEquation> remaining = sys_.algebraic_equations;
    for (bool progress = true; progress && !remaining.empty();) {
      progress = false;
      for (auto it = remaining.begin(); it != remaining.end();) {
        if (solve_bare(*it) || solve_linear(*it)) {
          it = remaining.erase(it);
          progress = true;
        } else {
          ++it;
        }
      }
    }
    if (!remaining.empty())
      throw Error(
          "unsupported_algebraic", remaining[0].file, remaining[0].pointer,
          "this implicit equation cannot be solved for an algebraic unknown by substitution "
          "(it is nonlinear in its unknown or couples several); algebraic constraints (DAEs) "
          "are not supported yet");
    sys_.algebraic.clear();
    sys_.algebraic_equations.clear();
  }

 private:
  std::string pending_name(expr::NodeId id) const {
    const expr::Node& n = sys_.pool.node(id);
    if (n.op != expr::Op::Symbol) return {};
    std::string name(sys_.pool.str(n.name));
    return pending_.count(name) ? name : std::string();
  }

  void define(const std::string& name, expr::NodeId definition) {
    pending_.erase(name);
    for (const esm::FlatVariable& v : sys_.algebraic)
      if (v.name == name) sys_.observed.push_back(v);
    sys_.observed_rhs.push_back(definition);
  }

  bool solve_bare(const esm::FlatEquation& eq) {
    if (std::string name = pending_name(eq.lhs); !name.empty() && !mentions_pending(eq.rhs)) {
      define(name, eq.rhs);
      return true;
    }
    if (std::string name = pending_name(eq.rhs); !name.empty() && !mentions_pending(eq.lhs)) {
      define(name, eq.lhs);
      return true;
    }
    return false;
  }

  /// Pending unknowns read by `root`, directly or through observeds.
  std::vector<std::string> pending_read(expr::NodeId root, bool through_observeds_only) const {
    std::vector<std::string> names, out;
    collect_symbols(sys_.pool, root, names);
    std::set<std::string> seen;
    bool direct = true;
    while (!names.empty()) {
      std::vector<std::string> next;
      for (const std::string& n : names) {
        if (!seen.insert(n).second) continue;
        if (pending_.count(n) && !(through_observeds_only && direct)) out.push_back(n);
        if (const int o = sys_.observed_index(n); o >= 0)
          collect_symbols(sys_.pool, sys_.observed_rhs[o], next);
      }
      names = std::move(next);
      direct = false;
    }
    return out;
  }

  bool mentions_pending(expr::NodeId root) const { return !pending_read(root, false).empty(); }

  bool solve_linear(const esm::FlatEquation& eq) {
    expr::Pool& pool = sys_.pool;
    const expr::NodeId f = pool.make(expr::Op::Sub, std::vector<expr::NodeId>{eq.lhs, eq.rhs});
    const std::vector<std::string> direct = pending_read(f, false);
    if (direct.size() != 1 || !pending_read(f, true).empty()) return false;
    const expr::StrId a = pool.intern(direct[0]);
    expr::NodeId slope;
    try {
      slope = expr::differentiate(pool, f, a);
    } catch (const Error&) {
      return false;
    }
    if (expr::depends_on(pool, slope, a) || slope == pool.number(0.0)) return false;
    std::unordered_map<expr::NodeId, expr::NodeId> memo;
    const expr::NodeId offset = replace_symbol(pool, f, a, pool.number(0.0), memo);
    const expr::NodeId minus_offset = pool.make(expr::Op::Sub, std::vector<expr::NodeId>{offset});
    define(direct[0], pool.make(expr::Op::Div, std::vector<expr::NodeId>{minus_offset, slope}));
    return true;
  }

  esm::System& sys_;
  std::set<std::string> pending_;
};

/// Names of parameters the run reads: from state equations, events and the observeds it
/// reports, through observeds.
std::set<std::string> parameters_read(const esm::System& sys, const EventSet& events,
                                      bool with_observeds) {
  std::vector<expr::NodeId> roots = sys.state_rhs;
  if (with_observeds) roots.insert(roots.end(), sys.observed_rhs.begin(), sys.observed_rhs.end());
  roots.insert(roots.end(), events.conditions.begin(), events.conditions.end());
  roots.insert(roots.end(), events.affects.begin(), events.affects.end());
  std::unordered_map<std::string, std::size_t> observed_at;  // linear in the system's size
  for (std::size_t o = 0; o < sys.observed.size(); ++o)
    observed_at.emplace(sys.observed[o].name, o);
  std::set<std::string> seen;
  std::vector<std::string> names;
  for (expr::NodeId r : roots) collect_symbols(sys.pool, r, names);
  while (!names.empty()) {
    std::string n = std::move(names.back());
    names.pop_back();
    if (!seen.insert(n).second) continue;
    if (auto o = observed_at.find(n); o != observed_at.end())
      collect_symbols(sys.pool, sys.observed_rhs[o->second], names);
  }
  return seen;
}

/// Parameter values: numeric defaults, then expression defaults (which may read other
/// parameters) evaluated to a fixpoint.
std::vector<double> parameter_values(const esm::System& sys, const EventSet& events,
                                     bool with_observeds) {
  std::vector<double> p(sys.parameters.size(), kNaN);
  std::vector<expr::NodeId> exprs;
  std::vector<std::size_t> where;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const esm::FlatVariable& v = sys.parameters[i];
    if (v.default_value)
      p[i] = *v.default_value;
    else if (v.initial != expr::kNoNode) {
      exprs.push_back(v.initial);
      where.push_back(i);
    }
  }
  if (!exprs.empty()) {
    Evaluator eval(sys, exprs);
    const std::vector<double> no_state(sys.states.size(), kNaN);
    for (std::size_t pass = 0; pass <= exprs.size(); ++pass) {
      eval.prepare(p);
      const auto values = eval.evaluate(0.0, no_state);
      for (std::size_t k = 0; k < where.size(); ++k) p[where[k]] = values[k];
    }
  }
  // Which parameters the equations read matters only for one without a value (a sweep resets
  // the values at every point: walking the equations each time was most of the reset).
  if (std::none_of(p.begin(), p.end(), [](double x) { return std::isnan(x); })) return p;
  const std::set<std::string> read = parameters_read(sys, events, with_observeds);
  for (std::size_t i = 0; i < p.size(); ++i)
    if (std::isnan(p[i]) && read.count(sys.parameters[i].name))
      throw Error(
          "missing_parameter_value", sys.parameters[i].file, sys.parameters[i].pointer,
          "parameter '" + sys.parameters[i].name +
              (events.held_data.count(sys.parameters[i].array.empty() ? sys.parameters[i].name
                                                                      : sys.parameters[i].array)
                   ? "' is read from a data source, which esi cannot read yet: give its value "
                     "with --set or --inputs"
                   : "' has no value: give it a default or an override"));
  return p;
}

void rhs_callback(void* context, double t, const double* u, double* du) {
  Model& m = *static_cast<Model*>(context);
  const std::size_t n = m.problem.size;
  kernel::RunArgs<double> args;
  args.u = column_view(u, n);
  args.t = std::span<const double>(&t, 1);
  args.du = column_view(du, n);
  kernel::run(*m.rhs, *m.rhs_ws, args);
}

/// Per-region programs for the arrays, then the scalar states' program scattered into place.
void grid_rhs_callback(void* context, double t, const double* u, double* du) {
  Model& m = *static_cast<Model*>(context);
  const std::size_t n = m.problem.size;
  kernel::grid_rhs(*m.grid, *m.grid_ws, t, std::span<const double>(u, n), std::span<double>(du, n));
  if (!m.rhs) return;
  kernel::RunArgs<double> args;
  args.u = column_view(u, n);
  args.t = std::span<const double>(&t, 1);
  args.du = column_view(m.scalar_du.data(), m.scalar_du.size());
  kernel::run(*m.rhs, *m.rhs_ws, args);
  for (std::size_t k = 0; k < m.scalar_dofs.size(); ++k) du[m.scalar_dofs[k]] = m.scalar_du[k];
}

void prepare_jacobian_callback(void* context) { static_cast<Model*>(context)->ensure_jacobian(); }

void jacobian_callback(void* context, double t, const double* u, double* values) {
  Model& m = *static_cast<Model*>(context);
  kernel::RunArgs<double> args;
  args.u = column_view(u, m.problem.size);
  args.t = std::span<const double>(&t, 1);
  args.du = column_view(values, m.jacobian->col.size());
  kernel::run(m.jacobian->values, *m.jacobian_ws, args);
}

void attach_jacobian(Model& m, std::optional<kernel::JacobianProgram> program) {
  if (!program) return;  // not differentiable: implicit methods use finite differences instead
  m.jacobian = std::move(program);
  m.jacobian_ws = m.jacobian->values.make_workspace(1);
  m.problem.jac_row_ptr = m.jacobian->row_ptr;
  m.problem.jac_col = m.jacobian->col;
  m.problem.jacobian = &jacobian_callback;
}

std::optional<kernel::JacobianProgram> try_compile_jacobian(const esm::System& system) {
  try {
    return kernel::compile_jacobian(system);
  } catch (const Error&) {
    return std::nullopt;
  }
}

/// The RHS and Jacobian as native code; without a compiler they stay tapes (results are the
/// same bits either way, only slower).
void use_native(Model& m) {
  const kernel::NativeToolchain toolchain = kernel::resolve_native_toolchain();
  m.rhs = kernel::with_native(*m.rhs, toolchain);
  m.rhs_ws = m.rhs->make_workspace(1);
  if (m.jacobian) {
    m.jacobian->values = kernel::with_native(m.jacobian->values, toolchain);
    m.jacobian_ws = m.jacobian->values.make_workspace(1);
  }
}

void parameter_jacobian_callback(void* context, double t, const double* u, double* values) {
  Model& m = *static_cast<Model*>(context);
  if (m.parameter_jacobian->col.empty()) return;  // no parameter reaches a state equation
  kernel::RunArgs<double> args;
  args.u = column_view(u, m.problem.size);
  args.t = std::span<const double>(&t, 1);
  args.du = column_view(values, m.parameter_jacobian->col.size());
  kernel::run(m.parameter_jacobian->values, *m.parameter_jacobian_ws, args);
}

/// One program computes both kinds of second derivative (they share the Jacobian's
/// subexpressions); its outputs are split into the two arrays the seam asks for.
void second_derivatives_callback(void* context, double t, const double* u, double* u_values,
                                 double* p_values) {
  Model& m = *static_cast<Model*>(context);
  if (m.second_values.empty()) return;
  kernel::RunArgs<double> args;
  args.u = column_view(u, m.problem.size);
  args.t = std::span<const double>(&t, 1);
  args.du = column_view(m.second_values.data(), m.second_values.size());
  kernel::run(m.second_derivatives->values, *m.second_derivatives_ws, args);
  const auto split = m.second_values.begin() +
                     static_cast<std::ptrdiff_t>(m.second_derivatives->u_entry.size());
  std::copy(m.second_values.begin(), split, u_values);
  std::copy(split, m.second_values.end(), p_values);
}

/// J and df/dp at one point in one program run, split into the seam's two arrays.
void first_derivatives_callback(void* context, double t, const double* u, double* jac_values,
                                double* param_values) {
  Model& m = *static_cast<Model*>(context);
  kernel::RunArgs<double> args;
  args.u = column_view(u, m.problem.size);
  args.t = std::span<const double>(&t, 1);
  args.du = column_view(m.first_values.data(), m.first_values.size());
  kernel::run(*m.first_derivatives, *m.first_derivatives_ws, args);
  const auto split = m.first_values.begin() + static_cast<std::ptrdiff_t>(m.jacobian->col.size());
  std::copy(m.first_values.begin(), split, jac_values);
  std::copy(split, m.first_values.end(), param_values);
}

/// J and df/dp (or J alone without param_values) at `count` points, one lane each: the states
/// gathered lane-major, the values scattered back point by point.
void first_derivatives_lanes_callback(void* context, std::size_t count, const double* t, const double* u,
                                      double* jac_values, double* param_values) {
  Model& m = *static_cast<Model*>(context);
  const std::size_t n = m.problem.size, nj = m.jacobian->col.size();
  const bool params = param_values != nullptr;
  const std::size_t rows = params ? m.first_values.size() : nj, np = rows - nj;
  m.lanes_u.resize(n * count);
  for (std::size_t k = 0; k < count; ++k)
    for (std::size_t i = 0; i < n; ++i) m.lanes_u[i * count + k] = u[k * n + i];
  m.lanes_out.resize(rows * count);
  kernel::RunArgs<double> args;
  args.u = {m.lanes_u.data(), n, count, count};
  args.t = std::span<const double>(t, count);
  args.du = {m.lanes_out.data(), rows, count, count};
  kernel::run(params ? *m.first_derivatives : m.jacobian->values,
              params ? *m.first_lanes_ws : *m.jacobian_lanes_ws, args);
  for (std::size_t k = 0; k < count; ++k) {
    for (std::size_t e = 0; e < nj; ++e) jac_values[k * nj + e] = m.lanes_out[e * count + k];
    for (std::size_t q = 0; q < np; ++q) param_values[k * np + q] = m.lanes_out[(nj + q) * count + k];
  }
}

/// J^T w and (df/dp)^T w at one point in one program run.
void vector_jacobian_product_callback(void* context, double t, const double* u, const double* w,
                                      double* g_u, double* g_p) {
  Model& m = *static_cast<Model*>(context);
  std::copy(w, w + m.vjp_weights.size(), m.vjp_weights.begin());
  kernel::RunArgs<double> args;
  args.u = column_view(u, m.problem.size);
  args.t = std::span<const double>(&t, 1);
  args.forcing = m.vjp_fields;
  args.du = column_view(m.vjp_values.data(), m.vjp_values.size());
  kernel::run(m.vjp->values, *m.vjp_ws, args);
  const auto split = m.vjp_values.begin() + static_cast<std::ptrdiff_t>(m.vjp->dofs.size());
  std::copy(m.vjp_values.begin(), split, g_u);
  if (g_p != nullptr) std::copy(split, m.vjp_values.end(), g_p);
}

/// Whether the caller asked for native code (build_model records it in `native` only for a
/// deferred Jacobian; otherwise the RHS program's status tells).
bool wants_native(const Model& m) {
  return m.native || (m.rhs && m.rhs->native_status() != "tape");
}

/// An adjoint needs df/du: the model's own, or compiled now when it was built without one.
void require_jacobian(Model& m) {
  m.ensure_jacobian();
  if (m.jacobian) return;
  try {
    attach_jacobian(m, kernel::compile_jacobian(m.system));
  } catch (const Error& e) {
    throw Error("adjoint_unsupported_jacobian", e.diagnostic().file, e.diagnostic().pointer,
                "sensitivities and adjoints need the analytic Jacobian, which cannot be formed: " +
                    e.diagnostic().message);
  }
  if (wants_native(m)) {
    m.jacobian->values =
        kernel::with_native(m.jacobian->values, kernel::resolve_native_toolchain());
    m.jacobian_ws = m.jacobian->values.make_workspace(1);
  }
  m.jacobian->values.prepare(*m.jacobian_ws, m.p);
}

void fill_derivative_fields(Model& m) {
  method::OdeProblem& prob = m.problem;
  prob.parameter_count = m.derivative_parameters.size();
  prob.param_row_ptr = m.parameter_jacobian->row_ptr;
  prob.param_col = m.parameter_jacobian->col;
  prob.parameter_jacobian = &parameter_jacobian_callback;
  prob.hess_u_entry = m.second_derivatives->u_entry;
  prob.hess_u_state = m.second_derivatives->u_state;
  prob.hess_p_entry = m.second_derivatives->p_entry;
  prob.hess_p_param = m.second_derivatives->p_param;
  prob.second_derivatives = &second_derivatives_callback;
  if (m.first_derivatives) prob.first_derivatives = &first_derivatives_callback;
}

}  // namespace

void collect_symbols(const expr::Pool& pool, expr::NodeId root, std::vector<std::string>& out) {
  std::vector<expr::NodeId> stack{root};
  std::unordered_set<expr::NodeId> seen;
  while (!stack.empty()) {
    const expr::NodeId id = stack.back();
    stack.pop_back();
    if (id == expr::kNoNode || !seen.insert(id).second) continue;
    const expr::Node& n = pool.node(id);
    if (n.op == expr::Op::Symbol) out.emplace_back(pool.str(n.name));
    for (expr::NodeId c : pool.children(id)) stack.push_back(c);
  }
}

Evaluator::Evaluator(const esm::System& system, std::span<const expr::NodeId> outputs)
    : out_(outputs.size(), kNaN) {
  if (outputs.empty()) return;
  program_ = kernel::compile_outputs(system, outputs);
  ws_ = program_->make_workspace(1);
}

void Evaluator::prepare(std::span<const double> p) {
  if (program_) program_->prepare(*ws_, p);
}

std::span<const double> Evaluator::evaluate(double t, std::span<const double> u) {
  if (!program_) return out_;
  kernel::RunArgs<double> args;
  args.u = column_view(u.data(), u.size());
  args.t = std::span<const double>(&t, 1);
  args.du = column_view(out_.data(), out_.size());
  kernel::run(*program_, *ws_, args);
  return out_;
}

void Model::prepare_all() {
  if (rhs) rhs->prepare(*rhs_ws, p);
  if (grid) grid_ws = kernel::make_grid_workspace(*grid, system, p, grid_threads);
  if (jacobian) jacobian->values.prepare(*jacobian_ws, p);
  if (parameter_jacobian) parameter_jacobian->values.prepare(*parameter_jacobian_ws, p);
  if (second_derivatives) second_derivatives->values.prepare(*second_derivatives_ws, p);
  if (first_derivatives) first_derivatives->prepare(*first_derivatives_ws, p);
  if (first_lanes_ws) first_derivatives->prepare(*first_lanes_ws, p);
  if (jacobian_lanes_ws) jacobian->values.prepare(*jacobian_lanes_ws, p);
  if (vjp) vjp->values.prepare(*vjp_ws, p);
  for (auto* e : {&observed, &conditions, &affects})
    if (*e) (*e)->prepare(p);
}

void Model::ensure_jacobian() {
  if (!deferred_jacobian) return;
  const std::shared_ptr<SharedJacobian> shared = std::move(deferred_jacobian);
  deferred_jacobian.reset();
  std::optional<kernel::JacobianProgram> program;
  {
    // Compiled under the lock: a second worker waits for it rather than doing it again.
    const std::lock_guard<std::mutex> lock(shared->mutex);
    if (!shared->compiled) {
      shared->program = try_compile_jacobian(system);
      if (shared->program && native)
        shared->program->values = kernel::with_native(shared->program->values, kernel::resolve_native_toolchain());
      shared->compiled = true;
    }
    program = shared->program;  // a copy: the tape itself is shared, immutable
  }
  attach_jacobian(*this, std::move(program));
  if (jacobian) jacobian->values.prepare(*jacobian_ws, p);
}

void Model::ensure_derivatives(const std::vector<int>& extra) {
  if (second_derivatives) return;
  if (!system.grid.empty())
    throw Error("adjoint_unsupported_grid", system.grid.front().file, system.grid.front().pointer,
                "sensitivities and adjoints need every state's equation as a scalar (arrays as one "
                "equation per cell); this model runs its arrays as per-region programs");
  require_jacobian(*this);
  std::vector<int> params = kernel::differentiable_parameters(system);
  for (int j : extra)
    if (std::find(params.begin(), params.end(), j) == params.end()) params.push_back(j);
  kernel::ParameterJacobianProgram dfdp = kernel::compile_parameter_jacobian(system, params);
  kernel::SecondDerivativeProgram second = kernel::compile_second_derivatives(*jacobian, params);
  kernel::Program first = kernel::compile_first_derivatives(*jacobian, dfdp);
  if (wants_native(*this)) {
    const kernel::NativeToolchain toolchain = kernel::resolve_native_toolchain();
    dfdp.values = kernel::with_native(dfdp.values, toolchain);
    second.values = kernel::with_native(second.values, toolchain);
    first = kernel::with_native(first, toolchain);
  }
  first_derivatives.emplace(std::move(first));
  first_derivatives_ws = first_derivatives->make_workspace(1);
  // A step's points: Rodas5P's new stages, f0 and a non-autonomous f_t's two (at most 9 for
  // the tableaus here); more run in further blocks.
  constexpr std::size_t kPointLanes = 16;
  first_lanes_ws = first_derivatives->make_workspace(kPointLanes);
  jacobian_lanes_ws = jacobian->values.make_workspace(kPointLanes);
  first_derivatives->prepare(*first_lanes_ws, p);
  jacobian->values.prepare(*jacobian_lanes_ws, p);
  first_values.assign(jacobian->col.size() + dfdp.col.size(), 0.0);
  first_derivatives->prepare(*first_derivatives_ws, p);
  derivative_parameters = std::move(params);
  parameter_jacobian.emplace(std::move(dfdp));
  second_derivatives.emplace(std::move(second));
  parameter_jacobian_ws = parameter_jacobian->values.make_workspace(1);
  second_derivatives_ws = second_derivatives->values.make_workspace(1);
  second_values.assign(
      second_derivatives->u_entry.size() + second_derivatives->p_entry.size(), 0.0);
  parameter_jacobian->values.prepare(*parameter_jacobian_ws, p);
  second_derivatives->values.prepare(*second_derivatives_ws, p);
  fill_derivative_fields(*this);
}

void Model::ensure_vector_jacobian_product(bool parameters) {
  if (!second_derivatives || !jacobian) return;  // ensure_derivatives first
  if (vjp && (problem.vjp_parameters || !parameters)) return;
  const std::vector<int> none;
  kernel::VectorJacobianProgram program =
      kernel::compile_vector_jacobian_product(*jacobian, parameters ? derivative_parameters : none);
  if (wants_native(*this))
    program.values = kernel::with_native(program.values, kernel::resolve_native_toolchain());
  vjp.emplace(std::move(program));
  vjp_ws = vjp->values.make_workspace(1);
  vjp_weights.assign(vjp->weight_names.size(), 0.0);
  vjp_values.assign(vjp->values.output_count(), 0.0);
  // A scalar model reads no forcing fields, so the weights are the program's only ones.
  vjp_fields.clear();
  for (const double& w : vjp_weights) vjp_fields.push_back({&w, 1});
  if (vjp->values.forcing_names().size() != vjp_fields.size()) {
    vjp.reset();  // the sweeps form J^T w from J instead, a step's points on lanes
    problem.first_derivatives_lanes = &first_derivatives_lanes_callback;
    return;
  }
  vjp->values.prepare(*vjp_ws, p);
  problem.vector_jacobian_product = &vector_jacobian_product_callback;
  problem.vjp_parameters = parameters;
  // A step's points on lanes cost about one point's J (+ df/dp): cheaper than a product per
  // point unless reverse accumulation makes the products much smaller than J. Measured
  // (bench/HISTORY.md, 2026-12-07 15:30): lanes win on POLLU, the ozone box and SuperFast,
  // whose J + df/dp programs are 0.9-1.1 times their products' size; fullchem's is 1.5 times,
  // and its products win.
  const std::size_t batch = (parameters ? first_derivatives->stats() : jacobian->values.stats()).lane_instructions;
  const std::size_t single = vjp->values.stats().lane_instructions;
  problem.first_derivatives_lanes = 4 * batch <= 5 * single ? &first_derivatives_lanes_callback : nullptr;
}

void Model::reset_parameters(bool require_observed_values) {
  p = parameter_values(system, events, require_observed_values);
  prepare_all();
}

std::vector<double> Model::initial_state() {
  const auto& states = system.states;
  std::vector<double> u(states.size(), kNaN);
  std::vector<expr::NodeId> exprs;
  std::vector<std::size_t> where;
  const auto from_declaration = [&](std::size_t i, const esm::FlatVariable& v) {
    if (v.initial != expr::kNoNode) {
      exprs.push_back(v.initial);
      where.push_back(i);
    } else if (v.default_value) {
      u[i] = *v.default_value;
    }
  };
  states.for_each_stored(from_declaration);
  // A lazy run's cells share one declaration (and the grid's initial programs override it).
  states.for_each_lazy_run(
      [&](std::size_t first, std::size_t count, const esm::FlatVariable& cell) {
        for (std::size_t i = first; i < first + count; ++i) from_declaration(i, cell);
      });
  if (grid) kernel::grid_initial(*grid, *grid_ws, u);
  if (!exprs.empty()) {
    // An initial expression may read parameters and other states' values: iterate so chains
    // of them settle (each pass fixes at least one more link).
    Evaluator eval(system, exprs);
    eval.prepare(p);
    for (std::size_t pass = 0; pass <= exprs.size(); ++pass) {
      const auto values = eval.evaluate(0.0, u);
      for (std::size_t k = 0; k < where.size(); ++k) u[where[k]] = values[k];
    }
  }
  for (std::size_t i = 0; i < states.size(); ++i)
    if (std::isnan(u[i]))
      throw Error("missing_initial_value", states[i].file, states[i].pointer,
                  "state '" + states[i].name +
                      "' has no initial value: give it a default, an ic equation or an initial "
                      "condition");
  return u;
}

void eliminate_algebraics(esm::System& system) {
  AlgebraicEliminator(system).run();
}

std::vector<double> default_parameter_values(const esm::System& system) {
  return parameter_values(system, EventSet{}, false);
}

std::unique_ptr<Model> build_model(const esm::System& system, const esm::ResolvedDocument* document,
                                   bool with_jacobian, bool require_observed_values, bool native,
                                   unsigned grid_threads, std::shared_ptr<SharedJacobian> shared_jacobian) {
  auto m = std::make_unique<Model>();
  m->grid_threads = std::max(1u, grid_threads);
  m->system = system;
  AlgebraicEliminator(m->system).run();
  m->events = parse_events(m->system, document);
  m->p = parameter_values(m->system, m->events, require_observed_values);

  m->problem.size = m->system.states.size();
  m->problem.context = m.get();
  m->problem.name_of = [model = m.get()](std::size_t i) { return model->system.states.name(i); };
  if (!m->system.grid.empty()) {
    // Arrays as per-region programs; implicit methods difference the RHS for a Jacobian.
    kernel::GridCompileOptions gco;
    gco.native = native;
    m->grid.emplace(kernel::compile_grid(m->system, gco));
    for (std::size_t i = 0; i < m->system.states.size(); ++i)
      if (m->system.state_rhs[i] != expr::kNoNode) m->scalar_dofs.push_back(static_cast<int>(i));
    bool reads_time = false;
    if (!m->scalar_dofs.empty()) {
      kernel::CompileOptions co;
      co.dofs = m->scalar_dofs;
      m->rhs = kernel::compile(m->system, co);
      if (native) m->rhs = kernel::with_native(*m->rhs);
      m->rhs_ws = m->rhs->make_workspace(1);
      m->scalar_du.resize(m->scalar_dofs.size());
      reads_time = m->rhs->reads_time();
    }
    for (const auto& st : m->grid->stages)
      for (const auto& b : st.blocks) reads_time = reads_time || b.program.reads_time();
    m->problem.rhs = &grid_rhs_callback;
    m->problem.autonomous = !reads_time;
  } else if (!m->system.states.empty()) {
    m->rhs = kernel::compile(m->system);
    m->rhs_ws = m->rhs->make_workspace(1);
    m->problem.rhs = &rhs_callback;
    m->problem.autonomous = !m->rhs->reads_time();
    if (with_jacobian && shared_jacobian) {
      m->deferred_jacobian = std::move(shared_jacobian);
      m->native = native;
      m->problem.prepare_jacobian = &prepare_jacobian_callback;
    } else if (with_jacobian) {
      attach_jacobian(*m, try_compile_jacobian(m->system));
    }
    if (native) use_native(*m);
  }
  m->observed.emplace(m->system, m->system.observed_rhs);
  m->conditions.emplace(m->system, m->events.conditions);
  m->affects.emplace(m->system, m->events.affects);
  m->prepare_all();
  return m;
}

}  // namespace esi::exec::detail
