// `esi plan FILE [--component NAME] [-o PLAN.json] [--samples N] [--seed S] [--no-validate]
// [--config RUN.json]`:
// the planner's passes on one document (include/esi/plan/plan.hpp), written as canonical JSON.
//
// The document goes through the same checking pipeline as every command (load_or_report), is
// flattened in the per-region form when it has arrays (what a grid compiles to) and planned.
// plan.json holds no time or path beyond the FILE argument, so two runs give the same bytes;
// a one-line summary with the time taken goes to stderr. Exit 1 when the document cannot be
// loaded or planned, or when the plan's validation fails (the plan is still written, with the
// failures in it).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "esi/core/error.hpp"
#include "esi/core/json.hpp"
#include "esi/esm/flatten.hpp"
#include "esi/exec/run_config.hpp"
#include "esi/exec/schedule.hpp"
#include "esi/plan/plan.hpp"

namespace esi::cli {
namespace {

struct PlanArgs {
  std::string file, component, output, inputs_file, config;
  nlohmann::json inputs = nlohmann::json::object();  ///< --set NAME=VALUE
  plan::PlanOptions options;
};

int parse_count(const std::string& flag, const std::string& text, long long lo, long long hi, long long& out) {
  try {
    std::size_t used = 0;
    out = std::stoll(text, &used);
    if (used == text.size() && out >= lo && out <= hi) return kExitOk;
  } catch (const std::exception&) {
  }
  return usage_error("plan", flag + " needs a whole number from " + std::to_string(lo) + " to " + std::to_string(hi) +
                                 ", got '" + text + "'");
}

int parse_args(Args args, PlanArgs& o) {
  std::vector<std::string> files;
  bool options_done = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](std::string& into) {
      if (i + 1 >= args.size()) return usage_error("plan", a + " needs a value");
      into = args[++i];
      if (into.empty()) return usage_error("plan", a + " needs a non-empty value");
      return kExitOk;
    };
    if (options_done || a.size() < 2 || a[0] != '-') {
      files.push_back(a);
    } else if (a == "--component" || a == "-c") {
      if (const int rc = value(o.component); rc != kExitOk) return rc;
    } else if (a == "-o" || a == "--output") {
      if (const int rc = value(o.output); rc != kExitOk) return rc;
    } else if (a == "--samples" || a == "--seed") {
      std::string text;
      if (const int rc = value(text); rc != kExitOk) return rc;
      long long n = 0;
      if (a == "--samples") {
        if (const int rc = parse_count(a, text, 1, 100, n); rc != kExitOk) return rc;
        o.options.samples = static_cast<int>(n);
      } else {
        if (const int rc = parse_count(a, text, 0, (1LL << 53), n); rc != kExitOk) return rc;
        o.options.seed = static_cast<std::uint64_t>(n);
      }
    } else if (a == "--inputs") {
      if (const int rc = value(o.inputs_file); rc != kExitOk) return rc;
    } else if (a == "--config") {
      if (const int rc = value(o.config); rc != kExitOk) return rc;
    } else if (a == "--set") {
      std::string text;
      if (const int rc = value(text); rc != kExitOk) return rc;
      const std::size_t eq = text.find('=');
      double v = 0;
      std::size_t used = 0;
      bool ok = eq != std::string::npos && eq > 0;
      if (ok) {
        try {
          v = std::stod(text.substr(eq + 1), &used);
        } catch (const std::exception&) {
          ok = false;
        }
      }
      if (!ok || used != text.size() - eq - 1 || !std::isfinite(v))
        return usage_error("plan", "--set needs NAME=VALUE with a finite number, got '" + text + "'");
      o.inputs[text.substr(0, eq)] = v;
    } else if (a == "--no-validate") {
      o.options.validate = false;
    } else if (a == "-h" || a == "--help") {
      print_plan_help(stdout);
      return -1;
    } else if (a == "--") {
      options_done = true;
    } else {
      return usage_error("plan", "unknown option '" + a + "'");
    }
  }
  if (files.size() != 1) return usage_error("plan", files.empty() ? "no FILE given" : "expects exactly one FILE");
  o.file = files[0];
  return kExitOk;
}

}  // namespace

void print_plan_help(std::FILE* out) {
  std::fputs(
      "usage: esi plan [--component NAME] [--inputs F.json] [--set NAME=VALUE]... [-o PLAN.json]\n"
      "                [--samples N] [--seed S] [--no-validate] [--config RUN.json] FILE\n"
      "\n"
      "Plans FILE's right-hand side as a sum of operators and writes plan.json (canonical JSON,\n"
      "the same bytes on every run): each operator's component and origin, locality (pointwise,\n"
      "column, stencil with its reach per axis and direction, global), the rows it writes, its\n"
      "Jacobian pattern (per-cell block by species name, stencil footprint), the Markowitz LU\n"
      "order and fill of pointwise blocks and a Gershgorin bound; then the validation at sampled\n"
      "non-default states: the operators sum to the right-hand side and every pattern covers\n"
      "the dual-number Jacobian (and, without a grid, the analytic Jacobian equals it).\n"
      "\n"
      "  --component NAME   plan only component NAME (and what it contains)\n"
      "  --inputs F.json    values by name (a number, or a nested array for an array), as\n"
      "                     for 'esi simulate'\n"
      "  --set NAME=VALUE   a parameter's value (every cell of an array parameter); the\n"
      "                     validation needs finite right-hand sides (forcing fields read from\n"
      "                     data sources have no value otherwise)\n"
      "  -o, --output FILE  write the plan there (default: standard output)\n"
      "  --samples N        sampled states for the validation (default 3)\n"
      "  --seed S           seed of the sampled states and cells (default 20261201)\n"
      "  --no-validate      skip the validation\n"
      "  --config RUN.json  also the run's strategy (\"strategy\"): each schedule leaf's method\n"
      "                     and, for \"auto\", why (structure, then the Gershgorin bound at the\n"
      "                     sampled states times the macro step); the configuration's inputs\n"
      "                     are used when --inputs is not given\n"
      "\n"
      "exit status: 0 ok, 1 the file cannot be loaded or planned or the validation failed,\n"
      "2 usage error\n",
      out);
}

int run_plan(Args args) {
  PlanArgs o;
  if (const int rc = parse_args(args, o); rc != kExitOk) return rc < 0 ? kExitOk : rc;
  try {
    const auto start = std::chrono::steady_clock::now();
    const std::optional<esm::ResolvedDocument> loaded = load_or_report(o.file);
    if (!loaded) return kExitInvalid;
    if (loaded->library_only) {
      std::fprintf(stderr, "esi plan: %s is a library or catalog file; it holds no component to plan\n", o.file.c_str());
      return kExitInvalid;
    }
    esm::FlattenOptions fopts;
    fopts.component = o.component;
    fopts.grid = true;
    std::optional<exec::RunConfig> config;
    if (!o.config.empty()) {
      config = exec::read_run_config(o.config);
      if (fopts.component.empty()) fopts.component = config->component;
      fopts.inputs = config->inputs;
      fopts.inputs_file = config->inputs_file;
    }
    if (!o.inputs_file.empty()) {
      fopts.inputs = read_json_file(o.inputs_file);
      fopts.inputs_file = o.inputs_file;
      if (!fopts.inputs.is_object())
        throw Error("invalid_inputs", o.inputs_file, "",
                    "an inputs file holds one JSON object: variable name -> number or nested array");
    }
    for (const auto& [name, value] : o.inputs.items()) fopts.inputs[name] = value;  // --set wins
    esm::System system = esm::flatten(*loaded, fopts);
    o.options.document = o.file;
    o.options.component = o.component;
    const esm::System unplanned = config ? system : esm::System{};
    const plan::Plan p = plan::make_plan(system, o.options);
    nlohmann::json out = plan::to_json(p);
    if (config) {
      nlohmann::json strategy = nlohmann::json::array();
      for (const exec::LeafChoice& c : exec::run_strategy(unplanned, *config, &p))
        strategy.push_back({{"leaf", c.leaf},
                            {"pointer", c.pointer},
                            {"auto", c.automatic},
                            {"alg", c.method == method::MethodId::Auto ? std::string("chosen at the start")
                                                                       : std::string(method::method_info(c.method).name)},
                            {"why", c.why}});
      out["strategy"] = strategy;
    }
    const std::string text = canonical_json(out) + "\n";
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (o.output.empty()) {
      std::fwrite(text.data(), 1, text.size(), stdout);
    } else {
      std::ofstream f(o.output, std::ios::binary);
      f << text;
      f.close();
      if (!f) {
        std::fprintf(stderr, "esi plan: cannot write %s\n", o.output.c_str());
        return kExitInvalid;
      }
    }
    std::string summary;
    for (const auto& op : p.operators) {
      summary += "\n  " + op.name + ": " + plan::locality_name(op.locality) + ", " + std::to_string(op.rows.size()) +
                 " row" + (op.rows.size() == 1 ? "" : "s") + ", pattern " + std::to_string(op.block.species.size()) +
                 " species / " + std::to_string(op.block.nonzeros()) + " nonzeros";
      if (op.lu.planned) summary += ", LU fill " + std::to_string(op.lu.fill);
    }
    std::fprintf(stderr, "esi plan: %s (%s form, %zu states): %zu operators in %.2f s%s\n", o.file.c_str(),
                 p.form.c_str(), p.states, p.operators.size(), seconds, summary.c_str());
    if (p.validation.ran && !p.validation.ok()) {
      std::fprintf(stderr, "esi plan: validation failed:\n");
      for (const auto& f : p.validation.failures) std::fprintf(stderr, "  %s\n", f.c_str());
      return kExitInvalid;
    }
    return kExitOk;
  } catch (const Error& e) {
    Diagnostic d = e.diagnostic();
    if (d.file.empty()) d.file = o.file;
    std::fprintf(stderr, "%s\n", format_diagnostic(d).c_str());
    return kExitInvalid;
  }
}

}  // namespace esi::cli
