// `esi simulate FILE [--component NAME] --tspan T0 T1 [--saveat DT] [--method M] [--rtol R]
// [--atol A] [--set name=value ...] [--params FILE] --output OUT.csv`: one run written as CSV,
// with OUT.csv.json beside it (each column's units and kind, the run's metadata).
//
// The CSV header is `t` then one column per state and observed (flattened names, quoted per
// RFC 4180 when they hold a comma, quote or line break); one row per output time (t0, each
// saveat multiple, T1; without --saveat every hundredth of the span), numbers in their
// shortest round-trip form (std::to_chars). Rows are written as the run reaches them; the
// output file is opened before the solve and every write is checked. OUT.csv.json, written
// after the run (also after a failed solve; not for --output -), gives each column's units
// and kind and the run's metadata, so the header stays plain names for existing readers.
// `--set` overrides a parameter, or the initial value of a state, by flat or unique local
// name (an unknown name gets near-match suggestions); `--params FILE` gives many at once
// (cli/params.hpp), applied in command-line order with the --set options. A failed solve, or
// a state, observed or derivative that is not finite, writes the rows it reached, says why
// and exits 1.
//
// `--output X.nc` writes CF NetCDF-4 with io::NetcdfOutput instead (one variable per scalar and
// per array, a CF time axis, coordinates, provenance and the run's outcome as global
// attributes; no sidecar), under X.nc.partial renamed to X.nc at the end (deterministic models
// only: a stochastic model's --output must be CSV).
//
// Stochastic models (a Wiener parameter, or a `distribution` parameter drawn at setup) run
// through exec::simulate_ensemble: `--seed S` keys every random number, `--ensemble N` runs N
// members (`--threads T`) and writes per output time `X.mean` and `X.var` (unbiased) of every
// column, or, with `--members`, every member's rows (a leading `member` column).
#ifdef ESI_HAVE_EXEC  // built only when the exec module exists
#include <algorithm>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/csv.hpp"
#include "cli/params.hpp"
#include "esi/core/error.hpp"
#include "esi/core/json.hpp"
#include "esi/core/text.hpp"
#include "esi/esm/flatten.hpp"
#include "esi/esm/load.hpp"
#include "esi/exec/pointwise.hpp"
#include "esi/exec/simulate.hpp"
#include "esi/exec/stochastic.hpp"
#include "esi/io/netcdf_output.hpp"
#include "cli/interrupt.hpp"

namespace esi::cli {
namespace {

/// "Euler, Heun, ..., auto": every name --method accepts.
std::string method_names() {
  std::string out;
  for (method::MethodId id : method::all_methods()) out += std::string(method::method_info(id).name) + ", ";
  return out + "auto";
}


struct SimulateArgs {
  std::string file, component, output, stats, inputs;
  std::string command_line;  ///< "esi simulate ..." as given (NetCDF provenance)
  bool quiet = false;
  bool cells = false;  ///< --cells: arrays as one equation per cell even for explicit methods
  bool default_saveat = false;  ///< no --saveat: (T1 - T0) / 100
  bool have_tspan = false, have_component = false, have_dt = false;
  exec::SimulateOptions options;
  /// --set and --params entries in command-line order (a later one for the same name wins).
  std::vector<Override> sets;
  std::vector<std::string> params_files;
  // Stochastic models only.
  std::optional<method::SdeMethod> sde_method;
  std::uint64_t seed = 0;
  std::size_t ensemble = 0;  ///< 0: one path, written like a deterministic run
  unsigned threads = 1;
  bool members = false, have_seed = false;
  // Gridded models with a pointwise part (lane pools).
  int lanes = 16;
  double split_step = 0;
  std::optional<method::MethodId> transport_method;
};

/// A whole non-negative integer in [0, max] spelled completely.
bool parse_count(const std::string& s, std::uint64_t max, std::uint64_t& out) {
  const char* end = s.data() + s.size();
  const auto r = std::from_chars(s.data(), end, out);
  return r.ec == std::errc() && r.ptr == end && out <= max;
}

/// A finite number spelled completely ("inf" and "nan" are numbers to from_chars, not to us).
bool parse_finite(const std::string& s, double& out) {
  const char* end = s.data() + s.size();
  const auto r = std::from_chars(s.data(), end, out);
  return r.ec == std::errc() && r.ptr == end && std::isfinite(out);
}

std::string not_a_finite_number(const std::string& option, const std::string& value) {
  return option + ": '" + value + "' is not a finite number";
}

/// The value after option `a` at args[i + 1] (advancing i), or nullptr when missing.
const std::string* value_of(Args args, std::size_t& i) {
  return i + 1 < args.size() ? &args[++i] : nullptr;
}

int parse_number_option(Args args, std::size_t& i, double& out) {
  const std::string& name = args[i];
  const std::string* v = value_of(args, i);
  if (v == nullptr) return usage_error("simulate", name + " needs a value");
  if (!parse_finite(*v, out)) return usage_error("simulate", not_a_finite_number(name, *v));
  return kExitOk;
}

int parse_option(Args args, std::size_t& i, SimulateArgs& s) {
  const std::string& a = args[i];
  auto& io = s.options.integrator;
  if (a == "--tspan") {
    if (i + 2 >= args.size()) return usage_error("simulate", "--tspan needs two numbers T0 T1");
    for (int k : {1, 2})
      if (!parse_finite(args[i + k], k == 1 ? s.options.t0 : s.options.t1))
        return usage_error("simulate", not_a_finite_number("--tspan", args[i + k]));
    s.have_tspan = true;
    i += 2;
    return kExitOk;
  }
  if (a == "--saveat") return parse_number_option(args, i, s.options.saveat);
  if (a == "--rtol") return parse_number_option(args, i, io.rtol);
  if (a == "--atol") return parse_number_option(args, i, io.atol);
  if (a == "--dt") {
    s.have_dt = true;
    return parse_number_option(args, i, io.dt_initial);
  }
  if (a == "--native") {
    s.options.native = true;
    return kExitOk;
  }
  if (a == "--seed" || a == "--ensemble" || a == "--threads") {
    const std::string* v = value_of(args, i);
    std::uint64_t n = 0;
    const std::uint64_t max = a == "--seed" ? ~std::uint64_t{0} : a == "--ensemble" ? 4294967295u : 1024;
    if (v == nullptr || !parse_count(*v, max, n) || (a != "--seed" && n == 0))
      return usage_error("simulate", a + " needs a whole number" +
                                         (a == "--seed" ? std::string(" (0 to 2^64 - 1)")
                                                        : " from 1 to " + std::to_string(max)) +
                                         (v ? ", got '" + *v + "'" : std::string()));
    if (a == "--seed") s.seed = n, s.have_seed = true;
    else if (a == "--ensemble") s.ensemble = n;
    else s.threads = static_cast<unsigned>(n);
    return kExitOk;
  }
  if (a == "--lanes") {
    const std::string* v = value_of(args, i);
    std::uint64_t n = 0;
    if (v == nullptr || !parse_count(*v, 64, n) || (n & (n - 1)) != 0 || n == 0)
      return usage_error("simulate", "--lanes needs 1, 2, 4, 8, 16, 32 or 64" +
                                         (v ? ", got '" + *v + "'" : std::string()));
    s.lanes = static_cast<int>(n);
    return kExitOk;
  }
  if (a == "--split-step") {
    const std::string* v = value_of(args, i);
    if (v == nullptr || !parse_finite(*v, s.split_step) || !(s.split_step > 0))
      return usage_error("simulate", "--split-step needs a positive number of seconds" +
                                         (v ? ", got '" + *v + "'" : std::string()));
    return kExitOk;
  }
  if (a == "--transport-method") {
    const std::string* v = value_of(args, i);
    const auto m = v ? method::method_from_name(*v) : std::nullopt;
    if (!m || method::method_info(*m).needs_jacobian || method::method_info(*m).embedded_order == 0 ||
        !method::method_available(*m))
      return usage_error("simulate", "--transport-method needs an adaptive explicit method (SSPRK43, "
                                     "Tsit5, BS3, DP5, ...)" + (v ? ", got '" + *v + "'" : std::string()));
    s.transport_method = *m;
    return kExitOk;
  }
  if (a == "--members") {
    s.members = true;
    return kExitOk;
  }
  if (a == "--quiet" || a == "-q") {
    s.quiet = true;
    return kExitOk;
  }
  if (a == "--cells") {
    s.cells = true;
    return kExitOk;
  }
  if (a == "--inputs") {
    const std::string* v = value_of(args, i);
    if (v == nullptr || v->empty()) return usage_error("simulate", "--inputs needs a FILE.json");
    s.inputs = *v;
    return kExitOk;
  }
  if (a == "--params") {
    const std::string* v = value_of(args, i);
    if (v == nullptr || v->empty()) return usage_error("simulate", "--params needs a FILE (.json or .csv)");
    try {
      for (Override& o : read_params_file(*v)) s.sets.push_back(std::move(o));
    } catch (const Error& e) {  // a malformed file is bad input (exit 1), like a bad --inputs
      std::fprintf(stderr, "%s\n", format_diagnostic(e.diagnostic()).c_str());
      return kExitInvalid;
    }
    s.params_files.push_back(*v);
    return kExitOk;
  }
  if (a == "--stats") {
    const std::string* v = value_of(args, i);
    if (v == nullptr || v->empty()) return usage_error("simulate", "--stats needs a FILE.json");
    s.stats = *v;
    return kExitOk;
  }
  if (a == "--component" || a == "--output" || a == "-o" || a == "--method" || a == "--set") {
    const std::string* v = value_of(args, i);
    if (v == nullptr) return usage_error("simulate", a + " needs a value");
    if (a == "--component") {
      s.component = *v;
      s.have_component = true;
    } else if (a == "--output" || a == "-o") {
      s.output = *v;
    } else if (a == "--method") {
      if (*v == "auto" || *v == "Auto") io.method = method::MethodId::Auto;
      else if (auto m = method::method_from_name(*v); m && !method::method_available(*m))
        return usage_error("simulate", "--method " + *v + ": esi was built without SUNDIALS "
                                       "(install libsundials-dev and reconfigure)");
      else if (m) io.method = *m;
      else if (auto sde = method::sde_method_from_name(*v)) s.sde_method = *sde;
      else return usage_error("simulate", "unknown method '" + *v + "'; known: " + method_names() +
                                              "; for SDEs EulerMaruyama (EM), Milstein, SRA1");
    } else {
      const auto eq = v->find('=');
      double value = 0;
      if (eq == std::string::npos || eq == 0) return usage_error("simulate", "--set expects name=value, got '" + *v + "'");
      if (!parse_finite(v->substr(eq + 1), value))
        return usage_error("simulate", "--set " + v->substr(0, eq) + ": '" + v->substr(eq + 1) +
                                           "' is not a finite number");
      s.sets.push_back({v->substr(0, eq), value, "--set " + v->substr(0, eq), "", ""});
    }
    return kExitOk;
  }
  return usage_error("simulate", "unknown option '" + a + "'");
}

/// Checks the options together once all are read; returns kExitOk or the usage status.
int check_options(const SimulateArgs& s) {
  const exec::SimulateOptions& o = s.options;
  const method::IntegratorOptions& io = o.integrator;
  if (!(o.t1 >= o.t0))
    return usage_error("simulate", "--tspan " + format_number(o.t0) + " " + format_number(o.t1) +
                                       ": T1 must not be before T0");
  if (io.rtol < 0 || io.atol < 0) return usage_error("simulate", "--rtol and --atol must not be negative");
  if (io.rtol == 0 && io.atol == 0) return usage_error("simulate", "--rtol and --atol cannot both be 0");
  if (s.have_dt && !(io.dt_initial > 0))
    return usage_error("simulate", "--dt must be positive, got " + format_number(io.dt_initial));
  if (s.have_component && s.component.empty())
    return usage_error("simulate", "--component needs a component name, got an empty one");
  if (const double rows = exec::planned_output_rows(o); rows > exec::kMaxOutputRows)
    return usage_error("simulate", "--saveat " + format_number(o.saveat) + " over [" + format_number(o.t0) +
                                       ", " + format_number(o.t1) + "] would write about " +
                                       format_number(std::floor(rows)) + " rows; the limit is " +
                                       std::to_string(static_cast<long>(exec::kMaxOutputRows)) +
                                       " (use a larger --saveat or a shorter --tspan)");
  return kExitOk;
}

/// The output interval without --saveat: a hundredth of the span, so a run writes 101 evenly
/// spaced rows (T0, 99 inner times, T1) rather than only its ends. Rounded up to the next
/// double where T0 + 100 * DT would fall just short of T1 (which would add a 102nd row a
/// rounding error before T1). 0 (no grid: T0 and T1 only) for an empty or overflowing span.
double default_saveat(double t0, double t1) {
  if (!(t1 > t0)) return 0;
  double dt = (t1 - t0) / 100;
  if (!std::isfinite(dt)) return 0;  // a span beyond the double range: only T0 and T1
  while (dt > 0 && t0 + 100 * dt < t1) dt = std::nextafter(dt, std::numeric_limits<double>::infinity());
  return dt;
}

/// The preset times (discrete events with a `preset_times` trigger) inside [t0, t1]: without
/// --saveat they join the output grid, so a dose or an emission pulse shows at its own time
/// (the row holds the value after the event) instead of somewhere between two grid rows.
/// At most kMaxPresetRows are added; a longer schedule is left to --saveat.
constexpr std::size_t kMaxPresetRows = 100000;
std::vector<double> preset_event_times(const esm::System& sys, double t0, double t1) {
  std::vector<double> out;
  for (const nlohmann::json& e : sys.events) {
    if (!e.is_object()) continue;
    const auto trigger = e.find("trigger");
    if (trigger == e.end() || !trigger->is_object() || trigger->value("type", nlohmann::json()) != "preset_times")
      continue;
    const auto times = trigger->find("times");
    if (times == trigger->end() || !times->is_array()) continue;
    for (const nlohmann::json& t : *times)
      if (t.is_number() && t.get<double>() > t0 && t.get<double>() < t1 && out.size() < kMaxPresetRows)
        out.push_back(t.get<double>());
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

/// Returns kExitOk with `s` filled, -1 after printing help, or the usage exit status.
int parse_args(Args args, SimulateArgs& s) {
  std::vector<std::string> files;
  bool saveat_given = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      print_simulate_help(stdout);
      return -1;
    }
    if (a.size() < 2 || a[0] != '-') {
      files.push_back(a);
      continue;
    }
    saveat_given |= a == "--saveat";
    if (const int rc = parse_option(args, i, s); rc != kExitOk) return rc;
  }
  if (files.size() != 1) return usage_error("simulate", files.empty() ? "no FILE given" : "expects exactly one FILE");
  if (!s.have_tspan) return usage_error("simulate", "--tspan T0 T1 is required");
  if (s.output.empty()) return usage_error("simulate", "--output OUT.csv is required");
  if (!saveat_given) s.options.saveat = default_saveat(s.options.t0, s.options.t1), s.default_saveat = true;
  else if (s.options.saveat <= 0)
    return usage_error("simulate", "--saveat must be positive, got " + format_number(s.options.saveat));
  if (const int rc = check_options(s); rc != kExitOk) return rc;
  s.file = files[0];
  std::error_code ec;
  if (std::filesystem::equivalent(s.file, s.output, ec))
    return usage_error("simulate", "--output " + s.output + " is the model file itself; choose another path");
  if (s.output != "-") {  // the sidecar OUT.csv.json must not overwrite the model or the --stats file
    const std::string sidecar = s.output + ".json";
    if (std::filesystem::equivalent(s.file, sidecar, ec))
      return usage_error("simulate", "the sidecar " + sidecar + " of --output " + s.output +
                                         " would overwrite the model file; choose another --output");
    if (!s.stats.empty() && (s.stats == sidecar || std::filesystem::equivalent(s.stats, sidecar, ec)))
      return usage_error("simulate", "--stats " + s.stats + " is the sidecar of --output " + s.output +
                                         " (OUT.csv.json holds the units and run metadata); choose another path");
  }
  return kExitOk;
}

// ---- --set names ----

/// The part of a flat name after its last dot ("x" of "A.B.x").
std::string local_name(const std::string& flat) {
  const auto dot = flat.rfind('.');
  return dot == std::string::npos ? flat : flat.substr(dot + 1);
}

bool ends_with_segment(const std::string& flat, const std::string& name) {
  return flat.size() > name.size() && flat[flat.size() - name.size() - 1] == '.' &&
         flat.compare(flat.size() - name.size(), name.size(), name) == 0;
}


/// Up to five settable names close to `name` (full names and local names), nearest first.
std::vector<std::string> near_names(const esm::System& sys, const std::string& name) {
  const std::size_t limit = std::max<std::size_t>(1, name.size() / 3);
  std::vector<std::pair<std::size_t, std::string>> scored;
  esm::for_each_variable(
      [&](const esm::FlatVariable& v) {
        const std::size_t full = edit_distance(name, v.name),
                          local = edit_distance(name, local_name(v.name));
        if (std::min(full, local) <= limit) scored.emplace_back(std::min(full, local), v.name);
      },
      sys.states, sys.parameters);
  std::sort(scored.begin(), scored.end());
  std::vector<std::string> out;
  for (const auto& [d, n] : scored)
    if (out.size() < 5) out.push_back(n);
  return out;
}

/// "coupling entry /coupling/2 (variable_map from A.y)" for a variable_map whose target is
/// `name` (flat or local), or "".
std::string replacing_variable_map(const nlohmann::json& doc, const std::string& name) {
  const auto coupling = doc.find("coupling");
  if (coupling == doc.end() || !coupling->is_array()) return {};
  for (std::size_t i = 0; i < coupling->size(); ++i) {
    const nlohmann::json& entry = (*coupling)[i];
    if (!entry.is_object() || entry.value("type", nlohmann::json()) != "variable_map") continue;
    const nlohmann::json to = entry.value("to", nlohmann::json()), from = entry.value("from", nlohmann::json());
    if (!to.is_string()) continue;
    const std::string target = to.get<std::string>();
    if (target == name || ends_with_segment(target, name))
      return "'" + target + "' is bound by coupling entry /coupling/" + std::to_string(i) +
             " (variable_map" + (from.is_string() ? " from " + from.get<std::string>() : std::string()) +
             "), so it is no longer a parameter of the flattened system; set the source instead";
  }
  return {};
}

/// Refuses a --set name that names no state or parameter, with the reason and near matches.
void check_set_name(const esm::System& sys, const nlohmann::json& doc, const Override& o) {
  const std::string& name = o.name;
  if (sys.state_index(name) >= 0 || sys.parameter_index(name) >= 0) return;
  const auto refuse = [&](const char* code, const std::string& why) {
    throw Error(code, o.file, o.pointer, o.origin + ": " + why);
  };
  std::vector<std::string> hits;
  esm::for_each_variable(
      [&](const esm::FlatVariable& v) {
        if (ends_with_segment(v.name, name)) hits.push_back(v.name);
      },
      sys.states, sys.parameters);
  if (hits.size() == 1) return;
  if (hits.size() > 1) {
    std::string list;
    for (const auto& h : hits) list += (list.empty() ? "" : ", ") + h;
    refuse("ambiguous_override", "the name matches several variables (" + list + "); use the full name");
  }
  for (const esm::FlatVariable& v : sys.observed)
    if (v.name == name || ends_with_segment(v.name, name))
      refuse("unknown_override", "'" + v.name + "' is an observed quantity (defined by an equation); "
                                 "--set and --params take a parameter or a state");
  if (const std::string why = replacing_variable_map(doc, name); !why.empty()) refuse("unknown_override", why);
  std::string message = "no state or parameter of the system has this name";
  const std::vector<std::string> near = near_names(sys, name);
  for (std::size_t k = 0; k < near.size(); ++k)
    message += (k == 0 ? "; did you mean " : ", ") + ("'" + near[k] + "'");
  if (!near.empty()) message += "?";
  refuse("unknown_override", message);
}

/// Whether --set NAME targets a state: its flat name, or a local name that ends a state's
/// flat name and no parameter's (check_set_name reported unknown and ambiguous names).
bool names_state(const esm::System& sys, const std::string& name) {
  if (sys.state_index(name) >= 0) return true;
  if (sys.parameter_index(name) >= 0) return false;
  const auto ends_with = [&](const esm::FlatVariable& v) { return ends_with_segment(v.name, name); };
  return std::any_of(sys.states.begin(), sys.states.end(), ends_with) &&
         std::none_of(sys.parameters.begin(), sys.parameters.end(), ends_with);
}

/// The flat name an override targets (check_set_name found exactly one), so that "k" and
/// "Box.k" are one key and the override given last wins whichever way each was spelled.
std::string flat_target(const esm::System& sys, const std::string& name) {
  if (sys.state_index(name) >= 0 || sys.parameter_index(name) >= 0) return name;
  for (const esm::FlatVariable& v : sys.states)
    if (ends_with_segment(v.name, name)) return v.name;
  for (const esm::FlatVariable& v : sys.parameters)
    if (ends_with_segment(v.name, name)) return v.name;
  return name;
}

/// The lowest value each state reached over the output rows, and when: a state that goes
/// negative beyond the absolute tolerance usually means the tolerances are too loose for it.
struct NegativeWatch {
  std::size_t states = 0;
  std::vector<double> min_value, min_time;
  void see(double t, std::span<const double> row) {
    if (min_value.empty()) {
      min_value.assign(states, 0.0);
      min_time.assign(states, t);
    }
    for (std::size_t j = 0; j < states && j < row.size(); ++j)
      if (row[j] < min_value[j]) {
        min_value[j] = row[j];
        min_time[j] = t;
      }
  }
};

/// The run in numbers, for the summary line and --stats.
nlohmann::json run_report(const SimulateArgs& s, const exec::Trajectory& traj, double wall_seconds) {
  method::IntegratorStats st = traj.stats;
  const exec::LanePoolStats& cs = traj.cell_stats;
  const bool cells_only = !traj.cell_summary.empty() && st.accepted == 0 && st.rejected == 0;
  if (cells_only)  // no grid part: the numbers are the cells', summed over cells
    st = {cs.accepted, cs.rejected, cs.rhs_evaluations, cs.jacobian_evaluations, cs.factorizations,
          cs.linear_solves};
  nlohmann::json report = {{"file", s.file},
          {"component", s.component},
          {"method", std::string(method::method_info(traj.method).name)},
          {"method_chosen_automatically", s.options.integrator.method == method::MethodId::Auto},
          {"rtol", s.options.integrator.rtol},
          {"atol", s.options.integrator.atol},
          {"return_code", std::string(method::return_code_name(traj.code))},
          {"steps_accepted", st.accepted},
          {"steps_rejected", st.rejected},
          {"rhs_evaluations", st.rhs_evaluations},
          {"jacobian_evaluations", st.jacobian_evaluations},
          {"lu_factorizations", st.factorizations},
          {"linear_solves", st.linear_solves},
          {"events_fired", traj.events_fired},
          {"output_rows", traj.rows},
          {"wall_seconds", wall_seconds},
          {"version", ESI_VERSION}};
  if (!traj.cell_summary.empty())
    report["cells"] = {{"summary", traj.cell_summary},
                       {"cells", cs.cells},
                       {"steps_accepted", cs.accepted},
                       {"steps_rejected", cs.rejected},
                       {"most_steps_in_one_split_step", cs.max_cell_steps},
                       {"lane_slots", cs.lane_slots},
                       {"rhs_lane_evaluations", cs.rhs_evaluations},
                       {"jacobian_lane_evaluations", cs.jacobian_evaluations},
                       {"lu_lane_factorizations", cs.factorizations},
                       {"failed_cells", cs.failed_cells}};
  return report;
}

void print_summary(const nlohmann::json& r) {
  std::fprintf(stderr,
               "esi simulate: %s%s, %ld steps (%ld rejected), %ld RHS, %ld Jacobians, %ld LU, "
               "%zu rows, %.3g s\n",
               r["method"].get<std::string>().c_str(),
               r["method_chosen_automatically"].get<bool>() ? " (chosen by the stiffness test)" : "",
               r["steps_accepted"].get<long>(), r["steps_rejected"].get<long>(),
               r["rhs_evaluations"].get<long>(), r["jacobian_evaluations"].get<long>(),
               r["lu_factorizations"].get<long>(), r["output_rows"].get<std::size_t>(),
               r["wall_seconds"].get<double>());
}

/// Writes `value` as indented JSON to `path` (`what` names the file in messages).
void write_json_output(const std::string& path, const nlohmann::json& value, const char* what) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr)
    throw Error("output_not_writable", path, "",
                std::string("cannot open the ") + what + " for writing: " + std::strerror(errno));
  const std::string text = value.dump(1) + "\n";
  const bool wrote = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (std::fclose(f) != 0 || !wrote)
    throw Error("output_write_failed", path, "", std::string("writing the ") + what + " failed: " + std::strerror(errno));
}

void write_stats(const std::string& path, const nlohmann::json& report) {
  write_json_output(path, report, "--stats file");
}

// ---- the sidecar: OUT.csv.json ----

/// "2026-12-01T19:04:05Z": when the run started, for the record.
std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buf;
}

/// `--output X.nc`: the CF NetCDF-4 writer (io::NetcdfOutput) instead of CSV.
bool is_netcdf_output(const std::string& path) {
  return path.size() > 3 && path.compare(path.size() - 3, 3, ".nc") == 0;
}

/// The NetCDF file's global attributes known before the run (the outcome is added at close).
io::NetcdfOutputOptions netcdf_options(const SimulateArgs& s, const esm::ResolvedDocument& doc,
                                       const std::string& started_at) {
  io::NetcdfOutputOptions o;
  o.document = &doc.doc;
  const auto& io = s.options.integrator;
  const nlohmann::json metadata = doc.doc.value("metadata", nlohmann::json::object());
  if (metadata.is_object() && metadata.contains("name") && metadata["name"].is_string())
    o.provenance["title"] = metadata["name"].get<std::string>();
  o.provenance["history"] = started_at + ": " + s.command_line;
  o.provenance["esi_command_line"] = s.command_line;
  o.provenance["esi_model_file"] = s.file;
  if (!s.component.empty()) o.provenance["esi_component"] = s.component;
  o.provenance["esi_method_requested"] =
      io.method == method::MethodId::Auto ? std::string("auto") : std::string(method::method_info(io.method).name);
  o.provenance["esi_rtol"] = format_number(io.rtol);
  o.provenance["esi_atol"] = format_number(io.atol);
  o.provenance["esi_tspan"] = format_number(s.options.t0) + " " + format_number(s.options.t1);
  o.provenance["esi_saveat"] = format_number(s.options.saveat);
  o.provenance["esi_started_at"] = started_at;
  return o;
}

/// Kind ("state", "observed") and units of every output column, by name; a cell without
/// units of its own takes its array's.
struct ColumnCatalog {
  std::unordered_map<std::string, std::pair<const char*, std::string>> by_name;
  explicit ColumnCatalog(const esm::System& sys) {
    std::unordered_map<std::string, std::string> array_units;
    for (const auto& a : sys.arrays) array_units[a.name] = a.units;
    const auto add = [&](const auto& list, const char* kind) {
      for (const esm::FlatVariable& v : list)
        by_name.emplace(v.name, std::make_pair(kind, v.units.empty() && !v.array.empty() ? array_units[v.array] : v.units));
    };
    add(sys.states, "state");
    add(sys.observed, "observed");
  }
  /// One column's entry; `statistic` "mean" / "var" for an ensemble's columns (a variance is
  /// in the square of the units).
  nlohmann::json column(const std::string& name, const std::string& statistic = "") const {
    const auto it = by_name.find(name);
    const std::string kind = it == by_name.end() ? "unknown" : it->second.first;
    std::string units = it == by_name.end() ? "" : it->second.second;
    nlohmann::json c = {{"name", statistic.empty() ? name : name + "." + statistic}, {"kind", kind}};
    if (statistic == "var" && !units.empty() && units != "1") units = "(" + units + ")^2";
    c["units"] = units;
    if (!statistic.empty()) c["statistic"] = statistic, c["variable"] = name;
    return c;
  }
};

/// What the sidecar says about the run whatever its kind: the document, span, grid, tolerances,
/// every override in command-line order, the inputs, the version and the start time.
nlohmann::json run_metadata(const SimulateArgs& s, const std::string& started_at) {
  nlohmann::json overrides = nlohmann::json::array();
  for (const Override& o : s.sets) {
    nlohmann::json entry = {{"name", o.name}, {"value", o.value}, {"from", o.origin}};
    if (!o.file.empty()) entry["file"] = o.file;
    overrides.push_back(std::move(entry));
  }
  nlohmann::json run = {{"document", s.file},
                        {"component", s.component.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.component)},
                        {"tspan", {s.options.t0, s.options.t1}},
                        {"saveat", s.options.saveat},
                        {"saveat_default", s.default_saveat},
                        {"event_times_added", s.options.sample_times.size()},
                        {"rtol", s.options.integrator.rtol},
                        {"atol", s.options.integrator.atol},
                        {"overrides", std::move(overrides)},
                        {"params_files", s.params_files},
                        {"inputs_file", s.inputs.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.inputs)},
                        {"native", s.options.native},
                        {"esi_version", ESI_VERSION},
                        {"started_at", started_at}};
  if (s.have_dt) run["dt"] = s.options.integrator.dt_initial;
  return run;
}

/// Writes OUT.csv.json next to OUT.csv (never for --output -: there is no file to sit next to).
void write_sidecar(const SimulateArgs& s, nlohmann::json columns, nlohmann::json run) {
  if (s.output == "-") return;
  write_json_output(s.output + ".json", {{"csv", s.output}, {"columns", std::move(columns)}, {"run", std::move(run)}},
                    "sidecar file");
}

/// The CSV of a stochastic run: one path (member 0) like a deterministic run, `X.mean` /
/// `X.var` columns for an ensemble, or every member with a leading `member` column.
void write_stochastic_csv(CsvWriter& csv, const SimulateArgs& s, const exec::EnsembleResult& r) {
  const std::size_t C = r.names.size(), T = r.times.size();
  if (s.members) {
    std::vector<std::string> names{"t"};
    names.insert(names.end(), r.names.begin(), r.names.end());
    csv.header(names, "member");
    std::vector<double> row(C + 1);
    for (std::size_t m = 0; m < r.members; ++m)
      for (std::size_t k = 0; k < T; ++k) {
        row[0] = r.times[k];
        for (std::size_t j = 0; j < C; ++j) row[j + 1] = r.value(m, k, j);
        csv.row(static_cast<double>(m), row);
      }
    return;
  }
  if (s.ensemble == 0) {
    csv.header(r.names);
    for (std::size_t k = 0; k < T; ++k) csv.row(r.times[k], std::span<const double>(&r.values[k * C], C));
    return;
  }
  std::vector<std::string> names;
  for (const std::string& n : r.names) {
    names.push_back(n + ".mean");
    names.push_back(n + ".var");
  }
  csv.header(names);
  std::vector<double> row(2 * C);
  for (std::size_t k = 0; k < T; ++k) {
    for (std::size_t j = 0; j < C; ++j) {
      row[2 * j] = r.mean[k * C + j];
      row[2 * j + 1] = r.variance[k * C + j];
    }
    csv.row(r.times[k], row);
  }
}

int run_stochastic(SimulateArgs& s, const esm::System& system, const esm::ResolvedDocument& doc) {
  const bool sde = std::any_of(system.parameters.begin(), system.parameters.end(),
                               [](const esm::FlatVariable& v) { return v.cadence == esm::Cadence::Brownian; });
  if (sde && s.options.integrator.method != method::MethodId::Auto)
    return usage_error("simulate", "--method " + std::string(method::method_info(s.options.integrator.method).name) +
                                       " is an ODE method; this model is an SDE: use EulerMaruyama, Milstein or SRA1");
  if (!sde && s.sde_method)
    return usage_error("simulate", "--method " + std::string(method::sde_method_info(*s.sde_method).name) +
                                       " is an SDE method; this model has no Wiener parameter (its sampled "
                                       "parameters make each member an ODE)");
  if (is_netcdf_output(s.output))
    throw Error("unsupported_output_format", s.output, "",
                "NetCDF output of stochastic models (paths, ensembles, members) is not written yet; "
                "use --output FILE.csv");
  exec::StochasticOptions o;
  o.t0 = s.options.t0;
  o.t1 = s.options.t1;
  o.saveat = s.options.saveat;
  o.dt = s.have_dt ? s.options.integrator.dt_initial : 0;
  o.method = s.sde_method;
  o.integrator = s.options.integrator;
  o.seed = s.seed;
  o.native = s.options.native;
  o.members = std::max<std::size_t>(1, s.ensemble);
  o.threads = s.threads;
  o.document = &doc;
  if (!s.have_seed && !s.quiet)
    std::fprintf(stderr, "esi simulate: the model is stochastic; using --seed 0 (give --seed S to choose)\n");
  CsvWriter csv(s.output);
  exec::EnsembleResult r;
  const std::string started_at = utc_now();
  const auto started = std::chrono::steady_clock::now();
  try {
    r = exec::simulate_ensemble(system, o);
    write_stochastic_csv(csv, s, r);
  } catch (const Error& e) {
    if (e.diagnostic().code != "output_write_failed") csv.discard();
    throw;
  }
  csv.close();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const nlohmann::json report = {
      {"file", s.file},
      {"component", s.component},
      {"kind", r.sde ? "sde" : "ode_members"},
      {"method", r.sde ? std::string(method::sde_method_info(r.method).name)
                       : std::string(method::method_info(s.options.integrator.method).name)},
      {"seed", s.seed},
      {"members", r.members},
      {"threads", s.threads},
      {"steps_per_member", r.steps},
      {"output_rows", r.times.size()},
      {"failure", r.failure},
      {"wall_seconds", wall},
      {"version", ESI_VERSION}};
  {
    const ColumnCatalog catalog(system);
    nlohmann::json columns = nlohmann::json::array();
    if (s.members) columns.push_back({{"name", "member"}, {"kind", "member"}, {"units", ""}});
    columns.push_back({{"name", "t"}, {"kind", "time"}, {"units", "s"}});
    for (const std::string& n : r.names) {
      if (s.ensemble > 0 && !s.members) {
        columns.push_back(catalog.column(n, "mean"));
        columns.push_back(catalog.column(n, "var"));
      } else {
        columns.push_back(catalog.column(n));
      }
    }
    nlohmann::json run = run_metadata(s, started_at);
    for (const char* key : {"kind", "method", "seed", "members", "output_rows", "failure"}) run[key] = report[key];
    const bool given = r.sde ? s.sde_method.has_value() : s.options.integrator.method != method::MethodId::Auto;
    run["method_choice"] = given ? "given with --method"
                           : r.sde ? "chosen from the noise's structure (SRA1 additive, Milstein diagonal, else "
                                     "EulerMaruyama)"
                                   : "each member is an ODE; auto: the stiffness test picks Tsit5 or Rodas5P";
    run["wall_seconds"] = wall;
    write_sidecar(s, std::move(columns), std::move(run));
  }
  if (!s.stats.empty()) write_stats(s.stats, report);
  if (!s.quiet)
    std::fprintf(stderr, "esi simulate: %s %s, seed %s, %zu member%s, %llu steps each, %u thread%s, %.3g s\n",
                 r.sde ? "SDE" : "ODE members,", report["method"].get<std::string>().c_str(),
                 std::to_string(s.seed).c_str(), r.members, r.members == 1 ? "" : "s",
                 static_cast<unsigned long long>(r.steps), s.threads, s.threads == 1 ? "" : "s", wall);
  if (!r.failure.empty()) {
    std::fprintf(stderr, "%s: error[solve_failed]: %s\n", s.file.c_str(), r.failure.c_str());
    return kExitInvalid;
  }
  return kExitOk;
}

}  // namespace

void print_simulate_help(std::FILE* out) {
  std::fputs(
      "usage: esi simulate FILE [--component NAME] --tspan T0 T1 [--saveat DT] [--method M]\n"
      "                    [--rtol R] [--atol A] [--dt DT] [--native] [--cells] [--set name=value ...]\n"
      "                    [--params FILE] [--inputs FILE.json] [--stats FILE.json] [--quiet]\n"
      "                    --output OUT.csv\n"
      "                    [--seed S] [--ensemble N [--members]] [--threads T]   (stochastic)\n"
      "\n"
      "Flattens FILE (or only component NAME), integrates from T0 to T1 with events and writes\n"
      "CSV: a `t` column, then one column per state and observed quantity (plain names); one\n"
      "row per output time (T0, every multiple of DT, T1), written as the run reaches it.\n"
      "Next to OUT.csv goes OUT.csv.json: per column its units (as the document declares them;\n"
      "t in s) and kind (time, state, observed), and the run: document, component, method and\n"
      "how it was chosen, rtol / atol, span and output interval, every --set / --params override\n"
      "in command-line order, the --inputs file, esi version, start time (UTC), return code.\n"
      "\n"
      "  --output F   the CSV file, or - for standard output (then no sidecar is written: the\n"
      "               units and metadata go nowhere); numbers in their shortest round-trip form.\n"
      "               F ending in .nc: CF NetCDF-4 instead (no sidecar): one variable per scalar\n"
      "               and per array (dims time, then the array's axes reversed: C.x[i,j,k] is\n"
      "               C_x[time, k, j, i]; '.' in names becomes '_', the flat name is in the\n"
      "               esm_name attribute), units, a CF time axis (seconds since 1970-01-01),\n"
      "               coordinates from the document's `coordinates` registry or 1-based indices,\n"
      "               the run's provenance as global attributes; compressed, one record per\n"
      "               output time. Written as F.partial and renamed to F when the run ends, so a\n"
      "               killed run never leaves a corrupt F (Ctrl-C still gives a valid F)\n"
      "  --saveat DT  output interval (> 0); at most 10000000 rows ((T1 - T0) / DT) per run.\n"
      "               Default: (T1 - T0) / 100, i.e. 101 evenly spaced rows including T0 and\n"
      "               T1, plus a row at each preset event time (discrete events with\n"
      "               preset_times) inside the span, showing the value after the event\n"
      "  --method M   a method name (Tsit5, Rodas5P, CVODE_BDF, ...) or auto (default);\n"
      "               CVODE_BDF is SUNDIALS' CVODE (BDF), in builds that found it\n"
      "  --rtol R     relative tolerance (default 1e-6); --atol A absolute (default 1e-8);\n"
      "               finite, >= 0, not both 0\n"
      "  --dt DT      the step (> 0) of fixed-step methods (Euler, RK4, ...); the first step of\n"
      "               others\n"
      "  --cells      arrays as one equation per cell (the reference form) also for explicit\n"
      "               methods; without it an explicit method runs them as per-region programs,\n"
      "               whose size does not grow with the grid (implicit methods always use cells)\n"
      "  --threads T  gridded models: cells of the lane pools and the grid right-hand side\n"
      "               (split from them or not) on T threads (same bits for any T)\n"
      "  --lanes L    cells integrated side by side per block (1, 2, 4, 8, 16 default, 32, 64)\n"
      "  --split-step S  gridded models with lane pools: Lie-split the grid part and the cells\n"
      "               every S seconds (default: at every output time)\n"
      "  --transport-method M  the explicit method of the grid part beside lane pools (default\n"
      "               SSPRK43)\n"
      "\n"
      "A gridded model whose tendencies have a pointwise part (chemistry lifted onto the grid)\n"
      "run with a Rosenbrock method or auto (default Rodas3) integrates that part on lane pools:\n"
      "every cell with its own step size and controller, many cells per block, on --threads;\n"
      "the rest (transport) with --transport-method; the two are Lie-split. --cells disables it.\n"
      "\n"
      "  --native     run the model as compiled C++ (cached in $ESI_CACHE_DIR or ~/.cache/esi);\n"
      "               the same numbers as without, faster on long runs; without a working\n"
      "               compiler the run uses the interpreter and says so on stderr\n"
      "  --set n=v    override parameter n, or the initial value of state n (repeatable); for\n"
      "               an array, every cell (one cell: --set 'C.x[2,1]=v')\n"
      "  --params F   many --set at once: a JSON object {\"name\": number, ...} or CSV rows\n"
      "               name,value (an optional header row name,value; blank lines and # comments\n"
      "               skipped; quote a name holding a comma: \"C.x[2,1]\",0.5); JSON when F ends\n"
      "               in .json or starts with {. Repeatable; with --set, the override given\n"
      "               later on the command line wins. A malformed file is an error naming the\n"
      "               file and the JSON pointer or CSV line (exit 1)\n"
      "  --inputs F   a JSON object of values by name: a number, or for an array a nested\n"
      "               array in its shape (first axis outermost); constant data and forcing\n"
      "               fields the document reads from files it cannot open yet\n"
      "  --stats F    write the run's numbers (method, steps, rejections, RHS / Jacobian / LU\n"
      "               counts, wall time) as JSON to F; the same summary goes to stderr as one\n"
      "               line unless --quiet (-q)\n"
      "\n"
      "Stochastic models (a parameter with update kind wiener makes an SDE; one with a\n"
      "distribution and no update is drawn once per member) run on a fixed step (--dt, default\n"
      "(T1 - T0) / 1000) with --method EulerMaruyama, Milstein or SRA1 (default: SRA1 for\n"
      "additive noise, Milstein for diagonal noise, else EulerMaruyama):\n"
      "  --seed S      keys every random number (default 0): the same seed gives the same bits\n"
      "                on any thread count\n"
      "  --ensemble N  run N members and write, per output time, X.mean and X.var (unbiased)\n"
      "                of every column; --members writes every member instead (a leading\n"
      "                `member` column)\n"
      "  --threads T   members run on T threads (default 1)\n"
      "\n"
      "Every number must be finite. A state, observed or derivative that is not finite ends the\n"
      "run (rows up to then are kept) with a message naming it and the time.\n"
      "\n"
      "exit status: 0 ok, 1 invalid input, failed solve or failed write, 2 usage error,\n"
      "             130 interrupted (Ctrl-C or SIGTERM: the rows reached are kept, the CSV or\n"
      "                 NetCDF file is valid)\n",
      out);
}

int run_simulate(Args args) {
  SimulateArgs s;
  if (const int rc = parse_args(args, s); rc != kExitOk) return rc < 0 ? kExitOk : rc;
  s.command_line = "esi simulate";
  for (const std::string& a : args) s.command_line += " " + a;
  try {
    const std::optional<esm::ResolvedDocument> loaded = load_or_report(s.file);
    if (!loaded) return kExitInvalid;
    const esm::ResolvedDocument& doc = *loaded;
    esm::FlattenOptions fo;
    fo.component = s.component;
    // Arrays become per-region programs (whose size does not grow with the grid) when the
    // method needs no Jacobian; an implicit method gets one equation per cell, which the
    // symbolic Jacobian is built from.
    const method::MethodId requested = s.options.integrator.method;
    const bool explicit_method =
        requested != method::MethodId::Auto && !method::method_info(requested).needs_jacobian;
    const bool rosenbrock_or_auto =
        requested == method::MethodId::Auto || method::is_rosenbrock(requested);
    fo.grid = !s.cells && (explicit_method || rosenbrock_or_auto);
    if (!s.inputs.empty()) {
      fo.inputs = read_json_file(s.inputs);
      fo.inputs_file = s.inputs;
      if (!fo.inputs.is_object())
        throw Error("invalid_inputs", s.inputs, "",
                    "an inputs file holds one JSON object: variable name -> number or nested array");
    }
    esm::System probe = esm::flatten(doc, fo);
    // A stiff or automatic method on a gridded model: the pointwise part (lifted chemistry)
    // runs on lane pools with one controller per cell, the rest with an explicit method.
    // Without a separable pointwise part, implicit methods get one equation per cell.
    std::string no_split;
    if (fo.grid && !explicit_method) {
      const bool has_events = !probe.events.empty();
      if (has_events) no_split = "the model has events, which split runs do not apply yet";
      if (!probe.grid.empty() && !has_events && exec::split_pointwise(probe, no_split)) {
        exec::SimulateOptions::CellSplit split;
        split.cells.method = requested == method::MethodId::Auto ? method::MethodId::Rodas3 : requested;
        split.cells.rtol = s.options.integrator.rtol;
        split.cells.atol = {s.options.integrator.atol};
        split.cells.threads = static_cast<int>(s.threads);
        split.cells.lanes = s.lanes;
        split.step = s.split_step;
        s.options.cell_split = split;
        s.options.integrator.method = s.transport_method.value_or(method::MethodId::SSPRK43);
      } else {
        if (!probe.grid.empty() && !s.quiet)
          std::fprintf(stderr, "esi simulate: note: no lane pools (%s); arrays run as one equation per cell\n",
                       no_split.c_str());
        fo.grid = false;
        if (!probe.arrays.empty()) probe = esm::flatten(doc, fo);
      }
    }
    for (const Override& o : s.sets) {
      if (esm::names_array(probe, o.name)) {  // every cell of an array
        fo.inputs[o.name] = o.value;
        continue;
      }
      check_set_name(probe, doc.doc, o);
      (names_state(probe, o.name) ? fo.initial_conditions : fo.parameter_overrides)[flat_target(probe, o.name)] =
          o.value;
    }
    const esm::System system = s.sets.empty() ? probe : esm::flatten(doc, fo);
    s.options.document = &doc;
    s.options.threads = s.threads;
    if (exec::is_stochastic(system)) return run_stochastic(s, system, doc);
    if (s.default_saveat) s.options.sample_times = preset_event_times(system, s.options.t0, s.options.t1);
    if ((s.ensemble > 0 || s.members || s.sde_method) && !s.quiet)
      std::fprintf(stderr, "esi simulate: the model has no random parameters; --ensemble, --members and "
                           "SDE methods do not apply and are ignored\n");

    // Opened before the solve, so an unwritable path fails now rather than after a long run.
    // `--output X.nc`: CF NetCDF-4 written under X.nc.partial and renamed at the end.
    const std::string started_at = utc_now();
    std::optional<CsvWriter> csv;
    std::optional<io::NetcdfOutput> netcdf;
    if (is_netcdf_output(s.output)) netcdf.emplace(s.output, system, netcdf_options(s, doc, started_at));
    else csv.emplace(s.output);
    NegativeWatch negatives{system.states.size(), {}, {}};
    std::vector<std::string> column_names;
    s.options.on_columns = [&](const std::vector<std::string>& names) {
      if (netcdf) netcdf->define(names);
      else csv->header(names);
      column_names = names;
    };
    s.options.on_row = [&](double t, std::span<const double> row) {
      if (netcdf) netcdf->write(t, row);
      else csv->row(t, row);
      negatives.see(t, row);
    };
    exec::Trajectory traj;
    const auto started = std::chrono::steady_clock::now();
    // A progress line on a terminal for runs longer than a second (model time, share of the
    // span, wall time, an estimate of what is left), redrawn at most 5 times a second.
    const bool terminal = !s.quiet && ::isatty(STDERR_FILENO) != 0;
    bool progress_shown = false;
    auto last_draw = std::chrono::steady_clock::now();
    if (terminal)
      s.options.on_step = [&, span = s.options.t1 - s.options.t0](double t) {
        const auto now = std::chrono::steady_clock::now();
        const double wall = std::chrono::duration<double>(now - started).count();
        if (wall < 1.0 || std::chrono::duration<double>(now - last_draw).count() < 0.2) return;
        last_draw = now;
        const double done = span > 0 ? (t - s.options.t0) / span : 1.0;
        const double left = done > 0 ? wall * (1.0 - done) / done : 0.0;
        std::fprintf(stderr, "\resi simulate: t = %s of %s (%.1f%%), %.1f s, about %.0f s left   ",
                     format_number(t).c_str(), format_number(s.options.t1).c_str(), 100.0 * done, wall, left);
        std::fflush(stderr);
        progress_shown = true;
      };
    try {
      InterruptScope interrupt;
      s.options.stop = &g_interrupted;
      traj = exec::simulate(system, s.options);
    } catch (const Error& e) {
      if (netcdf) netcdf->discard();  // no NetCDF file rather than one the run did not finish
      else if (e.diagnostic().code != "output_write_failed") csv->discard();
      throw;
    }
    if (progress_shown) std::fprintf(stderr, "\r\033[K");  // clear the progress line
    if (csv) csv->close();
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    const nlohmann::json report = run_report(s, traj, wall);
    if (netcdf) {  // the outcome goes into the file's global attributes; no sidecar
      netcdf->set_attribute("esi_method", report["method"].get<std::string>());
      netcdf->set_attribute("esi_return_code", report["return_code"].get<std::string>());
      if (!traj.ok()) netcdf->set_attribute("esi_failure", traj.message);
      netcdf->set_attribute("esi_run", report.dump());
      netcdf->close();
    } else if (s.output != "-") {
      const ColumnCatalog catalog(system);
      nlohmann::json columns = nlohmann::json::array({{{"name", "t"}, {"kind", "time"}, {"units", "s"}}});
      for (const std::string& n : column_names) columns.push_back(catalog.column(n));
      nlohmann::json run = run_metadata(s, started_at);
      run["method"] = report["method"];
      run["method_choice"] = report["method_chosen_automatically"].get<bool>()
                                 ? "chosen by the stiffness test at T0 (the Jacobian's spectral radius times "
                                   "the span): Tsit5 when not stiff, Rodas5P when stiff"
                                 : "given with --method";
      for (const char* key : {"return_code", "output_rows", "steps_accepted", "steps_rejected", "events_fired",
                              "wall_seconds"})
        run[key] = report[key];
      if (!traj.ok()) run["failure"] = traj.message;
      write_sidecar(s, std::move(columns), std::move(run));
    }
    if (!s.stats.empty()) write_stats(s.stats, report);
    if (!s.quiet) print_summary(report);
    if (!s.quiet && !traj.grid_summary.empty())
      std::fprintf(stderr, "esi simulate: arrays ran as per-region programs: %s\n", traj.grid_summary.c_str());
    if (!s.quiet && !traj.cell_summary.empty()) {
      const exec::LanePoolStats& cs = traj.cell_stats;
      const double cells = static_cast<double>(std::max<std::size_t>(1, cs.cells));
      std::fprintf(stderr,
                   "esi simulate: lane pools: %s; %.1f steps per cell (most %ld), %ld rejected, "
                   "%.0f%% of lane slots used%s\n",
                   traj.cell_summary.c_str(), double(cs.accepted + cs.rejected) / cells, cs.max_cell_steps,
                   cs.rejected,
                   cs.lane_slots > 0 ? 100.0 * double(cs.accepted + cs.rejected) / double(cs.lane_slots) : 100.0,
                   s.options.cell_split && s.options.cell_split->step > 0
                       ? (", Lie-split every " + format_number(s.options.cell_split->step) + " s").c_str()
                       : ", split at every output time");
    }
    // One line per state up to a few, then a count: a gridded run has thousands of cells.
    std::size_t negative = 0;
    for (std::size_t j = 0; j < negatives.min_value.size(); ++j)
      if (negatives.min_value[j] < -s.options.integrator.atol && ++negative <= 5)
        std::fprintf(stderr,
                     "esi simulate: warning: %s went negative (%s at t = %s), beyond --atol %s; "
                     "if it is a concentration, tighten --rtol / --atol\n",
                     system.states[j].name.c_str(), format_number(negatives.min_value[j]).c_str(),
                     format_number(negatives.min_time[j]).c_str(),
                     format_number(s.options.integrator.atol).c_str());
    if (!traj.held_data.empty()) {
      std::string list;
      for (std::size_t k = 0; k < traj.held_data.size() && k < 6; ++k) list += (k ? ", " : "") + traj.held_data[k];
      if (traj.held_data.size() > 6) list += " and " + std::to_string(traj.held_data.size() - 6) + " more";
      std::fprintf(stderr,
                   "esi simulate: note: %zu parameter(s) the document reads from data sources (%s) were "
                   "held at their given values: esi simulate reads no data files (set them with "
                   "--set or --inputs, or read them from NetCDF as forcing in an esi run configuration)\n",
                   traj.held_data.size(), list.c_str());
    }
    if (negative > 5)
      std::fprintf(stderr, "esi simulate: warning: %zu more states went negative\n", negative - 5);
    if (s.options.native && traj.native_status.rfind("native", 0) != 0)
      std::fprintf(stderr, "esi simulate: warning: --native was requested, but the run used the interpreter: %s\n",
                   traj.native_status.empty() ? "the model has no states; nothing to compile"
                                              : traj.native_status.c_str());
    if (!traj.ok()) {
      // The message starts with the return code's name and the time it stopped.
      const std::string last = traj.rows > 0 ? "last output at t = " + format_number(traj.last_time)
                                             : std::string("no output rows written");
      if (traj.code == method::ReturnCode::Interrupted) {
        std::fprintf(stderr, "esi simulate: interrupted (%s); the rows reached are in the output\n",
                     last.c_str());
        return kExitInterrupted;
      }
      std::fprintf(stderr, "%s: error[solve_failed]: the run stopped (%s): %s\n", s.file.c_str(),
                   last.c_str(), traj.message.c_str());
      // A relative tolerance near the double precision unit roundoff cannot be met: steps
      // shrink until max_steps or dt_min. Say so instead of leaving the modeller to guess.
      const auto& io = s.options.integrator;
      if ((traj.code == method::ReturnCode::MaxSteps || traj.code == method::ReturnCode::DtBelowMin) &&
          io.rtol < 1e-13)
        std::fprintf(stderr,
                     "esi simulate: hint: --rtol %s asks for more accuracy than double precision "
                     "gives (about 1e-16 relative); try --rtol 1e-12 or looser\n",
                     format_number(io.rtol).c_str());
      return kExitInvalid;
    }
    return kExitOk;
  } catch (const Error& e) {
    Diagnostic d = e.diagnostic();
    if (d.file.empty()) d.file = s.file;
    std::fprintf(stderr, "%s\n", format_diagnostic(d).c_str());
    return kExitInvalid;
  }
}

}  // namespace esi::cli

#endif  // ESI_HAVE_EXEC
