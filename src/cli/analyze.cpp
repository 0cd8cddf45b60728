// `esi analyze FILE [--component C] [--analysis ID ...] [--out DIR] [--jobs N] [--netcdf]
// [--quiet]`: runs a document's inline analyses (spec §6.7) and writes, per analysis, DIR/<id>/
// with one CSV per run (run_0001.csv, ... in sweep order; data.csv without a sweep; with
// --netcdf also run_0001.nc, ...), runs.csv (each run's swept values, its file and how the solve
// ended), plots.json (each plot's data, labels and content hash) and <plot>.png, <plot>.svg and
// <plot>.hash drawn with PLplot (src/plot/) in forked processes (plots whose hash matches the
// images already there are not drawn again); then DIR/index.html lists every analysis with its
// description and images. The folders are drive::analyze_into's (shared with the Python
// module); this file parses the arguments, finds the documents and prints.
//
// Plots are optional: where PLplot's devices are missing the data is still written and the
// command says the plots were skipped and why (exit 0). An analysis that cannot run (a located
// error) is reported and the others still run; the exit status is then 1.
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cli/commands.hpp"
#include "esi/check/check.hpp"
#include "esi/core/error.hpp"
#include "esi/drive/analyze.hpp"

namespace esi::cli {
namespace {

namespace fs = std::filesystem;

/// The machine's cores (hardware_concurrency), at least 1 where it cannot tell.
unsigned default_jobs() { return std::max(1u, std::thread::hardware_concurrency()); }

struct AnalyzeArgs {
  std::vector<std::string> paths;
  std::string component, out;
  std::vector<std::string> ids;
  /// Sweep threads and drawing processes; default: the machine's cores.
  unsigned jobs = default_jobs();
  bool quiet = false;
  bool netcdf = false;  ///< each run also as CF NetCDF-4 beside its CSV
};

/// Returns kExitOk with `a` filled, -1 after printing help, or the usage exit status.
int parse_args(Args args, AnalyzeArgs& a) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& s = args[i];
    if (s == "-h" || s == "--help") {
      print_analyze_help(stdout);
      return -1;
    }
    if (s == "--quiet" || s == "-q") {
      a.quiet = true;
      continue;
    }
    if (s == "--netcdf") {
      a.netcdf = true;
      continue;
    }
    if (s == "--component" || s == "--analysis" || s == "--out" || s == "-o" || s == "--jobs") {
      if (i + 1 >= args.size() || args[i + 1].empty()) return usage_error("analyze", s + " needs a value");
      const std::string& v = args[++i];
      if (s == "--component") a.component = v;
      else if (s == "--analysis") a.ids.push_back(v);
      else if (s == "--out" || s == "-o") a.out = v;
      else {
        unsigned n = 0;
        const auto r = std::from_chars(v.data(), v.data() + v.size(), n);
        if (r.ec != std::errc() || r.ptr != v.data() + v.size() || n < 1 || n > 1024)
          return usage_error("analyze", "--jobs needs a whole number from 1 to 1024, got '" + v + "'");
        a.jobs = n;
      }
      continue;
    }
    if (s.size() > 1 && s[0] == '-') return usage_error("analyze", "unknown option '" + s + "'");
    a.paths.push_back(s);
  }
  if (a.paths.empty()) return usage_error("analyze", "missing FILE");
  return kExitOk;
}

}  // namespace

void print_analyze_help(std::FILE* out) {
  std::fputs(
      "usage: esi analyze FILE_OR_DIR... [--component NAME] [--analysis ID ...] [--out DIR] [--jobs N]\n"
      "                   [--netcdf] [--quiet]\n"
      "\n"
      "Runs the inline analyses of FILE (spec §6.7): each on its component flattened alone, with\n"
      "its parameters and initial_state, one run per point of its parameter_sweep (the last\n"
      "dimension varying fastest), 101 evenly spaced output times over its time_span, automatic\n"
      "method at rtol 1e-8 / atol 1e-10. Per analysis, DIR/<id>/ gets:\n"
      "  data.csv or run_0001.csv, ...   each run: t, then every state and observed\n"
      "  runs.csv                        run number, swept values, file, rows, status\n"
      "  plots.json                      each plot's data, labels (from the document; else the\n"
      "                                  name and its units) and why a plot was not drawn\n"
      "  <plot>.png, <plot>.svg          line, scatter, heatmap and field plots, drawn with\n"
      "                                  PLplot (640 x 440; the SVG keeps text as text)\n"
      "  <plot>.hash                     the hash of the data the images show: a rerun\n"
      "                                  with the same data does not draw them again\n"
      "and DIR/index.html lists every analysis with its description and images. With several\n"
      "paths or a folder (searched for *.esm), each document with analyses gets DIR/<its path\n"
      "below the folder, without .esm>/ (default DIR: analyses) and DIR/index.html links them;\n"
      "documents without analyses are counted and skipped.\n"
      "\n"
      "  --component NAME  only the analyses of this component (and its subsystems)\n"
      "  --analysis ID     only this analysis (repeatable); an unknown id is an error\n"
      "  --out DIR         output folder (default: FILE's name without .esm, plus _analyses)\n"
      "  --jobs N          runs of a sweep on N threads and plots drawn in N processes\n"
      "                    (default: the machine's cores); results are the same\n"
      "  --netcdf          each run also as CF NetCDF-4 beside its CSV (data.nc, run_0001.nc,\n"
      "                    ...: the CSV's columns and times, the analysis and swept values as\n"
      "                    global attributes); off by default: one NetCDF-4 file per run costs\n"
      "                    more than its CSV\n"
      "\n"
      "Line and scatter plots against t draw each run's trajectory; against a swept parameter,\n"
      "one point per run (each series' final value). Heatmaps need two swept parameters and a\n"
      "value {variable, reduce: final|max|min|mean|integral, or at_time}. Field plots\n"
      "(field_slice, field_snapshot) draw a shaped variable at their at_time (an output time of\n"
      "every run): a profile along x, or a colour map over x and y with the plot's contours;\n"
      "axes use the document's coordinates registry, else cell indices (the label says so).\n"
      "An analysis' expression_template_imports inject its discretization, as a test's do.\n"
      "Where PLplot's memcairo or svg device is missing (Debian: plplot-driver-cairo) the data is\n"
      "still written and the command says the plots were skipped (exit 0).\n"
      "\n"
      "exit status: 0 ok, 1 invalid document or analysis (each reported with its JSON pointer;\n"
      "the other analyses still run), 2 usage error\n",
      out);
}

namespace {

/// One document's analyses and where they go.
struct FileJob {
  fs::path file;
  fs::path out;
  std::vector<drive::WrittenAnalysis> written;
};

/// Runs the analyses of one document into job.out; false when something failed (reported).
bool analyze_file(FileJob& job, const AnalyzeArgs& a, bool many, std::size_t& without, drive::PlotPool& pool) {
  const std::optional<esm::ResolvedDocument> loaded = load_or_report(job.file.string());
  if (!loaded) return false;
  const std::vector<check::AnalysisRef> found = drive::choose_analyses(*loaded, a.component, a.ids, many);
  if (found.empty()) return ++without, true;  // a folder holds documents without analyses too
  drive::AnalysisFolderOptions options;
  options.jobs = a.jobs;
  options.netcdf = a.netcdf;
  drive::AnalyzeCallbacks callbacks;
  callbacks.on_written = [&](const drive::WrittenAnalysis& w) {
    if (!a.quiet)
      std::fprintf(stderr, "esi analyze: %s (%s): %zu run%s, %zu plot%s%s -> %s\n", w.id.c_str(), w.component.c_str(),
                   w.runs, w.runs == 1 ? "" : "s", w.images.size(), w.images.size() == 1 ? "" : "s",
                   w.unchanged > 0 ? (" (" + std::to_string(w.unchanged) + " unchanged)").c_str() : "",
                   (job.out / w.dir).string().c_str());
    for (const std::string& n : w.notes) std::fprintf(stderr, "esi analyze: %s: %s\n", w.id.c_str(), n.c_str());
  };
  callbacks.on_error = [](const Diagnostic& d) { std::fprintf(stderr, "%s\n", format_diagnostic(d).c_str()); };
  return drive::analyze_into(*loaded, found, job.out, options, pool, job.written, callbacks);
}

/// The documents to analyze and their output folders: a FILE named alone writes into `out`;
/// with several paths or a folder, each document gets out/<its path below the folder named,
/// without .esm> (a file named directly: out/<its name>).
std::vector<FileJob> plan_jobs(const AnalyzeArgs& a, bool many, bool& failed) {
  std::vector<FileJob> jobs;
  if (!many) {
    jobs.push_back({a.paths[0], a.out, {}});
    return jobs;
  }
  for (const std::string& path : a.paths) {
    for (const check::CheckInput& in : check::find_esm_inputs({path})) {
      if (in.error) {
        std::fprintf(stderr, "%s\n", format_diagnostic(*in.error).c_str());
        failed = true;
        continue;
      }
      std::error_code ec;
      fs::path rel = fs::is_directory(path, ec) ? in.file.lexically_relative(path) : in.file.filename();
      rel.replace_extension();
      jobs.push_back({in.file, fs::path(a.out) / rel, {}});
    }
  }
  return jobs;
}

}  // namespace

int run_analyze(Args args) {
  AnalyzeArgs a;
  if (const int rc = parse_args(args, a); rc != kExitOk) return rc < 0 ? kExitOk : rc;
  std::error_code ec;
  const bool many = a.paths.size() > 1 || fs::is_directory(a.paths[0], ec);
  if (a.out.empty()) a.out = many ? "analyses" : fs::path(a.paths[0]).stem().string() + "_analyses";
  const auto started = std::chrono::steady_clock::now();
  bool failed = false;
  std::vector<FileJob> jobs = plan_jobs(a, many, failed);
  std::size_t without = 0;
  drive::PlotPool pool(a.jobs);
  for (FileJob& job : jobs) {
    try {
      if (!analyze_file(job, a, many, without, pool)) failed = true;
    } catch (const Error& e) {
      Diagnostic d = e.diagnostic();
      if (d.file.empty()) d.file = job.file.string();
      std::fprintf(stderr, "%s\n", format_diagnostic(d).c_str());
      failed = true;
      if (!many) return kExitInvalid;
    }
  }
  const std::string why = pool.finish();
  std::size_t analyses = 0, drawn = 0, unchanged = 0;
  std::vector<drive::IndexedDocument> documents;
  for (FileJob& job : jobs) {
    if (job.written.empty()) continue;
    drive::settle_images(job.written, job.out, why);
    for (const drive::WrittenAnalysis& w : job.written) {
      ++analyses;
      drawn += w.to_draw;
      unchanged += w.unchanged;
    }
    try {
      drive::write_index(job.out, job.file.string(), job.written);
    } catch (const Error& e) {
      std::fprintf(stderr, "%s\n", format_diagnostic(e.diagnostic()).c_str());
      failed = true;
    }
    documents.push_back({job.file.string(), job.out.lexically_relative(a.out), job.written.size()});
  }
  if (!why.empty() && !a.quiet) std::fprintf(stderr, "esi analyze: plots skipped: %s\n", why.c_str());
  if (many) {
    try {
      drive::write_documents_index(a.out, documents);
    } catch (const Error& e) {
      std::fprintf(stderr, "%s\n", format_diagnostic(e.diagnostic()).c_str());
      failed = true;
    }
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (!a.quiet) {
    if (many)
      std::fprintf(stderr,
                   "esi analyze: %zu documents with analyses (%zu without), %zu analyses, %zu plots drawn (%zu "
                   "drawing process%s), %zu unchanged, %.1f s\n",
                   documents.size(), without, analyses, drawn, pool.processes_started(),
                   pool.processes_started() == 1 ? "" : "es", unchanged, wall);
    std::fprintf(stderr, "esi analyze: wrote %s\n", (fs::path(a.out) / "index.html").string().c_str());
  }
  return failed ? kExitInvalid : kExitOk;
}

}  // namespace esi::cli
