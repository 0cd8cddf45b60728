// Running many documents' inline tests on a few threads, and the summary / JSON report.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>

#include "esi/check/check.hpp"

namespace esi::check {
namespace {

nlohmann::json number_or_null(double x) {
  return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr);
}

nlohmann::json error_json(const std::optional<Diagnostic>& d) {
  if (!d) return nullptr;
  return {{"code", d->code}, {"message", d->message}, {"pointer", d->pointer}, {"file", d->file}};
}

}  // namespace

namespace {

namespace fs = std::filesystem;

Diagnostic path_error(const std::string& code, const fs::path& path, const std::string& message) {
  return Diagnostic{code, path.string(), "", message};
}

/// Every *.esm under `dir` (not following symlinked directories), sorted; unreadable folders
/// and entries become error entries, in path order with the files.
std::vector<CheckInput> walk_directory(const fs::path& dir) {
  std::vector<CheckInput> found;
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, fs::directory_options::none, ec), end;
  if (ec) return {CheckInput{dir, path_error("unreadable_folder", dir, "cannot read this folder: " + ec.message())}};
  bool any_document = false;
  while (it != end) {
    const fs::directory_entry& entry = *it;
    std::error_code type_ec;
    const fs::file_status status = entry.status(type_ec);  // follows symlinks to files
    if (entry.path().extension() == ".esm") {
      if (type_ec) {
        found.push_back({entry.path(), path_error("unreadable_file", entry.path(),
                                                  "cannot read this entry: " + type_ec.message())});
      } else if (fs::is_regular_file(status)) {
        found.push_back({entry.path(), std::nullopt});
        any_document = true;
      }
    }
    // A folder the walk cannot enter: report it and go on with its siblings.
    if (!type_ec && fs::is_directory(status) && !entry.is_symlink(type_ec)) {
      std::error_code open_ec;
      fs::directory_iterator probe(entry.path(), open_ec);
      if (open_ec) {
        found.push_back({entry.path(), path_error("unreadable_folder", entry.path(),
                                                  "cannot read this folder: " + open_ec.message())});
        it.disable_recursion_pending();
      }
    }
    it.increment(ec);
    if (ec) {
      found.push_back({dir, path_error("unreadable_folder", dir, "the walk stopped: " + ec.message())});
      break;
    }
  }
  std::sort(found.begin(), found.end(), [](const CheckInput& x, const CheckInput& y) { return x.file < y.file; });
  if (!any_document && found.empty())
    found.push_back({dir, path_error("no_esm_documents", dir, "this folder holds no .esm document")});
  return found;
}

}  // namespace

std::vector<CheckInput> find_esm_inputs(const std::vector<std::string>& paths) {
  std::vector<CheckInput> out;
  for (const std::string& p : paths) {
    std::error_code ec;
    const fs::file_status status = fs::status(p, ec);
    if (fs::is_directory(status)) {
      std::vector<CheckInput> found = walk_directory(p);
      out.insert(out.end(), std::make_move_iterator(found.begin()), std::make_move_iterator(found.end()));
    } else if (fs::is_regular_file(status)) {
      out.push_back({p, std::nullopt});
    } else if (fs::exists(status)) {
      // A device or a pipe could be read forever (/dev/zero); documents are plain files.
      out.push_back({p, path_error("not_a_regular_file", p, "this is not a regular file or a folder")});
    } else if (ec && ec != std::errc::no_such_file_or_directory) {
      out.push_back({p, path_error("unreadable_file", p, "cannot read this path: " + ec.message())});
    } else {
      out.push_back({p, path_error("file_not_found", p, "no such file or directory")});
    }
  }
  return out;
}

std::vector<std::filesystem::path> collect_esm_files(const std::vector<std::string>& paths) {
  std::vector<fs::path> out;
  for (const CheckInput& in : find_esm_inputs(paths)) {
    if (in.error) throw Error(*in.error);
    out.push_back(in.file);
  }
  return out;
}

std::vector<FileResult> check_inputs(const std::vector<CheckInput>& inputs, int jobs,
                                     const CheckOptions& options) {
  std::vector<FileResult> results(inputs.size());
  std::atomic<std::size_t> next{0};
  const auto worker = [&] {
    for (std::size_t i = next++; i < inputs.size(); i = next++) {
      if (inputs[i].error) {
        results[i].file = inputs[i].file.string();
        results[i].error = inputs[i].error;
      } else {
        results[i] = check_file(inputs[i].file, options);
      }
    }
  };
  const std::size_t threads = std::min<std::size_t>(static_cast<std::size_t>(std::max(jobs, 1)), inputs.size());
  if (threads <= 1) {
    worker();
    return results;
  }
  std::vector<std::thread> pool;
  for (std::size_t k = 0; k < threads; ++k) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
  return results;
}

std::vector<FileResult> check_files(const std::vector<std::filesystem::path>& files, int jobs,
                                    const CheckOptions& options) {
  std::vector<CheckInput> inputs;
  for (const auto& f : files) inputs.push_back({f, std::nullopt});
  return check_inputs(inputs, jobs, options);
}

CheckSummary summarize(const std::vector<FileResult>& results) {
  CheckSummary s;
  for (const FileResult& f : results) {
    if (f.error) ++s.errors;
    s.skipped += f.assertions_not_run;
    for (const TestResult& t : f.tests) {
      if (t.error) {
        ++s.errors;
        s.skipped += t.assertion_count;
      }
      for (const AssertionResult& a : t.assertions) {
        ++s.assertions;
        ++(a.pass ? s.passed : s.failed);
      }
    }
  }
  return s;
}

nlohmann::json to_json(const std::vector<FileResult>& results) {
  nlohmann::json files = nlohmann::json::array();
  for (const FileResult& f : results) {
    nlohmann::json tests = nlohmann::json::array();
    for (const TestResult& t : f.tests) {
      nlohmann::json assertions = nlohmann::json::array();
      bool failed = false;
      for (const AssertionResult& a : t.assertions) {
        nlohmann::json entry = {{"variable", a.variable},
                                {"time", a.time},
                                {"expected", number_or_null(a.expected)},
                                {"actual", number_or_null(a.actual)},
                                {"pass", a.pass}};
        if (!a.pass) {  // what was achieved against what was allowed
          const double error = std::abs(a.actual - a.expected);
          entry["abs_error"] = number_or_null(error);
          entry["rel_error"] = number_or_null(error / std::max(std::abs(a.expected), 1e-300));
          entry["abs_tolerance"] = a.abs_tolerance > 0 ? nlohmann::json(a.abs_tolerance) : nlohmann::json();
          entry["rel_tolerance"] = a.rel_tolerance > 0 ? nlohmann::json(a.rel_tolerance) : nlohmann::json();
          failed = true;
        }
        assertions.push_back(std::move(entry));
      }
      nlohmann::json test = {{"component", t.component}, {"id", t.id}, {"error", error_json(t.error)},
                             {"assertions", std::move(assertions)}};
      if (failed) test["solver"] = t.solver;
      tests.push_back(std::move(test));
    }
    nlohmann::json file = {{"file", f.file}, {"error", error_json(f.error)}, {"tests", std::move(tests)}};
    if (f.assertions_not_run > 0) file["assertions_not_run"] = f.assertions_not_run;
    files.push_back(std::move(file));
  }
  const CheckSummary s = summarize(results);
  return {{"files", std::move(files)},
          {"summary",
           {{"assertions", s.assertions}, {"passed", s.passed}, {"failed", s.failed},
            {"errors", s.errors}, {"skipped", s.skipped}}}};
}

}  // namespace esi::check

namespace esi::check {

std::string to_json_text(const std::vector<FileResult>& results) {
  return to_json(results).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace esi::check
