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

extern char** environ;

namespace esi::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

#ifndef ESI_PLOT_SCRIPT_DEFAULT
#define ESI_PLOT_SCRIPT_DEFAULT ""
#endif

struct AnalyzeArgs {
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

/// Runs `python script plots_json`: "" when it drew the plots, else why not; `no_matplotlib`
/// says whether the interpreter ran but lacked matplotlib.
std::string run_plot_script(const std::string& python, const std::string& script, const std::string& json_path,
                            bool& no_matplotlib) {
  no_matplotlib = false;
  std::string quiet = "--quiet-missing";  // esi says why the plots were skipped, once
  std::vector<char*> argv{const_cast<char*>(python.c_str()), const_cast<char*>(script.c_str()), quiet.data(),
                          const_cast<char*>(json_path.c_str()), nullptr};
  pid_t pid = 0;
  if (posix_spawnp(&pid, python.c_str(), nullptr, nullptr, argv.data(), environ) != 0)
    return "'" + python + "' could not be started (is python3 installed?)";
  int status = 0;
  if (waitpid(pid, &status, 0) < 0) return "waiting for the plot script failed";
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  if (WIFEXITED(status) && WEXITSTATUS(status) == 4) {
    no_matplotlib = true;
    return "matplotlib is not installed for " + python + " (install python3-matplotlib)";
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127) return "'" + python + "' could not be started";
  return "the plot script failed (exit status " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ")";
}

/// Draws the plots of `plots_json` with $ESI_PYTHON, else python3 from PATH and then the
/// system's /usr/bin/python3 (where Debian's python3-matplotlib lives when PATH holds another
/// interpreter, e.g. pyenv's); "" when drawn, else why the plots were skipped.
std::string render_plots(const fs::path& plots_json) {
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
    const std::string failure = run_plot_script(python, script, plots_json.string(), no_matplotlib);
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
  if (any_drawn) {
    const std::string why = render_plots(folder / "plots.json");
    if (!why.empty()) {
      w.notes.push_back("plots skipped: " + why + " (the data is in plots.json and the CSV files)");
      w.images.clear();
    }
  }
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
    if (!a.file.empty()) return usage_error("analyze", "one FILE at a time (got '" + a.file + "' and '" + s + "')");
    a.file = s;
  }
  if (a.file.empty()) return usage_error("analyze", "missing FILE");
  if (a.out.empty()) a.out = fs::path(a.file).stem().string() + "_analyses";
  return kExitOk;
}

}  // namespace

void print_analyze_help(std::FILE* out) {
  std::fputs(
      "usage: esi analyze FILE [--component NAME] [--analysis ID ...] [--out DIR] [--jobs N] [--quiet]\n"
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
      "and DIR/index.html lists every analysis with its description and images.\n"
      "\n"
      "  --component NAME  only the analyses of this component (and its subsystems)\n"
      "  --analysis ID     only this analysis (repeatable); an unknown id is an error\n"
      "  --out DIR         output folder (default: FILE's name without .esm, plus _analyses)\n"
      "  --jobs N          runs of a sweep on N threads (default 1); results are the same\n"
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

int run_analyze(Args args) {
  AnalyzeArgs a;
  if (const int rc = parse_args(args, a); rc != kExitOk) return rc < 0 ? kExitOk : rc;
  try {
    const std::optional<esm::ResolvedDocument> loaded = load_or_report(a.file);
    if (!loaded) return kExitInvalid;
    const esm::ResolvedDocument& doc = *loaded;
    std::vector<exec::AnalysisRef> found = exec::find_analyses(doc, a.component);
    if (!a.ids.empty()) {
      std::vector<exec::AnalysisRef> chosen;
      for (const std::string& id : a.ids) {
        bool hit = false;
        for (const auto& r : found)
          if (r.id == id) chosen.push_back(r), hit = true;
        if (!hit) {
          std::string known;
          for (const auto& r : found) known += (known.empty() ? "" : ", ") + r.id;
          throw Error("unknown_analysis", a.file, "",
                      "no analysis '" + id + "'" + (a.component.empty() ? "" : " in component '" + a.component + "'") +
                          (known.empty() ? std::string("; the document has none") : "; known: " + known));
        }
      }
      found = std::move(chosen);
    }
    if (found.empty())
      throw Error("no_analyses", a.file, "",
                  a.component.empty() ? "the document has no inline analyses (spec §6.7)"
                                      : "component '" + a.component + "' has no inline analyses (or does not exist)");
    const fs::path dir(a.out);
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec || !fs::is_directory(dir))
      throw Error("output_not_writable", a.out, "", "cannot create the output folder: " + ec.message());
    std::vector<Written> all;
    bool failed = false;
    for (const exec::AnalysisRef& ref : found) {
      try {
        all.push_back(analyze_one(doc, ref, a, dir));
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
        all.push_back(std::move(w));
        failed = true;
      }
    }
    write_index(dir, a.file, all);
    if (!a.quiet) std::fprintf(stderr, "esi analyze: wrote %s\n", (dir / "index.html").string().c_str());
    return failed ? kExitInvalid : kExitOk;
  } catch (const Error& e) {
    Diagnostic d = e.diagnostic();
    if (d.file.empty()) d.file = a.file;
    std::fprintf(stderr, "%s\n", format_diagnostic(d).c_str());
    return kExitInvalid;
  }
}

}  // namespace esi::cli

#endif  // ESI_HAVE_EXEC
