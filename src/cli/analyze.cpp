// `esi analyze FILE [--component C] [--analysis ID ...] [--out DIR] [--jobs N] [--netcdf]
// [--quiet]`: runs a document's inline analyses (spec §6.7) and writes, per analysis, DIR/<id>/
// with one CSV per run (run_0001.csv, ... in sweep order; data.csv without a sweep; with
// --netcdf also run_0001.nc, ...), runs.csv (each run's swept values, its file and how the solve
// ended), plots.json (each plot's data, labels and content hash) and <plot>.png, <plot>.svg and
// <plot>.hash drawn with PLplot (src/plot/) in forked processes (plots whose hash matches the
// images already there are not drawn again); then DIR/index.html lists every analysis with its
// description and images.
//
// Plots are optional: where PLplot's devices are missing the data is still written and the
// command says the plots were skipped and why (exit 0). An analysis that cannot run (a located
// error) is reported and the others still run; the exit status is then 1.
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cinttypes>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <string_view>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "esi/io/csv.hpp"
#include "esi/core/error.hpp"
#include "esi/check/analyze.hpp"
#include "esi/check/check.hpp"
#include "esi/io/netcdf_output.hpp"
#include "esi/plot/figure.hpp"

namespace esi::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

/// The machine's cores (hardware_concurrency), at least 1 where it cannot tell.
unsigned default_jobs() { return std::max(1u, std::thread::hardware_concurrency()); }

struct AnalyzeArgs {
  std::vector<std::string> paths;
  std::string file, component, out;
  std::vector<std::string> ids;
  /// Sweep threads and drawing processes; default: the machine's cores.
  unsigned jobs = default_jobs();
  bool quiet = false;
  bool netcdf = false;  ///< each run also as CF NetCDF-4 beside its CSV
  /// plot::renderer_id(), mixed into every plot's hash: another renderer draws again.
  std::string renderer;
};

/// 64-bit FNV-1a, continued from `h` (not cryptographic: it detects changed plot data).
std::uint64_t fnv1a(std::string_view bytes, std::uint64_t h = 14695981039346656037ull) {
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string hex64(std::uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, h);
  return buf;
}

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

/// The spelling of each output time of the previous run written (row by row), reused while a
/// run's times are the same bits, as a sweep's are.
struct TimeTexts {
  std::vector<double> times;
  std::vector<std::string> texts;
  const std::string& of(std::size_t row, double t) {
    const bool known = row < times.size();
    if (!known) {
      times.resize(row + 1);
      texts.resize(row + 1);
    }
    if (!known || std::memcmp(&times[row], &t, sizeof t) != 0) {
      char buf[32];
      texts[row].assign(buf, std::to_chars(buf, buf + sizeof buf, t).ptr);
      times[row] = t;
    }
    return texts[row];
  }
};

void write_run_csv(const fs::path& path, const exec::Trajectory& traj, TimeTexts& time_texts) {
  io::CsvWriter csv(path.string(), /*streaming=*/false);
  csv.header(traj.names);
  for (std::size_t k = 0; k < traj.times.size(); ++k)
    csv.row(time_texts.of(k, traj.times[k]),
            std::span<const double>(traj.values.data() + k * traj.names.size(), traj.names.size()));
  csv.close();
}

/// One run's rows as CF NetCDF-4 (io::NetcdfOutput: one variable per column, the time axis
/// unlimited), with the analysis, the swept values and the run's outcome as global attributes.
void write_run_netcdf(const fs::path& path, const check::AnalysisResult& result, const check::AnalysisRun& run,
                      const esm::ResolvedDocument& doc, const check::AnalysisRef& ref) {
  io::NetcdfOutputOptions options;
  options.document = &doc.doc;
  const json metadata = doc.doc.value("metadata", json::object());
  if (metadata.is_object() && metadata.contains("name") && metadata["name"].is_string())
    options.provenance["title"] = metadata["name"].get<std::string>();
  options.provenance["esi_model_file"] = ref.file;
  options.provenance["esi_component"] = ref.component;
  options.provenance["esi_analysis"] = ref.id;
  std::string point;
  for (std::size_t d = 0; d < result.plan.sweep.size() && d < run.point.size(); ++d)
    point += (point.empty() ? "" : " ") + result.plan.sweep[d].parameter + "=" + format_number(run.point[d]);
  if (!point.empty()) options.provenance["esi_sweep_point"] = point;
  const exec::Trajectory& traj = run.trajectory;
  io::NetcdfOutput nc(path.string(), result.system, options);
  nc.define(traj.names);
  for (std::size_t k = 0; k < traj.times.size(); ++k)
    nc.write(traj.times[k], std::span<const double>(traj.values.data() + k * traj.names.size(), traj.names.size()));
  nc.set_attribute("esi_status", traj.ok() ? std::string("ok") : "failed: " + traj.message);
  nc.close();
}

/// Writes `bytes` to `path`; false when it could not.
bool write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  f.close();
  return static_cast<bool>(f);
}

/// Draws the plots of one plots.json that are neither skipped nor unchanged: per plot, removes
/// <file>.hash, writes <file>.png and <file>.svg, then <file>.hash (so an interrupted drawing
/// is redrawn next time). A plot that cannot be drawn is reported (located in plots.json) and
/// the others are still drawn; false when one could not.
bool draw_plots_file(const std::string& path) {
  json spec;
  try {
    std::ifstream in(path, std::ios::binary);
    spec = json::parse(in);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n",
                 format_diagnostic({"plot_failed", path, "", std::string("cannot read the plot data: ") + e.what()})
                     .c_str());
    return false;
  }
  const fs::path folder = spec.value("dir", std::string());
  const json& plots = spec["plots"];
  bool ok = true;
  for (std::size_t i = 0; i < plots.size(); ++i) {
    const json& p = plots[i];
    if (p.contains("skipped") || p.value("unchanged", false)) continue;
    const std::string pointer = pointer_join("/plots", i);
    try {
      const fs::path stem = folder / p.value("file", std::string("plot"));
      std::error_code ec;
      fs::remove(stem.string() + ".hash", ec);
      const plot::Images images = plot::render(plot::figure_from_json(p, path, pointer));
      const auto put = [](const std::string& file, const std::string& bytes) {
        if (!write_file(file, bytes)) throw Error("output_write_failed", file, "", "cannot write the plot's file");
      };
      put(stem.string() + ".png", images.png);
      put(stem.string() + ".svg", images.svg);
      if (p.contains("hash")) put(stem.string() + ".hash", p["hash"].get<std::string>() + "\n");
    } catch (const Error& e) {
      Diagnostic d = e.diagnostic();
      if (d.file.empty()) d.file = path, d.pointer = pointer;  // the plot in plots.json
      std::fprintf(stderr, "%s\n", format_diagnostic(d).c_str());
      ok = false;
    }
  }
  return ok;
}

/// Up to `jobs` forked drawing processes, the first forked at the first analysis with plots,
/// each fed plots.json paths as they are written (through a socket), so the drawing overlaps
/// the solves of the analyses that follow. PLplot keeps one global stream state (not
/// thread-safe), hence processes rather than threads. One more process starts for every
/// kPlotsPerProcess plots submitted (and no more than one per plots.json): a document with two
/// plots draws in one process whatever --jobs is.
class PlotPool {
 public:
  explicit PlotPool(unsigned jobs) : jobs_(std::max(1u, jobs)) {}
  PlotPool(const PlotPool&) = delete;
  PlotPool& operator=(const PlotPool&) = delete;
  ~PlotPool() { finish(); }

  /// Plots submitted per drawing process started. A fork is cheap, but each process pays
  /// PLplot's start (its first plot: 10-20 ms of CPU, ~50 ms of wall reading fonts and
  /// loading the device plug-ins; later plots ~3.5 ms) and takes a core the solves could use.
  static constexpr std::size_t kPlotsPerProcess = 16;

  /// Queues one plots.json holding `count` plots to draw.
  void submit(const std::string& plots_json, std::size_t count) {
    if (finished_) return;
    submitted_.push_back({plots_json, count});
    plots_ += count;
    if (!started_) {
      started_ = true;
      why_ = plot::unavailable();
      if (!why_.empty()) return;
    }
    if (!why_.empty()) return;
    while (procs_.size() < wanted())
      if (!start_process()) return;
    if (!feed(submitted_.back())) why_ = "a drawing process ended before reading all its input";
  }

  /// The drawing processes started so far (the summary of a folder's run says it).
  std::size_t processes_started() const { return procs_.size(); }

  /// Waits for the drawing; "" when every plot was drawn (or none was submitted), else why not.
  std::string finish() {
    if (finished_) return why_;
    finished_ = true;
    for (Proc& p : procs_) {
      if (p.fd >= 0) ::close(p.fd);
      p.fd = -1;
      int status = 0;
      pid_t r = 0;
      while ((r = ::waitpid(p.pid, &status, 0)) < 0 && errno == EINTR) {
      }
      if (!why_.empty()) continue;
      if (r < 0) why_ = "waiting for a drawing process failed";
      else if (WIFSIGNALED(status)) why_ = "a drawing process was killed by signal " + std::to_string(WTERMSIG(status));
      else if (WEXITSTATUS(status) != 0) why_ = "some plots could not be drawn (reported above)";
    }
    return why_;
  }

 private:
  struct Proc {
    pid_t pid = -1;
    int fd = -1;
    std::size_t queued = 0;
  };
  struct Queued {
    std::string path;
    std::size_t count = 0;
  };

  /// Processes for what was submitted so far: one per kPlotsPerProcess plots, no more than
  /// plots.json files (each goes to one process whole), 1 to jobs_.
  std::size_t wanted() const {
    const std::size_t by_plots = (plots_ + kPlotsPerProcess - 1) / kPlotsPerProcess;
    return std::clamp<std::size_t>(std::min(by_plots, submitted_.size()), 1, jobs_);
  }

  /// Forks one drawing process reading plots.json paths, a line each, from a socket until
  /// its end; false (why_ set) when it could not.
  bool start_process() {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
      why_ = "cannot create a socket for a drawing process";
      return false;
    }
    std::fflush(nullptr);  // nothing buffered is written twice
    const pid_t pid = ::fork();
    if (pid < 0) {
      ::close(sv[0]);
      ::close(sv[1]);
      why_ = "cannot start a drawing process: " + std::string(std::strerror(errno));
      return false;
    }
    if (pid == 0) {
      ::close(sv[0]);
      for (const Proc& p : procs_)  // other processes' inputs: their end must come from esi alone
        if (p.fd >= 0) ::close(p.fd);
      ::_exit(draw_from(sv[1]) ? 0 : 1);
    }
    ::close(sv[1]);
    procs_.push_back({pid, sv[0], 0});
    return true;
  }

  /// The drawing process: every path read from `fd` drawn; false when a plot could not be.
  static bool draw_from(int fd) {
    bool ok = true;
    std::string pending;
    char buf[4096];
    for (;;) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      pending.append(buf, static_cast<std::size_t>(n));
      for (std::size_t nl; (nl = pending.find('\n')) != std::string::npos; pending.erase(0, nl + 1))
        if (nl > 0) ok = draw_plots_file(pending.substr(0, nl)) && ok;
    }
    return ok;
  }

  /// Sends one path to the process with the fewest plots queued; false when it had ended.
  bool feed(const Queued& q) {
    Proc* target = nullptr;
    for (Proc& p : procs_)
      if (p.fd >= 0 && (!target || p.queued < target->queued)) target = &p;
    if (!target) return false;
    const std::string line = q.path + "\n";
    std::size_t sent = 0;
    while (sent < line.size()) {
      const ssize_t n = ::send(target->fd, line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {  // the process has ended: finish() reports its exit status
        ::close(target->fd);
        target->fd = -1;
        return false;
      }
      sent += static_cast<std::size_t>(n);
    }
    target->queued += q.count;
    return true;
  }

  unsigned jobs_;
  std::size_t plots_ = 0;  ///< plots submitted
  bool started_ = false, finished_ = false;
  std::string why_;
  std::vector<Queued> submitted_;
  std::vector<Proc> procs_;
};

struct Written {
  std::string id, dir, description, component;
  struct Image {
    std::string stem, description, hash;
  };
  std::vector<Image> images;
  std::vector<std::string> notes;
  std::string error;
  std::string plots_json;  ///< to draw (empty: nothing to draw)
  std::size_t to_draw = 0;    ///< plots whose data changed (or that have no images yet)
  std::size_t unchanged = 0;  ///< plots whose images were drawn from the same data before
};

/// True when `stem`.png and .svg exist and `stem`.hash holds `hash` (the drawing writes it
/// after both images).
bool images_current(const fs::path& folder, const std::string& stem, const std::string& hash) {
  std::error_code ec;
  if (!fs::is_regular_file(folder / (stem + ".png"), ec) || !fs::is_regular_file(folder / (stem + ".svg"), ec))
    return false;
  std::ifstream f(folder / (stem + ".hash"), std::ios::binary);
  std::string stored;
  return f && std::getline(f, stored) && stored == hash;
}

/// Runs one analysis and writes its folder; returns what index.html shows.
Written analyze_one(const esm::ResolvedDocument& doc, const check::AnalysisRef& ref, const AnalyzeArgs& a,
                    const fs::path& dir, check::AnalysisCache& cache) {
  Written w;
  w.id = ref.id;
  w.component = ref.component;
  w.dir = safe_name(ref.id);
  w.description = ref.spec.is_object() ? ref.spec.value("description", std::string()) : std::string();
  const check::AnalysisPlan plan = check::plan_analysis(ref);
  check::AnalyzeOptions options;
  options.jobs = a.jobs;
  options.cache = &cache;
  const check::AnalysisResult result = check::run_analysis(doc, plan, options);
  const json plots = check::plot_data(result);  // before any file: a bad plot writes nothing
  const fs::path folder = dir / w.dir;
  fs::create_directories(folder);
  io::CsvWriter runs((folder / "runs.csv").string(), /*streaming=*/false);
  std::vector<std::string> head;
  for (const auto& d : plan.sweep) head.push_back(d.parameter);
  head.push_back("file");
  head.push_back("rows");
  head.push_back("status");
  runs.header(head, "run");
  std::size_t failed = 0;
  TimeTexts time_texts;
  for (std::size_t i = 0; i < result.runs.size(); ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "run_%04zu.csv", i + 1);
    const std::string file = result.runs.size() == 1 && plan.sweep.empty() ? "data.csv" : name;
    const exec::Trajectory& traj = result.runs[i].trajectory;
    write_run_csv(folder / file, traj, time_texts);
    if (a.netcdf) write_run_netcdf((folder / file).replace_extension(".nc"), result, result.runs[i], doc, ref);
    std::string line = std::to_string(i + 1);
    for (double v : result.runs[i].point) line += "," + format_number(v);
    line += "," + file + "," + std::to_string(traj.times.size()) + "," +
            io::csv_field(traj.ok() ? std::string("ok") : "failed: " + traj.message);
    if (!traj.ok()) ++failed;
    runs.text_row(line);
  }
  runs.close();
  if (failed > 0) w.notes.push_back(std::to_string(failed) + " run(s) stopped early; runs.csv says why");
  json spec = {{"dir", folder.string()}, {"plots", plots}};
  for (json& p : spec["plots"]) {
    p["file"] = safe_name(p["id"].get<std::string>());
    if (p.contains("skipped")) {
      w.notes.push_back("plot '" + p["id"].get<std::string>() + "' not drawn: " + p["skipped"].get<std::string>());
      continue;
    }
    // The hash covers the plot's data, labels and file name and the renderer: the same hash
    // beside both images means drawing again would give the same pictures.
    const std::string hash =
        hex64(fnv1a(p.dump(-1, ' ', false, json::error_handler_t::replace), fnv1a(a.renderer)));
    w.images.push_back({p["file"].get<std::string>(), p.value("description", std::string()), hash});
    p["hash"] = hash;
    if (images_current(folder, p["file"].get<std::string>(), hash)) {
      p["unchanged"] = true;
      ++w.unchanged;
    } else {
      ++w.to_draw;
    }
  }
  write_text(folder / "plots.json", spec.dump(1, ' ', false, json::error_handler_t::replace) + "\n");
  if (w.to_draw > 0) w.plots_json = (folder / "plots.json").string();
  if (!a.quiet)
    std::fprintf(stderr, "esi analyze: %s (%s): %zu run%s, %zu plot%s%s -> %s\n", ref.id.c_str(),
                 ref.component.c_str(), result.runs.size(), result.runs.size() == 1 ? "" : "s", w.images.size(),
                 w.images.size() == 1 ? "" : "s",
                 w.unchanged > 0 ? (" (" + std::to_string(w.unchanged) + " unchanged)").c_str() : "",
                 folder.string().c_str());
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
    for (const auto& [stem, description, hash] : w.images) {
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
  std::vector<Written> written;
};

/// Runs the analyses of one document into job.out; false when something failed (reported).
bool analyze_file(FileJob& job, const AnalyzeArgs& a, bool many, std::size_t& without, PlotPool& pool) {
  const std::string file = job.file.string();
  const std::optional<esm::ResolvedDocument> loaded = load_or_report(file);
  if (!loaded) return false;
  const esm::ResolvedDocument& doc = *loaded;
  std::vector<check::AnalysisRef> found = check::find_analyses(doc, a.component);
  if (!a.ids.empty()) {
    std::vector<check::AnalysisRef> chosen;
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
  check::AnalysisCache cache;  // analyses of the same component compile their Jacobian once
  for (const check::AnalysisRef& ref : found) {
    try {
      job.written.push_back(analyze_one(doc, ref, a, job.out, cache));
      const Written& w = job.written.back();
      if (!w.plots_json.empty()) pool.submit(w.plots_json, w.to_draw);
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
  a.renderer = plot::renderer_id();
  std::size_t without = 0;
  PlotPool pool(a.jobs);
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
  std::size_t analyses = 0, drawn = 0, unchanged = 0, documents = 0;
  std::string top;
  for (FileJob& job : jobs) {
    if (job.written.empty()) continue;
    ++documents;
    for (Written& w : job.written) {
      ++analyses;
      if (!why.empty() && !w.plots_json.empty()) {
        // index.html shows the plots whose images are there and current (unchanged, or drawn
        // before a drawing process failed); the others are counted as skipped.
        std::vector<Written::Image> shown;
        for (Written::Image& image : w.images)
          if (images_current(job.out / w.dir, image.stem, image.hash)) shown.push_back(std::move(image));
        const std::size_t missing = w.images.size() - shown.size();
        w.images = std::move(shown);
        w.to_draw -= std::min(w.to_draw, missing);
        if (missing > 0)
          w.notes.push_back(std::to_string(missing) + " plot(s) skipped: " + why +
                            " (the data is in plots.json and the CSV files)");
      }
      drawn += w.to_draw;
      unchanged += w.unchanged;
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
      std::fprintf(stderr,
                   "esi analyze: %zu documents with analyses (%zu without), %zu analyses, %zu plots drawn (%zu "
                   "drawing process%s), %zu unchanged, %.1f s\n",
                   documents, without, analyses, drawn, pool.processes_started(),
                   pool.processes_started() == 1 ? "" : "es", unchanged, wall);
    std::fprintf(stderr, "esi analyze: wrote %s\n", (fs::path(a.out) / "index.html").string().c_str());
  }
  return failed ? kExitInvalid : kExitOk;
}

}  // namespace esi::cli

