#include "exec/expression_probe.hpp"

#include <algorithm>

#include "exec/model.hpp"

namespace esi::exec::detail {
namespace {

// A copy of the model's System whose first state equation is `root` and every other 0: the
// RHS program's row 0 is the value, the Jacobian's row 0 the gradient by the states, the
// parameter Jacobian's row 0 the gradient by the parameters. Observeds `root` reads are
// inlined as for any equation (kernel::DefinitionInliner).
esm::System derived(const esm::System& system, expr::NodeId root) {
  esm::System s = system;
  const expr::NodeId zero = s.pool.number(0.0);
  for (auto& rhs : s.state_rhs) rhs = zero;
  s.state_rhs[0] = root;
  return s;
}

kernel::CompileOptions row_zero() {
  kernel::CompileOptions o;
  o.dofs = {0};
  return o;
}

void run(const kernel::Program& program, kernel::Workspace& ws, double t, const double* u, double* out,
         std::size_t rows) {
  kernel::RunArgs<double> a;
  a.u = {u, program.state_count(), 1, 1};
  a.t = std::span<const double>(&t, 1);
  a.du = {out, rows, 1, 1};
  kernel::run(program, ws, a);
}

}  // namespace

ExpressionProbe::ExpressionProbe(const Model& m, expr::NodeId root) : ExpressionProbe(m, derived(m.system, root)) {}

ExpressionProbe::ExpressionProbe(const Model& m, const esm::System& s)
    : value_(kernel::compile(s)),
      du_(kernel::compile_jacobian(s)),
      dp_(kernel::compile_parameter_jacobian(s, m.derivative_parameters, row_zero())),
      value_ws_(value_.make_workspace(1)),
      du_ws_(du_.values.make_workspace(1)),
      dp_ws_(dp_.values.make_workspace(1)),
      values_(m.system.states.size()),
      du_values_(du_.col.size()),
      dp_values_(dp_.col.size()),
      dp_dense_(m.derivative_parameters.size()),
      nonzeros_(du_.row_ptr.size() > 1 ? std::size_t(du_.row_ptr[1]) : 0) {
  prepare(m.p);
}

void ExpressionProbe::prepare(const std::vector<double>& p) {
  value_.prepare(value_ws_, p);
  du_.values.prepare(du_ws_, p);
  dp_.values.prepare(dp_ws_, p);
}

double ExpressionProbe::evaluate(double t, const double* u, bool derivatives) {
  run(value_, value_ws_, t, u, values_.data(), values_.size());
  if (!derivatives) return values_[0];
  if (!du_values_.empty()) run(du_.values, du_ws_, t, u, du_values_.data(), du_values_.size());
  std::fill(dp_dense_.begin(), dp_dense_.end(), 0.0);
  if (!dp_values_.empty()) {
    run(dp_.values, dp_ws_, t, u, dp_values_.data(), dp_values_.size());
    for (int k = dp_.row_ptr[0]; k < dp_.row_ptr[1]; ++k)
      dp_dense_[std::size_t(dp_.col[std::size_t(k)])] = dp_values_[std::size_t(k)];
  }
  return values_[0];
}

}  // namespace esi::exec::detail
