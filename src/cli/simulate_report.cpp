// What `esi simulate` says about a run (simulate.hpp): the report (summary line, --stats), the
// sidecar OUT.csv.json beside a CSV, and the global attributes of a NetCDF output.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>

#include "cli/simulate.hpp"
#include "esi/core/error.hpp"
#include "esi/core/text.hpp"

namespace esi::cli::sim {
namespace {

/// Writes `value` as indented JSON to `path` (`what` names the file in messages).
void write_json_output(const std::string& path, const nlohmann::json& value, const char* what) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr)
    throw Error("output_not_writable", path, "",
                std::string("cannot open the ") + what + " for writing: " + std::strerror(errno));
  // Paths and the command line are bytes, not always UTF-8 (a Linux file name may hold any):
  // invalid sequences are written as U+FFFD rather than failing the run.
  const std::string text = value.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  const bool wrote = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (std::fclose(f) != 0 || !wrote)
    throw Error("output_write_failed", path, "", std::string("writing the ") + what + " failed: " + std::strerror(errno));
}

}  // namespace

std::vector<std::size_t> inspect_column_order(const std::vector<std::string>& names, std::size_t state_count) {
  std::vector<std::size_t> order(names.size());
  for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
  const auto by_name = [&](std::size_t a, std::size_t b) { return natural_less(names[a], names[b]); };
  const auto states_end = order.begin() + static_cast<std::ptrdiff_t>(std::min(state_count, order.size()));
  std::stable_sort(order.begin(), states_end, by_name);
  std::stable_sort(states_end, order.end(), by_name);
  return order;
}

nlohmann::json run_report(const SimulateArgs& s, const exec::Trajectory& traj, double wall_seconds) {
  method::IntegratorStats st = traj.stats;
  const exec::LanePoolStats& cs = traj.cell_stats;
  const bool cells_only = !traj.cell_summary.empty() && st.accepted == 0 && st.rejected == 0;
  if (cells_only)  // no grid part: the numbers are the cells', summed over cells
    st = {cs.accepted, cs.rejected, cs.rhs_evaluations, cs.jacobian_evaluations, cs.factorizations,
          cs.linear_solves};
  nlohmann::json report = {{"file", s.file},
          {"component", s.component},
          {"method", std::string(method::method_label(traj.method))},
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
  if (!traj.atol_each.empty()) {
    std::size_t smallest = 0;
    for (std::size_t i = 1; i < traj.atol_each.size(); ++i)
      if (traj.atol_each[i] < traj.atol_each[smallest]) smallest = i;
    report["atol_from_scales"] = true;
    report["atol_smallest"] = {{"state", traj.names[smallest]}, {"atol", traj.atol_each[smallest]}};
    nlohmann::json below = nlohmann::json::array();
    for (std::size_t i : traj.below_atol) below.push_back(traj.names[i]);
    report["states_below_atol"] = std::move(below);
  }
  if (s.options.integrator.method == method::MethodId::Auto && traj.cell_summary.empty()) {
    nlohmann::json switches = nlohmann::json::array();
    for (const method::MethodSwitch& w : traj.switches)
      switches.push_back({{"t", w.t},
                          {"from", std::string(method::method_info(w.from).name)},
                          {"to", std::string(method::method_info(w.to).name)},
                          {"stiffness", w.stiffness},
                          {"successive_tests", w.tests}});
    report["method_switches"] = std::move(switches);
  }
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
  // method_label's "auto" after a run: no state, so no method ran (a component of observeds).
  const bool integrated = r["method"].get<std::string>() != "auto";
  std::fprintf(stderr,
               "esi simulate: %s%s, %ld steps (%ld rejected), %ld RHS, %ld Jacobians, %ld LU, "
               "%zu rows, %.3g s\n",
               integrated ? r["method"].get<std::string>().c_str() : "no state to integrate (observed values only)",
               !integrated ? ""
               : r["method_chosen_automatically"].get<bool>()
                   ? (r.contains("method_switches") && !r["method_switches"].empty() ? " (auto: first choice; it switched)"
                                                                                       : " (chosen by the stiffness test)")
                   : "",
               r["steps_accepted"].get<long>(), r["steps_rejected"].get<long>(),
               r["rhs_evaluations"].get<long>(), r["jacobian_evaluations"].get<long>(),
               r["lu_factorizations"].get<long>(), r["output_rows"].get<std::size_t>(),
               r["wall_seconds"].get<double>());
  if (r.contains("atol_smallest") && r["atol_smallest"]["atol"].get<double>() < r["atol"].get<double>())
    std::fprintf(stderr, "  atol per state: %.3g, at most 1e-6 of the largest initial value in each state's units (smallest %.3g for %s)\n",
                 r["atol"].get<double>(), r["atol_smallest"]["atol"].get<double>(),
                 r["atol_smallest"]["state"].get<std::string>().c_str());
  // Auto's switches: when and why (|lambda| h / 3.5068 above 0.7 on Tsit5, at most 0.9 on Rodas5P).
  if (const auto it = r.find("method_switches"); it != r.end() && !it->empty()) {
    std::size_t shown = 0;
    for (const auto& w : *it) {
      if (++shown > 5) {
        std::fprintf(stderr, "  ... %zu switches in all (--stats FILE lists every one)\n", it->size());
        break;
      }
      const bool to_stiff = w["to"].get<std::string>() == "Rodas5P";
      std::fprintf(stderr, "  switched %s -> %s at t = %s: stiffness |lambda| h / 3.51 %s (last %.3g) on %d tests\n",
                   w["from"].get<std::string>().c_str(), w["to"].get<std::string>().c_str(),
                   format_number(w["t"].get<double>()).c_str(), to_stiff ? "above 0.7" : "at most 0.9",
                   w["stiffness"].get<double>(), w["successive_tests"].get<int>());
    }
  }
}

void write_stats(const std::string& path, const nlohmann::json& report) {
  write_json_output(path, report, "--stats file");
}

// ---- the sidecar: OUT.csv.json ----

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buf;
}

bool is_netcdf_output(const std::string& path) {
  return path.size() > 3 && path.compare(path.size() - 3, 3, ".nc") == 0;
}

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
      std::string(method::method_label(io.method));
  o.provenance["esi_rtol"] = format_number(io.rtol);
  o.provenance["esi_atol"] = format_number(io.atol);
  o.provenance["esi_tspan"] = format_number(s.options.t0) + " " + format_number(s.options.t1);
  o.provenance["esi_saveat"] = format_number(s.options.saveat);
  o.provenance["esi_started_at"] = started_at;
  return o;
}

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

void write_sidecar(const SimulateArgs& s, nlohmann::json columns, nlohmann::json run) {
  if (s.output == "-") return;
  write_json_output(s.output + ".json", {{"csv", s.output}, {"columns", std::move(columns)}, {"run", std::move(run)}},
                    "sidecar file");
}

void write_run_sidecar(const SimulateArgs& s, const esm::System& system,
                       const std::vector<std::string>& column_names, const nlohmann::json& report,
                       const exec::Trajectory& traj, const std::string& started_at) {
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

}  // namespace esi::cli::sim
