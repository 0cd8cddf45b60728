// The `esi` command: one function per subcommand, each taking the arguments after its name.
//
// Exit codes are shared by every subcommand:
//   0  success (every file valid / the model was inspected / simulated / every test passed)
//      (simulate: 1 also for a failed solve; check: 1 when an assertion fails or a test errors)
//   1  the input is invalid or cannot be loaded (diagnostics say why)
//   2  usage error (unknown subcommand or option, missing argument)
//   3  internal error: an exception that is not esi::Error, i.e. a bug in esi
#pragma once

#include <cstdio>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "esi/esm/load.hpp"

#ifndef ESI_VERSION
#define ESI_VERSION "0.1.0"
#endif

namespace esi::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitInvalid = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitInternal = 3;
inline constexpr int kExitInterrupted = 130;  ///< Ctrl-C / SIGTERM (128 + SIGINT, as shells say)

using Args = std::span<const std::string>;

/// `esi validate [--json] FILE...`
int run_validate(Args args);
/// `esi inspect [--json] [--component NAME] FILE`
int run_inspect(Args args);

void print_validate_help(std::FILE* out);
void print_inspect_help(std::FILE* out);
/// `esi import-kpp MECH.eqn [MECH.spc] [MECH.def] -o OUT.esm`
int run_import_kpp(Args args);
void print_import_kpp_help(std::FILE* out);

/// `esi plan FILE [--component NAME] [-o PLAN.json]`
int run_plan(Args args);
void print_plan_help(std::FILE* out);

/// `esi simulate FILE [--component NAME] --tspan T0 T1 [--saveat DT] ... --output OUT.csv`
int run_simulate(Args args);
/// `esi check [--json] [--jobs N] FILE_OR_DIR...`
int run_check(Args args);
void print_simulate_help(std::FILE* out);
void print_check_help(std::FILE* out);
/// `esi sample FILE --energy NAME --rows R --steps K --step-size ETA --temperature T ...`
int run_sample(Args args);
void print_sample_help(std::FILE* out);
/// `esi analyze FILE [--component C] [--analysis ID] [--out DIR] [--jobs N]`
int run_analyze(Args args);
void print_analyze_help(std::FILE* out);
/// `esi run [MODEL.esm] --config RUN.json --output OUT [--restart F] [--restart-every S --restart-dir D]`
int run_run(Args args);
void print_run_help(std::FILE* out);

/// Runs one command line (argv without the program name) and returns its exit status. Input
/// problems are reported and mapped to statuses; an esi::Error may still escape (the input's
/// fault, exit 1 in `main`), anything else is a bug in esi.
int dispatch(const std::vector<std::string>& argv);

/// Prints "esi <command>: <message>" and a hint to stderr; returns kExitUsage.
int usage_error(std::string_view command, std::string_view message);

/// "unknown method 'rodas5p'; did you mean 'Rodas5P'?" where a method's name is close (a
/// different case, a letter or two), else the names there are. `extra`: the command's further
/// names (simulate's SDE methods), "" for none.
std::string unknown_method_message(std::string_view name, std::string_view extra = "");

/// Runs the checking pipeline (esm::load_checked) on `file`. On findings prints each one to
/// stderr and returns nullopt: every command refuses a document `esi validate` rejects.
std::optional<esm::ResolvedDocument> load_or_report(const std::string& file);

/// Shortest round-trip spelling of a double ("298.15", "1e+12").
std::string format_number(double value);

}  // namespace esi::cli
