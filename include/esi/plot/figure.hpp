// Plot rendering for `esi analyze`: one figure (a line, scatter, profile or colour map) drawn
// with PLplot as a PNG (its cairo memory device, encoded with libpng) and an SVG (PLplot's own
// svg device: text stays text). The figure comes from one plot object of plots.json, the form
// exec::plot_data writes.
//
// PLplot keeps one global stream state: render() is not thread-safe. Draw in one thread, or
// in forked processes (esi analyze does). The same figure gives the same bytes whatever was
// drawn before it in the process.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace esi::plot {

/// What a figure shows: lines (with point markers when short), points alone, or a colour map
/// over x and y (a heatmap, or a field on two axes with contour lines).
enum class Kind { Line, Scatter, Map };

struct Series {
  std::string label;
  std::vector<double> x, y;  ///< NaN: no point (a line breaks there)
  bool ended_early = false;  ///< a run that stopped before its end: its last point is marked
};

struct Figure {
  Kind kind = Kind::Line;
  std::string title, xlabel, ylabel, zlabel;
  bool log_x = false, log_y = false;
  std::vector<Series> series;  ///< Line and Scatter
  /// Map: cell centres along x and y, and z with one row per y (z[j * x.size() + i]).
  std::vector<double> x, y, z;
  std::vector<double> contours;  ///< Map: iso-levels drawn as labelled white lines
};

/// The figure one plots.json plot describes (line / scatter, heatmap, field_slice /
/// field_snapshot in either form; null numbers are NaN). Throws esi::Error
/// (`invalid_plot_data`, at `pointer` in `file`) for data it cannot draw.
Figure figure_from_json(const nlohmann::json& plot, const std::string& file = "",
                        const std::string& pointer = "");

/// Where the data area lies: the world window the axes show (log10 of the values on a log
/// axis) and its edges in PNG pixels (x from the left, y from the top), read back from PLplot.
struct Frame {
  double xmin = 0, xmax = 1, ymin = 0, ymax = 1;
  double left = 0, right = 0, top = 0, bottom = 0;
};

struct Images {
  std::string png, svg;  ///< the files' bytes
  Frame frame;
};

inline constexpr int kWidth = 640, kHeight = 440;  ///< image size in pixels (SVG: points)

/// "" when render() can draw, else why not (a PLplot device missing from the installation).
std::string unavailable();

/// Names what draws the images (this renderer's revision and PLplot's version): images drawn
/// by another are drawn again (esi analyze mixes it into each plot's hash).
std::string renderer_id();

/// Draws the figure. Throws esi::Error (`plot_failed`) when PLplot cannot draw it (a device
/// missing from the installation, say).
Images render(const Figure& figure);

/// The colour of the colour maps at t in [0, 1] (viridis: dark blue to yellow, lightness
/// rising with t), as 0xRRGGBB.
unsigned colormap_rgb(double t);

}  // namespace esi::plot
