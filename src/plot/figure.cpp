// plots.json's plot objects (exec::plot_data) read into a Figure.
#include <cmath>
#include <string>
#include <vector>

#include "esi/core/error.hpp"
#include "esi/plot/figure.hpp"

namespace esi::plot {
namespace {

using nlohmann::json;

struct Reader {
  const std::string& file;
  const std::string& pointer;

  [[noreturn]] void fail(const std::string& where, const std::string& why) const {
    throw Error("invalid_plot_data", file, where.empty() ? pointer : pointer + "/" + where, why);
  }

  std::string text(const json& plot, const char* key) const {
    if (!plot.contains(key)) return "";
    if (!plot[key].is_string()) fail(key, std::string("'") + key + "' must be a string");
    return plot[key].get<std::string>();
  }

  /// Numbers, null as NaN. `where`: the reference tokens below the plot ("lines/0/x": keys
  /// and indices, nothing to escape).
  std::vector<double> numbers(const json& list, const std::string& where) const {
    if (!list.is_array()) fail(where, "must be an array of numbers");
    std::vector<double> out;
    out.reserve(list.size());
    for (const json& v : list) {
      if (v.is_null())
        out.push_back(NAN);
      else if (v.is_number())
        out.push_back(v.get<double>());
      else
        fail(where, "must hold numbers (or null for a missing value)");
    }
    return out;
  }
};

}  // namespace

Figure figure_from_json(const json& plot, const std::string& file, const std::string& pointer) {
  const Reader r{file, pointer};
  if (!plot.is_object()) r.fail("", "a plot must be an object");
  Figure f;
  const std::string type = r.text(plot, "type");
  f.title = r.text(plot, "title");
  f.xlabel = r.text(plot, "xlabel");
  f.ylabel = r.text(plot, "ylabel");
  f.zlabel = r.text(plot, "zlabel");
  f.log_x = r.text(plot, "xscale") == "log";
  f.log_y = r.text(plot, "yscale") == "log";
  const bool field = type == "field_slice" || type == "field_snapshot";
  if (type == "heatmap" || (field && plot.contains("z"))) {
    f.kind = Kind::Map;
    for (const char* key : {"x", "y", "z"})
      if (!plot.contains(key)) r.fail("", std::string("a colour map needs '") + key + "'");
    f.x = r.numbers(plot["x"], "x");
    f.y = r.numbers(plot["y"], "y");
    const json& rows = plot["z"];
    if (!rows.is_array() || rows.size() != f.y.size())
      r.fail("z", "must hold one row per y value (" + std::to_string(f.y.size()) + ")");
    for (std::size_t j = 0; j < rows.size(); ++j) {
      const std::vector<double> row = r.numbers(rows[j], "z/" + std::to_string(j));
      if (row.size() != f.x.size())
        r.fail("z/" + std::to_string(j),
               "must hold one value per x value (" + std::to_string(f.x.size()) + ")");
      f.z.insert(f.z.end(), row.begin(), row.end());
    }
    for (double v : f.x)
      if (!std::isfinite(v)) r.fail("x", "cell positions must be finite numbers");
    for (double v : f.y)
      if (!std::isfinite(v)) r.fail("y", "cell positions must be finite numbers");
    if (plot.contains("contours")) {
      for (double v : r.numbers(plot["contours"], "contours"))
        if (std::isfinite(v)) f.contours.push_back(v);
    }
    return f;
  }
  if (type == "line" || field)
    f.kind = Kind::Line;
  else if (type == "scatter")
    f.kind = Kind::Scatter;
  else
    r.fail("type", "unknown plot type '" + type +
                       "' (line, scatter, heatmap, field_slice, field_snapshot)");
  if (!plot.contains("lines") || !plot["lines"].is_array())
    r.fail("", "a line or scatter plot needs 'lines'");
  const json& lines = plot["lines"];
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string at = "lines/" + std::to_string(i);
    if (!lines[i].is_object() || !lines[i].contains("x") || !lines[i].contains("y"))
      r.fail(at, "each line needs 'x' and 'y'");
    Series s;
    if (lines[i].contains("label") && !lines[i]["label"].is_string())
      r.fail(at + "/label", "must be a string");
    s.label = lines[i].value("label", std::string());
    s.x = r.numbers(lines[i]["x"], at + "/x");
    s.y = r.numbers(lines[i]["y"], at + "/y");
    if (s.x.size() != s.y.size()) r.fail(at, "'x' and 'y' must be as long as each other");
    s.ended_early = lines[i].contains("ended_early");
    f.series.push_back(std::move(s));
  }
  return f;
}

}  // namespace esi::plot
