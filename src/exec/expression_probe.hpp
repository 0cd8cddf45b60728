// Private to exec: one expression over a model's states and parameters (an observed's
// definition, an event's affect) as programs for its value, its gradient by the states and its
// gradient by the model's derivative parameters: what a loss reading an observed and the
// adjoint of an event need at a point (t, u).
#pragma once

#include <cstddef>
#include <vector>

#include "esi/expr/expr.hpp"
#include "esi/kernel/derivatives.hpp"
#include "esi/kernel/jacobian.hpp"
#include "esi/kernel/program.hpp"

namespace esi::exec::detail {

struct Model;

class ExpressionProbe {
 public:
  /// `root` in model.system.pool; the model must have its derivatives (ensure_derivatives).
  /// Throws the compile codes and `adjoint_unsupported_function`.
  ExpressionProbe(const Model& model, expr::NodeId root);

  /// The parameters changed: the programs read `p` (System::parameters order) from now on.
  void prepare(const std::vector<double>& p);

  /// The value at (t, u); with `derivatives` also gradient_u() and gradient_p() there.
  double evaluate(double t, const double* u, bool derivatives);

  /// d/du's nonzeros: values()[j] is the derivative by state columns()[j].
  std::size_t nonzeros() const { return nonzeros_; }
  const int* columns() const { return du_.col.data(); }
  const double* values() const { return du_values_.data(); }
  /// d/dp, dense over the model's derivative parameters.
  const std::vector<double>& gradient_p() const { return dp_dense_; }

 private:
  ExpressionProbe(const Model& model, const esm::System& derived);

  kernel::Program value_;
  kernel::JacobianProgram du_;
  kernel::ParameterJacobianProgram dp_;
  kernel::Workspace value_ws_, du_ws_, dp_ws_;
  std::vector<double> values_, du_values_, dp_values_, dp_dense_;
  std::size_t nonzeros_ = 0;
};

}  // namespace esi::exec::detail
