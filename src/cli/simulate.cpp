// `esi simulate FILE [--component NAME] --tspan T0 T1 [--saveat DT] [--method M] [--rtol R]
// [--atol A] [--set name=value ...] --output OUT.csv`: one run written as CSV.
//
// The CSV header is `t` then one column per state and observed (flattened names); one row per
// output time (t0, each saveat multiple, T1), numbers as %.17g so they round-trip. `--set`
// overrides a parameter, or the initial value of a state, by flat or unique local name. A
// failed solve writes the rows it reached, reports the method's return code and exits 1.
#ifdef ESI_HAVE_EXEC  // built only when the exec module exists
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "esi/core/error.hpp"
#include "esi/esm/flatten.hpp"
#include "esi/esm/load.hpp"
#include "esi/exec/simulate.hpp"

namespace esi::cli {
namespace {

/// "Euler, Heun, ..., auto": every name --method accepts.
std::string method_names() {
  std::string out;
  for (method::MethodId id : method::all_methods()) out += std::string(method::method_info(id).name) + ", ";
  return out + "auto";
}


struct SimulateArgs {
  std::string file, component, output;
  bool have_tspan = false;
  exec::SimulateOptions options;
  std::vector<std::pair<std::string, double>> sets;
};

bool parse_double(const std::string& s, double& out) {
  const char* end = s.data() + s.size();
  const auto r = std::from_chars(s.data(), end, out);
  return r.ec == std::errc() && r.ptr == end;
}

/// The value after option `a` at args[i + 1] (advancing i), or nullptr when missing.
const std::string* value_of(Args args, std::size_t& i) {
  return i + 1 < args.size() ? &args[++i] : nullptr;
}

int parse_number_option(Args args, std::size_t& i, double& out) {
  const std::string& name = args[i];
  const std::string* v = value_of(args, i);
  if (v == nullptr) return usage_error("simulate", name + " needs a value");
  if (!parse_double(*v, out)) return usage_error("simulate", name + ": '" + *v + "' is not a number");
  return kExitOk;
}

int parse_option(Args args, std::size_t& i, SimulateArgs& s) {
  const std::string& a = args[i];
  auto& io = s.options.integrator;
  if (a == "--tspan") {
    if (i + 2 >= args.size() || !parse_double(args[i + 1], s.options.t0) ||
        !parse_double(args[i + 2], s.options.t1))
      return usage_error("simulate", "--tspan needs two numbers T0 T1");
    s.have_tspan = true;
    i += 2;
    return kExitOk;
  }
  if (a == "--saveat") return parse_number_option(args, i, s.options.saveat);
  if (a == "--rtol") return parse_number_option(args, i, io.rtol);
  if (a == "--atol") return parse_number_option(args, i, io.atol);
  if (a == "--dt") return parse_number_option(args, i, io.dt_initial);
  if (a == "--native") {
    s.options.native = true;
    return kExitOk;
  }
  if (a == "--component" || a == "--output" || a == "-o" || a == "--method" || a == "--set") {
    const std::string* v = value_of(args, i);
    if (v == nullptr) return usage_error("simulate", a + " needs a value");
    if (a == "--component") s.component = *v;
    else if (a == "--output" || a == "-o") s.output = *v;
    else if (a == "--method") {
      if (*v == "auto" || *v == "Auto") io.method = method::MethodId::Auto;
      else if (auto m = method::method_from_name(*v)) io.method = *m;
      else return usage_error("simulate", "unknown method '" + *v + "'; known: " + method_names());
    } else {
      const auto eq = v->find('=');
      double value = 0;
      if (eq == std::string::npos || eq == 0 || !parse_double(v->substr(eq + 1), value))
        return usage_error("simulate", "--set expects name=value, got '" + *v + "'");
      s.sets.emplace_back(v->substr(0, eq), value);
    }
    return kExitOk;
  }
  return usage_error("simulate", "unknown option '" + a + "'");
}

/// Returns kExitOk with `s` filled, -1 after printing help, or the usage exit status.
int parse_args(Args args, SimulateArgs& s) {
  std::vector<std::string> files;
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
    if (const int rc = parse_option(args, i, s); rc != kExitOk) return rc;
  }
  if (files.size() != 1) return usage_error("simulate", files.empty() ? "no FILE given" : "expects exactly one FILE");
  if (!s.have_tspan) return usage_error("simulate", "--tspan T0 T1 is required");
  if (s.output.empty()) return usage_error("simulate", "--output OUT.csv is required");
  s.file = files[0];
  return kExitOk;
}

/// Whether --set NAME targets a state: its flat name, or a local name that ends a state's
/// flat name and no parameter's (flatten reports unknown and ambiguous names).
bool names_state(const esm::System& sys, const std::string& name) {
  if (sys.state_index(name) >= 0) return true;
  if (sys.parameter_index(name) >= 0) return false;
  const auto ends_with = [&](const esm::FlatVariable& v) {
    return v.name.size() > name.size() && v.name[v.name.size() - name.size() - 1] == '.' &&
           v.name.compare(v.name.size() - name.size(), name.size(), name) == 0;
  };
  return std::any_of(sys.states.begin(), sys.states.end(), ends_with) &&
         std::none_of(sys.parameters.begin(), sys.parameters.end(), ends_with);
}

void write_csv(std::FILE* out, const exec::Trajectory& traj) {
  std::fputs("t", out);
  for (const std::string& n : traj.names) std::fprintf(out, ",%s", n.c_str());
  std::fputs("\n", out);
  for (std::size_t k = 0; k < traj.times.size(); ++k) {
    std::fprintf(out, "%.17g", traj.times[k]);
    for (std::size_t j = 0; j < traj.names.size(); ++j) std::fprintf(out, ",%.17g", traj.at(k, j));
    std::fputs("\n", out);
  }
}

}  // namespace

void print_simulate_help(std::FILE* out) {
  std::fputs(
      "usage: esi simulate FILE [--component NAME] --tspan T0 T1 [--saveat DT] [--method M]\n"
      "                    [--rtol R] [--atol A] [--dt DT] [--native] [--set name=value ...]\n"
      "                    --output OUT.csv\n"
      "\n"
      "Flattens FILE (or only component NAME), integrates from T0 to T1 with events and writes\n"
      "CSV: a `t` column, then one column per state and observed quantity; one row per output\n"
      "time (T0, every multiple of DT, T1).\n"
      "\n"
      "  --method M   a method name (Tsit5, Rodas5P, ...) or auto (default)\n"
      "  --rtol R     relative tolerance (default 1e-6); --atol A absolute (default 1e-8)\n"
      "  --dt DT      the step of fixed-step methods (Euler, RK4, ...); the first step of others\n"
      "  --native     run the model as compiled C++ (cached in $ESI_CACHE_DIR or ~/.cache/esi);\n"
      "               the same numbers as without, faster on long runs\n"
      "  --set n=v    override parameter n, or the initial value of state n (repeatable)\n"
      "\n"
      "exit status: 0 ok, 1 invalid input or failed solve, 2 usage error\n",
      out);
}

int run_simulate(Args args) {
  SimulateArgs s;
  if (const int rc = parse_args(args, s); rc != kExitOk) return rc < 0 ? kExitOk : rc;
  try {
    const std::optional<esm::ResolvedDocument> loaded = load_or_report(s.file);
    if (!loaded) return kExitInvalid;
    const esm::ResolvedDocument& doc = *loaded;
    esm::FlattenOptions fo;
    fo.component = s.component;
    const esm::System probe = esm::flatten(doc, fo);
    for (const auto& [name, value] : s.sets)
      (names_state(probe, name) ? fo.initial_conditions : fo.parameter_overrides)[name] = value;
    const esm::System system = s.sets.empty() ? probe : esm::flatten(doc, fo);
    s.options.document = &doc;
    const exec::Trajectory traj = exec::simulate(system, s.options);
    std::FILE* out = std::fopen(s.output.c_str(), "w");
    if (out == nullptr) throw Error("file_not_writable", s.output, "", "cannot open the output file for writing");
    write_csv(out, traj);
    std::fclose(out);
    if (!traj.ok()) {
      // The integrator's message starts with the return code's name and the time it stopped.
      std::fprintf(stderr, "%s: solve failed (last output at t = %.17g): %s\n", s.file.c_str(),
                   traj.times.empty() ? s.options.t0 : traj.times.back(), traj.message.c_str());
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
