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

nlohmann::json findings_json(const std::vector<Diagnostic>& findings, const std::string& file) {
  nlohmann::json out = nlohmann::json::array();
  for (const Diagnostic& d : findings) {
    nlohmann::json e = {{"code", d.code}, {"path", d.pointer}, {"message", d.message}};
    if (!d.file.empty() && d.file != file) e["file"] = d.file;
    if (d.alternative) e["alternative"] = true;
    out.push_back(std::move(e));
  }
  return out;
}

nlohmann::json report_json(const esm::ValidationReport& report, const std::string& file) {
  nlohmann::json out = {{"file", file},
                        {"valid", report.valid()},
                        {"errors", findings_json(report.errors, file)}};
  if (!report.notes.empty()) out["notes"] = findings_json(report.notes, file);
  return out;
}

void print_findings(const std::vector<Diagnostic>& findings, const std::string& file,
                    std::string_view severity) {
  for (Diagnostic d : findings) {
    if (d.file.empty()) d.file = file;
    std::printf("%s\n", format_diagnostic(d, severity).c_str());
  }
}

/// Errors first (without the oneOf/anyOf branches the node was not closest to), then notes on
/// what esi cannot run yet, then one verdict line.
void print_report_human(const esm::ValidationReport& report, const std::string& file) {
  const std::vector<Diagnostic> shown = report.shown();
  print_findings(shown, file, "error");
  print_findings(report.notes, file, "note");
  if (report.valid()) {
    if (report.notes.empty()) std::printf("%s: valid\n", file.c_str());
    else std::printf("%s: valid (with notes on what esi cannot run as it stands)\n", file.c_str());
    return;
  }
  const std::size_t n = shown.size();
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
      "           {\"file\":..., \"valid\":bool, \"errors\":[{\"code\",\"path\",\"message\"}],\n"
      "            \"notes\":[...] (only when esi cannot run all of a valid document yet)}\n"
      "           errors of oneOf/anyOf branches the node was not closest to carry\n"
      "           \"alternative\":true (the human form leaves them out)\n"
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
