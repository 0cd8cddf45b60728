// esi analyze's folders (esi/drive/analyze.hpp).
#include "esi/drive/analyze.hpp"

#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string_view>

#include <nlohmann/json.hpp>

#include "esi/core/text.hpp"
#include "esi/io/csv.hpp"
#include "esi/io/netcdf_output.hpp"
#include "esi/plot/figure.hpp"

namespace esi::drive {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

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
    out +=
        (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-') ? c : '_';
  if (out.empty() || out == "." || out == "..") out = "_" + out;
  return out;
}

std::string html_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
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
void write_run_netcdf(const fs::path& path, const check::AnalysisResult& result,
                      const check::AnalysisRun& run, const esm::ResolvedDocument& doc,
                      const check::AnalysisRef& ref) {
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
    point += (point.empty() ? "" : " ") + result.plan.sweep[d].parameter + "=" +
             number_text(run.point[d]);
  if (!point.empty()) options.provenance["esi_sweep_point"] = point;
  const exec::Trajectory& traj = run.trajectory;
  io::NetcdfOutput nc(path.string(), result.system, options);
  nc.define(traj.names);
  for (std::size_t k = 0; k < traj.times.size(); ++k)
    nc.write(traj.times[k], std::span<const double>(traj.values.data() + k * traj.names.size(),
                                                    traj.names.size()));
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
                 format_diagnostic({"plot_failed", path, "",
                                    std::string("cannot read the plot data: ") + e.what()})
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
        if (!write_file(file, bytes))
          throw Error("output_write_failed", file, "", "cannot write the plot's file");
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

/// True when `stem`.png and .svg exist and `stem`.hash holds `hash` (the drawing writes it
/// after both images).
bool images_current(const fs::path& folder, const std::string& stem, const std::string& hash) {
  std::error_code ec;
  if (!fs::is_regular_file(folder / (stem + ".png"), ec) ||
      !fs::is_regular_file(folder / (stem + ".svg"), ec))
    return false;
  std::ifstream f(folder / (stem + ".hash"), std::ios::binary);
  std::string stored;
  return f && std::getline(f, stored) && stored == hash;
}

}  // namespace

/// Up to `jobs` forked drawing processes, the first forked at the first analysis with plots,
/// each fed plots.json paths as they are written (through a socket), so the drawing overlaps
/// the solves of the analyses that follow. PLplot keeps one global stream state (not
/// thread-safe), hence processes rather than threads. One more process starts for every
/// kPlotsPerProcess plots submitted (and no more than one per plots.json): a document with two
/// plots draws in one process whatever `jobs` is.
struct PlotPool::Impl {
 public:
  explicit Impl(unsigned jobs) : jobs_(std::max(1u, jobs)) {}
  ~Impl() { finish(); }

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
      if (r < 0)
        why_ = "waiting for a drawing process failed";
      else if (WIFSIGNALED(status))
        why_ = "a drawing process was killed by signal " + std::to_string(WTERMSIG(status));
      else if (WEXITSTATUS(status) != 0)
        why_ = "some plots could not be drawn (reported above)";
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

PlotPool::PlotPool(unsigned jobs) : impl_(std::make_unique<Impl>(jobs)) {}
PlotPool::~PlotPool() = default;
void PlotPool::submit(const std::string& plots_json, std::size_t count) {
  impl_->submit(plots_json, count);
}
std::size_t PlotPool::processes_started() const {
  return impl_->processes_started();
}
std::string PlotPool::finish() {
  return impl_->finish();
}

namespace {

/// An analysis' entry before it ran.
WrittenAnalysis entry_of(const check::AnalysisRef& ref) {
  WrittenAnalysis w;
  w.id = ref.id;
  w.component = ref.component;
  w.dir = safe_name(ref.id);
  w.description =
      ref.spec.is_object() ? ref.spec.value("description", std::string()) : std::string();
  return w;
}

/// Runs one analysis and writes its folder; returns what index.html shows.
WrittenAnalysis analyze_one(const esm::ResolvedDocument& doc, const check::AnalysisRef& ref,
                            const AnalysisFolderOptions& a, const std::string& renderer,
                            const fs::path& dir, check::AnalysisCache& cache,
                            const AnalyzeCallbacks& callbacks) {
  WrittenAnalysis w = entry_of(ref);
  const check::AnalysisPlan plan = check::plan_analysis(ref);
  check::AnalyzeOptions options;
  options.jobs = a.jobs;
  options.cache = &cache;
  const check::AnalysisResult result = check::run_analysis(doc, plan, options);
  if (callbacks.on_result) callbacks.on_result(ref, result);
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
    if (a.netcdf)
      write_run_netcdf((folder / file).replace_extension(".nc"), result, result.runs[i], doc, ref);
    std::string line = std::to_string(i + 1);
    for (double v : result.runs[i].point) line += "," + number_text(v);
    line += "," + file + "," + std::to_string(traj.times.size()) + "," +
            io::csv_field(traj.ok() ? std::string("ok") : "failed: " + traj.message);
    if (!traj.ok()) ++failed;
    runs.text_row(line);
  }
  runs.close();
  if (failed > 0)
    w.notes.push_back(std::to_string(failed) + " run(s) stopped early; runs.csv says why");
  json spec = {{"dir", folder.string()}, {"plots", plots}};
  for (json& p : spec["plots"]) {
    p["file"] = safe_name(p["id"].get<std::string>());
    if (p.contains("skipped")) {
      w.notes.push_back("plot '" + p["id"].get<std::string>() +
                        "' not drawn: " + p["skipped"].get<std::string>());
      continue;
    }
    // The hash covers the plot's data, labels and file name and the renderer: the same hash
    // beside both images means drawing again would give the same pictures.
    const std::string hash =
        hex64(fnv1a(p.dump(-1, ' ', false, json::error_handler_t::replace), fnv1a(renderer)));
    w.images.push_back({p["file"].get<std::string>(), p.value("description", std::string()), hash});
    p["hash"] = hash;
    if (images_current(folder, p["file"].get<std::string>(), hash)) {
      p["unchanged"] = true;
      ++w.unchanged;
    } else {
      ++w.to_draw;
    }
  }
  write_text(folder / "plots.json",
             spec.dump(1, ' ', false, json::error_handler_t::replace) + "\n");
  if (w.to_draw > 0) w.plots_json = (folder / "plots.json").string();
  w.runs = result.runs.size();
  return w;
}

}  // namespace

void write_index(const fs::path& dir, const std::string& file,
                 const std::vector<WrittenAnalysis>& all) {
  std::string html =
      "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>Analyses of " +
      html_escape(file) +
      "</title>\n<style>body{font-family:sans-serif;max-width:60em;margin:auto}img{max-width:100%}"
      ".note{color:#a50}</style></head><body>\n<h1>Analyses of " +
      html_escape(file) + "</h1>\n";
  for (const WrittenAnalysis& w : all) {
    html += "<h2 id=\"" + html_escape(w.dir) + "\">" + html_escape(w.id) + " <small>(" +
            html_escape(w.component) + ")</small></h2>\n";
    if (!w.description.empty()) html += "<p>" + html_escape(w.description) + "</p>\n";
    if (!w.error.empty()) {
      html += "<p class=\"note\">not run: " + html_escape(w.error) + "</p>\n";
      continue;
    }
    html += "<p>data: <a href=\"" + html_escape(w.dir) + "/runs.csv\">runs.csv</a></p>\n";
    for (const auto& [stem, description, hash] : w.images) {
      const std::string base = html_escape(w.dir + "/" + stem);
      html += "<figure><a href=\"" + base + ".svg\"><img src=\"" + base + ".png\" alt=\"" +
              html_escape(stem) + "\"></a><figcaption>" +
              html_escape(description.empty() ? stem : description) + "</figcaption></figure>\n";
    }
    for (const std::string& n : w.notes) html += "<p class=\"note\">" + html_escape(n) + "</p>\n";
  }
  html += "</body></html>\n";
  write_text(dir / "index.html", html);
}

std::vector<check::AnalysisRef> choose_analyses(const esm::ResolvedDocument& doc,
                                                const std::string& component,
                                                const std::vector<std::string>& ids, bool lenient) {
  std::vector<check::AnalysisRef> found = check::find_analyses(doc, component);
  if (!ids.empty()) {
    std::vector<check::AnalysisRef> chosen;
    for (const std::string& id : ids) {
      bool hit = false;
      for (const auto& r : found)
        if (r.id == id) chosen.push_back(r), hit = true;
      if (!hit && !lenient) {
        std::string known;
        for (const auto& r : found) known += (known.empty() ? "" : ", ") + r.id;
        throw Error(
            "unknown_analysis", doc.file, "",
            "no analysis '" + id + "'" +
                (component.empty() ? "" : " in component '" + component + "'") +
                (known.empty() ? std::string("; the document has none") : "; known: " + known));
      }
    }
    found = std::move(chosen);
  }
  if (found.empty() && !lenient)
    throw Error("no_analyses", doc.file, "",
                component.empty()
                    ? "the document has no inline analyses (spec §6.7)"
                    : "component '" + component + "' has no inline analyses (or does not exist)");
  return found;
}

bool analyze_into(const esm::ResolvedDocument& doc, const std::vector<check::AnalysisRef>& refs,
                  const fs::path& dir, const AnalysisFolderOptions& options, PlotPool& pool,
                  std::vector<WrittenAnalysis>& written, const AnalyzeCallbacks& callbacks) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir))
    throw Error("output_not_writable", dir.string(), "",
                "cannot create the output folder: " + ec.message());
  const std::string renderer =
      plot::renderer_id();  // in every plot's hash: another renderer draws again
  bool ok = true;
  check::AnalysisCache cache;  // analyses of the same component compile their Jacobian once
  for (const check::AnalysisRef& ref : refs) {
    try {
      written.push_back(analyze_one(doc, ref, options, renderer, dir, cache, callbacks));
      const WrittenAnalysis& w = written.back();
      if (!w.plots_json.empty()) pool.submit(w.plots_json, w.to_draw);
      if (callbacks.on_written) callbacks.on_written(w);
    } catch (const Error& e) {
      Diagnostic d = e.diagnostic();
      if (d.file.empty()) d.file = ref.file;
      if (d.pointer.empty()) d.pointer = ref.pointer;
      if (callbacks.on_error) callbacks.on_error(d);
      WrittenAnalysis w = entry_of(ref);
      w.error = "error[" + d.code + "] at " + d.pointer + ": " + d.message;
      written.push_back(std::move(w));
      ok = false;
    }
  }
  return ok;
}

void settle_images(std::vector<WrittenAnalysis>& written, const fs::path& dir,
                   const std::string& why) {
  if (why.empty()) return;
  for (WrittenAnalysis& w : written) {
    if (w.plots_json.empty()) continue;
    std::vector<WrittenAnalysis::Image> shown;
    for (WrittenAnalysis::Image& image : w.images)
      if (images_current(dir / w.dir, image.stem, image.hash)) shown.push_back(std::move(image));
    const std::size_t missing = w.images.size() - shown.size();
    w.images = std::move(shown);
    w.to_draw -= std::min(w.to_draw, missing);
    if (missing > 0)
      w.notes.push_back(std::to_string(missing) + " plot(s) skipped: " + why +
                        " (the data is in plots.json and the CSV files)");
  }
}

void write_documents_index(const fs::path& dir, const std::vector<IndexedDocument>& documents) {
  std::string items;
  for (const IndexedDocument& d : documents)
    items += "<li><a href=\"" + html_escape(d.folder.generic_string()) + "/index.html\">" +
             html_escape(d.file) + "</a> (" + std::to_string(d.analyses) + " analyses)</li>\n";
  write_text(
      dir / "index.html",
      "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>Analyses</title></head><body>\n"
      "<h1>Analyses</h1>\n<ul>\n" +
          items + "</ul>\n</body></html>\n");
}

}  // namespace esi::drive
