// `esi simulate`'s command line (simulate.hpp): each option parsed and checked, then all of
// them together, and the help text.
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>

#include "cli/simulate.hpp"
#include "esi/core/text.hpp"
#include "esi/exec/prepare.hpp"
#include "esi/core/error.hpp"
#include "esi/exec/stochastic.hpp"

namespace esi::cli {
namespace sim {
namespace {

/// "Euler, Heun, ..., auto": every name --method accepts.
/// A whole non-negative integer in [0, max] spelled completely.
bool parse_count(const std::string& s, std::uint64_t max, std::uint64_t& out) {
  const char* end = s.data() + s.size();
  const auto r = std::from_chars(s.data(), end, out);
  return r.ec == std::errc() && r.ptr == end && out <= max;
}

/// A size in bytes: a whole number with an optional k, M or G (powers of 1024), > 0.
bool parse_size(const std::string& s, std::uint64_t& out) {
  if (s.empty()) return false;
  std::uint64_t scale = 1;
  std::string digits = s;
  switch (s.back()) {
    case 'k': case 'K': scale = 1ULL << 10; break;
    case 'M': scale = 1ULL << 20; break;
    case 'G': scale = 1ULL << 30; break;
    default: break;
  }
  if (scale > 1) digits.pop_back();
  std::uint64_t n = 0;
  if (!parse_count(digits, (1ULL << 50) / scale, n) || n == 0) return false;
  out = n * scale;
  return true;
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

/// The options of gradients and sensitivities; nullopt when `args[i]` is none of them.
std::optional<int> parse_derivative_option(Args args, std::size_t& i, SimulateArgs& s) {
  const std::string& a = args[i];
  const auto split_names = [&](const std::string& v, std::vector<std::string>& out) {
    for (std::size_t b = 0; b <= v.size();) {
      const std::size_t e = std::min(v.find(',', b), v.size());
      if (e > b) out.push_back(v.substr(b, e - b));
      b = e + 1;
    }
  };
  if (a == "--sensitivities") {
    const std::string* v = value_of(args, i);
    if (v == nullptr || v->empty()) return usage_error("simulate", "--sensitivities needs a comma-separated list of names");
    split_names(*v, s.sensitivities);
    return kExitOk;
  }
  if (a == "--gradient" || a == "--loss" || a == "--wrt" || a == "--loss-file") {
    const std::string* v = value_of(args, i);
    if (v == nullptr || v->empty())
      return usage_error("simulate", a + (a == "--gradient" ? " needs an OUT.json" : a == "--loss" ? " needs a state name"
                                          : a == "--loss-file" ? " needs a LOSS.json" : " needs a comma-separated list of names"));
    if (a == "--gradient") s.gradient = *v;
    else if (a == "--loss") s.loss = *v;
    else if (a == "--loss-file") s.loss_file = *v;
    else split_names(*v, s.wrt);
    return kExitOk;
  }
  if (a == "--gradient-check") {
    s.gradient_check = true;
    return kExitOk;
  }
  if (a == "--checkpoint-every") {
    const std::string* v = value_of(args, i);
    std::uint64_t n = 0;
    if (v == nullptr || !parse_count(*v, 1u << 30, n) || n == 0)
      return usage_error("simulate", "--checkpoint-every needs a whole number of steps >= 1" +
                                         (v ? ", got '" + *v + "'" : std::string()));
    s.checkpoint_every = n;
    return kExitOk;
  }
  if (a == "--checkpoint-memory") {
    const std::string* v = value_of(args, i);
    std::uint64_t bytes = 0;
    if (v == nullptr || !parse_size(*v, bytes))
      return usage_error("simulate", "--checkpoint-memory needs a size > 0 in bytes, with an optional k, M or G "
                                     "(e.g. 64M)" + (v ? ", got '" + *v + "'" : std::string()));
    s.checkpoint_memory = bytes;
    return kExitOk;
  }
  return std::nullopt;
}

int parse_option(Args args, std::size_t& i, SimulateArgs& s) {
  const std::string& a = args[i];
  auto& io = s.options.integrator;
  if (a == "--tspan") {
    // `--tspan 3600 --output x.csv`: one number, then the next option.
    for (std::size_t k : {std::size_t{1}, std::size_t{2}})
      if (i + k >= args.size() || args[i + k].starts_with("--"))
        return usage_error("simulate", "--tspan needs two numbers T0 T1" +
                                           (k == 2 ? ", got only '" + args[i + 1] + "'" : std::string()) +
                                           " (e.g. --tspan 0 3600)");
    for (int k : {1, 2})
      if (!parse_finite(args[i + k], k == 1 ? s.options.t0 : s.options.t1))
        return usage_error("simulate", not_a_finite_number("--tspan", args[i + k]));
    s.have_tspan = true;
    i += 2;
    return kExitOk;
  }
  if (a == "--saveat") return parse_number_option(args, i, s.options.saveat);
  if (a == "--rtol") return parse_number_option(args, i, io.rtol);
  if (a == "--atol") {
    s.options.atol_from_scales = false;  // a given atol holds for every state
    return parse_number_option(args, i, io.atol);
  }
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
  if (const std::optional<int> rc = parse_derivative_option(args, i, s)) return *rc;
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
    // Read once every option is known: with --sweep the file is a table, not overrides.
    s.params_files.push_back(*v);
    s.params_positions.push_back(s.sets.size());
    return kExitOk;
  }
  if (a == "--sweep") {
    s.sweep = true;
    return kExitOk;
  }
  if (a == "--sweep-engine") {
    const std::string* v = value_of(args, i);
    if (v == nullptr || (*v != "scalar" && *v != "lanes"))
      return usage_error("simulate", "--sweep-engine needs scalar or lanes" + (v ? ", got '" + *v + "'" : std::string()));
    s.sweep_lanes = *v == "lanes";
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
      else return usage_error("simulate", unknown_method_message(*v, "for SDEs EulerMaruyama (EM), Milstein, SRA1"));
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

}  // namespace

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
  if (s.sweep_lanes && !s.sweep) return usage_error("simulate", "--sweep-engine goes with --sweep");
  if (s.sweep && s.params_files.size() != 1)
    return usage_error("simulate", "--sweep runs one member per row of one --params TABLE.csv (a header of names, "
                                   "then rows of values)");
  if (s.sweep && (!s.gradient.empty() || !s.sensitivities.empty() || s.ensemble > 0 || s.members))
    return usage_error("simulate", "--sweep runs plain trajectories; --gradient, --sensitivities, --ensemble and "
                                   "--members go without it");
  try {  // a malformed file is bad input (exit 1), like a bad --inputs
    if (s.sweep) {
      s.table = read_sweep_table(s.params_files[0]);
    } else {
      for (std::size_t k = s.params_files.size(); k-- > 0;) {  // last first: earlier positions stay valid
        std::vector<Override> read = read_params_file(s.params_files[k]);
        s.sets.insert(s.sets.begin() + static_cast<std::ptrdiff_t>(s.params_positions[k]), read.begin(), read.end());
      }
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "%s\n", format_diagnostic(e.diagnostic()).c_str());
    return kExitInvalid;
  }
  if (!s.have_tspan) return usage_error("simulate", "--tspan T0 T1 is required");
  if (!s.gradient.empty() || !s.loss.empty() || !s.loss_file.empty() || !s.wrt.empty() || s.gradient_check ||
      s.checkpoint_every != 1 || s.checkpoint_memory > 0) {
    if (s.gradient.empty())
      return usage_error("simulate", "--loss, --loss-file, --wrt, --gradient-check and the --checkpoint options go "
                                     "with --gradient OUT.json");
    if (s.loss.empty() == s.loss_file.empty())
      return usage_error("simulate", "--gradient needs one of --loss NAME (a state or observed, or a state array: the "
                                     "mean of its cells, at T1) and --loss-file LOSS.json");
    if (!s.output.empty())
      return usage_error("simulate", "--gradient writes OUT.json instead of a trajectory; run without it for --output");
    if (!(s.options.t1 > s.options.t0)) return usage_error("simulate", "--gradient needs T1 > T0");
    s.output = s.gradient;
  }
  if (!s.sensitivities.empty() && !s.gradient.empty())
    return usage_error("simulate", "--sensitivities writes a trajectory (--output), --gradient a JSON file: one at a time");
  if (!s.sensitivities.empty() && is_netcdf_output(s.output))
    return usage_error("simulate", "--sensitivities writes CSV; give --output OUT.csv");
  if (s.output.empty()) return usage_error("simulate", "--output OUT.csv is required");
  if (!saveat_given) s.options.saveat = exec::default_saveat(s.options.t0, s.options.t1), s.default_saveat = true;
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

}  // namespace sim

void print_simulate_help(std::FILE* out) {
  std::fputs(
      "usage: esi simulate FILE [--component NAME] --tspan T0 T1 [--saveat DT] [--method M]\n"
      "                    [--rtol R] [--atol A] [--dt DT] [--native] [--cells] [--set name=value ...]\n"
      "                    [--params FILE [--sweep]] [--inputs FILE.json] [--stats FILE.json] [--quiet]\n"
      "                    [--seed S] [--ensemble N [--members]] [--threads T]   (stochastic)\n"
      "                    --output OUT.csv\n"
      "       esi simulate FILE --tspan T0 T1 [--method M] ... (--loss NAME | --loss-file F)\n"
      "                    --gradient OUT.json\n"
      "                    [--wrt n1,n2,...] [--gradient-check] [--checkpoint-every K]\n"
      "                    [--checkpoint-memory SIZE]\n"
      "       esi simulate FILE --tspan T0 T1 ... --sensitivities n1,n2,... --output OUT.csv\n"
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
      "  --rtol R     relative tolerance (default 1e-6); --atol A absolute for every state (default:\n"
      "               1e-8, capped per state at 1e-6 of the largest initial value in its units);\n"
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
      "  --sweep      --params F is a table instead: a CSV header of names (parameters or\n"
      "               states' initial values) and one row of values per member (or JSON\n"
      "               {\"name\": [v1, v2, ...]}); every member runs on its own (--threads T of\n"
      "               them at once), bit for bit the run --set with its row's values gives, and\n"
      "               the CSV gets a leading member column (the table row, from 0)\n"
      "  --sweep-engine lanes  the members as cells of lane pools (--lanes per block; Rosenbrock\n"
      "               methods, auto runs Rodas3): faster for many members, the same bits on any\n"
      "               --threads, equal to separate runs within the tolerances (default: scalar)\n"
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
      "Gradients (exact discrete adjoint of the steps the run took, step sizes held fixed):\n"
      "  --gradient F  write {\"loss\", \"gradient\": {name: dLoss/dname}, \"units\", \"run\"} to F\n"
      "                (JSON) instead of a trajectory: with respect to every numeric parameter\n"
      "                and every state's initial value (flat names)\n"
      "  --loss NAME   the loss: state NAME at T1, or for a state array the mean of its cells\n"
      "  --loss-file F a sum of terms (JSON): {\"terms\": [{\"variable\": X, \"at\": [t, ...]},\n"
      "                {\"variable\": X, \"integral\" or \"mean\": [a, b]}, {\"observations\": CSV}]},\n"
      "                each with an optional \"weight\"; CSV rows time,name,value,sigma give\n"
      "                1/2 sum ((X(t) - value) / sigma)^2. Times become step ends; integrals are\n"
      "                the trapezoid rule over the steps taken\n"
      "  --wrt LIST    only these names (comma-separated parameters and states)\n"
      "  --gradient-check  also check the gradient in 3 random directions: the dot-product\n"
      "                identity of tangent and adjoint, and central differences (stderr, F)\n"
      "  --sensitivities LIST  with --output OUT.csv: the trajectory with a column\n"
      "                d(X)/d(name) per state X and name (parameter, or state for its initial\n"
      "                value) by the tangent linear model; output times become step ends\n"
      "  --checkpoint-every K  keep the state before every K-th step only (less memory; the\n"
      "                sweep replays the steps between)\n"
      "  --checkpoint-memory SIZE  keep the tape under SIZE bytes (k, M, G: powers of 1024) by\n"
      "                thinning it as the run goes (K doubles); the same gradient, more replays.\n"
      "                Explicit, Rosenbrock and SDIRK methods; preset-time and periodic events\n"
      "                and schedule updates are held fixed, other events are refused\n"
      "\n"
      "Every number must be finite. A state, observed or derivative that is not finite ends the\n"
      "run (rows up to then are kept) with a message naming it and the time.\n"
      "\n"
      "exit status: 0 ok, 1 invalid input, failed solve or failed write, 2 usage error,\n"
      "             130 interrupted (Ctrl-C or SIGTERM: the rows reached are kept, the CSV or\n"
      "                 NetCDF file is valid)\n",
      out);
}

}  // namespace esi::cli
