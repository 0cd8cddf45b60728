// Private to check: what the analysis files share: finding a field by the name an analysis
// writes, and the sources, labels and numbers that plot data is made of.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "esi/core/text.hpp"
#include "esi/check/analyze.hpp"
#include "esi/esm/system.hpp"

namespace esi::check::detail {

/// The array a name authored in component `scope` names (scoped, flat, or a unique trailing
/// segment, as resolve_local reads names), or nullptr.
const esm::System::Array* find_array(const esm::System& sys, const std::string& scope, const std::string& key);

/// What a plotted name reads: the time, a column of the run, a swept value or a parameter.
struct Source {
  enum Kind { Time, Column, Swept, Constant } kind = Time;
  std::string name;   ///< as authored
  std::string flat;   ///< flat name ("" for t)
  int dim = -1;       ///< Swept: the sweep dimension
  double value = 0;   ///< Constant
  std::string units;
};

/// What `name` (authored at `pointer`) reads in the runs; `invalid_plot` when nothing.
Source resolve_source(const AnalysisResult& r, const std::string& name, const std::string& pointer);

/// Shortest round-trip spelling of a number, for labels and titles (core/text.hpp).
using esi::number_text;

/// The axis' authored label, else the source's name and units.
std::string axis_label(const nlohmann::json& axis, const Source& s);

/// "k=0.1, T=300" for the swept values of a run, leaving out dimension `skip`; a value in
/// seconds is written in the unit that reads naturally ("max_age=70 yr", natural_time_unit).
std::string point_label(const AnalysisResult& r, const std::vector<double>& point, int skip = -1);

/// The unit a span of `seconds` reads naturally in: s, min, h, d or yr (365.25 d), the largest
/// of them that the span covers at least twice; `per_second` is how many of them make a second.
struct TimeUnit {
  std::string name = "s";
  double per_second = 1;
};
TimeUnit natural_time_unit(double seconds);

/// The data of a field_slice or field_snapshot plot (field_plot.cpp).
nlohmann::json field_plot(const AnalysisResult& r, const nlohmann::json& plot, const std::string& ptr);

}  // namespace esi::check::detail
