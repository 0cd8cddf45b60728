// Private to exec: a System compiled for one run (programs, workspaces, parameter values, the
// OdeProblem callbacks) and the events that act on it.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <set>
#include <string>
#include <vector>

#include "esi/esm/load.hpp"
#include "esi/esm/system.hpp"
#include "esi/kernel/derivatives.hpp"
#include "esi/kernel/grid.hpp"
#include "esi/kernel/jacobian.hpp"
#include "esi/kernel/program.hpp"
#include "esi/method/problem.hpp"

namespace esi::exec::detail {

/// Expressions of a system compiled as the outputs of one program, evaluated at one (t, u).
class Evaluator {
 public:
  Evaluator(const esm::System& system, std::span<const expr::NodeId> outputs);
  std::size_t size() const { return out_.size(); }
  void prepare(std::span<const double> p);
  /// Output values at (t, u); valid until the next call.
  std::span<const double> evaluate(double t, std::span<const double> u);

 private:
  std::optional<kernel::Program> program_;  // none when there are no outputs
  std::optional<kernel::Workspace> ws_;
  std::vector<double> out_;
};

/// What an event writes: state `index` or parameter `index`, from affect-evaluator row `row`.
struct Assignment {
  bool parameter = false;
  int index = 0;
  int row = 0;
};

enum class Trigger { Crossing, Scheduled, Condition };

struct Event {
  std::string name;  ///< for messages: "event 'NAME'" as authored, else where it was declared
  /// The document's own `name` ("" when it has none) and its component: what a run
  /// configuration's map node names ("NAME" or "Component.NAME").
  std::string authored_name, component;
  Trigger trigger = Trigger::Crossing;
  std::vector<int> condition_rows;  ///< rows of the condition evaluator (Crossing, Condition)
  std::vector<double> times;        ///< Scheduled: preset times
  double interval = 0, offset = 0;  ///< Scheduled: periodic when interval > 0
  std::vector<Assignment> affects;       ///< up-going crossings and every other trigger
  std::vector<Assignment> affects_down;  ///< down-going crossings
};

/// Event expressions parsed into (a copy of) the system pool, before compilation.
struct EventSet {
  std::vector<Event> events;
  std::vector<expr::NodeId> conditions;  ///< condition evaluator rows
  std::vector<expr::NodeId> affects;     ///< affect evaluator rows
  /// Parameters (arrays by their array name) the document refreshes from a data source
  /// (`update: {kind: data}`): esi reads no data files yet, so they keep the value they are
  /// given (default, --set, --inputs) for the whole run, and the caller is told.
  std::set<std::string> held_data;
};

/// Parses System::events and the parameter `update` blocks of `document` into `system.pool`.
/// Throws `unsupported_event` for §5 features the driver does not run.
EventSet parse_events(esm::System& system, const esm::ResolvedDocument* document);

/// An analytic Jacobian compiled at most once for every model of the same equations (a
/// sweep's workers, whose systems differ only in parameter and initial values), by the first
/// of them whose run needs one: explicit runs never pay for the symbolic differentiation.
struct SharedJacobian {
  std::mutex mutex;
  bool compiled = false;
  std::optional<kernel::JacobianProgram> program;  ///< none: not differentiable
};

/// The compiled model. Not movable once built: `problem.context` points at it.
struct Model {
  esm::System system;  ///< algebraic unknowns substituted, event expressions added
  EventSet events;
  std::vector<double> p;  ///< parameter values, System::parameters order
  std::optional<kernel::Program> rhs;
  std::optional<kernel::Workspace> rhs_ws;
  std::optional<kernel::JacobianProgram> jacobian;
  std::optional<kernel::Workspace> jacobian_ws;
  /// Per-region programs of the state arrays (System::grid non-empty); `rhs` then holds the
  /// scalar states' equations only (rows `scalar_dofs`), and there is no analytic Jacobian.
  std::optional<kernel::GridProgram> grid;
  std::optional<kernel::GridWorkspace> grid_ws;
  unsigned grid_threads = 1;  ///< threads of the per-region programs (same bits for any count)
  std::vector<int> scalar_dofs;
  std::vector<double> scalar_du;
  std::optional<Evaluator> observed;    ///< observed_rhs
  std::optional<Evaluator> conditions;  ///< events.conditions
  std::optional<Evaluator> affects;     ///< events.affects
  method::OdeProblem problem;
  /// Set when build_model was given a SharedJacobian: the Jacobian is attached by
  /// ensure_jacobian, not at build time.
  std::shared_ptr<SharedJacobian> deferred_jacobian;
  bool native = false;  ///< the Jacobian too is made native code when it is attached
  /// Sensitivities and adjoints (ensure_derivatives): df/dp and the Jacobian's second
  /// derivatives over `derivative_parameters` (OdeProblem parameter position -> System::
  /// parameters index).
  std::vector<int> derivative_parameters;
  std::optional<kernel::ParameterJacobianProgram> parameter_jacobian;
  std::optional<kernel::Workspace> parameter_jacobian_ws;
  std::optional<kernel::SecondDerivativeProgram> second_derivatives;
  std::optional<kernel::Workspace> second_derivatives_ws;
  std::vector<double> second_values;  ///< u then p values, split into the callback's two arrays
  /// J and df/dp in one program (kernel::compile_first_derivatives), for the sweeps' stages.
  std::optional<kernel::Program> first_derivatives;
  std::optional<kernel::Workspace> first_derivatives_ws;
  std::vector<double> first_values;  ///< J then df/dp values
  /// The first-derivative programs over several points at once (problem.first_derivatives_lanes):
  /// workspaces as wide as a step's points, and the lane-major inputs and outputs.
  std::optional<kernel::Workspace> first_lanes_ws, jacobian_lanes_ws;
  std::vector<double> lanes_u, lanes_out;
  /// J^T w and (df/dp)^T w by reverse accumulation (ensure_vector_jacobian_product), for the
  /// adjoint sweeps' stages; the weights are copied into vjp_weights, which vjp_fields read.
  std::optional<kernel::VectorJacobianProgram> vjp;
  std::optional<kernel::Workspace> vjp_ws;
  std::vector<double> vjp_weights, vjp_values;
  std::vector<kernel::ForcingField<double>> vjp_fields;

  Model() = default;
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  /// Runs every setup tape again after `p` changed.
  void prepare_all();
  /// Recomputes `p` from the system's parameter defaults (after they were edited, as a sweep
  /// does between its points) and prepares again: a new run of the same equations without
  /// compiling them again.
  void reset_parameters(bool require_observed_values);
  std::vector<double> initial_state();
  /// Attaches the deferred Jacobian (compiling it if no model sharing it has yet), prepared
  /// for `p`; nothing when there is none to attach. Call before a run with an implicit method.
  void ensure_jacobian();
  /// Compiles df/dp and the Jacobian's second derivatives over every differentiable parameter
  /// (kernel::differentiable_parameters) once, prepared for `p`, and fills problem's
  /// derivative fields. The analytic Jacobian is attached first (compiled here when the model
  /// was built without one). Throws `adjoint_unsupported_grid` for a per-region (gridded)
  /// model, `adjoint_unsupported_jacobian` when the Jacobian cannot be formed, and
  /// `adjoint_unsupported_function` (kernel/derivatives.hpp).
  /// `extra`: further System::parameters indices (parameters events change, whose values a
  /// sweep carries between firings) after the differentiable ones.
  void ensure_derivatives(const std::vector<int>& extra = {});
  /// After ensure_derivatives: compiles the vector-Jacobian product over the states and, when
  /// `parameters`, over derivative_parameters (again only when parameters are asked for the
  /// first time), prepared, and sets problem.vector_jacobian_product.
  void ensure_vector_jacobian_product(bool parameters);
};

/// Copies and compiles `system`; `with_jacobian` adds the analytic Jacobian when the system is
/// differentiable (otherwise implicit methods fall back to finite differences).
/// `require_observed_values`: see SimulateOptions. `grid_threads`: the threads the
/// per-region programs run on (kernel::make_grid_workspace). `shared_jacobian` (with
/// `with_jacobian`): the Jacobian is not compiled here but by Model::ensure_jacobian, once for
/// every model built with the same object, which must be given systems of the same equations.
std::unique_ptr<Model> build_model(const esm::System& system, const esm::ResolvedDocument* document,
                                   bool with_jacobian, bool require_observed_values = true,
                                   bool native = false, unsigned grid_threads = 1,
                                   std::shared_ptr<SharedJacobian> shared_jacobian = nullptr);

/// Substitutes index-0 algebraic unknowns so they become observeds (what build_model does
/// first); throws `unsupported_algebraic` for constraints that need a DAE solver.
void eliminate_algebraics(esm::System& system);

/// Parameter values of `system` (defaults, then expression defaults to a fixpoint), System::
/// parameters order; a parameter the state equations read without a value throws
/// `missing_parameter_value`.
std::vector<double> default_parameter_values(const esm::System& system);

/// Every Symbol name read by `root`.
void collect_symbols(const expr::Pool& pool, expr::NodeId root, std::vector<std::string>& out);

}  // namespace esi::exec::detail
