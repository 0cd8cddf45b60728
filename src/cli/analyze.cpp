// `esi analyze FILE [--component C] [--analysis ID ...] [--out DIR] [--jobs N] [--quiet]`: runs
// a document's inline analyses (spec §6.7) and writes, per analysis, DIR/<id>/ with one CSV per
// run (run_0001.csv, ... in sweep order; data.csv without a sweep), runs.csv (each run's swept
// values, its file and how the solve ended), plots.json (each plot's data and labels) and, when
// python3 with matplotlib is there, <plot>.png and <plot>.svg drawn by scripts/esi_plot.py;
// then DIR/index.html lists every analysis with its description and images.
//
// Plots are optional: without python3 or matplotlib the data is still written and the command
// says the plots were skipped and why (exit 0). An analysis that cannot run (a located error)
// is reported and the others still run; the exit status is then 1.
#ifdef ESI_HAVE_EXEC
#include <spawn.h>
#include <sys/wait.h>

#include <cctype>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/csv.hpp"
#include "esi/core/error.hpp"
#include "esi/exec/analyze.hpp"
#include "esi/exec/check.hpp"

extern char** environ;

namespace esi::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

#ifndef ESI_PLOT_SCRIPT_DEFAULT
#define ESI_PLOT_SCRIPT_DEFAULT ""
#endif

struct AnalyzeArgs {
  std::vector<std::string> paths;
  std::string file, component, out;
  std::vector<std::string> ids;
  unsigned jobs = 1;
  bool quiet = false;
};

/// A name safe as one path component: letters, digits, '.', '_', '-' kept, the rest '_'.
std::string safe_name(const std::string& id) {
  std::string out;
  for (char c : id)
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-') ? c : '_';
  if (out.empty() || out == "." || out == "..") out = "_" + out;
  return out;
}

std::string html_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  f.close();
  if (!f) throw Error("output_write_failed", path.string(), "", "cannot write the file");
}

void write_run_csv(const fs::path& path, const exec::Trajectory& traj) {
  CsvWriter csv(path.string());
  csv.header(traj.names);
  for (std::size_t k = 0; k < traj.times.size(); ++k)
    csv.row(traj.times[k], std::span<const double>(traj.values.data() + k * traj.names.size(), traj.names.size()));
  csv.close();
}

/// How one plot process ended: "" when it drew its plots, else why not; `no_matplotlib` when
/// the interpreter ran but lacked matplotlib.
std::string plot_status(int status, const std::string& python, bool& no_matplotlib) {
  no_matplotlib = false;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  if (WIFEXITED(status) && WEXITSTATUS(status) == 4) {
    no_matplotlib = true;
    return "matplotlib is not installed for " + python + " (install python3-matplotlib)";
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127) return "'" + python + "' could not be started";
  return "the plot script failed (exit status " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ")";
}

/// Runs `python script plots_json...` in up to `jobs` processes at once (python's start and
/// matplotlib's import cost about 0.3 s, so each process draws a share of every plot file);
/// "" when every process drew its plots, else why not (the first failure).
std::string run_plot_script(const std::string& python, const std::string& script,
                            const std::vector<std::string>& json_paths, unsigned jobs, bool& no_matplotlib) {
  no_matplotlib = false;
  const std::size_t groups = std::max<std::size_t>(1, std::min<std::size_t>(jobs, json_paths.size()));
  std::vector<pid_t> pids;
  std::string failure;
  for (std::size_t g = 0; g < groups; ++g) {
    std::string quiet = "--quiet-missing";  // esi says why the plots were skipped, once
    std::vector<char*> argv{const_cast<char*>(python.c_str()), const_cast<char*>(script.c_str()), quiet.data()};
    for (std::size_t k = g; k < json_paths.size(); k += groups) argv.push_back(const_cast<char*>(json_paths[k].c_str()));
    argv.push_back(nullptr);
    pid_t pid = 0;
    if (posix_spawnp(&pid, python.c_str(), nullptr, nullptr, argv.data(), environ) != 0) {
      failure = "'" + python + "' could not be started (is python3 installed?)";
      break;
    }
    pids.push_back(pid);
  }
  for (pid_t pid : pids) {
    int status = 0;
    std::string why = waitpid(pid, &status, 0) < 0 ? "waiting for the plot script failed" : "";
    bool missing = false;
    if (why.empty()) why = plot_status(status, python, missing);
    no_matplotlib = no_matplotlib || missing;
    if (failure.empty()) failure = why;
  }
  return failure;
}

/// Draws the plots of every `plots_json` with $ESI_PYTHON, else python3 from PATH and then
/// the system's /usr/bin/python3 (where Debian's python3-matplotlib lives when PATH holds
/// another interpreter, e.g. pyenv's); "" when drawn, else why the plots were skipped.
std::string render_plots(const std::vector<std::string>& plots_json, unsigned jobs) {
  if (plots_json.empty()) return "";
  const char* env_script = std::getenv("ESI_PLOT_SCRIPT");
  const std::string script = env_script && *env_script ? env_script : ESI_PLOT_SCRIPT_DEFAULT;
  std::error_code ec;
  if (script.empty() || !fs::is_regular_file(script, ec))
    return "the plot script (esi_plot.py) was not found" + (script.empty() ? std::string() : " at " + script) +
           "; set ESI_PLOT_SCRIPT";
  const char* env_python = std::getenv("ESI_PYTHON");
  std::vector<std::string> interpreters;
  if (env_python && *env_python) interpreters.push_back(env_python);
  else interpreters = {"python3", "/usr/bin/python3"};
  std::string why;
  for (const std::string& python : interpreters) {
    if (python.front() == '/' && !fs::exists(python, ec)) continue;
    bool no_matplotlib = false;
    const std::string failure = run_plot_script(python, script, plots_json, jobs, no_matplotlib);
    if (failure.empty()) return "";
    if (why.empty()) why = failure;
    if (!no_matplotlib && python != "python3") break;  // a real failure of the script
  }
  return why.empty() ? "no python3 interpreter was found" : why;
}

struct Written {
  std::string id, dir, description, component;
  std::vector<std::pair<std::string, std::string>> images;  ///< (file stem, plot description)
  std::vector<std::string> notes;
  std::string error;
  std::string plots_json;  ///< to draw (empty: nothing to draw)
};

/// Runs one analysis and writes its folder; returns what index.html shows.
Written analyze_one(const esm::ResolvedDocument& doc, const exec::AnalysisRef& ref, const AnalyzeArgs& a,
                    const fs::path& dir) {
  Written w;
  w.id = ref.id;
  w.component = ref.component;
  w.dir = safe_name(ref.id);
  w.description = ref.spec.is_object() ? ref.spec.value("description", std::string()) : std::string();
  const exec::AnalysisPlan plan = exec::plan_analysis(ref);
  exec::AnalyzeOptions options;
  options.jobs = a.jobs;
  const exec::AnalysisResult result = exec::run_analysis(doc, plan, options);
  const json plots = exec::plot_data(result);  // before any file: a bad plot writes nothing
  const fs::path folder = dir / w.dir;
  fs::create_directories(folder);
  CsvWriter runs((folder / "runs.csv").string());
  std::vector<std::string> head;
  for (const auto& d : plan.sweep) head.push_back(d.parameter);
  head.push_back("file");
  head.push_back("rows");
  head.push_back("status");
  runs.header(head, "run");
  std::size_t failed = 0;
  for (std::size_t i = 0; i < result.runs.size(); ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "run_%04zu.csv", i + 1);
    const std::string file = result.runs.size() == 1 && plan.sweep.empty() ? "data.csv" : name;
    const exec::Trajectory& traj = result.runs[i].trajectory;
    write_run_csv(folder / file, traj);
    std::string line = std::to_string(i + 1);
    for (double v : result.runs[i].point) line += "," + format_number(v);
    line += "," + file + "," + std::to_string(traj.times.size()) + "," +
            csv_field(traj.ok() ? std::string("ok") : "failed: " + traj.message);
    if (!traj.ok()) ++failed;
    // CsvWriter writes numbers; this row mixes text, so it goes through the header call.
    runs.header({}, line);
  }
  runs.close();
  if (failed > 0) w.notes.push_back(std::to_string(failed) + " run(s) stopped early; runs.csv says why");
  json spec = {{"dir", folder.string()}, {"plots", plots}};
  bool any_drawn = false;
  for (json& p : spec["plots"]) {
    p["file"] = safe_name(p["id"].get<std::string>());
    if (p.contains("skipped")) {
      w.notes.push_back("plot '" + p["id"].get<std::string>() + "' not drawn: " + p["skipped"].get<std::string>());
    } else {
      any_drawn = true;
      w.images.emplace_back(p["file"], p.value("description", std::string()));
    }
  }
  write_text(folder / "plots.json", spec.dump(1, ' ', false, json::error_handler_t::replace) + "\n");
  if (any_drawn) w.plots_json = (folder / "plots.json").string();
  if (!a.quiet)
    std::fprintf(stderr, "esi analyze: %s (%s): %zu run%s, %zu plot%s -> %s\n", ref.id.c_str(), ref.component.c_str(),
                 result.runs.size(), result.runs.size() == 1 ? "" : "s", w.images.size(),
                 w.images.size() == 1 ? "" : "s", folder.string().c_str());
  for (const std::string& n : w.notes) std::fprintf(stderr, "esi analyze: %s: %s\n", ref.id.c_str(), n.c_str());
  return w;
}

void write_index(const fs::path& dir, const std::string& file, const std::vector<Written>& all) {
  std::string html =
      "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>Analyses of " + html_escape(file) +
      "</title>\n<style>body{font-family:sans-serif;max-width:60em;margin:auto}img{max-width:100%}"
      ".note{color:#a50}</style></head><body>\n<h1>Analyses of " + html_escape(file) + "</h1>\n";
  for (const Written& w : all) {
    html += "<h2 id=\"" + html_escape(w.dir) + "\">" + html_escape(w.id) + " <small>(" + html_escape(w.component) +
            ")</small></h2>\n";
    if (!w.description.empty()) html += "<p>" + html_escape(w.description) + "</p>\n";
    if (!w.error.empty()) {
      html += "<p class=\"note\">not run: " + html_escape(w.error) + "</p>\n";
      continue;
    }
    html += "<p>data: <a href=\"" + html_escape(w.dir) + "/runs.csv\">runs.csv</a></p>\n";
    for (const auto& [stem, description] : w.images) {
      const std::string base = html_escape(w.dir + "/" + stem);
      html += "<figure><a href=\"" + base + ".svg\"><img src=\"" + base + ".png\" alt=\"" + html_escape(stem) +
              "\"></a><figcaption>" + html_escape(description.empty() ? stem : description) +
              "</figcaption></figure>\n";
    }
    for (const std::string& n : w.notes) html += "<p class=\"note\">" + html_escape(n) + "</p>\n";
  }
  html += "</body></html>\n";
  write_text(dir / "index.html", html);
}

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
      "                   [--quiet]\n"
      "\n"
      "Runs the inline analyses of FILE (spec §6.7): each on its component flattened alone, with\n"
      "its parameters and initial_state, one run per point of its parameter_sweep (the last\n"
      "dimension varying fastest), 101 evenly spaced output times over its time_span, automatic\n"
      "method at rtol 1e-8 / atol 1e-10. Per analysis, DIR/<id>/ gets:\n"
      "  data.csv or run_0001.csv, ...   each run: t, then every state and observed\n"
      "  runs.csv                        run number, swept values, file, rows, status\n"
      "  plots.json                      each plot's data, labels (from the document; else the\n"
      "                                  name and its units) and why a plot was not drawn\n"
      "  <plot>.png, <plot>.svg          line, scatter and heatmap plots, drawn by\n"
      "                                  scripts/esi_plot.py with python3 and matplotlib\n"
      "and DIR/index.html lists every analysis with its description and images. With several\n"
      "paths or a folder (searched for *.esm), each document with analyses gets DIR/<its path\n"
      "below the folder, without .esm>/ (default DIR: analyses) and DIR/index.html links them;\n"
      "documents without analyses are counted and skipped.\n"
      "\n"
      "  --component NAME  only the analyses of this component (and its subsystems)\n"
      "  --analysis ID     only this analysis (repeatable); an unknown id is an error\n"
      "  --out DIR         output folder (default: FILE's name without .esm, plus _analyses)\n"
      "  --jobs N          runs of a sweep on N threads and plots drawn by N processes\n"
      "                    (default 1); results are the same\n"
      "\n"
      "Line and scatter plots against t draw each run's trajectory; against a swept parameter,\n"
      "one point per run (each series' final value). Heatmaps need two swept parameters and a\n"
      "value {variable, reduce: final|max|min|mean|integral, or at_time}. Field plots\n"
      "(field_slice, field_snapshot) are not drawn yet. Without python3 or matplotlib the data\n"
      "is still written and the command says the plots were skipped (exit 0); ESI_PYTHON and\n"
      "ESI_PLOT_SCRIPT choose the interpreter and the script.\n"
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
  std::vector<Written> written;
};

/// Runs the analyses of one document into job.out; false when something failed (reported).
bool analyze_file(FileJob& job, const AnalyzeArgs& a, bool many, std::size_t& without) {
  const std::string file = job.file.string();
  const std::optional<esm::ResolvedDocument> loaded = load_or_report(file);
  if (!loaded) return false;
  const esm::ResolvedDocument& doc = *loaded;
  std::vector<exec::AnalysisRef> found = exec::find_analyses(doc, a.component);
  if (!a.ids.empty()) {
    std::vector<exec::AnalysisRef> chosen;
    for (const std::string& id : a.ids) {
      bool hit = false;
      for (const auto& r : found)
        if (r.id == id) chosen.push_back(r), hit = true;
      if (!hit && !many) {
        std::string known;
        for (const auto& r : found) known += (known.empty() ? "" : ", ") + r.id;
        throw Error("unknown_analysis", file, "",
                    "no analysis '" + id + "'" + (a.component.empty() ? "" : " in component '" + a.component + "'") +
                        (known.empty() ? std::string("; the document has none") : "; known: " + known));
      }
    }
    found = std::move(chosen);
  }
  if (found.empty()) {
    if (many) return ++without, true;  // a folder holds documents without analyses too
    throw Error("no_analyses", file, "",
                a.component.empty() ? "the document has no inline analyses (spec §6.7)"
                                    : "component '" + a.component + "' has no inline analyses (or does not exist)");
  }
  std::error_code ec;
  fs::create_directories(job.out, ec);
  if (ec || !fs::is_directory(job.out))
    throw Error("output_not_writable", job.out.string(), "", "cannot create the output folder: " + ec.message());
  bool ok = true;
  for (const exec::AnalysisRef& ref : found) {
    try {
      job.written.push_back(analyze_one(doc, ref, a, job.out));
    } catch (const Error& e) {
      Diagnostic d = e.diagnostic();
      if (d.file.empty()) d.file = ref.file;
      if (d.pointer.empty()) d.pointer = ref.pointer;
      std::fprintf(stderr, "%s\n", format_diagnostic(d).c_str());
      Written w;
      w.id = ref.id;
      w.component = ref.component;
      w.dir = safe_name(ref.id);
      w.description = ref.spec.is_object() ? ref.spec.value("description", std::string()) : std::string();
      w.error = "error[" + d.code + "] at " + d.pointer + ": " + d.message;
      job.written.push_back(std::move(w));
      ok = false;
    }
  }
  return ok;
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
    for (const exec::CheckInput& in : exec::find_esm_inputs({path})) {
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
  for (FileJob& job : jobs) {
    try {
      if (!analyze_file(job, a, many, without)) failed = true;
    } catch (const Error& e) {
      Diagnostic d = e.diagnostic();
      if (d.file.empty()) d.file = job.file.string();
      std::fprintf(stderr, "%s\n", format_diagnostic(d).c_str());
      failed = true;
      if (!many) return kExitInvalid;
    }
  }
  // Every plot of the run drawn at the end, by `jobs` plot processes.
  std::vector<std::string> to_draw;
  for (const FileJob& job : jobs)
    for (const Written& w : job.written)
      if (!w.plots_json.empty()) to_draw.push_back(w.plots_json);
  const std::string why = render_plots(to_draw, a.jobs);
  std::size_t analyses = 0, drawn = 0, documents = 0;
  std::string top;
  for (FileJob& job : jobs) {
    if (job.written.empty()) continue;
    ++documents;
    for (Written& w : job.written) {
      ++analyses;
      if (!why.empty() && !w.plots_json.empty()) {
        w.notes.push_back("plots skipped: " + why + " (the data is in plots.json and the CSV files)");
        w.images.clear();
      }
      drawn += w.images.size();
    }
    try {
      write_index(job.out, job.file.string(), job.written);
    } catch (const Error& e) {
      std::fprintf(stderr, "%s\n", format_diagnostic(e.diagnostic()).c_str());
      failed = true;
    }
    const std::string rel = job.out.lexically_relative(a.out).generic_string();
    top += "<li><a href=\"" + html_escape(rel) + "/index.html\">" + html_escape(job.file.string()) + "</a> (" +
           std::to_string(job.written.size()) + " analyses)</li>\n";
  }
  if (!why.empty() && !a.quiet) std::fprintf(stderr, "esi analyze: plots skipped: %s\n", why.c_str());
  if (many) {
    try {
      write_text(fs::path(a.out) / "index.html",
                 "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>Analyses</title></head><body>\n"
                 "<h1>Analyses</h1>\n<ul>\n" + top + "</ul>\n</body></html>\n");
    } catch (const Error& e) {
      std::fprintf(stderr, "%s\n", format_diagnostic(e.diagnostic()).c_str());
      failed = true;
    }
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (!a.quiet) {
    if (many)
      std::fprintf(stderr, "esi analyze: %zu documents with analyses (%zu without), %zu analyses, %zu plots drawn, %.1f s\n",
                   documents, without, analyses, drawn, wall);
    std::fprintf(stderr, "esi analyze: wrote %s\n", (fs::path(a.out) / "index.html").string().c_str());
  }
  return failed ? kExitInvalid : kExitOk;
}

}  // namespace esi::cli

#endif  // ESI_HAVE_EXEC
