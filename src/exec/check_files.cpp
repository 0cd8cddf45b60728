// Running many documents' inline tests on a few threads, and the summary / JSON report.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>

#include "esi/exec/check.hpp"

namespace esi::exec {
namespace {

nlohmann::json number_or_null(double x) {
  return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr);
}

nlohmann::json error_json(const std::optional<Diagnostic>& d) {
  if (!d) return nullptr;
  return {{"code", d->code}, {"message", d->message}, {"pointer", d->pointer}, {"file", d->file}};
}

}  // namespace

std::vector<std::filesystem::path> collect_esm_files(const std::vector<std::string>& paths) {
  namespace fs = std::filesystem;
  std::vector<fs::path> out;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<fs::path> found;
      for (const auto& entry : fs::recursive_directory_iterator(p, ec))
        if (entry.is_regular_file() && entry.path().extension() == ".esm") found.push_back(entry.path());
      std::sort(found.begin(), found.end());
      out.insert(out.end(), found.begin(), found.end());
    } else if (fs::exists(p, ec)) {
      out.emplace_back(p);
    } else {
      throw Error("file_not_found", p, "", "no such file or directory");
    }
  }
  return out;
}

std::vector<FileResult> check_files(const std::vector<std::filesystem::path>& files, int jobs,
                                    const CheckOptions& options) {
  std::vector<FileResult> results(files.size());
  std::atomic<std::size_t> next{0};
  const auto worker = [&] {
    for (std::size_t i = next++; i < files.size(); i = next++) results[i] = check_file(files[i], options);
  };
  const std::size_t threads = std::min<std::size_t>(static_cast<std::size_t>(std::max(jobs, 1)), files.size());
  if (threads <= 1) {
    worker();
    return results;
  }
  std::vector<std::thread> pool;
  for (std::size_t k = 0; k < threads; ++k) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
  return results;
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
      for (const AssertionResult& a : t.assertions)
        assertions.push_back({{"variable", a.variable},
                              {"time", a.time},
                              {"expected", number_or_null(a.expected)},
                              {"actual", number_or_null(a.actual)},
                              {"pass", a.pass}});
      tests.push_back({{"component", t.component}, {"id", t.id}, {"error", error_json(t.error)},
                       {"assertions", std::move(assertions)}});
    }
    files.push_back({{"file", f.file}, {"error", error_json(f.error)}, {"tests", std::move(tests)}});
  }
  const CheckSummary s = summarize(results);
  return {{"files", std::move(files)},
          {"summary",
           {{"assertions", s.assertions}, {"passed", s.passed}, {"failed", s.failed},
            {"errors", s.errors}, {"skipped", s.skipped}}}};
}

}  // namespace esi::exec
