// BoundModel and JacobianShare: exec's private Model and SharedJacobian behind a small handle.
#include "esi/exec/bind.hpp"

#include <mutex>

#include "exec/model.hpp"
#include "exec/run_support.hpp"

namespace esi::exec {

JacobianShare::JacobianShare() : shared_(std::make_shared<detail::SharedJacobian>()) {}

bool JacobianShare::compiled() const {
  const std::lock_guard<std::mutex> lock(shared_->mutex);
  return shared_->compiled && shared_->program;
}

BoundModel::BoundModel(const esm::System& system, const SimulateOptions& options, const JacobianShare& jacobian)
    : require_observed_values_(options.require_observed_values) {
  const bool implicit_possible = options.integrator.method == method::MethodId::Auto ||
                                 method::method_info(options.integrator.method).needs_jacobian;
  model_ = detail::build_model(system, options.document, implicit_possible, options.require_observed_values,
                               options.native, 1, jacobian.shared_);
}

BoundModel::~BoundModel() = default;
BoundModel::BoundModel(BoundModel&&) noexcept = default;
BoundModel& BoundModel::operator=(BoundModel&&) noexcept = default;

esm::System& BoundModel::system() { return model_->system; }

void BoundModel::rebind() { model_->reset_parameters(require_observed_values_); }

Trajectory BoundModel::simulate(const SimulateOptions& options) { return detail::simulate_model(*model_, options); }

}  // namespace esi::exec
