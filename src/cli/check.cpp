// `esi check [--json] [--jobs N] FILE_OR_DIR...`: runs every inline test (spec §6.6) of the
// documents named (directories are walked for *.esm, sorted) and exits 0 only when every
// assertion passes and nothing errored.
//
// Human output: one line per failing assertion and per error, then a summary line. --json
// prints check::to_json (files in the order given, whatever --jobs is).
#include <charconv>
#include <cmath>
#include <optional>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "esi/core/error.hpp"
#include "esi/core/json.hpp"
#include "esi/check/check.hpp"
#include "esi/method/integrator.hpp"

namespace esi::cli {
namespace {

/// More threads than this only cost memory: each runs one document at a time.
constexpr int kMaxJobs = 256;

struct CheckArgs {
  bool json = false;
  int jobs = 1;
  std::vector<std::string> paths;
  std::string inputs;
  method::MethodId method = method::MethodId::Auto;
};

int parse_args(Args args, CheckArgs& c) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      print_check_help(stdout);
      return -1;
    }
    if (a == "--json") {
      c.json = true;
    } else if (a == "--jobs" || a == "-j") {
      if (i + 1 >= args.size()) return usage_error("check", a + " needs a number");
      const std::string& v = args[++i];
      const auto r = std::from_chars(v.data(), v.data() + v.size(), c.jobs);
      if (r.ec != std::errc() || r.ptr != v.data() + v.size() || c.jobs < 1 || c.jobs > kMaxJobs)
        return usage_error("check", "--jobs needs an integer from 1 to " + std::to_string(kMaxJobs) +
                                        ", got '" + v + "'");
    } else if (a == "--inputs") {
      if (i + 1 >= args.size() || args[i + 1].empty()) return usage_error("check", "--inputs needs a FILE.json");
      c.inputs = args[++i];
    } else if (a == "--method") {
      if (i + 1 >= args.size()) return usage_error("check", "--method needs a method name");
      const std::string& v = args[++i];
      const auto m = v == "auto" ? std::optional<method::MethodId>(method::MethodId::Auto) : method::method_from_name(v);
      if (!m) return usage_error("check", unknown_method_message(v));
      if (!method::method_available(*m))
        return usage_error("check", "--method " + v + ": esi was built without SUNDIALS");
      if (*m != method::MethodId::Auto && *m != method::MethodId::CVODE_BDF &&
          method::method_info(*m).embedded_order == 0)
        return usage_error("check", "--method " + v + " has no error control (a fixed-step method)");
      c.method = *m;
    } else if (a.size() > 1 && a[0] == '-') {
      return usage_error("check", "unknown option '" + a + "'");
    } else {
      c.paths.push_back(a);
    }
  }
  if (c.paths.empty()) return usage_error("check", "no FILE or DIR given");
  return kExitOk;
}

void print_error(const std::string& where, const Diagnostic& d) {
  std::printf("%s: error[%s]: %s%s%s\n", where.c_str(), d.code.c_str(), d.message.c_str(),
              d.pointer.empty() ? "" : " (at ", d.pointer.empty() ? "" : (d.pointer + ")").c_str());
}

void print_human(const std::vector<check::FileResult>& results) {
  for (const check::FileResult& f : results) {
    if (f.error) print_error(f.file, *f.error);
    for (const check::TestResult& t : f.tests) {
      const std::string where = f.file + ": " + t.component + "/" + t.id;
      if (t.error) print_error(where, *t.error);
      for (const check::AssertionResult& a : t.assertions) {
        if (a.pass) continue;
        // What was achieved against what was allowed, and what ran the test.
        const double error = std::abs(a.actual - a.expected);
        std::string allowed;
        if (a.abs_tolerance > 0) allowed = "abs " + format_number(a.abs_tolerance);
        if (a.rel_tolerance > 0) allowed += (allowed.empty() ? "rel " : " or rel ") + format_number(a.rel_tolerance);
        std::printf("%s: FAIL %s at t=%s: value %s, expected %s: error %.3g (relative %.3g), allowed %s; ran %s\n",
                    where.c_str(), a.variable.c_str(), format_number(a.time).c_str(),
                    format_number(a.actual).c_str(), format_number(a.expected).c_str(), error,
                    error / std::max(std::abs(a.expected), 1e-300), allowed.empty() ? "nothing" : allowed.c_str(),
                    t.solver.c_str());
      }
    }
  }
  const check::CheckSummary s = check::summarize(results);
  std::printf("%zu files: %zu assertions, %zu passed, %zu failed, %zu errors (%zu assertions not run)\n",
              results.size(), s.assertions, s.passed, s.failed, s.errors, s.skipped);
}

}  // namespace

void print_check_help(std::FILE* out) {
  std::fputs(
      "usage: esi check [--json] [--jobs N] [--inputs FILE.json] [--method M] FILE_OR_DIR...\n"
      "\n"
      "Runs every inline test (the `tests` blocks of models and reaction systems) of each file;\n"
      "directories are searched recursively for *.esm files. Each test runs its component alone\n"
      "with the automatic method at rtol 1e-10, atol 1e-14 and compares each assertion within\n"
      "its resolved tolerance (assertion > test > component > rel 1e-6).\n"
      "\n"
      "  --json     print {\"files\": [...], \"summary\": {...}}\n"
      "  --jobs N   run N files at a time, 1 to 256 (the output does not depend on N)\n"
      "  --inputs F values by flat name for every test (as for 'esi simulate --inputs'):\n"
      "             data the documents read from files esi cannot open yet\n"
      "  --method M run every test with method M (Rodas5P, CVODE_BDF, ...) instead of the\n"
      "             automatic choice; a method without error control is refused\n"
      "\n"
      "A path that does not exist or cannot be read, a folder with no .esm document and a test\n"
      "with no assertions are reported as errors; the other files still run.\n"
      "\n"
      "exit status: 0 every assertion passed, 1 a failure or an error, 2 usage error\n",
      out);
}

int run_check(Args args) {
  CheckArgs c;
  if (const int rc = parse_args(args, c); rc != kExitOk) return rc < 0 ? kExitOk : rc;
  // Paths that cannot be searched or read become per-file errors; the rest still run.
  const std::vector<check::CheckInput> inputs = check::find_esm_inputs(c.paths);
  check::CheckOptions options;
  options.method = c.method;
  if (!c.inputs.empty()) {
    try {
      options.inputs = read_json_file(c.inputs);
      options.inputs_file = c.inputs;
    } catch (const Error& e) {
      print_error(c.inputs, e.diagnostic());
      return kExitInvalid;
    }
    if (!options.inputs.is_object()) {
      std::printf("%s: error[invalid_inputs]: an inputs file holds one JSON object: variable name -> "
                  "number or nested array\n", c.inputs.c_str());
      return kExitInvalid;
    }
  }
  const std::vector<check::FileResult> results = check::check_inputs(inputs, c.jobs, options);
  if (c.json) std::printf("%s\n", check::to_json_text(results).c_str());
  else print_human(results);
  return check::summarize(results).all_passed() ? kExitOk : kExitInvalid;
}

}  // namespace esi::cli

