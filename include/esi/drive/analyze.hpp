// A document's inline analyses (spec §6.7) written as `esi analyze` writes them, shared by the
// command and the Python module (Model.analyze(out=...)).
//
// Per analysis, DIR/<id>/ gets one CSV per run (run_0001.csv, ... in sweep order; data.csv
// without a sweep; with `netcdf` also run_0001.nc, ...), runs.csv (each run's swept values, its
// file and how the solve ended), plots.json (each plot's data, labels and content hash); the
// plots are drawn into <plot>.png, <plot>.svg and <plot>.hash by a PlotPool (forked processes:
// PLplot keeps one global stream state) while the next analyses solve, and plots whose hash
// matches the images already there are not drawn again. DIR/index.html then lists every
// analysis with its description and images.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "esi/check/analyze.hpp"
#include "esi/core/error.hpp"
#include "esi/esm/load.hpp"

namespace esi::drive {

/// The analyses of `doc` to run: those of `component` (and its subsystems; "" = all), only the
/// `ids` named when there are any. Throws esi::Error `unknown_analysis` for an id the document
/// lacks and `no_analyses` when nothing is left, unless `lenient` (a folder of documents, where
/// some have none): then an empty list.
std::vector<check::AnalysisRef> choose_analyses(const esm::ResolvedDocument& doc,
                                                const std::string& component,
                                                const std::vector<std::string>& ids, bool lenient);

struct AnalysisFolderOptions {
  unsigned jobs = 1;    ///< threads for the runs of a sweep (results do not depend on it)
  bool netcdf = false;  ///< each run also as CF NetCDF-4 beside its CSV
};

/// What one analysis wrote: what index.html shows of it.
struct WrittenAnalysis {
  std::string id, dir, description, component;
  struct Image {
    std::string stem, description, hash;
  };
  std::vector<Image> images;
  std::vector<std::string> notes;
  std::string error;          ///< "" when it ran; else its located error, as printed
  std::string plots_json;     ///< to draw ("" = nothing to draw)
  std::size_t runs = 0;       ///< runs written
  std::size_t to_draw = 0;    ///< plots whose data changed (or that have no images yet)
  std::size_t unchanged = 0;  ///< plots whose images were drawn from the same data before
};

/// Up to `jobs` drawing processes, forked as plots are submitted and fed plots.json paths
/// through a socket, so the drawing overlaps the solves of the analyses that follow.
class PlotPool {
 public:
  explicit PlotPool(unsigned jobs);
  ~PlotPool();  ///< finish()
  PlotPool(const PlotPool&) = delete;
  PlotPool& operator=(const PlotPool&) = delete;
  /// Queues one plots.json holding `count` plots to draw.
  void submit(const std::string& plots_json, std::size_t count);
  std::size_t processes_started() const;
  /// Waits for the drawing; "" when every plot was drawn (or none was submitted), else why not
  /// (PLplot's devices missing, a plot that could not be drawn: reported on stderr).
  std::string finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

struct AnalyzeCallbacks {
  /// Each analysis' result, after it ran and before its files are written.
  std::function<void(const check::AnalysisRef&, const check::AnalysisResult&)> on_result;
  /// Each analysis' folder, once written.
  std::function<void(const WrittenAnalysis&)> on_written;
  /// An analysis that could not run, its diagnostic located at the analysis when it had no
  /// place of its own.
  std::function<void(const Diagnostic&)> on_error;
};

/// Runs `refs` in order (analyses of one component share their compiled Jacobian) and writes
/// each into dir/<id>/, submitting its plots to `pool`; appends to `written`. An analysis that
/// cannot run is reported through `on_error` and kept with its `error`; the others still run.
/// False when one failed. Throws esi::Error `output_not_writable` when `dir` cannot be made.
bool analyze_into(const esm::ResolvedDocument& doc, const std::vector<check::AnalysisRef>& refs,
                  const std::filesystem::path& dir, const AnalysisFolderOptions& options,
                  PlotPool& pool, std::vector<WrittenAnalysis>& written,
                  const AnalyzeCallbacks& callbacks = {});

/// After the pool finished with `why` (not ""): index.html shows only the plots whose images
/// are there and current (unchanged, or drawn before a drawing process failed); the others are
/// noted as skipped.
void settle_images(std::vector<WrittenAnalysis>& written, const std::filesystem::path& dir,
                   const std::string& why);

/// dir/index.html: every analysis of `file` with its description, data and images.
void write_index(const std::filesystem::path& dir, const std::string& file,
                 const std::vector<WrittenAnalysis>& written);

/// dir/index.html for several documents: a link to each one's own index.
struct IndexedDocument {
  std::string file;
  std::filesystem::path folder;  ///< relative to dir
  std::size_t analyses = 0;
};
void write_documents_index(const std::filesystem::path& dir,
                           const std::vector<IndexedDocument>& documents);

}  // namespace esi::drive
