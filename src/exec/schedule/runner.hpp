// Private to exec: the schedule interpreter of one run (schedule.hpp). runner_setup.cpp builds
// it (the model, the operators its leaves run, events and forcing bound); runner.cpp runs the
// macro-step loop over the schedule tree.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "esi/esm/system.hpp"
#include "esi/exec/lane_pool.hpp"
#include "esi/exec/run_config.hpp"
#include "esi/exec/schedule.hpp"
#include "esi/exec/simulate.hpp"
#include "esi/method/integrator.hpp"
#include "esi/plan/pointwise_split.hpp"
#include "exec/cell_operator.hpp"
#include "exec/discrete_events.hpp"
#include "exec/forcing/epochs.hpp"
#include "exec/imex_operator.hpp"
#include "exec/model.hpp"
#include "exec/schedule/binding.hpp"

namespace esi::exec::detail {

/// The configuration's parts that decide the bits of a run (not the end time, output or
/// threads), the system's states and the caller's salt: what a restart file must match
/// (restart.cpp).
std::uint64_t run_fingerprint(const esm::System& system, const RunConfig& config,
                              std::uint64_t salt);

class Runner {
 public:
  /// `bound` and `split`: a binding and a split the caller already has (simulate's split).
  Runner(const esm::System& given, const RunConfig& config, const ScheduleOptions& options,
         ScheduleResult& out, const Binding* bound = nullptr,
         std::optional<plan::PointwiseSplit> split = std::nullopt);

  void run();

 private:
  static constexpr double kNever = std::numeric_limits<double>::infinity();

  struct Leaf {
    const ScheduleNode* node = nullptr;
    Target target = Target::Whole;
    method::IntegratorOptions io;
    LanePoolOptions lanes;
    std::optional<method::Integrator> integrator;
    std::vector<double> step_size;
    LanePoolStats cells;
    LeafReport report;
  };

  // runner_setup.cpp: building the run.
  Leaf make_leaf(const ScheduleNode& n);
  /// Discrete events (seed 002 §9, v1) fire at macro-step ends: preset and periodic times
  /// are stops of the macro step, conditions are checked at its end. Crossing events need
  /// root finding inside a leaf's step and are refused; so are parameter changes in split runs,
  /// whose cells hold their own copies of the parameters.
  void check_events() const;
  /// The schedule's map nodes name discrete events of the model; those events then belong to
  /// the schedule (mapped_), whatever their trigger.
  void bind_maps(const ScheduleNode& n);

  // runner.cpp: running it.
  std::size_t map_event(const ScheduleNode& n) const;
  Leaf& leaf_of(const ScheduleNode& n);
  bool execute(const ScheduleNode& n, double a, double b, std::vector<double>& u);
  bool run_leaf(Leaf& l, double a, double b, std::vector<double>& u);
  std::vector<LeafReport> reports() const;
  /// The first multiple of `period` after the start that is later than t (kNever for 0).
  double next_multiple(double t, double period) const;
  bool on_multiple(double t, double period) const;
  double next_every(const ScheduleNode& n, double t) const;
  /// Loads the forcing epoch of a macro step starting at t (see ForcingEpochs::load) and
  /// prepares the model again when it changed.
  void refresh_forcing(double t, bool stage = false);
  RestartState restart_state(double t, const std::vector<double>& u) const;
  /// Adds the leaves' statistics to the trajectory's at the end of the run.
  void sum_statistics();

  // Macro steps never cross a record time, but a step's last stages can land exactly on the
  // one that ends it (t_k+1), where the next epoch holds (selection is half-open). Those
  // evaluations, and only those, run with the next epoch loaded.
  template <class Call>
  void at_stage(double t, Call call);
  static void rhs_implicit_at_stage(void* c, double t, const double* u, double* di);
  static void rhs_explicit_at_stage(void* c, double t, const double* u, double* de);
  static void rhs_at_stage(void* c, double t, const double* u, double* du);
  static void jacobian_at_stage(void* c, double t, const double* u, double* v);
  static void rhs_split_at_stage(void* c, double t, const double* u, double* de, double* di);
  static void implicit_jacobian_at_stage(void* c, double t, const double* u, double* v);

  const RunConfig& c_;
  const ScheduleOptions& o_;
  ScheduleResult& out_;
  Trajectory& traj_;
  Binding binding_;
  std::unique_ptr<Model> model_;
  std::optional<plan::PointwiseSplit> split_;
  std::shared_ptr<const CellModel> cells_;
  std::optional<CellOperator> cell_op_;
  std::optional<ImexOperator> imex_;           ///< a monolithic IMEX leaf's problem
  const method::OdeProblem* inner_ = nullptr;  ///< what the leaves' problem_ wraps
  std::vector<Leaf> leaves_;
  ForcingEpochs forcing_;
  std::optional<DiscreteEvents> events_;
  std::vector<bool> mapped_;  ///< by event: applied by a map node, never by its trigger
  std::vector<std::pair<const ScheduleNode*, std::size_t>> maps_;  ///< map node -> event
  method::OdeProblem problem_;
  double epoch_start_ = 0, epoch_end_ = kNever;
  SimulateOptions sim_;
  std::uint64_t print_ = 0;
  std::uint64_t macro_steps_ = 0;
};

}  // namespace esi::exec::detail
