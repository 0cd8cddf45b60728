// The subcommand dispatcher (`dispatch`), the top-level help and the helpers every subcommand
// shares (usage errors, loading a document or reporting why not, number spelling).
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <new>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "esi/core/text.hpp"
#include "esi/method/integrator.hpp"
#include "esi/core/error.hpp"
#include "esi/esm/schema.hpp"

namespace esi::cli {
namespace {

void print_help(std::FILE* out) {
  std::fputs(
      "esi " ESI_VERSION
      " - EarthSciIntegrator, an engine for Earth-science models in the ESM "
      "format\n"
      "\n"
      "usage: esi <command> [options] [args]\n"
      "\n"
      "commands:\n"
      "  validate [--json] FILE...                  check documents (parse, schema, references,\n"
      "                                             structure, units, trial flatten)\n"
      "  inspect [--json] [--component NAME] FILE   load, flatten and summarize a model: states,\n"
      "                                             reactions, equations; --species, --reactions,\n"
      "                                             --equations, --grep P filter (see 'esi help\n"
      "                                             inspect')\n"
      "  import-kpp MECH.eqn [.spc] [.def] -o OUT   a KPP mechanism as an ESM reaction system\n"
      "  plan FILE [--component NAME] [-o PLAN]     operators, locality, Jacobian patterns and\n"
      "                                             their validation as plan.json\n"
      "  simulate FILE --tspan T0 T1 --output CSV   integrate a model; units and run metadata in\n"
      "                                             CSV.json (see 'esi help simulate')\n"
      "  run [MODEL] --config RUN.json --output OUT  run a model by a run configuration: operator\n"
      "                                             splitting, forcing, NetCDF, restart files\n"
      "                                             (see 'esi help run')\n"
      "  check [--json] [--jobs N] FILE_OR_DIR...   run the inline tests of documents\n"
      "  sample FILE --energy E --rows R --steps K ...  Langevin chains on an energy (see\n"
      "                                             'esi help sample')\n"
      "  analyze FILE [--out DIR] [--jobs N]        run a document's inline analyses: CSV per\n"
      "                                             run, plots, index.html (see 'esi help analyze')\n"
      "  help [COMMAND]                             show this help or a command's help\n"
      "\n"
      "options:\n"
      "  -h, --help       show help\n"
      "  --version        print the version\n"
      "\n"
      "exit status: 0 ok, 1 invalid input, 2 usage error, 3 internal error\n"
      "environment: ESI_SCHEMA  path of esm-schema.json (default: the build's configured path)\n",
      out);
}

int run_help(Args args) {
  if (args.empty()) {
    print_help(stdout);
    return kExitOk;
  }
  if (args[0] == "validate") {
    print_validate_help(stdout);
    return kExitOk;
  }
  if (args[0] == "inspect") {
    print_inspect_help(stdout);
    return kExitOk;
  }
  if (args[0] == "import-kpp") {
    print_import_kpp_help(stdout);
    return kExitOk;
  }
  if (args[0] == "plan") {
    print_plan_help(stdout);
    return kExitOk;
  }
  if (args[0] == "simulate") {
    print_simulate_help(stdout);
    return kExitOk;
  }
  if (args[0] == "run") {
    print_run_help(stdout);
    return kExitOk;
  }
  if (args[0] == "check") {
    print_check_help(stdout);
    return kExitOk;
  }
  if (args[0] == "sample") {
    print_sample_help(stdout);
    return kExitOk;
  }
  if (args[0] == "analyze") {
    print_analyze_help(stdout);
    return kExitOk;
  }
  if (args[0] == "help") {
    print_help(stdout);
    return kExitOk;
  }
  return usage_error("help", "unknown command '" + args[0] + "'");
}

}  // namespace

int dispatch(const std::vector<std::string>& argv) {
  if (argv.empty()) {
    print_help(stderr);
    return kExitUsage;
  }
  const std::string& command = argv[0];
  const Args rest(argv.data() + 1, argv.size() - 1);
  // Every command below reads documents through the checking pipeline; without the schema
  // its first layer is skipped, which a person must hear about (validate says it per file).
  if (command != "validate" && command != "help" && command != "-h" && command != "--help" &&
      command != "--version" && command != "version" && !esm::locate_esm_schema())
    std::fprintf(stderr, "esi: warning: %s\n", esm::schema_not_found_message().c_str());
  if (command == "validate") return run_validate(rest);
  if (command == "inspect") return run_inspect(rest);
  if (command == "import-kpp") return run_import_kpp(rest);
  if (command == "plan") return run_plan(rest);
  if (command == "simulate") return run_simulate(rest);
  if (command == "run") return run_run(rest);
  if (command == "check") return run_check(rest);
  if (command == "sample") return run_sample(rest);
  if (command == "analyze") return run_analyze(rest);
  if (command == "help" || command == "-h" || command == "--help") return run_help(rest);
  if (command == "--version" || command == "version") {
    std::puts("esi " ESI_VERSION);
    const auto schema = esm::locate_esm_schema();
    std::printf("schema: %s\n", schema ? schema->string().c_str() : "not found (set ESI_SCHEMA)");
    return kExitOk;
  }
  std::fprintf(stderr, "esi: unknown command '%s'\n", command.c_str());
  std::fputs("run 'esi help' for the list of commands\n", stderr);
  return kExitUsage;
}

std::string unknown_method_message(std::string_view name, std::string_view extra) {
  auto lower = [](std::string_view s) {
    std::string out(s);
    for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
    return out;
  };
  std::vector<std::string> names{"auto"};
  for (method::MethodId id : method::all_methods()) names.emplace_back(method::method_info(id).name);
  const std::string wanted = lower(name);
  const std::size_t limit = std::max<std::size_t>(1, name.size() / 4);
  std::string best;
  std::size_t best_distance = limit + 1;
  for (const std::string& n : names) {
    const std::size_t d = edit_distance(wanted, lower(n));
    if (d < best_distance) best_distance = d, best = n;
  }
  std::string message = "unknown method '" + std::string(name) + "'";
  if (!best.empty()) return message + "; did you mean '" + best + "'?";
  message += "; known: ";
  for (std::size_t k = 1; k < names.size(); ++k) message += names[k] + ", ";
  message += "auto";
  if (!extra.empty()) message += "; " + std::string(extra);
  return message;
}

int usage_error(std::string_view command, std::string_view message) {
  std::fprintf(stderr, "esi %.*s: %.*s\n", static_cast<int>(command.size()), command.data(),
               static_cast<int>(message.size()), message.data());
  std::fprintf(stderr, "run 'esi help %.*s' for usage\n", static_cast<int>(command.size()),
               command.data());
  return kExitUsage;
}

std::optional<esm::ResolvedDocument> load_or_report(const std::string& file) {
  esm::CheckedDocument checked = esm::load_checked(file);
  if (checked.doc) return std::move(checked.doc);
  const std::vector<Diagnostic> shown = checked.report.shown();
  for (Diagnostic d : shown) {
    if (d.file.empty()) d.file = file;
    std::fprintf(stderr, "%s\n", format_diagnostic(d).c_str());
  }
  const std::size_t n = shown.size();
  std::fprintf(stderr, "%s: refused (%zu error%s; 'esi validate' lists the same findings)\n",
               file.c_str(), n, n == 1 ? "" : "s");
  return std::nullopt;
}

std::string format_number(double value) { return number_text(value); }

}  // namespace esi::cli

