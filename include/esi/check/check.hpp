// The inline-test runner (spec §6.6): every `tests` block of every model and reaction system of
// a document, each run on its component flattened alone.
//
// A test's `parameter_overrides` and `initial_conditions` are keyed by local name and resolved
// by §6.6.2 (exact flat name, scoped name under the component, unique trailing segment; an
// unknown or ambiguous key is an error for that test). The run uses the automatic method at
// rtol 1e-10 / atol 1e-14 unless the options say otherwise and samples each assertion at its
// exact time. Tolerances resolve per field, assertion > test > component > default rel 1e-6
// (§6.6.4); an assertion passes when |actual - expected| <= abs or
// |actual - expected| / max(|expected|, 1e-300) <= rel.
//
// Documents and tests the engine refuses (unsupported array features, unsupported events, a
// failed solve) are reported as errors, never thrown.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "esi/core/error.hpp"
#include "esi/method/integrator.hpp"

namespace esi::check {

struct CheckOptions {
  double rtol = 1e-10;
  double atol = 1e-14;
  method::MethodId method = method::MethodId::Auto;
  /// Caller-supplied values by flat name (esm::FlattenOptions::inputs), for every test.
  nlohmann::json inputs = nlohmann::json::object();
  std::string inputs_file;  ///< where `inputs` came from, for error locations
};

struct AssertionResult {
  std::string variable;  ///< as authored (local name)
  double time = 0;
  double expected = 0;
  double actual = 0;     ///< NaN when the value could not be computed
  double abs_tolerance = 0;  ///< 0 = no absolute bound
  double rel_tolerance = 0;  ///< 0 = no relative bound
  bool pass = false;
};

struct TestResult {
  std::string component;  ///< dotted component path
  std::string id;
  std::optional<Diagnostic> error;  ///< the test could not run; `assertions` is then empty
  std::size_t assertion_count = 0;  ///< authored assertions (also when the test errored)
  std::string solver;  ///< what ran it: "Rodas5P, rtol 1e-10, atol 1e-14" ("" when it did not run)
  std::vector<AssertionResult> assertions;
};

struct FileResult {
  std::string file;
  std::optional<Diagnostic> error;  ///< the document could not be loaded or holds no tests
  std::vector<TestResult> tests;
  /// Assertions authored in a document that was refused as a whole (counted as skipped).
  std::size_t assertions_not_run = 0;
};

struct CheckSummary {
  std::size_t assertions = 0, passed = 0, failed = 0, errors = 0;
  std::size_t skipped = 0;  ///< assertions of tests that errored (not in `assertions`)
  bool all_passed() const { return failed == 0 && errors == 0; }
};

/// Runs every inline test of one file. Never throws for bad input.
FileResult check_file(const std::filesystem::path& file, const CheckOptions& options = {});

/// Runs `files` on `jobs` threads; results are in the order of `files` whatever `jobs` is.
std::vector<FileResult> check_files(const std::vector<std::filesystem::path>& files, int jobs,
                                    const CheckOptions& options = {});

/// One entry of what `esi check` runs: a document, or a path that could not be searched or
/// read (`error` set; reported as that file's error while the other entries still run).
struct CheckInput {
  std::filesystem::path file;
  std::optional<Diagnostic> error;
};

/// Files named directly, plus every *.esm under the directories named (recursively, symlinked
/// directories not followed, so symlink loops end), sorted per argument. Never throws: a path
/// that does not exist (`file_not_found`), a device or pipe (`not_a_regular_file`), a folder that cannot be read (`unreadable_folder`),
/// an entry whose type cannot be read (`unreadable_file`, e.g. a symlink loop) and a directory
/// with no *.esm document (`no_esm_documents`) become entries with an error.
std::vector<CheckInput> find_esm_inputs(const std::vector<std::string>& paths);

/// The inputs' results in order: an input with an error is reported as is, the others run
/// on `jobs` threads.
std::vector<FileResult> check_inputs(const std::vector<CheckInput>& inputs, int jobs,
                                     const CheckOptions& options = {});

/// find_esm_inputs without the error entries; throws the first error as esi::Error (a path
/// that does not exist: `file_not_found`).
std::vector<std::filesystem::path> collect_esm_files(const std::vector<std::string>& paths);

CheckSummary summarize(const std::vector<FileResult>& results);

/// {"files": [...], "summary": {...}} as documented for `esi check --json`. File names that
/// are not UTF-8 must be dumped with error_handler_t::replace (see to_json_text).
nlohmann::json to_json(const std::vector<FileResult>& results);

/// to_json(results) as one line of text; bytes that are not UTF-8 (file names, messages) are
/// replaced by U+FFFD instead of failing the dump.
std::string to_json_text(const std::vector<FileResult>& results);

}  // namespace esi::check
