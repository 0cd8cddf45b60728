// How a run's output columns become named, dimensioned variables (the layout netcdf_output.hpp
// describes): scalars as series over time, an array as one variable over its index sets
// (axes reversed, first index fastest in C order), coordinates for every dimension, CF
// attributes. Computed once here and read by the NetCDF writer and by the Python module, which
// builds the same dataset in memory, so a file and a notebook name and shape every variable
// alike.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "esi/esm/system.hpp"

namespace esi::io {

/// Text attributes in the order they are written.
using Attributes = std::vector<std::pair<std::string, std::string>>;

struct LayoutDimension {
  std::string name;  ///< the dimension's (sanitised) name
  std::string axis;  ///< the index set it spans
  std::int64_t extent = 0;
};

/// A coordinate variable: a dimension's own (name == that dimension's) or an auxiliary one
/// over several dimensions, named in the `coordinates` attribute of the variables it applies to.
struct LayoutCoordinate {
  std::string name;
  std::vector<std::size_t> dims;  ///< into OutputLayout::dimensions, slowest first (C order)
  bool own_dimension = false;
  /// Exactly one of these holds the values: numbers, 1-based indices, or member strings.
  std::vector<double> numbers;
  std::vector<long long> indices;
  std::vector<std::string> strings;
  Attributes attributes;
};

struct LayoutVariable {
  std::string name;               ///< the sanitised name (netcdf_name, made unique)
  std::string flat;               ///< the flat name (an array's name for an array)
  std::vector<std::size_t> dims;  ///< after time: into OutputLayout::dimensions, slowest first
  /// Per value of one record (C order over dims), its column in the row; -1: no column (NaN).
  std::vector<std::ptrdiff_t> gather;
  bool has_missing = false;  ///< some value has no column (written as NaN, _FillValue NaN)
  bool is_array = false;
  Attributes attributes;  ///< units, long_name, description, esm_name, esm_kind, coordinates
};

struct OutputLayout {
  std::string time;  ///< the time dimension's and coordinate's name
  std::vector<LayoutDimension> dimensions;
  std::vector<LayoutCoordinate> coordinates;  ///< in definition order
  std::vector<LayoutVariable> variables;      ///< in order of first appearance in the columns
};

/// The layout of these output columns (exec::Trajectory::names order: states, then observeds).
/// `document` (ResolvedDocument::doc, may be null) gives `index_sets` (categorical members) and
/// the `coordinates` registry.
OutputLayout output_layout(const esm::System& system, const std::vector<std::string>& columns,
                           const nlohmann::json* document);

}  // namespace esi::io
