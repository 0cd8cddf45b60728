// `esi simulate ... --loss NAME --gradient OUT.json`: runs exec::gradient and writes
// {"loss", "gradient", "units", "run", "checks"} as JSON. The file is written only when the
// forward run and the sweep succeeded (under OUT.json.partial, renamed at the end), so a
// failed or refused run leaves no file that could be mistaken for a result.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/simulate.hpp"
#include "esi/core/error.hpp"
#include "esi/exec/gradient.hpp"
#include "esi/exec/loss_file.hpp"
#include "esi/io/csv.hpp"

namespace esi::cli::sim {
namespace {

nlohmann::json run_json(const SimulateArgs& s, const exec::GradientResult& g) {
  const auto& io = s.options.integrator;
  return {{"document", s.file},
          {"component", s.component},
          {"tspan", {s.options.t0, s.options.t1}},
          {"method", std::string(method::method_label(g.method))},
          {"rtol", io.rtol},
          {"atol", io.atol},
          {"loss", s.loss_file.empty() ? s.loss : s.loss_file},
          {"steps", g.steps},
          {"rejected", g.forward_stats.rejected},
          {"states", g.states},
          {"parameters", g.parameters},
          {"checkpoint_every", g.checkpoint_every},
          {"checkpoint_memory", s.checkpoint_memory},
          {"tape_bytes", g.tape_bytes},
          {"forward_seconds", g.forward_seconds},
          {"adjoint_seconds", g.sweep_seconds},
          {"adjoint_jacobians", g.sweep.stats.jacobian_evaluations},
          {"adjoint_second_order_evaluations", g.sweep.second_order_evaluations},
          {"command_line", s.command_line}};
}

void write_json_file(const std::string& path, const nlohmann::json& j) {
  const std::string partial = path + ".partial";
  {
    std::ofstream out(partial);
    out << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";  // paths may not be UTF-8
    if (!out) throw Error("output_write_failed", path, "", "could not write the gradient to " + partial);
  }
  std::error_code ec;
  std::filesystem::rename(partial, path, ec);
  if (ec) throw Error("output_write_failed", path, "", "could not rename " + partial + ": " + ec.message());
}

}  // namespace

int run_gradient(SimulateArgs& s, const esm::System& system, const esm::ResolvedDocument& doc) {
  exec::GradientOptions o;
  o.run = s.options;
  o.run.document = &doc;
  o.loss = s.loss;
  if (!s.loss_file.empty()) o.loss_terms = exec::read_loss_file(s.loss_file);
  o.wrt = s.wrt;
  o.checkpoint_every = s.checkpoint_every;
  o.checkpoint_memory = s.checkpoint_memory;
  o.check_directions = s.gradient_check ? 3 : 0;
  const exec::GradientResult g = exec::gradient(system, o);
  if (!g.ok()) {
    std::fprintf(stderr, "%s: error[solve_failed]: no gradient (nothing written): %s\n", s.file.c_str(),
                 g.message.c_str());
    return kExitInvalid;
  }
  nlohmann::json out = {{"loss", g.loss}, {"loss_units", g.loss_units}};
  nlohmann::json gradient = nlohmann::json::object(), units = nlohmann::json::object(),
                 initial = nlohmann::json::array();
  for (const exec::GradientEntry& e : g.gradient) {
    gradient[e.name] = e.value;
    units[e.name] = e.units;
    if (e.initial) initial.push_back(e.name);
  }
  out["gradient"] = gradient;
  out["units"] = units;
  out["initial_values"] = initial;  // the names whose entry is d(loss)/d(initial value)
  out["run"] = run_json(s, g);
  if (!g.checks.empty()) {
    nlohmann::json checks = nlohmann::json::array();
    for (const exec::GradientCheck& c : g.checks)
      checks.push_back({{"tangent", c.tangent}, {"adjoint", c.adjoint}, {"dot_product_relative_error", c.dot_relative},
                        {"loss_tangent", c.loss_tangent}, {"central_difference", c.finite_difference}, {"difference_step", c.step},
                        {"difference_relative_error", c.difference_relative}});
    out["checks"] = checks;
  }
  write_json_file(s.gradient, out);
  if (!s.quiet) {
    const double total = g.forward_seconds + g.sweep_seconds;
    std::fprintf(stderr,
                 "esi simulate: loss %s = %s; %zu gradient entries in %s (%s, %zu steps): forward %.3g s, "
                 "adjoint %.3g s (%.2fx the forward run in total); tape %.3g MB\n",
                 (s.loss_file.empty() ? s.loss : s.loss_file).c_str(), format_number(g.loss).c_str(), g.gradient.size(), s.gradient.c_str(),
                 std::string(method::method_label(g.method)).c_str(), g.steps, g.forward_seconds,
                 g.sweep_seconds, g.forward_seconds > 0 ? total / g.forward_seconds : 0.0,
                 double(g.tape_bytes) / 1e6);
    for (const exec::GradientCheck& c : g.checks)
      std::fprintf(stderr,
                   "esi simulate: check: <lambda, TLM v> = %.17g, <ADJ lambda, v> = %.17g (relative "
                   "%.2g); along v the loss changes by %.17g (tangent) and %.17g (central "
                   "difference; relative %.2g)\n",
                   c.tangent, c.adjoint, c.dot_relative, c.loss_tangent, c.finite_difference,
                   c.difference_relative);
  }
  return kExitOk;
}

int run_sensitivities(SimulateArgs& s, const esm::System& system, const esm::ResolvedDocument& doc) {
  exec::SimulateOptions run = s.options;
  run.document = &doc;
  io::CsvWriter csv(s.output);  // opened before the run: an unwritable path fails now
  exec::SensitivityTrajectory traj;
  try {
    traj = exec::forward_sensitivities(system, run, s.sensitivities);
  } catch (...) {
    csv.discard();
    throw;
  }
  csv.header(traj.names);
  const std::size_t width = traj.names.size();
  for (std::size_t r = 0; r < traj.times.size(); ++r)
    csv.row(traj.times[r], std::span<const double>(traj.values.data() + r * width, width));
  csv.close();
  if (!traj.ok()) {
    std::fprintf(stderr, "%s: error[solve_failed]: the run stopped: %s (the rows reached are in %s)\n",
                 s.file.c_str(), traj.message.c_str(), s.output.c_str());
    return kExitInvalid;
  }
  if (!s.quiet)
    std::fprintf(stderr, "esi simulate: %zu rows of %zu states and %zu sensitivity columns (%s, %zu steps; "
                         "output times are step ends)\n",
                 traj.times.size(), traj.state_count, width - traj.state_count,
                 std::string(method::method_label(traj.method)).c_str(), traj.steps);
  return kExitOk;
}

}  // namespace esi::cli::sim
