// `esi inspect [--json] [--component NAME] [--species] [--reactions] [--equations] [--grep P]
// FILE`: load, flatten and summarize one document for a modeller.
//
// Both forms print esm::describe(system): --json as canonical JSON, the human form grouped by
// kind (states, observed as infix equations with units, parameters, reactions written
// `NO + O3 -> NO2 : k1 * exp(-1500 / T)`, equations in infix), names in natural order, each
// array on one line. Group options narrow the output to the groups named; --grep keeps the
// entries whose name or printed expression contains PATTERN or matches it as an ECMAScript
// regular expression (an invalid one is a usage error, exit 2). Load and flatten errors go to
// stderr as format_diagnostic lines, exit 1.
#include <cstdio>
#include <memory>
#include <regex>
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

using nlohmann::json;

struct InspectOptions {
  bool json = false;
  std::string component;
  std::string file;
  esm::DescribeOptions describe;
  bool filtered = false;      ///< a group option or --grep was given: print only what was asked
  bool groups_named = false;  ///< a group option was given
  std::string grep;
};

std::string str(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string units_suffix(const json& v) {
  const std::string u = str(v, "units");
  return u.empty() ? std::string() : "  [" + u + "]";
}

std::string shape_suffix(const json& v) {
  if (!v.contains("shape")) return {};
  std::string s = "  shape(";
  bool first = true;
  for (const auto& axis : v["shape"]) s += (first ? "" : ", ") + axis.get<std::string>(), first = false;
  return s + ")";
}

std::string value_text(const json& v) {
  if (v.contains("initial")) return str(v, "initial");
  const auto d = v.find("default");
  return d != v.end() && d->is_number() ? format_number(d->get<double>()) : std::string("-");
}

/// The heading of one group: its size, or, under --grep, how many entries matched.
void heading(const InspectOptions& o, const char* title, std::size_t shown, std::size_t total) {
  if (o.grep.empty()) std::printf("\n%s (%zu):\n", title, total);
  else std::printf("\n%s (%zu of %zu match):\n", title, shown, total);
}

/// One line per array of `kind`: its axes with their extents and how many of its cells the
/// system holds (cells are not listed one by one: a grid has thousands).
std::size_t print_arrays(const json& d, const std::string& kind, const char* what) {
  std::size_t n = 0;
  for (const json& a : d["arrays"]) {
    if (str(a, "kind") != kind) continue;
    std::string axes;
    for (std::size_t k = 0; k < a["axes"].size(); ++k)
      axes += (k ? ", " : "") + a["axes"][k].get<std::string>() + "=" + std::to_string(a["extents"][k].get<long long>());
    const long long held = a.contains("cells_read") ? a["cells_read"].get<long long>() : a.value("cells_held", 0LL);
    std::printf("  %s[%s]%s  %lld of %lld cells%s%s\n", str(a, "name").c_str(), axes.c_str(),
                units_suffix(a).c_str(), held, a["cells"].get<long long>(), *what ? " " : "", what);
    ++n;
  }
  return n;
}

std::string box_text(const json& box) {
  std::string t = "[";
  for (std::size_t k = 0; k < box["lo"].size(); ++k) {
    const long long lo = box["lo"][k].get<long long>(), hi = box["hi"][k].get<long long>();
    t += (k ? "," : "") + (lo == hi ? std::to_string(lo) : std::to_string(lo) + ":" + std::to_string(hi));
  }
  return t + "]";
}

/// The per-region programs: one line per array equation (its boxes, at most a few listed).
void print_regions(const json& r) {
  if (r.contains("fallback")) {
    std::printf("\narrays as one equation per cell (no per-region form: %s)\n", str(r, "fallback").c_str());
    return;
  }
  std::size_t programs = 0, boxes = 0;
  for (const json& e : r["equations"]) {
    programs += e["programs"].get<std::size_t>();
    boxes += e["boxes"].size();
  }
  std::printf("\nper-region programs (%zu equations, %zu programs over %zu boxes; the same at any grid size):\n",
              r["equations"].size(), programs, boxes);
  for (const json& e : r["equations"]) {
    std::string targets;
    for (const auto& t : e["targets"]) targets += (targets.empty() ? "" : ", ") + t.get<std::string>();
    const std::string kind = str(e, "kind");
    const std::string what = kind == "tendency" ? "D(" + targets + ", t)" : kind == "initial" ? "ic(" + targets + ")" : targets;
    std::string list;
    const std::size_t shown = std::min<std::size_t>(e["boxes"].size(), 7);
    for (std::size_t k = 0; k < shown; ++k) list += " " + box_text(e["boxes"][k]);
    if (e["boxes"].size() > shown) list += " ... (" + std::to_string(e["boxes"].size() - shown) + " more)";
    std::printf("  %s: %zu program%s over %zu box%s:%s\n", what.c_str(), e["programs"].get<std::size_t>(),
                e["programs"].get<std::size_t>() == 1 ? "" : "s", e["boxes"].size(),
                e["boxes"].size() == 1 ? "" : "es", list.c_str());
  }
}

std::size_t count_arrays(const json& d, const std::string& kind) {
  std::size_t n = 0;
  for (const json& a : d["arrays"]) n += str(a, "kind") == kind;
  return n;
}

/// The human form of esm::describe's JSON: the same entries, grouped by kind.
void print_human(const json& d, const InspectOptions& o) {
  const json& counts = d["counts"];
  std::printf("%s\n", o.file.c_str());
  std::printf("components (%zu):", d["components"].size());
  for (const auto& c : d["components"]) std::printf(" %s", c.get<std::string>().c_str());
  std::printf("\n");
  if (d.contains("states")) {
    heading(o, "states", d["states"].size() + count_arrays(d, "state"), counts["states"]);
    print_arrays(d, "state", "");
    for (const json& v : d["states"])
      std::printf("  %s%s%s  ic = %s\n", str(v, "name").c_str(), units_suffix(v).c_str(), shape_suffix(v).c_str(),
                  value_text(v).c_str());
    if (!d["algebraic"].empty() || counts["algebraic"] != 0) {
      heading(o, "algebraic unknowns", d["algebraic"].size(), counts["algebraic"]);
      for (const json& v : d["algebraic"])
        std::printf("  %s%s  guess = %s\n", str(v, "name").c_str(), units_suffix(v).c_str(), value_text(v).c_str());
    }
  }
  if (d.contains("observed")) {
    heading(o, "observed", d["observed"].size() + count_arrays(d, "observed"), counts["observed"]);
    print_arrays(d, "observed", "");
    for (const json& v : d["observed"])
      std::printf("  %s = %s%s\n", str(v, "name").c_str(), str(v, "rhs").c_str(), units_suffix(v).c_str());
  }
  if (d.contains("parameters")) {
    heading(o, "parameters", d["parameters"].size() + count_arrays(d, "parameter"), counts["parameters"]);
    print_arrays(d, "parameter", "read by the equations");
    for (const json& v : d["parameters"]) {
      const std::string cadence = str(v, "cadence");
      std::printf("  %s = %s%s%s%s\n", str(v, "name").c_str(), value_text(v).c_str(), units_suffix(v).c_str(),
                  shape_suffix(v).c_str(), cadence == "constant" ? "" : ("  (" + cadence + ")").c_str());
    }
  }
  if (d.contains("reactions") && (counts["reactions"] != 0 || o.groups_named)) {
    heading(o, "reactions", d["reactions"].size(), counts["reactions"]);
    for (const json& r : d["reactions"]) {
      const std::string id = str(r, "id");
      std::printf("  %s%s%s  %s\n", str(r, "component").c_str(), id.empty() ? "" : ".", id.c_str(),
                  str(r, "text").c_str());
    }
  }
  if (d.contains("equations")) {
    std::size_t state_arrays = 0;
    for (const json& a : d["arrays"]) state_arrays += str(a, "kind") == "state";
    heading(o, "equations", d["equations"].size() + state_arrays,
            counts["states"].get<std::size_t>() + counts["algebraic_equations"].get<std::size_t>());
    const bool programs = d.contains("regions") && !d["regions"].contains("fallback");
    for (const json& a : d["arrays"])
      if (str(a, "kind") == "state")
        std::printf("  D(%s, t)  %s, %lld cells%s\n", str(a, "name").c_str(),
                    programs ? "per-region programs (listed below)" : "one equation per cell (not listed)",
                    a.value("cells_held", 0LL), units_suffix(a).c_str());
    for (const json& e : d["equations"]) {
      const std::string u = str(e, "units");
      std::printf("  %s%s\n", str(e, "text").c_str(),
                  u.empty() ? "" : ("  [" + str(e, "variable") + ": " + u + "]").c_str());
    }
  }
  if (d.contains("regions") && !o.filtered) print_regions(d["regions"]);
  if (o.filtered) return;
  std::printf("\nequations: %zu ODE, %zu observed, %zu algebraic; reactions: %zu; events: %zu\n",
              counts["states"].get<std::size_t>(), counts["observed"].get<std::size_t>(),
              counts["algebraic_equations"].get<std::size_t>(), counts["reactions"].get<std::size_t>(),
              d["events"].get<std::size_t>());
  if (d["index_sets"].empty()) {
    std::printf("index sets: none\n");
  } else {
    std::printf("index sets (%zu):", d["index_sets"].size());
    for (auto it = d["index_sets"].begin(); it != d["index_sets"].end(); ++it)
      std::printf(" %s=%lld", it.key().c_str(), it.value().get<long long>());
    std::printf("\n");
  }
}

/// The --grep test: PATTERN as a plain substring, or as an ECMAScript regular expression.
/// libstdc++'s default regex engine recurses once per character and overflows the stack on the
/// long right-hand sides of big mechanisms; its polynomial (Thompson) mode does not.
int make_grep(const std::string& pattern, esm::DescribeOptions& d) {
#ifdef __GLIBCXX__
  const auto flags = std::regex::ECMAScript | std::regex_constants::__polynomial;
#else
  const auto flags = std::regex::ECMAScript;
#endif
  std::shared_ptr<std::regex> re;
  try {
    re = std::make_shared<std::regex>(pattern, flags);
  } catch (const std::regex_error& e) {
    return usage_error("inspect", "--grep '" + pattern + "' is not a valid regular expression (" + e.what() +
                                      "); back-references are not supported");
  }
  d.keep = [pattern, re](const std::string& text) {
    return text.find(pattern) != std::string::npos || std::regex_search(text, *re);
  };
  return kExitOk;
}

/// Returns kExitOk with `opts` filled, or the exit status to stop with.
int parse_args(Args args, InspectOptions& opts) {
  bool options_done = false, group_given = false;
  std::vector<std::string> files;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (options_done || a.size() < 2 || a[0] != '-') {
      files.push_back(a);
    } else if (a == "--json") {
      opts.json = true;
    } else if (a == "--species" || a == "--states" || a == "--reactions" || a == "--equations" ||
               a == "--parameters" || a == "--observed") {
      if (!group_given) {  // the first group option narrows the output to the groups named
        opts.describe.states = opts.describe.observed = opts.describe.parameters = false;
        opts.describe.reactions = opts.describe.equations = false;
        group_given = opts.groups_named = true;
      }
      if (a == "--species" || a == "--states") opts.describe.states = true;
      else if (a == "--reactions") opts.describe.reactions = true;
      else if (a == "--equations") opts.describe.equations = true;
      else if (a == "--parameters") opts.describe.parameters = true;
      else opts.describe.observed = true;
      opts.filtered = true;
    } else if (a == "--grep" || a.rfind("--grep=", 0) == 0) {
      if (a == "--grep" && i + 1 >= args.size()) return usage_error("inspect", "--grep needs a PATTERN");
      opts.grep = a == "--grep" ? args[++i] : a.substr(std::string("--grep=").size());
      if (opts.grep.empty()) return usage_error("inspect", "--grep needs a non-empty PATTERN");
      if (const int rc = make_grep(opts.grep, opts.describe); rc != kExitOk) return rc;
      opts.filtered = true;
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
      "usage: esi inspect [--json] [--component NAME] [--species] [--observed] [--parameters]\n"
      "                   [--reactions] [--equations] [--grep PATTERN] FILE\n"
      "\n"
      "Loads FILE (resolving refs and imports), flattens it with its coupling and prints a\n"
      "summary grouped by kind: states (species) with units and initial values, observed\n"
      "quantities as infix equations with units, parameters, reactions as people write them\n"
      "(R1  NO + O3 -> NO2 : k1 * exp(-1500 / T), coefficients before their species, names of\n"
      "the reaction's own system local), equations (D(x, t) = ...) in infix, then counts and\n"
      "index sets. Names are in natural order (j_2 before j_10); reactions in document order;\n"
      "an array is one line (its axes and cell count), its cells are not listed.\n"
      "\n"
      "  --json             print the same content as canonical JSON\n"
      "  --component NAME   flatten only component NAME (and what it contains)\n"
      "  --species          only states (species) and algebraic unknowns; --observed,\n"
      "                     --parameters, --reactions, --equations likewise; several combine\n"
      "  --grep PATTERN     only entries whose name or printed expression contains PATTERN\n"
      "                     or matches it as an ECMAScript regular expression\n"
      "\n"
      "exit status: 0 ok, 1 the file cannot be loaded or flattened, 2 usage error (also an\n"
      "invalid --grep regular expression)\n",
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
    fopts.grid = true;  // arrays as per-region programs: what a grid really compiles to, and fast
    const esm::System system = esm::flatten(doc, fopts);
    const json description = esm::describe(system, opts.describe);
    if (opts.json) {
      std::printf("%s\n", canonical_json(description).c_str());
    } else {
      print_human(description, opts);
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
