// Run configurations (seed 002 §4): the JSON file beside a model that says how `esi run`
// integrates it. The format is `schemas/run-config.schema.json` (compiled into esi); this header
// is its parsed form.
//
// A run configuration names operators (parts of the right-hand side chosen by selectors on the
// planner's operators: locality and component), a schedule tree that steps them (leaf,
// sequence / lie, strang, subcycle, every), the macro step, threads and lanes, output and
// forcing providers. Parsing checks the file against the schema and then the meaning
// (operators a leaf names exist, methods exist, precision f64), and every refusal is an
// esi::Error with the file, the JSON pointer of the offending node and a sentence. Checks that
// need the model (selectors that match nothing, operators that overlap, forcing targets) run
// when the schedule is bound to a flattened system (schedule.hpp).
//
// The run configuration lives in exec, not in plan as the design's table has it: it names
// methods and controllers, which the method module owns and plan does not link.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "esi/exec/lane_pool.hpp"
#include "esi/method/integrator.hpp"

namespace esi::exec {

struct OperatorSpec {
  std::string name;
  std::vector<std::string> locality;   ///< "pointwise", "column", "stencil", "global", "all"
  std::vector<std::string> component;  ///< component paths (a prefix match on the planner's)
  std::string pointer;                 ///< "/operators/<name>"
};

/// One leaf's method and step control (`alg`, `control`, `domain`).
struct LeafSpec {
  std::string op;  ///< an OperatorSpec name or "all"
  method::MethodId method = method::MethodId::Auto;
  std::optional<double> rtol, atol;  ///< unset = the leaf kind's default
  double dt0 = 0, dt_max = 0;
  long max_steps = 0;  ///< 0 = the Integrator's default
  method::ControllerKind controller = method::ControllerKind::Default;
  std::string dt_scope;  ///< "" = by operator (cell for pointwise, global otherwise)
  method::DomainPolicy nonnegative = method::DomainPolicy::None;
  /// Programmatic callers (exec::simulate's split) may give a leaf's options whole instead;
  /// a run configuration never sets these.
  std::optional<method::IntegratorOptions> integrator;
  std::optional<LanePoolOptions> lanes;
};

struct ScheduleNode {
  /// Map: an instantaneous operator, the affects of the model's discrete event named `map`
  /// applied to the state where the schedule reaches the node (at the end time of the span it
  /// is given; its right-hand sides read the state before the map). The schedule then owns the
  /// event: its own trigger no longer fires it.
  enum class Kind { Leaf, Sequence, Strang, Subcycle, Every, Map };
  Kind kind = Kind::Leaf;
  LeafSpec leaf;                      ///< Leaf
  std::string map;                    ///< Map: the event's name
  std::vector<ScheduleNode> children; ///< Sequence (also `lie`), Strang; one for Subcycle, Every
  int substeps = 1;                   ///< Subcycle
  double period = 0;                  ///< Every [s]
  std::string pointer;                ///< where the node is in the run configuration
};

struct ForcingSpec {
  enum class Kind { Constant, NetCDF, Expression };
  std::string target;  ///< the document's parameter or parameter array, e.g. "Transport3D.F_U"
  Kind kind = Kind::Constant;
  double value = 0;          ///< Constant
  std::string file;          ///< NetCDF: resolved against the configuration's folder
  std::string variable;      ///< NetCDF: the file's variable
  std::string bracket;       ///< NetCDF, Expression: the index set (extent 2) of the bracketing records
  /// Expression: an ESM expression of `t` [s] and the target's axis names (each cell's 1-based
  /// position along that axis), in the target's units, evaluated as records every `every`
  /// seconds from the start (once, at the start, when `every` is 0).
  nlohmann::json expression;
  double every = 0;
  std::string pointer;       ///< "/forcing/<target>"
};

struct RunConfig {
  std::string file;       ///< the configuration's path ("" when parsed from memory)
  std::string model;      ///< resolved against the configuration's folder; "" = not given
  std::string component;
  double start = 0, stop = 0;
  nlohmann::json inputs = nlohmann::json::object();  ///< stated values (FlattenOptions::inputs)
  std::string inputs_file;  ///< where `inputs` came from ("" = inline)
  std::vector<OperatorSpec> operators;
  ScheduleNode schedule;
  double macro_dt = 0;  ///< 0 = from one stop to the next
  int threads = 1;
  int lanes = 16;
  double output_every = 0;  ///< 0 = start and end only
  std::string output_file;  ///< "" = none given
  std::vector<ForcingSpec> forcing;
  nlohmann::json source;    ///< the configuration as read (for provenance)
};

/// Reads and checks a run configuration. Throws esi::Error: `run_config_unreadable`,
/// `run_config_unknown_key` (a key the schema does not have: file, pointer of the object, the
/// key), `run_config_invalid` (any other schema finding), `unknown_operator` (a leaf names an
/// operator not declared), `unknown_method`, `unsupported_precision` (f32).
RunConfig read_run_config(const std::string& path);

/// The same from a parsed document; relative paths resolve against `folder`.
RunConfig parse_run_config(const nlohmann::json& config, const std::string& file,
                           const std::string& folder);

/// The run-configuration schema (schemas/run-config.schema.json) as compiled into esi.
const nlohmann::json& run_config_schema();

}  // namespace esi::exec
