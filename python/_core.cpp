// esi._core: the C++ side of the Python module (python/esi/__init__.py builds the xarray
// datasets and the friendly signatures on top of it).
//
// Everything a call computes goes through the same library functions as the `esi` command
// (exec::flatten_for_run, exec::simulate, io::output_layout, check::check_file), so a run from
// Python gives the CLI's numbers bit for bit. The GIL is released while esi computes; a
// Ctrl-C (KeyboardInterrupt) stops a run after the step in progress, as it does on the
// command line. esi::Error becomes esi.EsmError with the diagnostic's code, file, pointer and
// message.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "esi/check/check.hpp"
#include "esi/core/error.hpp"
#include "esi/drive/analyze.hpp"
#include "esi/drive/run.hpp"
#include "esi/esm/flatten.hpp"
#include "esi/esm/load.hpp"
#include "esi/exec/gradient.hpp"
#include "esi/exec/loss_file.hpp"
#include "esi/exec/prepare.hpp"
#include "esi/exec/simulate.hpp"
#include "esi/exec/stochastic.hpp"
#include "esi/exec/sweep.hpp"
#include "esi/io/output_layout.hpp"
#include "esi/method/integrator.hpp"
#include "esi/method/sde.hpp"

namespace py = pybind11;

namespace {

/// JSON to Python through the json module: the shapes `describe` and the check report have are
/// plain dicts and lists.
py::object to_python(const nlohmann::json& j) {
  return py::module_::import("json").attr("loads")(
      j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

py::dict diagnostic_dict(const esi::Diagnostic& d) {
  py::dict out;
  out["code"] = d.code;
  out["file"] = d.file;
  out["pointer"] = d.pointer;
  out["message"] = d.message;
  return out;
}

/// A loaded document: the resolved JSON and the system flattened whole (for its variables);
/// runs flatten again with their own choices (overrides, the form the method needs).
struct Document {
  esi::esm::ResolvedDocument doc;
  esi::esm::System system;
};

std::shared_ptr<Document> load(const std::string& path) {
  auto d = std::make_shared<Document>();
  {
    py::gil_scoped_release unlocked;
    esi::esm::CheckedDocument checked = esi::esm::load_checked(path);
    if (!checked.doc) {
      std::vector<esi::Diagnostic> shown = checked.report.shown();
      esi::Diagnostic first = shown.empty()
                                  ? esi::Diagnostic{"invalid_document", path, "", "refused", {}}
                                  : shown.front();
      if (first.file.empty()) first.file = path;
      std::string message = first.message;
      if (shown.size() > 1)
        message += " (and " + std::to_string(shown.size() - 1) + " more finding" +
                   (shown.size() > 2 ? "s" : "") + "; esi.validate lists them all)";
      throw esi::Error(first.code, first.file, first.pointer, message);
    }
    d->doc = std::move(*checked.doc);
    if (d->doc.library_only)
      throw esi::Error(
          "no_component", path, "",
          "the file is a library or catalog (templates, couplings or data sources): it "
          "holds no model to run");
    d->system = esi::esm::flatten(d->doc);
  }
  return d;
}

py::list validate(const std::string& path) {
  esi::esm::ValidationReport report;
  {
    py::gil_scoped_release unlocked;
    report = esi::esm::validate_file(path);
  }
  py::list out;
  const auto add = [&](const esi::Diagnostic& d, const char* severity) {
    py::dict f = diagnostic_dict(d);
    if (f["file"].cast<std::string>().empty()) f["file"] = path;
    f["severity"] = severity;
    out.append(f);
  };
  for (const esi::Diagnostic& d : report.shown()) add(d, "error");
  for (const esi::Diagnostic& d : report.notes) add(d, "note");
  return out;
}

py::list variables(const Document& d) {
  const esi::esm::System& sys = d.system;
  py::list out;
  const auto add = [&](const esi::esm::FlatVariable& v, const char* kind) {
    py::dict e;
    e["name"] = v.name;
    e["kind"] = kind;
    e["units"] = v.units;
    e["description"] = v.description;
    e["default"] =
        v.default_value ? py::object(py::float_(*v.default_value)) : py::object(py::none());
    e["array"] = v.array;
    out.append(e);
  };
  sys.states.for_each_stored(
      [&](std::size_t, const esi::esm::FlatVariable& v) { add(v, "state"); });
  for (const auto& v : sys.parameters) add(v, "parameter");
  for (const auto& v : sys.observed) add(v, "observed");
  return out;
}

esi::method::MethodId method_named(const std::string& name) {
  if (name.empty() || name == "auto") return esi::method::MethodId::Auto;
  if (const auto id = esi::method::method_from_name(name)) return *id;
  std::string known;
  for (esi::method::MethodId id : esi::method::all_methods())
    known += (known.empty() ? "" : ", ") + std::string(esi::method::method_label(id));
  throw esi::Error("unknown_method", "", "",
                   "method '" + name + "' is not one esi has; known: auto, " + known);
}

/// The layout of the output columns as plain Python data (python/esi/__init__.py turns it into
/// xarray variables and coordinates).
py::dict layout_dict(const esi::io::OutputLayout& l) {
  py::dict out;
  out["time"] = l.time;
  py::list dims;
  for (const auto& d : l.dimensions) dims.append(py::make_tuple(d.name, d.axis, d.extent));
  out["dimensions"] = dims;
  const auto attributes = [](const esi::io::Attributes& a) {
    py::list items;
    for (const auto& [k, v] : a) items.append(py::make_tuple(k, v));
    return items;
  };
  py::list coords;
  for (const auto& c : l.coordinates) {
    py::dict e;
    e["name"] = c.name;
    e["dims"] = c.dims;
    e["own_dimension"] = c.own_dimension;
    if (!c.strings.empty())
      e["values"] = c.strings;
    else if (!c.indices.empty())
      e["values"] = py::array_t<long long>(py::ssize_t(c.indices.size()), c.indices.data());
    else
      e["values"] = py::array_t<double>(py::ssize_t(c.numbers.size()), c.numbers.data());
    e["attributes"] = attributes(c.attributes);
    coords.append(e);
  }
  out["coordinates"] = coords;
  py::list vars;
  for (const auto& v : l.variables) {
    py::dict e;
    e["name"] = v.name;
    e["flat"] = v.flat;
    e["dims"] = v.dims;
    e["gather"] = py::array_t<std::ptrdiff_t>(py::ssize_t(v.gather.size()), v.gather.data());
    e["attributes"] = attributes(v.attributes);
    vars.append(e);
  }
  out["variables"] = vars;
  return out;
}

struct SimulateRequest {
  double t0 = 0, t1 = 0;
  std::optional<double> saveat;
  std::string method = "auto";
  double rtol = 1e-6;
  std::optional<double> atol;
  std::vector<std::pair<std::string, double>> set;
  py::object inputs = py::none();  // dict or None
  std::string inputs_file;
  unsigned threads = 1;
  std::string component;
  bool native = false;
  std::uint64_t seed = 0;    ///< stochastic models: keys every random number
  std::optional<double> dt;  ///< stochastic models: the SDE step
};

/// Runs exec::simulate with the GIL released; every ~0.1 s of wall time it takes the GIL to
/// look for a pending signal (Ctrl-C), and stops the run after the step in progress if so.
class InterruptWatch {
 public:
  /// The flag a run stops on (SimulateOptions::stop, RunCallbacks::stop).
  const std::atomic<bool>* flag() const { return &stop_; }
  /// Called after every step: at most every 0.1 s takes the GIL and looks for a signal.
  void poll() {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    py::gil_scoped_acquire locked;
    if (PyErr_CheckSignals() != 0) {
      error_ = std::make_unique<py::error_already_set>();
      stop_ = true;
    }
  }
  void arm(esi::exec::SimulateOptions& o) {
    o.stop = flag();
    o.on_step = [this](double) { poll(); };
  }
  /// Stops the run and keeps `e` (an exception of a Python callback, caught with the GIL held)
  /// to raise afterwards.
  void fail_with(std::exception_ptr e) {
    if (!callback_error_) callback_error_ = e;
    stop_ = true;
  }
  /// Raises the KeyboardInterrupt (or whatever the signal handler or a callback raised) after
  /// the run.
  void rethrow() {
    if (callback_error_) {
      std::exception_ptr e = callback_error_;
      callback_error_ = nullptr;
      std::rethrow_exception(e);
    }
    if (error_) {
      py::error_already_set e = std::move(*error_);
      error_.reset();
      throw e;
    }
  }

 private:
  std::atomic<bool> stop_{false};
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
  std::unique_ptr<py::error_already_set> error_;
  std::exception_ptr callback_error_;
};

/// The options and choices of a request: the command line's defaults (esi simulate) where the
/// caller gives none: a hundredth of the span, tolerances that respect each state's scale.
struct Prepared {
  esi::exec::SimulateOptions options;
  esi::exec::RunChoices choices;
  bool default_saveat = false;
};

Prepared prepare(const SimulateRequest& r) {
  Prepared p;
  esi::exec::SimulateOptions& o = p.options;
  o.t0 = r.t0;
  o.t1 = r.t1;
  p.default_saveat = !r.saveat;
  o.saveat = r.saveat ? *r.saveat : esi::exec::default_saveat(r.t0, r.t1);
  o.integrator.method = esi::method::sde_method_from_name(r.method)
                            ? esi::method::MethodId::Auto  // the stochastic path reads r.method
                            : method_named(r.method);
  o.integrator.rtol = r.rtol;
  o.atol_from_scales = !r.atol;
  if (r.atol) o.integrator.atol = *r.atol;
  o.native = r.native;
  o.threads = std::max(1u, r.threads);
  if (!(r.t1 > r.t0))
    throw esi::Error("invalid_time_span", "", "", "tspan must be (t0, t1) with t1 > t0");
  if (r.saveat && !(*r.saveat > 0))
    throw esi::Error("invalid_saveat", "", "", "saveat must be positive");
  if (o.integrator.rtol < 0 || o.integrator.atol < 0)
    throw esi::Error("invalid_tolerance", "", "", "rtol and atol must not be negative");
  esi::exec::RunChoices& c = p.choices;
  c.component = r.component;
  c.typed_at = "<arguments>";
  if (!r.inputs.is_none()) {
    c.inputs = nlohmann::json::parse(
        py::module_::import("json").attr("dumps")(r.inputs).cast<std::string>());
    c.inputs_file = r.inputs_file;
  }
  for (const auto& [name, value] : r.set)
    c.overrides.push_back({name, value, "set['" + name + "']", "", ""});
  return p;
}

py::dict stats_dict(const esi::method::IntegratorStats& s) {
  py::dict out;
  out["accepted"] = s.accepted;
  out["rejected"] = s.rejected;
  out["rhs_evaluations"] = s.rhs_evaluations;
  out["jacobian_evaluations"] = s.jacobian_evaluations;
  out["factorizations"] = s.factorizations;
  out["linear_solves"] = s.linear_solves;
  return out;
}

/// exec::simulate_ensemble as `esi simulate` runs stochastic models (--seed, --ensemble): an
/// SDE (a Wiener parameter) or ODE members with parameters drawn per member. Call without the
/// GIL.
esi::exec::EnsembleResult run_ensemble(const Document& d, const SimulateRequest& r,
                                       const esi::exec::SimulateOptions& o,
                                       const esi::esm::System& system, std::size_t members) {
  const bool sde =
      std::any_of(system.parameters.begin(), system.parameters.end(),
                  [](const auto& v) { return v.cadence == esi::esm::Cadence::Brownian; });
  const std::optional<esi::method::SdeMethod> sde_method =
      esi::method::sde_method_from_name(r.method);
  if (sde && o.integrator.method != esi::method::MethodId::Auto)
    throw esi::Error(
        "invalid_method", d.doc.file, "",
        "method '" + r.method +
            "' is an ODE method; this model is an SDE: use EulerMaruyama, Milstein or SRA1");
  if (!sde && sde_method)
    throw esi::Error("invalid_method", d.doc.file, "",
                     "method '" + r.method +
                         "' is an SDE method; this model has no Wiener parameter (its sampled "
                         "parameters make each member an ODE)");
  esi::exec::StochasticOptions so;
  so.t0 = o.t0;
  so.t1 = o.t1;
  so.saveat = o.saveat;
  so.dt = r.dt ? *r.dt : 0;
  so.method = sde_method;
  so.integrator = o.integrator;
  so.seed = r.seed;
  so.native = o.native;
  so.members = members;
  so.threads = o.threads;
  so.document = &d.doc;
  return esi::exec::simulate_ensemble(system, so);
}

/// A stochastic run's values for python/esi/__init__.py: `values` members x rows x columns (one
/// path: rows x columns), `mean` and `variance` rows x columns.
py::dict ensemble_dict(const esi::exec::EnsembleResult& e, const esi::io::OutputLayout& layout,
                       const SimulateRequest& r, const esi::method::IntegratorOptions& integrator,
                       bool one_path) {
  py::dict out;
  const std::size_t rows = e.times.size(), cols = e.names.size();
  out["times"] = py::array_t<double>(py::ssize_t(rows), e.times.data());
  std::vector<py::ssize_t> shape{py::ssize_t(rows), py::ssize_t(cols)};
  if (!one_path) shape.insert(shape.begin(), py::ssize_t(e.members));
  py::array_t<double> values(shape);
  std::copy(e.values.begin(),
            e.values.begin() + std::ptrdiff_t((one_path ? 1 : e.members) * rows * cols),
            values.mutable_data());
  out["values"] = values;
  if (!one_path) {
    py::array_t<double> stats({py::ssize_t(2), py::ssize_t(rows), py::ssize_t(cols)});
    std::copy(e.mean.begin(), e.mean.end(), stats.mutable_data());
    std::copy(e.variance.begin(), e.variance.end(), stats.mutable_data() + rows * cols);
    out["statistics"] = stats;
  }
  out["names"] = e.names;
  out["layout"] = layout_dict(layout);
  out["method"] = e.sde ? std::string(esi::method::sde_method_info(e.method).name)
                  : r.method == "auto" || r.method.empty() ? std::string("auto")
                                                           : r.method;
  out["return_code"] = e.failure.empty() ? "Success" : "Failure";
  out["message"] = e.failure;
  py::dict stats;
  stats["kind"] = e.sde ? "sde" : "ode_members";
  stats["seed"] = std::to_string(r.seed);  // a Python int may exceed what attributes hold
  stats["members"] = e.members;
  stats["steps_per_member"] = e.steps;
  out["stats"] = stats;
  out["rtol"] = integrator.rtol;  // ODE members' (an SDE's fixed steps use neither)
  out["atol"] = integrator.atol;
  return out;
}

/// Model.ensemble: `members` runs of a stochastic model.
py::dict ensemble(const Document& d, const SimulateRequest& r, std::size_t members) {
  if (members < 1)
    throw esi::Error("invalid_ensemble", "", "", "an ensemble needs at least one member");
  Prepared p = prepare(r);
  esi::exec::EnsembleResult e;
  esi::io::OutputLayout layout;
  {
    py::gil_scoped_release unlocked;
    const esi::esm::System system = esi::exec::flatten_for_run(d.doc, p.choices, p.options);
    if (!esi::exec::is_stochastic(system))
      throw esi::Error("not_stochastic", d.doc.file, "",
                       "the model has no random parameters: every member would be the same run "
                       "(Model.simulate runs it; Model.sweep runs many parameter sets)");
    e = run_ensemble(d, r, p.options, system, members);
    layout = esi::io::output_layout(system, e.names, &d.doc.doc);
  }
  return ensemble_dict(e, layout, r, p.options.integrator, /*one_path=*/false);
}

py::dict simulate(const Document& d, const SimulateRequest& r) {
  Prepared p = prepare(r);
  esi::exec::SimulateOptions& o = p.options;
  const esi::exec::RunChoices& choices = p.choices;
  const bool default_saveat = p.default_saveat;
  InterruptWatch watch;
  esi::exec::Trajectory traj;
  esi::io::OutputLayout layout;
  std::optional<esi::exec::EnsembleResult> paths;  // a stochastic model: one path
  {
    py::gil_scoped_release unlocked;
    esi::esm::System system = esi::exec::flatten_for_run(d.doc, choices, o);
    if (esi::exec::is_stochastic(system)) {
      paths = run_ensemble(d, r, o, system, 1);
      layout = esi::io::output_layout(system, paths->names, &d.doc.doc);
    } else {
      if (esi::method::sde_method_from_name(r.method))
        throw esi::Error(
            "invalid_method", d.doc.file, "",
            "method '" + r.method + "' is an SDE method; this model has no random parameters");
      o.document = &d.doc;
      if (default_saveat) o.sample_times = esi::exec::preset_event_times(system, o.t0, o.t1);
      watch.arm(o);
      traj = esi::exec::simulate(system, o);
      layout = esi::io::output_layout(system, traj.names, &d.doc.doc);
    }
  }
  if (paths) return ensemble_dict(*paths, layout, r, o.integrator, /*one_path=*/true);
  watch.rethrow();

  py::dict out;
  const std::size_t rows = traj.times.size(), cols = traj.names.size();
  out["times"] = py::array_t<double>(py::ssize_t(rows), traj.times.data());
  py::array_t<double> values({py::ssize_t(rows), py::ssize_t(cols)});
  std::copy(traj.values.begin(), traj.values.end(), values.mutable_data());
  out["values"] = values;
  out["names"] = traj.names;
  out["layout"] = layout_dict(layout);
  out["method"] = std::string(esi::method::method_label(traj.method));
  out["return_code"] = std::string(esi::method::return_code_name(traj.code));
  out["message"] = traj.message;
  py::dict stats = stats_dict(traj.stats);
  stats["events_fired"] = traj.events_fired;
  stats["method_switches"] = traj.switches.size();
  out["stats"] = stats;
  out["rtol"] = o.integrator.rtol;
  out["atol"] = o.integrator.atol;
  return out;
}

/// Model.sweep: `names` and a (members x names) array of values, each row one member.
py::dict sweep(const Document& d, const SimulateRequest& r, const std::vector<std::string>& names,
               py::array_t<double, py::array::c_style | py::array::forcecast> values,
               const std::string& engine, int lanes) {
  if (engine != "scalar" && engine != "lanes")
    throw esi::Error("invalid_sweep", "", "",
                     "engine must be 'scalar' or 'lanes', not '" + engine + "'");
  if (values.ndim() != 2 || std::size_t(values.shape(1)) != names.size())
    throw esi::Error("invalid_sweep", "", "",
                     "the sweep's values must be a (members x names) array");
  Prepared p = prepare(r);
  esi::exec::SweepTable table;
  table.names = names;
  table.values.assign(values.data(), values.data() + values.size());
  esi::exec::SweepResult result;
  esi::io::OutputLayout layout;
  {
    py::gil_scoped_release unlocked;
    esi::exec::SimulateOptions o = p.options;
    esi::esm::System system = esi::exec::flatten_for_run(d.doc, p.choices, o);
    o.document = &d.doc;
    if (p.default_saveat) o.sample_times = esi::exec::preset_event_times(system, o.t0, o.t1);
    result = esi::exec::sweep(
        d.doc, p.choices, table, o, std::max(1u, r.threads),
        engine == "lanes" ? esi::exec::SweepEngine::Lanes : esi::exec::SweepEngine::Scalar, lanes);
    layout = esi::io::output_layout(system, result.names, &d.doc.doc);
  }
  py::dict out;
  const std::size_t members = table.members(), rows = result.times.size(),
                    cols = result.names.size();
  out["times"] = py::array_t<double>(py::ssize_t(rows), result.times.data());
  py::array_t<double> v({py::ssize_t(members), py::ssize_t(rows), py::ssize_t(cols)});
  std::copy(result.values.begin(), result.values.end(), v.mutable_data());
  out["values"] = v;
  out["names"] = result.names;
  out["swept"] = result.swept;
  out["swept_state"] = result.swept_state;
  out["layout"] = layout_dict(layout);
  std::vector<std::string> codes, methods;
  for (auto c : result.codes) codes.emplace_back(esi::method::return_code_name(c));
  for (auto m : result.methods) methods.emplace_back(esi::method::method_label(m));
  out["return_codes"] = codes;
  out["messages"] = result.messages;
  out["methods"] = methods;
  out["stats"] = stats_dict(result.stats);
  out["failed"] = result.failed;
  out["rtol"] = p.options.integrator.rtol;
  out["atol"] = p.options.integrator.atol;
  return out;
}

/// esi.run: a run configuration (a path, or a dict with relative paths against `folder`) on a
/// loaded model (or the configuration's when `document` is None), written to `output`.
/// `progress(t, fraction)` is called at most every 0.1 s of wall time with the GIL held.
py::dict run(py::object document, const std::string& config_path, py::object config_dict,
             const std::string& folder, const std::string& output, int threads, bool native,
             const std::string& restart, double restart_every, const std::string& restart_dir,
             py::object progress) {
  esi::drive::RunRequest request;
  request.config = config_path;
  if (!config_dict.is_none()) {
    request.config_document = nlohmann::json::parse(
        py::module_::import("json").attr("dumps")(config_dict).cast<std::string>());
    request.config_folder = folder;
  }
  std::shared_ptr<Document> given;
  if (!document.is_none()) {
    given = document.cast<std::shared_ptr<Document>>();
    request.model = given->doc.file;
  }
  request.output = output;
  request.threads = threads;
  request.native = native;
  request.restart = restart;
  request.restart_every = restart_every;
  request.restart_dir = restart_dir;
  request.command_line = "esi.run (Python)";
  InterruptWatch watch;
  esi::drive::RunOutcome outcome;
  esi::drive::RunPlan plan;
  {
    py::gil_scoped_release unlocked;
    plan = esi::drive::plan_run(request);
    if (plan.request.model.empty())
      throw esi::Error("run_no_model", request.config, "",
                       "no model: pass one or set \"model\" in the run configuration");
    if (plan.request.output.empty())
      throw esi::Error("run_no_output", request.config, "",
                       "no output: pass output= or set output.file in the configuration");
    std::shared_ptr<Document> loaded = given;
    if (!loaded) {
      py::gil_scoped_acquire locked;
      loaded = load(plan.request.model);
    }
    esi::drive::RunCallbacks callbacks;
    callbacks.stop = watch.flag();
    const double start = plan.config.start, span = plan.config.stop - plan.config.start;
    auto last = std::chrono::steady_clock::now() - std::chrono::seconds(1);
    callbacks.on_step = [&](double t, const std::vector<esi::exec::LeafReport>&) {
      watch.poll();
      if (progress.is_none()) return;
      const auto now = std::chrono::steady_clock::now();
      if (now - last < std::chrono::milliseconds(100) && t < plan.config.stop) return;
      last = now;
      py::gil_scoped_acquire locked;
      try {
        progress(t, span > 0 ? (t - start) / span : 1.0);
      } catch (py::error_already_set&) {
        // An exception in the callback ends the run as Ctrl-C does; it is raised afterwards.
        watch.fail_with(std::current_exception());
      }
    };
    outcome = esi::drive::run(plan, loaded->doc, callbacks);
  }
  watch.rethrow();
  const esi::exec::Trajectory& traj = outcome.result.trajectory;
  py::dict out;
  out["output"] = plan.request.output;
  out["model"] = plan.request.model;
  out["records"] = outcome.records;
  out["macro_steps"] = outcome.result.macro_steps;
  out["operators"] = outcome.result.operators;
  out["return_code"] = std::string(esi::method::return_code_name(traj.code));
  out["message"] = traj.message;
  out["last_restart"] = outcome.last_restart;
  py::list leaves;
  for (const auto& l : outcome.result.leaves) {
    py::dict e;
    e["what"] = l.what;
    e["why"] = l.why;
    e["accepted"] = l.accepted;
    e["rejected"] = l.rejected;
    leaves.append(e);
  }
  out["leaves"] = leaves;
  return out;
}

/// Model.gradient: dL/d(parameters, initial values) of L = the loss variable at t1 by the
/// discrete adjoint, as `esi simulate --loss NAME --gradient OUT.json` computes it (arrays as one
/// equation per cell, as derivatives need).
py::dict gradient(const Document& d, const SimulateRequest& r, const std::string& loss,
                  py::object loss_terms, const std::string& loss_file,
                  const std::vector<std::string>& wrt) {
  Prepared p = prepare(r);
  p.choices.cells = true;
  std::vector<esi::exec::LossTerm> terms;
  if (!loss_terms.is_none())  // a dict in the loss file's form; observation files from the cwd
    terms = esi::exec::loss_terms(
        nlohmann::json::parse(
            py::module_::import("json").attr("dumps")(loss_terms).cast<std::string>()),
        "<loss>", std::filesystem::current_path());
  esi::exec::GradientResult g;
  {
    py::gil_scoped_release unlocked;
    esi::exec::SimulateOptions o = p.options;
    const esi::esm::System system = esi::exec::flatten_for_run(d.doc, p.choices, o);
    esi::exec::GradientOptions go;
    go.run = o;
    go.run.document = &d.doc;
    go.loss = loss;
    go.loss_terms = std::move(terms);
    if (!loss_file.empty()) go.loss_terms = esi::exec::read_loss_file(loss_file);
    // By flat or unique local name, as `set` takes them.
    for (const std::string& name : wrt) {
      esi::exec::check_override_name(system, d.doc.doc, {name, 0.0, "wrt '" + name + "'", "", ""},
                                     "<arguments>");
      go.wrt.push_back(esi::exec::flat_target(system, name));
    }
    g = esi::exec::gradient(system, go);
  }
  if (!g.ok()) throw esi::Error("solve_failed", d.doc.file, "", "no gradient: " + g.message);
  py::dict out, values, units;
  py::list initial;
  for (const esi::exec::GradientEntry& e : g.gradient) {
    values[py::str(e.name)] = e.value;
    units[py::str(e.name)] = e.units;
    if (e.initial) initial.append(e.name);
  }
  out["loss"] = g.loss;
  out["loss_units"] = g.loss_units;
  out["gradient"] = values;
  out["units"] = units;
  out["initial"] = initial;
  out["method"] = std::string(esi::method::method_label(g.method));
  out["steps"] = g.steps;
  return out;
}

/// One analysis' runs, kept while the GIL is released (python/esi/__init__.py builds its
/// dataset).
struct AnalysisData {
  std::string id, component, description;
  std::vector<std::string> sweep;  ///< swept parameters as authored
  std::vector<std::vector<double>> points;
  std::vector<esi::exec::Trajectory> runs;
  esi::io::OutputLayout layout;
};

AnalysisData analysis_data(const esi::check::AnalysisRef& ref,
                           const esi::check::AnalysisResult& result,
                           const esi::esm::ResolvedDocument& doc) {
  AnalysisData a;
  a.id = ref.id;
  a.component = ref.component;
  a.description =
      ref.spec.is_object() ? ref.spec.value("description", std::string()) : std::string();
  for (const auto& d : result.plan.sweep) a.sweep.push_back(d.parameter);
  for (const auto& run : result.runs) {
    a.points.push_back(run.point);
    a.runs.push_back(run.trajectory);
  }
  if (!a.runs.empty())
    a.layout = esi::io::output_layout(result.system, a.runs.front().names, &doc.doc);
  return a;
}

/// Model.analyze: the document's inline analyses (spec §6.7), each as runs x rows x columns
/// (rows a run did not reach are NaN); with `out`, also written as `esi analyze --out OUT`
/// writes them (the same files), plots drawn. The first analysis that cannot run is raised
/// (after the others' folders are written).
py::list analyze(const Document& d, const std::string& out, const std::string& component,
                 const std::vector<std::string>& ids, unsigned jobs, bool netcdf) {
  std::vector<AnalysisData> data;
  std::vector<esi::drive::WrittenAnalysis> written;
  std::optional<esi::Diagnostic> failure;
  std::string why;
  {
    py::gil_scoped_release unlocked;
    const std::vector<esi::check::AnalysisRef> refs =
        esi::drive::choose_analyses(d.doc, component, ids, false);
    if (out.empty()) {
      esi::check::AnalysisCache cache;
      for (const esi::check::AnalysisRef& ref : refs) {
        esi::check::AnalyzeOptions options;
        options.jobs = std::max(1u, jobs);
        options.cache = &cache;
        try {
          data.push_back(analysis_data(
              ref, esi::check::run_analysis(d.doc, esi::check::plan_analysis(ref), options),
              d.doc));
        } catch (const esi::Error& e) {
          esi::Diagnostic where = e.diagnostic();
          if (where.file.empty()) where.file = ref.file;
          if (where.pointer.empty()) where.pointer = ref.pointer;
          throw esi::Error(where);
        }
      }
    } else {
      esi::drive::AnalysisFolderOptions options;
      options.jobs = std::max(1u, jobs);
      options.netcdf = netcdf;
      esi::drive::AnalyzeCallbacks callbacks;
      callbacks.on_result = [&](const esi::check::AnalysisRef& ref,
                                const esi::check::AnalysisResult& result) {
        data.push_back(analysis_data(ref, result, d.doc));
      };
      callbacks.on_error = [&](const esi::Diagnostic& e) {
        if (!failure) failure = e;
      };
      esi::drive::PlotPool pool(options.jobs);
      esi::drive::analyze_into(d.doc, refs, out, options, pool, written, callbacks);
      why = pool.finish();
      esi::drive::settle_images(written, out, why);
      esi::drive::write_index(out, d.doc.file, written);
    }
  }
  if (failure) throw esi::Error(*failure);
  py::list result;
  for (std::size_t k = 0; k < data.size(); ++k) {
    const AnalysisData& a = data[k];
    py::dict e;
    e["id"] = a.id;
    e["component"] = a.component;
    e["description"] = a.description;
    e["sweep"] = a.sweep;
    e["points"] = a.points;
    std::size_t rows = 0, longest = 0;
    for (std::size_t i = 0; i < a.runs.size(); ++i)
      if (a.runs[i].times.size() > rows) rows = a.runs[i].times.size(), longest = i;
    const std::size_t cols = a.runs.empty() ? 0 : a.runs.front().names.size();
    py::array_t<double> values({py::ssize_t(a.runs.size()), py::ssize_t(rows), py::ssize_t(cols)});
    double* v = values.mutable_data();
    std::fill(v, v + a.runs.size() * rows * cols, std::numeric_limits<double>::quiet_NaN());
    std::vector<std::string> codes, messages;
    for (std::size_t i = 0; i < a.runs.size(); ++i) {
      std::copy(a.runs[i].values.begin(), a.runs[i].values.end(), v + i * rows * cols);
      codes.emplace_back(esi::method::return_code_name(a.runs[i].code));
      messages.push_back(a.runs[i].message);
    }
    e["times"] = a.runs.empty() ? std::vector<double>{} : a.runs[longest].times;
    e["values"] = values;
    e["return_codes"] = codes;
    e["messages"] = messages;
    e["layout"] = layout_dict(a.layout);
    std::vector<std::string> methods;  // each run's (automatic: it may differ by run)
    for (const auto& run : a.runs) methods.emplace_back(esi::method::method_label(run.method));
    std::sort(methods.begin(), methods.end());
    methods.erase(std::unique(methods.begin(), methods.end()), methods.end());
    std::string method;
    for (const std::string& m : methods) method += (method.empty() ? "" : ",") + m;
    e["method"] = method;
    const esi::check::AnalyzeOptions defaults;  // what analyses run at (spec §6.7 has no knobs)
    e["rtol"] = defaults.rtol;
    e["atol"] = defaults.atol;
    if (!out.empty()) {
      const esi::drive::WrittenAnalysis& w = written[k];
      e["folder"] = (std::filesystem::path(out) / w.dir).string();
      std::vector<std::string> images;
      for (const auto& image : w.images)
        images.push_back((std::filesystem::path(out) / w.dir / image.stem).string() + ".png");
      e["images"] = images;
      e["notes"] = w.notes;
    }
    result.append(e);
  }
  return result;
}

py::object check(const std::string& path) {
  std::vector<esi::check::FileResult> results;
  {
    py::gil_scoped_release unlocked;
    results.push_back(esi::check::check_file(path));
  }
  return to_python(esi::check::to_json(results));
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "EarthSciIntegrator: run ESM documents (the C++ core; use the esi package)";
  static py::exception<esi::Error> esm_error(m, "EsmError");
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const esi::Error& e) {
      const esi::Diagnostic& d = e.diagnostic();
      py::object error =
          py::reinterpret_borrow<py::object>(esm_error.ptr())(esi::format_diagnostic(d));
      error.attr("code") = d.code;
      error.attr("file") = d.file;
      error.attr("pointer") = d.pointer;
      error.attr("message") = d.message;
      PyErr_SetObject(esm_error.ptr(), error.ptr());
    }
  });

  m.def("validate", &validate, py::arg("path"));
  py::class_<Document, std::shared_ptr<Document>>(m, "Document")
      .def_property_readonly("file", [](const Document& d) { return d.doc.file; })
      .def("variables", &variables)
      .def("describe", [](const Document& d) { return to_python(esi::esm::describe(d.system)); });
  m.def("load", &load, py::arg("path"));

  py::class_<SimulateRequest>(m, "SimulateRequest")
      .def(py::init<>())
      .def_readwrite("t0", &SimulateRequest::t0)
      .def_readwrite("t1", &SimulateRequest::t1)
      .def_readwrite("saveat", &SimulateRequest::saveat)
      .def_readwrite("method", &SimulateRequest::method)
      .def_readwrite("rtol", &SimulateRequest::rtol)
      .def_readwrite("atol", &SimulateRequest::atol)
      .def_readwrite("set", &SimulateRequest::set)
      .def_readwrite("inputs", &SimulateRequest::inputs)
      .def_readwrite("inputs_file", &SimulateRequest::inputs_file)
      .def_readwrite("threads", &SimulateRequest::threads)
      .def_readwrite("component", &SimulateRequest::component)
      .def_readwrite("native", &SimulateRequest::native)
      .def_readwrite("seed", &SimulateRequest::seed)
      .def_readwrite("dt", &SimulateRequest::dt);
  m.def("simulate", &simulate, py::arg("document"), py::arg("request"));
  m.def("sweep", &sweep, py::arg("document"), py::arg("request"), py::arg("names"),
        py::arg("values"), py::arg("engine") = "scalar", py::arg("lanes") = 16);
  m.def("check", &check, py::arg("path"));
  m.def("gradient", &gradient, py::arg("document"), py::arg("request"), py::arg("loss"),
        py::arg("loss_terms"), py::arg("loss_file"), py::arg("wrt"));
  m.def("ensemble", &ensemble, py::arg("document"), py::arg("request"), py::arg("members"));
  m.def("analyze", &analyze, py::arg("document"), py::arg("out"), py::arg("component"),
        py::arg("ids"), py::arg("jobs"), py::arg("netcdf"));
  m.def("run", &run, py::arg("document"), py::arg("config_path"), py::arg("config_dict"),
        py::arg("folder"), py::arg("output"), py::arg("threads"), py::arg("native"),
        py::arg("restart"), py::arg("restart_every"), py::arg("restart_dir"), py::arg("progress"));
}
