// A problem document compiled for time integration: the flattened System, its RHS Program and
// analytic JacobianProgram (Whole target, one column), the parameters' default values, and an
// esi::method::OdeProblem whose callbacks run them. Used by test_problem_solutions.cpp and by
// bench/bench_stiff.cpp, which feeds the same callbacks to SUNDIALS. enable_derivatives() adds
// df/dp and the Jacobian's second derivatives (kernel/derivatives.hpp) for sensitivity and
// adjoint tests.
//
// The integration state is in System::states order (what the kernel reads); `order` maps the
// test set's component i to its position there, so results compare with reference.json.
#pragma once

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "esi/esm/flatten.hpp"
#include "esi/esm/load.hpp"
#include "esi/kernel/derivatives.hpp"
#include "esi/kernel/jacobian.hpp"
#include "esi/kernel/native.hpp"
#include "esi/kernel/program.hpp"
#include "esi/method/problem.hpp"

namespace esi::problems {

class CompiledProblem {
 public:
  /// Loads, flattens and compiles `file`; `states` are the flat names in the caller's order.
  static std::unique_ptr<CompiledProblem> load(const std::filesystem::path& file,
                                               const std::vector<std::string>& states) {
    auto c = std::unique_ptr<CompiledProblem>(
        new CompiledProblem(esm::flatten(esm::load_resolved(file))));
    for (const auto& name : states) {
      const int i = c->system_.state_index(name);
      if (i < 0) throw std::runtime_error(file.string() + ": no state " + name);
      c->order_.push_back(i);
    }
    if (c->order_.size() != c->system_.states.size())
      throw std::runtime_error(file.string() + ": state count differs from the name list");
    return c;
  }

  const esm::System& system() const { return system_; }
  const kernel::Program& rhs_program() const { return rhs_; }
  const kernel::JacobianProgram& jacobian_program() const { return jac_; }
  std::size_t size() const { return system_.states.size(); }
  /// System position of the caller's component i.
  int position(std::size_t i) const { return order_[i]; }
  /// The parameters' default values, System::parameters order (what `prepare` was given).
  const std::vector<double>& parameters() const { return p_; }

  /// Caller-order vector -> System-order vector, and back.
  std::vector<double> to_system(std::span<const double> v) const {
    std::vector<double> out(size());
    for (std::size_t i = 0; i < order_.size(); ++i) out[order_[i]] = v[i];
    return out;
  }
  std::vector<double> from_system(std::span<const double> v) const {
    std::vector<double> out(size());
    for (std::size_t i = 0; i < order_.size(); ++i) out[i] = v[order_[i]];
    return out;
  }

  /// Switches the RHS and Jacobian programs to native code (kernel::with_native). Returns ""
  /// or why native code is unavailable (the tape programs stay in use).
  std::string use_native() {
    kernel::Program r = kernel::with_native(rhs_), j = kernel::with_native(jac_.values);
    if (!r.is_native()) return r.native_status();
    if (!j.is_native()) return j.native_status();
    rhs_ = std::move(r);
    jac_.values = std::move(j);
    ws_rhs_ = rhs_.make_workspace(1);
    ws_jac_ = jac_.values.make_workspace(1);
    rhs_.prepare(ws_rhs_, p_);
    jac_.values.prepare(ws_jac_, p_);
    if (derivatives_) {
      derivatives_->dfdp.values = kernel::with_native(derivatives_->dfdp.values);
      derivatives_->second.values = kernel::with_native(derivatives_->second.values);
      derivatives_->prepare(p_);
    }
    return "";
  }

  /// Compiles df/dp and the Jacobian's second derivatives over every differentiable parameter
  /// (kernel::differentiable_parameters), so ode_problem() fills the derivative callbacks.
  void enable_derivatives() {
    if (derivatives_) return;
    const std::vector<int> params = kernel::differentiable_parameters(system_);
    derivatives_.emplace(Derivatives{kernel::compile_parameter_jacobian(system_, params),
                                     kernel::compile_second_derivatives(jac_, params),
                                     kernel::compile_vector_jacobian_product(jac_, params)});
    derivatives_->prepare(p_);
  }
  bool derivatives_enabled() const { return derivatives_.has_value(); }
  /// Position -> System::parameters index of the derivative callbacks' parameters.
  const std::vector<int>& derivative_parameters() const { return derivatives_->dfdp.parameters; }
  const kernel::ParameterJacobianProgram& parameter_jacobian_program() const {
    return derivatives_->dfdp;
  }
  const kernel::SecondDerivativeProgram& second_derivative_program() const {
    return derivatives_->second;
  }

  /// The CSR nonzeros of df/dp at (t, u), in parameter_jacobian_program() order.
  void parameter_jacobian(double t, const double* u, double* values) {
    Derivatives& d = *derivatives_;
    if (!d.dfdp.col.empty()) run_one(d.dfdp.values, *d.ws_dfdp, t, u, values, d.dfdp.col.size());
  }
  /// The Jacobian's second derivatives at (t, u): by states into u_values, by parameters
  /// into p_values (second_derivative_program() order).
  void second_derivatives(double t, const double* u, double* u_values, double* p_values) {
    Derivatives& d = *derivatives_;
    const std::size_t nu = d.second.u_entry.size(), np = d.second.p_entry.size();
    if (nu + np == 0) return;
    run_one(d.second.values, *d.ws_second, t, u, d.scratch.data(), nu + np);
    std::copy(d.scratch.begin(), d.scratch.begin() + static_cast<std::ptrdiff_t>(nu), u_values);
    std::copy(d.scratch.begin() + static_cast<std::ptrdiff_t>(nu), d.scratch.end(), p_values);
  }

  /// g_u = J^T w and g_p = (df/dp)^T w at (t, u), by the reverse-accumulated program.
  void vector_jacobian_product(double t, const double* u, const double* w, double* g_u, double* g_p) {
    Derivatives& d = *derivatives_;
    std::copy(w, w + size(), d.weights.begin());
    kernel::RunArgs<double> a;
    a.u = {u, d.vjp.values.state_count(), 1, 1};
    a.t = std::span<const double>(&t, 1);
    a.forcing = d.fields;
    a.du = {d.vjp_out.data(), d.vjp_out.size(), 1, 1};
    kernel::run(d.vjp.values, *d.ws_vjp, a);
    std::copy(d.vjp_out.begin(), d.vjp_out.begin() + static_cast<std::ptrdiff_t>(size()), g_u);
    if (g_p) std::copy(d.vjp_out.begin() + static_cast<std::ptrdiff_t>(size()), d.vjp_out.end(), g_p);
  }

  /// du = f(t, u), System order. Counts calls.
  void rhs(double t, const double* u, double* du) {
    ++rhs_calls;
    run_one(rhs_, ws_rhs_, t, u, du, size());
  }
  /// The CSR nonzeros of df/du at (t, u), in jacobian_program() order. Counts calls.
  void jacobian(double t, const double* u, double* values) {
    ++jacobian_calls;
    run_one(jac_.values, ws_jac_, t, u, values, jac_.col.size());
  }

  /// The callback table over this object (which must outlive it), with the analytic Jacobian.
  method::OdeProblem ode_problem() {
    method::OdeProblem p;
    p.size = size();
    p.context = this;
    p.rhs = [](void* c, double t, const double* u, double* du) {
      static_cast<CompiledProblem*>(c)->rhs(t, u, du);
    };
    p.jac_row_ptr = jac_.row_ptr;
    p.jac_col = jac_.col;
    p.jacobian = [](void* c, double t, const double* u, double* values) {
      static_cast<CompiledProblem*>(c)->jacobian(t, u, values);
    };
    for (const auto& s : system_.states) p.names.push_back(s.name);
    p.autonomous = !rhs_.reads_time();
    if (derivatives_) add_derivatives(p);
    return p;
  }

  long rhs_calls = 0, jacobian_calls = 0;

 private:
  explicit CompiledProblem(esm::System s)
      : system_(std::move(s)),
        rhs_(kernel::compile(system_)),
        jac_(kernel::compile_jacobian(system_)),
        ws_rhs_(rhs_.make_workspace(1)),
        ws_jac_(jac_.values.make_workspace(1)) {
    for (const auto& v : system_.parameters) {
      if (!v.default_value) throw std::runtime_error("parameter without a default: " + v.name);
      p_.push_back(*v.default_value);
    }
    rhs_.prepare(ws_rhs_, p_);
    jac_.values.prepare(ws_jac_, p_);
    // The Jacobian's rows and columns must be the states in System order, which is the order
    // the RHS program's inputs and outputs use.
    for (std::size_t i = 0; i < jac_.dofs.size(); ++i)
      if (jac_.dofs[i] != static_cast<int>(i))
        throw std::runtime_error("Jacobian DOFs are not the states in System order");
  }

  /// The derivative programs of enable_derivatives and their workspaces.
  struct Derivatives {
    kernel::ParameterJacobianProgram dfdp;
    kernel::SecondDerivativeProgram second;
    kernel::VectorJacobianProgram vjp;
    std::optional<kernel::Workspace> ws_dfdp, ws_second, ws_vjp;
    std::vector<double> scratch;  // the second-derivative program writes u and p values at once
    std::vector<double> weights, vjp_out;
    std::vector<kernel::ForcingField<double>> fields;  // read the weights

    void prepare(const std::vector<double>& p) {
      ws_vjp = vjp.values.make_workspace(1);
      vjp.values.prepare(*ws_vjp, p);
      weights.assign(vjp.weight_names.size(), 0.0);
      vjp_out.assign(vjp.values.output_count(), 0.0);
      fields.clear();
      for (const double& w : weights) fields.push_back({&w, 1});
      ws_dfdp = dfdp.values.make_workspace(1);
      ws_second = second.values.make_workspace(1);
      dfdp.values.prepare(*ws_dfdp, p);
      second.values.prepare(*ws_second, p);
      scratch.assign(second.u_entry.size() + second.p_entry.size(), 0.0);
    }
  };

  void add_derivatives(method::OdeProblem& p) {
    const Derivatives& d = *derivatives_;
    p.parameter_count = d.dfdp.parameters.size();
    p.param_row_ptr = d.dfdp.row_ptr;
    p.param_col = d.dfdp.col;
    p.parameter_jacobian = [](void* c, double t, const double* u, double* values) {
      static_cast<CompiledProblem*>(c)->parameter_jacobian(t, u, values);
    };
    p.vector_jacobian_product = [](void* c, double t, const double* u, const double* w, double* g_u,
                                   double* g_p) {
      static_cast<CompiledProblem*>(c)->vector_jacobian_product(t, u, w, g_u, g_p);
    };
    p.vjp_parameters = true;
    p.hess_u_entry = d.second.u_entry;
    p.hess_u_state = d.second.u_state;
    p.hess_p_entry = d.second.p_entry;
    p.hess_p_param = d.second.p_param;
    p.second_derivatives = [](void* c, double t, const double* u, double* u_values,
                              double* p_values) {
      static_cast<CompiledProblem*>(c)->second_derivatives(t, u, u_values, p_values);
    };
  }

  static void run_one(const kernel::Program& prog, kernel::Workspace& ws, double t,
                      const double* u, double* out, std::size_t rows) {
    kernel::RunArgs<double> a;
    a.u = {u, prog.state_count(), 1, 1};
    a.t = std::span<const double>(&t, 1);
    a.du = {out, rows, 1, 1};
    kernel::run(prog, ws, a);
  }

  esm::System system_;
  kernel::Program rhs_;
  kernel::JacobianProgram jac_;
  kernel::Workspace ws_rhs_, ws_jac_;
  std::optional<Derivatives> derivatives_;
  std::vector<double> p_;
  std::vector<int> order_;
};

}  // namespace esi::problems
