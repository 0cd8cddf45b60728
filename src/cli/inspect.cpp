// `esi inspect [--json] [--component NAME] FILE`: load, flatten and summarize one document.
//
// Human output lists components, states (units, initial value), observed quantities as infix
// equations, algebraic unknowns, parameters, equation counts and index sets. --json prints
// esm::describe(system) as canonical JSON. Load and flatten errors go to stderr as
// format_diagnostic lines, exit 1.
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "esi/core/error.hpp"
#include "esi/core/json.hpp"
#include "esi/esm/flatten.hpp"
#include "esi/esm/load.hpp"
#include "esi/esm/system.hpp"
#include "esi/expr/parse.hpp"

namespace esi::cli {
namespace {

struct InspectOptions {
  bool json = false;
  std::string component;
  std::string file;
};

std::string units_suffix(const esm::FlatVariable& v) {
  return v.units.empty() ? std::string() : "  [" + v.units + "]";
}

std::string initial_value(const esm::System& sys, const esm::FlatVariable& v) {
  if (v.initial != expr::kNoNode) return expr::to_infix(sys.pool, v.initial);
  if (v.default_value) return format_number(*v.default_value);
  return "-";
}

const char* cadence_name(esm::Cadence c) {
  switch (c) {
    case esm::Cadence::Constant:
      return "";
    case esm::Cadence::Sampled:
      return "  (sampled)";
    case esm::Cadence::Discrete:
      return "  (discrete)";
    case esm::Cadence::Brownian:
      return "  (brownian)";
  }
  return "";
}

std::string shape_suffix(const esm::FlatVariable& v) {
  if (v.shape.empty()) return {};
  std::string s = "  shape(";
  for (std::size_t i = 0; i < v.shape.size(); ++i) s += (i ? ", " : "") + v.shape[i];
  return s + ")";
}

/// One line per array: its axes with their extents and how many of its cells the system holds
/// (cells are not listed one by one: a grid has thousands).
void print_arrays(const esm::System& sys, const std::vector<esm::FlatVariable>& list, const char* what) {
  std::map<std::string, std::size_t> count;
  for (const esm::FlatVariable& v : list)
    if (!v.array.empty()) ++count[v.array];
  for (const auto& a : sys.arrays) {
    auto c = count.find(a.name);
    if (c == count.end()) continue;
    std::string axes;
    std::int64_t cells = 1;
    for (std::size_t d = 0; d < a.axes.size(); ++d) {
      axes += (d ? ", " : "") + a.axes[d] + "=" + std::to_string(a.extents[d]);
      cells *= a.extents[d];
    }
    std::printf("  %s[%s]%s  %zu of %lld cells%s%s\n", a.name.c_str(), axes.c_str(),
                a.units.empty() ? "" : ("  [" + a.units + "]").c_str(), c->second,
                static_cast<long long>(cells), *what ? " " : "", what);
  }
}

void print_human(const esm::System& sys, const std::string& file) {
  std::printf("%s\n", file.c_str());
  std::printf("components (%zu):", sys.components.size());
  for (const std::string& c : sys.components) std::printf(" %s", c.c_str());
  std::printf("\n\nstates (%zu):\n", sys.states.size());
  print_arrays(sys, sys.states, "");
  for (const esm::FlatVariable& v : sys.states) {
    if (!v.array.empty()) continue;
    std::printf("  %s%s%s  ic = %s\n", v.name.c_str(), units_suffix(v).c_str(),
                shape_suffix(v).c_str(), initial_value(sys, v).c_str());
  }
  std::printf("\nobserved (%zu):\n", sys.observed.size());
  print_arrays(sys, sys.observed, "");
  for (std::size_t i = 0; i < sys.observed.size(); ++i) {
    const esm::FlatVariable& v = sys.observed[i];
    if (!v.array.empty()) continue;
    const std::string rhs = i < sys.observed_rhs.size() && sys.observed_rhs[i] != expr::kNoNode
                                ? expr::to_infix(sys.pool, sys.observed_rhs[i])
                                : std::string("?");
    std::printf("  %s = %s%s\n", v.name.c_str(), rhs.c_str(), units_suffix(v).c_str());
  }
  if (!sys.algebraic.empty()) {
    std::printf("\nalgebraic unknowns (%zu):\n", sys.algebraic.size());
    for (const esm::FlatVariable& v : sys.algebraic) {
      std::printf("  %s%s  guess = %s\n", v.name.c_str(), units_suffix(v).c_str(),
                  initial_value(sys, v).c_str());
    }
  }
  std::printf("\nparameters (%zu):\n", sys.parameters.size());
  print_arrays(sys, sys.parameters, "read by the equations");
  for (const esm::FlatVariable& v : sys.parameters) {
    if (!v.array.empty()) continue;
    std::printf("  %s = %s%s%s%s\n", v.name.c_str(),
                v.default_value ? format_number(*v.default_value).c_str() : "-",
                units_suffix(v).c_str(), shape_suffix(v).c_str(), cadence_name(v.cadence));
  }
  std::printf("\nequations: %zu ODE, %zu observed, %zu algebraic; events: %zu\n",
              sys.state_rhs.size(), sys.observed_rhs.size(), sys.algebraic_equations.size(),
              sys.events.is_array() ? sys.events.size() : std::size_t{0});
  if (sys.index_sets.empty()) {
    std::printf("index sets: none\n");
  } else {
    std::printf("index sets (%zu):", sys.index_sets.size());
    for (const auto& [name, size] : sys.index_sets) {
      std::printf(" %s=%lld", name.c_str(), static_cast<long long>(size));
    }
    std::printf("\n");
  }
}

/// Returns kExitOk with `opts` filled, or the exit status to stop with.
int parse_args(Args args, InspectOptions& opts) {
  bool options_done = false;
  std::vector<std::string> files;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (options_done || a.size() < 2 || a[0] != '-') {
      files.push_back(a);
    } else if (a == "--json") {
      opts.json = true;
    } else if (a == "--component" || a == "-c") {
      if (i + 1 >= args.size()) return usage_error("inspect", a + " needs a NAME");
      opts.component = args[++i];
      if (opts.component.empty()) return usage_error("inspect", a + " needs a component name, got an empty one");
    } else if (a.rfind("--component=", 0) == 0) {
      opts.component = a.substr(std::string("--component=").size());
      if (opts.component.empty()) return usage_error("inspect", "--component needs a component name, got an empty one");
    } else if (a == "-h" || a == "--help") {
      print_inspect_help(stdout);
      return -1;
    } else if (a == "--") {
      options_done = true;
    } else {
      return usage_error("inspect", "unknown option '" + a + "'");
    }
  }
  if (files.size() != 1) {
    return usage_error("inspect", files.empty() ? "no FILE given" : "expects exactly one FILE");
  }
  opts.file = files[0];
  return kExitOk;
}

}  // namespace

void print_inspect_help(std::FILE* out) {
  std::fputs(
      "usage: esi inspect [--json] [--component NAME] FILE\n"
      "\n"
      "Loads FILE (resolving refs and imports), flattens it with its coupling and prints a\n"
      "summary: components, states, observed quantities, parameters, equation counts and index\n"
      "sets.\n"
      "\n"
      "  --json             print the summary as canonical JSON\n"
      "  --component NAME   flatten only component NAME (and what it contains)\n"
      "\n"
      "exit status: 0 ok, 1 the file cannot be loaded or flattened, 2 usage error\n",
      out);
}

int run_inspect(Args args) {
  InspectOptions opts;
  if (const int rc = parse_args(args, opts); rc != kExitOk) return rc < 0 ? kExitOk : rc;
  try {
    const std::optional<esm::ResolvedDocument> loaded = load_or_report(opts.file);
    if (!loaded) return kExitInvalid;
    const esm::ResolvedDocument& doc = *loaded;
    if (doc.library_only) {
      if (opts.json) {
        std::printf("%s\n", canonical_json({{"file", opts.file}, {"library_only", true}}).c_str());
      } else {
        std::printf("%s: a library or catalog file; it holds no component to flatten\n",
                    opts.file.c_str());
      }
      return kExitOk;
    }
    esm::FlattenOptions fopts;
    fopts.component = opts.component;
    const esm::System system = esm::flatten(doc, fopts);
    if (opts.json) {
      std::printf("%s\n", canonical_json(esm::describe(system)).c_str());
    } else {
      print_human(system, opts.file);
    }
    return kExitOk;
  } catch (const Error& e) {
    Diagnostic d = e.diagnostic();
    if (d.file.empty()) d.file = opts.file;
    std::fprintf(stderr, "%s\n", format_diagnostic(d).c_str());
    return kExitInvalid;
  }
}

}  // namespace esi::cli
