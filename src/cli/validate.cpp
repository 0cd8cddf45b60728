// `esi validate [--json] FILE...`: every finding of every file, and an exit status for scripts.
//
// Human output: "FILE: valid", or one format_diagnostic line per finding followed by
// "FILE: invalid (N errors)". With --json: one canonical JSON object per file per line,
//   {"errors":[{"code","message","path"[,"file"]}],"file":...,"valid":bool}
// where "path" is the finding's JSON pointer and "file" appears only when the finding lives in
// another file than the one named on the command line (a `ref`erenced component, a library).
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "esi/core/error.hpp"
#include "esi/core/json.hpp"
#include "esi/esm/load.hpp"

namespace esi::cli {
namespace {

nlohmann::json report_json(const esm::ValidationReport& report, const std::string& file) {
  nlohmann::json errors = nlohmann::json::array();
  for (const Diagnostic& d : report.errors) {
    nlohmann::json e = {{"code", d.code}, {"path", d.pointer}, {"message", d.message}};
    if (!d.file.empty() && d.file != file) e["file"] = d.file;
    errors.push_back(std::move(e));
  }
  return {{"file", file}, {"valid", report.valid()}, {"errors", std::move(errors)}};
}

void print_report_human(const esm::ValidationReport& report, const std::string& file) {
  if (report.valid()) {
    std::printf("%s: valid\n", file.c_str());
    return;
  }
  for (Diagnostic d : report.errors) {
    if (d.file.empty()) d.file = file;
    std::printf("%s\n", format_diagnostic(d).c_str());
  }
  const std::size_t n = report.errors.size();
  std::printf("%s: invalid (%zu error%s)\n", file.c_str(), n, n == 1 ? "" : "s");
}

}  // namespace

void print_validate_help(std::FILE* out) {
  std::fputs(
      "usage: esi validate [--json] FILE...\n"
      "\n"
      "Checks each document: JSON parse, the ESM JSON schema (from ESI_SCHEMA or the build's\n"
      "default), reference resolution, structural and unit checks, and a trial flatten.\n"
      "\n"
      "  --json   one JSON object per file per line:\n"
      "           {\"file\":..., \"valid\":bool, \"errors\":[{\"code\",\"path\",\"message\"}]}\n"
      "\n"
      "exit status: 0 every file is valid, 1 some file is invalid, 2 usage error\n",
      out);
}

int run_validate(Args args) {
  bool json = false;
  bool options_done = false;
  std::vector<std::string> files;
  for (const std::string& a : args) {
    if (!options_done && a.size() > 1 && a[0] == '-') {
      if (a == "--json") {
        json = true;
      } else if (a == "-h" || a == "--help") {
        print_validate_help(stdout);
        return kExitOk;
      } else if (a == "--") {
        options_done = true;
      } else {
        return usage_error("validate", "unknown option '" + a + "'");
      }
    } else {
      files.push_back(a);
    }
  }
  if (files.empty()) return usage_error("validate", "no FILE given");

  bool all_valid = true;
  for (const std::string& file : files) {
    esm::ValidationReport report;
    try {
      report = esm::validate_file(file);
    } catch (const Error& e) {
      // validate_file promises not to throw for bad input; if it does, still report it as a
      // finding of this file rather than aborting the remaining files.
      report.file = file;
      report.errors.push_back(e.diagnostic());
    }
    all_valid = all_valid && report.valid();
    if (json) {
      std::printf("%s\n", canonical_json(report_json(report, file)).c_str());
    } else {
      print_report_human(report, file);
    }
    std::fflush(stdout);
  }
  return all_valid ? kExitOk : kExitInvalid;
}

}  // namespace esi::cli
