// Stochastic models in `esi simulate` (simulate.hpp): a Wiener parameter (an SDE) or
// parameters drawn per member, run through exec::simulate_ensemble and written as CSV.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "cli/simulate.hpp"
#include "esi/core/error.hpp"
#include "esi/exec/stochastic.hpp"
#include "esi/io/csv.hpp"

namespace esi::cli::sim {
namespace {

/// The CSV of a stochastic run: one path (member 0) like a deterministic run, `X.mean` /
/// `X.var` columns for an ensemble, or every member with a leading `member` column.
void write_stochastic_csv(io::CsvWriter& csv, const SimulateArgs& s, const exec::EnsembleResult& r) {
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

}  // namespace

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
  io::CsvWriter csv(s.output);
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
                       : std::string(method::method_label(s.options.integrator.method))},
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

}  // namespace esi::cli::sim
