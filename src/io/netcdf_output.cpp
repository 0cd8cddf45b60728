// The CF NetCDF-4 writer: see include/esi/io/netcdf_output.hpp for the layout and the
// crash-safety contract (a temporary name renamed at close).
#include "esi/io/netcdf_output.hpp"

#include <netcdf.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <set>
#include <unordered_map>
#include <utility>

#include "esi/core/error.hpp"

#ifndef ESI_VERSION
#define ESI_VERSION "0.1.0"
#endif

namespace esi::io {
namespace {

constexpr std::size_t kSeriesChunk = 256;  ///< records per chunk of the time axis and scalars

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

/// Names handed out once: a sanitised name already taken gets "_2", "_3", ...
class NameTable {
 public:
  std::string claim(const std::string& flat) {
    const std::string base = netcdf_name(flat);
    std::string name = base;
    for (int k = 2; used_.count(name) != 0; ++k) name = base + "_" + std::to_string(k);
    used_.insert(name);
    return name;
  }

 private:
  std::set<std::string> used_;
};

/// One coordinate variable's values, written after nc_enddef.
struct CoordinateData {
  int varid = -1;
  std::vector<double> numbers;
  std::vector<long long> indices;
  std::vector<std::string> strings;
};

/// Values of array `a` cell by cell (first index fastest): its dense values (per-region form)
/// or its parameter cells' defaults; empty when some cell has none.
std::vector<double> array_values(const esm::System& sys, const esm::System::Array& a) {
  std::size_t n = 1;
  for (std::int64_t e : a.extents) n *= static_cast<std::size_t>(e);
  std::vector<double> out;
  if (a.values.size() == n) {
    out = a.values;
  } else {
    std::vector<std::int64_t> cell(a.extents.size(), 1);
    for (std::size_t c = 0; c < n; ++c) {
      const int p = sys.parameter_index(esm::cell_name(a.name, cell));
      if (p < 0 || !sys.parameters[static_cast<std::size_t>(p)].default_value) return {};
      out.push_back(*sys.parameters[static_cast<std::size_t>(p)].default_value);
      for (std::size_t d = 0; d < cell.size() && ++cell[d] > a.extents[d]; ++d) cell[d] = 1;
    }
  }
  for (double v : out)
    if (!std::isfinite(v)) return {};
  return out;
}

bool monotonic(const std::vector<double>& v) {
  bool up = true, down = true;
  for (std::size_t i = 1; i < v.size(); ++i) {
    up = up && v[i] > v[i - 1];
    down = down && v[i] < v[i - 1];
  }
  return up || down;
}

/// An output quantity: a scalar, or an array with its cells.
struct Quantity {
  std::string flat;
  const char* kind = "unknown";
  const esm::FlatVariable* scalar = nullptr;
  const esm::System::Array* array = nullptr;
  std::vector<std::ptrdiff_t> gather;  // array: per cell (first index fastest), its column
};

/// The output quantities of these columns in order of first appearance: a scalar column, or an
/// array gathering its cells' columns.
std::vector<Quantity> output_quantities(const esm::System& system, const std::vector<std::string>& columns) {
  struct Source {
    const esm::FlatVariable* variable;
    const char* kind;
  };
  // The cells of per-region state arrays are found by position (StateList::find), without
  // an entry or a name per cell.
  std::unordered_map<std::string, Source> by_name;
  system.states.for_each_stored([&](std::size_t, const esm::FlatVariable& v) {
    by_name.emplace(v.name, Source{&v, "state"});
  });
  for (const auto& v : system.observed) by_name.emplace(v.name, Source{&v, "observed"});
  std::unordered_map<std::string, const esm::System::Array*> arrays;
  for (const auto& a : system.arrays) arrays.emplace(a.name, &a);
  std::vector<std::pair<std::size_t, const esm::System::Array*>> state_arrays;  // by first state
  for (const auto& a : system.arrays)
    if (a.first_state >= 0) state_arrays.emplace_back(static_cast<std::size_t>(a.first_state), &a);
  std::sort(state_arrays.begin(), state_arrays.end());

  std::vector<Quantity> quantities;
  std::unordered_map<std::string, std::size_t> quantity_of;
  const auto add_cell = [&](std::size_t j, const esm::System::Array& a, const char* kind,
                            std::size_t offset) {
    auto [it, fresh] = quantity_of.emplace(a.name, quantities.size());
    if (fresh) {
      std::size_t n = 1;
      for (std::int64_t e : a.extents) n *= static_cast<std::size_t>(e);
      quantities.push_back({a.name, kind, nullptr, &a, std::vector<std::ptrdiff_t>(n, -1)});
    }
    quantities[it->second].gather.at(offset) = static_cast<std::ptrdiff_t>(j);
  };
  for (std::size_t j = 0; j < columns.size(); ++j) {
    const auto found = by_name.find(columns[j]);
    if (found == by_name.end()) {
      // A cell of a per-region state array: its offset in the array is its offset in the
      // array's run of states (both first index fastest).
      const std::int64_t s = system.states.find(columns[j]);
      auto run =
          std::upper_bound(state_arrays.begin(), state_arrays.end(), static_cast<std::size_t>(s),
                           [](std::size_t x, const auto& e) { return x < e.first; });
      std::size_t cells = 0;
      if (s >= 0 && run != state_arrays.begin()) {
        --run;
        cells = 1;
        for (std::int64_t e : run->second->extents) cells *= static_cast<std::size_t>(e);
      }
      if (cells > 0 && static_cast<std::size_t>(s) - run->first < cells) {
        add_cell(j, *run->second, "state", static_cast<std::size_t>(s) - run->first);
      } else {
        quantities.push_back(
            {columns[j], "unknown", nullptr, nullptr, {static_cast<std::ptrdiff_t>(j)}});
      }
      continue;
    }
    const esm::FlatVariable* v = found->second.variable;
    const char* kind = found->second.kind;
    const auto array = !v->array.empty() ? arrays.find(v->array) : arrays.end();
    if (array == arrays.end() || v->cell.size() != array->second->extents.size()) {
      quantities.push_back({columns[j], kind, v, nullptr, {static_cast<std::ptrdiff_t>(j)}});
      continue;
    }
    const esm::System::Array& a = *array->second;
    std::size_t offset = 0, stride = 1;
    for (std::size_t d = 0; d < a.extents.size(); ++d) {
      offset += static_cast<std::size_t>(v->cell[d] - 1) * stride;
      stride *= static_cast<std::size_t>(a.extents[d]);
    }
    add_cell(j, a, kind, offset);
  }
  return quantities;
}

/// A NetCDF status checked: output_write_failed naming `what` unless it is NC_NOERR.
using Check = std::function<void(int status, const std::string& what)>;

/// One dimension per (index set, extent) the output arrays use.
struct Dimension {
  std::string axis, name;
  std::int64_t extent = 0;
  int dimid = -1;
  bool has_coordinate = false;
};

/// A coordinate that is not a dimension's own: named in the `coordinates` attribute of every
/// data variable over all its dimensions.
struct Auxiliary {
  std::string name;
  std::vector<int> dimids;
};

Dimension* find_dim(std::vector<Dimension>& dims, const std::string& axis, std::int64_t extent) {
  for (Dimension& d : dims)
    if (d.axis == axis && d.extent == extent) return &d;
  return nullptr;
}

/// Defines the coordinate variables of `dims`: the registry's entries first, then categorical
/// members, then 1-based indices. Their values go into `coordinate_data` (written after
/// nc_enddef).
void define_coordinates(int ncid, const esm::System& system, const nlohmann::json& registry,
                        const nlohmann::json& index_sets, NameTable& names, std::vector<Dimension>& dims,
                        std::vector<CoordinateData>& coordinate_data, std::vector<Auxiliary>& auxiliaries,
                        const Check& check) {
  const auto text_attribute = [&](int varid, const std::string& name, const std::string& value) {
    check(nc_put_att_text(ncid, varid, name.c_str(), value.size(), value.data()), "attribute " + name);
  };
  const auto copy_cf_attributes = [&](int varid, const std::string& key, const nlohmann::json& entry) {
    for (const char* attr : {"standard_name", "units", "axis"})
      if (entry.contains(attr) && entry[attr].is_string()) text_attribute(varid, attr, entry[attr].get<std::string>());
    text_attribute(varid, "esm_coordinate", key);
  };
  for (const auto& [key, entry] : registry.items()) {
    if (!entry.is_object()) continue;
    std::vector<double> values;
    std::vector<Dimension*> over;  // the entry's axes, first index first
    if (entry.contains("values") && entry["values"].is_array()) {
      for (const auto& v : entry["values"])
        if (v.is_number()) values.push_back(v.get<double>());
      if (values.size() != entry["values"].size()) continue;
      const auto n = static_cast<std::int64_t>(values.size());
      Dimension* target = nullptr;
      for (Dimension& d : dims)
        if (d.extent == n && (key == d.axis || ends_with(key, "_" + d.axis))) target = &d;
      if (target == nullptr) {
        int same_length = 0;
        for (Dimension& d : dims)
          if (d.extent == n) ++same_length, target = &d;
        if (same_length != 1) target = nullptr;
      }
      if (target == nullptr) continue;
      over.push_back(target);
    } else if (entry.contains("source") && entry["source"].is_string()) {
      const std::string source = entry["source"].get<std::string>();
      const esm::System::Array* found = nullptr;
      int matches = 0;
      for (const auto& a : system.arrays)
        if (a.name == source || ends_with(a.name, "." + source)) found = &a, ++matches;
      if (matches != 1 || !found->parameter) continue;
      values = array_values(system, *found);
      if (values.empty()) continue;
      for (std::size_t d = 0; d < found->axes.size(); ++d)
        over.push_back(find_dim(dims, found->axes[d], found->extents[d]));
      if (std::find(over.begin(), over.end(), nullptr) != over.end()) continue;
    } else {
      continue;
    }
    const bool dimension_coordinate = over.size() == 1 && !over[0]->has_coordinate && monotonic(values);
    CoordinateData data;
    data.numbers = std::move(values);
    if (dimension_coordinate) {
      Dimension& d = *over[0];
      check(nc_def_var(ncid, d.name.c_str(), NC_DOUBLE, 1, &d.dimid, &data.varid), "defining coordinate " + key);
      d.has_coordinate = true;
    } else {
      Auxiliary aux{names.claim(key), {}};
      for (auto it = over.rbegin(); it != over.rend(); ++it) aux.dimids.push_back((*it)->dimid);
      check(nc_def_var(ncid, aux.name.c_str(), NC_DOUBLE, static_cast<int>(aux.dimids.size()), aux.dimids.data(),
                       &data.varid),
            "defining coordinate " + key);
      auxiliaries.push_back(std::move(aux));
    }
    copy_cf_attributes(data.varid, key, entry);
    coordinate_data.push_back(std::move(data));
  }
  for (Dimension& d : dims) {
    if (d.has_coordinate) continue;
    CoordinateData data;
    const nlohmann::json* set = index_sets.contains(d.axis) ? &index_sets[d.axis] : nullptr;
    const nlohmann::json* members =
        set != nullptr && set->is_object() && set->value("kind", "") == "categorical" && set->contains("members") &&
                (*set)["members"].is_array() && static_cast<std::int64_t>((*set)["members"].size()) == d.extent
            ? &(*set)["members"]
            : nullptr;
    bool all_numbers = members != nullptr, all_strings = members != nullptr;
    if (members != nullptr)
      for (const auto& m : *members) all_numbers = all_numbers && m.is_number(), all_strings = all_strings && m.is_string();
    if (all_numbers) {
      for (const auto& m : *members) data.numbers.push_back(m.get<double>());
      check(nc_def_var(ncid, d.name.c_str(), NC_DOUBLE, 1, &d.dimid, &data.varid), "defining coordinate " + d.axis);
      text_attribute(data.varid, "long_name", d.axis + " members");
    } else if (all_strings) {
      for (const auto& m : *members) data.strings.push_back(m.get<std::string>());
      check(nc_def_var(ncid, d.name.c_str(), NC_STRING, 1, &d.dimid, &data.varid), "defining coordinate " + d.axis);
      text_attribute(data.varid, "long_name", d.axis + " members");
    } else {
      for (std::int64_t i = 1; i <= d.extent; ++i) data.indices.push_back(i);
      check(nc_def_var(ncid, d.name.c_str(), NC_INT64, 1, &d.dimid, &data.varid), "defining coordinate " + d.axis);
      text_attribute(data.varid, "long_name", d.axis + " index (1-based)");
    }
    text_attribute(data.varid, "esm_index_set", d.axis);
    d.has_coordinate = true;
    coordinate_data.push_back(std::move(data));
  }
}

}  // namespace

namespace {

/// The next code point of UTF-8 `s` at `i` (advancing i), or -1 for a malformed byte (skipped).
long next_code_point(const std::string& s, std::size_t& i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b = byte(i);
  int extra = b < 0x80 ? 0 : (b >> 5) == 0x6 ? 1 : (b >> 4) == 0xe ? 2 : (b >> 3) == 0x1e ? 3 : -1;
  if (extra < 0 || i + static_cast<std::size_t>(extra) >= s.size() + (extra == 0 ? 1 : 0)) {
    ++i;
    return -1;
  }
  long cp = extra == 0 ? b : b & (0x3f >> extra);
  for (int k = 1; k <= extra; ++k) {
    if ((byte(i + static_cast<std::size_t>(k)) & 0xc0) != 0x80) {
      ++i;
      return -1;
    }
    cp = (cp << 6) | (byte(i + static_cast<std::size_t>(k)) & 0x3f);
  }
  i += static_cast<std::size_t>(extra) + 1;
  return cp;
}

/// An ASCII spelling of a code point outside ASCII.
std::string ascii_for(long cp) {
  static const char* const greek[] = {"Alpha", "Beta", "Gamma", "Delta", "Epsilon", "Zeta", "Eta",
                                      "Theta", "Iota", "Kappa", "Lambda", "Mu", "Nu", "Xi", "Omicron",
                                      "Pi", "Rho", "Sigma", "Sigma", "Tau", "Upsilon", "Phi", "Chi",
                                      "Psi", "Omega"};
  if (cp >= 0x391 && cp <= 0x3a9) return greek[cp - 0x391];  // 0x3a2 is unassigned: "Sigma"
  if (cp >= 0x3b1 && cp <= 0x3c9) {
    std::string name = greek[cp - 0x3b1];
    name[0] = static_cast<char>(name[0] - 'A' + 'a');
    return name;
  }
  if (cp == 0xb5) return "mu";  // the micro sign
  if (cp >= 0x2080 && cp <= 0x2089) return std::string(1, static_cast<char>('0' + (cp - 0x2080)));
  if (cp >= 0x2074 && cp <= 0x2079) return std::string(1, static_cast<char>('0' + (cp - 0x2070)));
  if (cp == 0x2070) return "0";
  if (cp == 0xb9) return "1";
  if (cp == 0xb2 || cp == 0xb3) return std::string(1, static_cast<char>('0' + (cp - 0xb0)));
  char hex[24];
  std::snprintf(hex, sizeof hex, "_u%04lx", static_cast<unsigned long>(cp) & 0x1fffffUL);
  return hex;
}

}  // namespace

std::string netcdf_name(const std::string& flat_name) {
  std::string out;
  for (std::size_t i = 0; i < flat_name.size();) {
    const long cp = next_code_point(flat_name, i);
    const bool ok = (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || (cp >= '0' && cp <= '9') || cp == '_';
    if (ok) out += static_cast<char>(cp);
    else if (cp >= 0x80) out += ascii_for(cp);
    else out += '_';
  }
  if (out.empty() || !((out[0] >= 'a' && out[0] <= 'z') || (out[0] >= 'A' && out[0] <= 'Z'))) out = "v_" + out;
  return out;
}

std::string netcdf_long_name(const std::string& description, const std::string& flat_name) {
  constexpr std::size_t kMost = 80;
  std::string text;
  for (char c : description) text += (c == '\n' || c == '\t' || c == '\r') ? ' ' : c;
  const auto first = text.find_first_not_of(' ');
  if (first == std::string::npos) return flat_name;
  text.erase(0, first);
  // The first sentence: up to ". " (or the end).
  if (const auto end = text.find(". "); end != std::string::npos) text.erase(end);
  while (!text.empty() && (text.back() == ' ' || text.back() == '.')) text.pop_back();
  if (text.size() <= kMost) return text;
  std::size_t cut = text.rfind(' ', kMost - 3);
  if (cut == std::string::npos || cut < kMost / 2) cut = kMost - 3;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xc0) == 0x80) --cut;  // not inside a character
  return text.substr(0, cut) + "...";
}

NetcdfOutput::NetcdfOutput(std::string path, const esm::System& system, NetcdfOutputOptions options)
    : path_(std::move(path)), system_(system), options_(std::move(options)) {
  options_.deflate_level = std::clamp(options_.deflate_level, 0, 9);
  const std::string partial = partial_path();
  int ncid = -1;
  const int status = nc_create(partial.c_str(), NC_NETCDF4 | NC_CLOBBER, &ncid);
  if (status != NC_NOERR)
    throw Error("output_not_writable", path_, "",
                "cannot create the NetCDF output (as " + partial + "): " + nc_strerror(status));
  ncid_ = ncid;
  int old_mode = 0;
  check(nc_set_fill(ncid_, NC_NOFILL, &old_mode), "setting no-fill mode");  // every value is written
}

NetcdfOutput::~NetcdfOutput() { discard(); }

void NetcdfOutput::fail(const std::string& what, int status) const {
  throw Error("output_write_failed", path_, "",
              "writing the NetCDF output failed (" + what + "): " + nc_strerror(status));
}

void NetcdfOutput::check(int status, const std::string& what) const {
  if (status != NC_NOERR) fail(what, status);
}

void NetcdfOutput::define(const std::vector<std::string>& columns) {
  ESI_ASSERT(ncid_ >= 0 && time_varid_ < 0);
  columns_ = columns.size();
  std::vector<Quantity> quantities = output_quantities(system_, columns);

  NameTable names;
  const std::string time_name = names.claim("time");
  int time_dim = -1;
  check(nc_def_dim(ncid_, time_name.c_str(), NC_UNLIMITED, &time_dim), "defining the time dimension");
  check(nc_def_var(ncid_, time_name.c_str(), NC_DOUBLE, 1, &time_dim, &time_varid_), "defining time");
  const auto text_attribute = [&](int varid, const std::string& name, const std::string& value) {
    check(nc_put_att_text(ncid_, varid, name.c_str(), value.size(), value.data()), "attribute " + name);
  };
  text_attribute(time_varid_, "standard_name", "time");
  text_attribute(time_varid_, "long_name", "model time t");
  text_attribute(time_varid_, "units", options_.time_units);
  text_attribute(time_varid_, "calendar", options_.calendar);
  text_attribute(time_varid_, "axis", "T");
  const std::size_t series_chunk = kSeriesChunk;
  check(nc_def_var_chunking(ncid_, time_varid_, NC_CHUNKED, &series_chunk), "chunking time");

  // One dimension per (index set, extent) the output arrays use.
  const nlohmann::json* doc = options_.document;
  const nlohmann::json empty = nlohmann::json::object();
  const nlohmann::json& index_sets = doc != nullptr && doc->contains("index_sets") && (*doc)["index_sets"].is_object()
                                         ? (*doc)["index_sets"] : empty;
  const nlohmann::json& registry = doc != nullptr && doc->contains("coordinates") && (*doc)["coordinates"].is_object()
                                       ? (*doc)["coordinates"] : empty;
  std::vector<Dimension> dims;
  const auto dim_of = [&](const std::string& axis, std::int64_t extent) -> Dimension& {
    for (Dimension& d : dims)
      if (d.axis == axis && d.extent == extent) return d;
    Dimension d{axis, names.claim(axis), extent};
    check(nc_def_dim(ncid_, d.name.c_str(), static_cast<std::size_t>(extent), &d.dimid), "defining dimension " + axis);
    dims.push_back(std::move(d));
    return dims.back();
  };
  for (const Quantity& q : quantities)
    if (q.array != nullptr)
      for (std::size_t d = 0; d < q.array->axes.size(); ++d) dim_of(q.array->axes[d], q.array->extents[d]);

  // Coordinates: the registry's entries first, then categorical members, then 1-based indices.
  std::vector<CoordinateData> coordinate_data;
  std::vector<Auxiliary> auxiliaries;
  define_coordinates(ncid_, system_, registry, index_sets, names, dims, coordinate_data, auxiliaries,
                     [this](int status, const std::string& what) { check(status, what); });

  // Data variables.
  for (Quantity& q : quantities) {
    Variable var;
    std::vector<int> dimids{time_dim};
    var.count.push_back(1);
    std::vector<std::size_t> chunks{q.array != nullptr ? std::size_t{1} : series_chunk};
    if (q.array != nullptr)
      for (std::size_t d = q.array->axes.size(); d-- > 0;) {
        const Dimension* dim = find_dim(dims, q.array->axes[d], q.array->extents[d]);
        dimids.push_back(dim->dimid);
        var.count.push_back(static_cast<std::size_t>(q.array->extents[d]));
        chunks.push_back(static_cast<std::size_t>(q.array->extents[d]));
      }
    const std::string name = names.claim(q.flat);
    variable_names_[q.flat] = name;
    check(nc_def_var(ncid_, name.c_str(), NC_DOUBLE, static_cast<int>(dimids.size()), dimids.data(), &var.varid),
          "defining " + q.flat);
    check(nc_def_var_chunking(ncid_, var.varid, NC_CHUNKED, chunks.data()), "chunking " + q.flat);
    if (options_.deflate_level > 0 || options_.shuffle)
      check(nc_def_var_deflate(ncid_, var.varid, options_.shuffle ? 1 : 0, options_.deflate_level > 0 ? 1 : 0,
                               options_.deflate_level),
            "compressing " + q.flat);
    const std::string units = q.array != nullptr ? q.array->units : q.scalar != nullptr ? q.scalar->units : "";
    const std::string description =
        q.array != nullptr ? q.array->description : q.scalar != nullptr ? q.scalar->description : "";
    if (!units.empty()) text_attribute(var.varid, "units", units);
    const std::string long_name = netcdf_long_name(description, q.flat);
    text_attribute(var.varid, "long_name", long_name);
    if (!description.empty() && description != long_name) text_attribute(var.varid, "description", description);
    text_attribute(var.varid, "esm_name", q.flat);
    text_attribute(var.varid, "esm_kind", q.kind);
    if (std::find(q.gather.begin(), q.gather.end(), -1) != q.gather.end()) {
      const double nan = std::numeric_limits<double>::quiet_NaN();
      check(nc_put_att_double(ncid_, var.varid, "_FillValue", NC_DOUBLE, 1, &nan), "fill value of " + q.flat);
    }
    std::string coordinates;
    for (const Auxiliary& aux : auxiliaries) {
      const bool applies = std::all_of(aux.dimids.begin(), aux.dimids.end(), [&](int id) {
        return std::find(dimids.begin(), dimids.end(), id) != dimids.end();
      });
      if (applies) coordinates += (coordinates.empty() ? "" : " ") + aux.name;
    }
    if (!coordinates.empty()) text_attribute(var.varid, "coordinates", coordinates);
    var.gather = std::move(q.gather);
    variables_.push_back(std::move(var));
  }

  // Global attributes: the caller's provenance, CF conventions and our version.
  std::map<std::string, std::string> globals = options_.provenance;
  globals.emplace("Conventions", "CF-1.8");
  globals.emplace("source", std::string("EarthSciIntegrator (esi) ") + ESI_VERSION);
  globals.emplace("esi_version", ESI_VERSION);
  for (const auto& [name, value] : globals) text_attribute(NC_GLOBAL, name, value);
  check(nc_enddef(ncid_), "ending the definitions");

  for (const CoordinateData& c : coordinate_data) {
    if (!c.numbers.empty()) check(nc_put_var_double(ncid_, c.varid, c.numbers.data()), "writing a coordinate");
    if (!c.indices.empty()) check(nc_put_var_longlong(ncid_, c.varid, c.indices.data()), "writing a coordinate");
    if (!c.strings.empty()) {
      std::vector<const char*> texts;
      for (const std::string& s : c.strings) texts.push_back(s.c_str());
      check(nc_put_var_string(ncid_, c.varid, texts.data()), "writing a coordinate");
    }
  }
  std::size_t largest = 0;
  for (const Variable& v : variables_) largest = std::max(largest, v.gather.size());
  buffer_.resize(largest);
}

void NetcdfOutput::write(double t, std::span<const double> row) {
  ESI_ASSERT(ncid_ >= 0 && time_varid_ >= 0 && row.size() == columns_);
  const std::size_t start_time[1] = {records_}, one[1] = {1};
  check(nc_put_vara_double(ncid_, time_varid_, start_time, one, &t), "writing time");
  std::vector<std::size_t> start;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const Variable& v : variables_) {
    start.assign(v.count.size(), 0);
    start[0] = records_;
    double* out = buffer_.data();
    for (std::size_t c = 0; c < v.gather.size(); ++c) {
      const std::ptrdiff_t j = v.gather[c];
      out[c] = j >= 0 ? row[static_cast<std::size_t>(j)] : nan;
    }
    const int status = nc_put_vara_double(ncid_, v.varid, start.data(), v.count.data(), out);
    if (status != NC_NOERR) fail("writing record " + std::to_string(records_ + 1), status);
  }
  ++records_;
}

void NetcdfOutput::set_attribute(const std::string& name, const std::string& value) {
  pending_attributes_[name] = value;
}

void NetcdfOutput::close() {
  if (ncid_ < 0) return;
  try {
    if (!pending_attributes_.empty()) {
      check(nc_redef(ncid_), "reopening the definitions");
      for (const auto& [name, value] : pending_attributes_)
        check(nc_put_att_text(ncid_, NC_GLOBAL, name.c_str(), value.size(), value.data()), "attribute " + name);
      check(nc_enddef(ncid_), "ending the definitions");
    }
    const int ncid = ncid_;
    ncid_ = -1;
    check(nc_close(ncid), "closing");
  } catch (...) {
    discard();
    throw;
  }
  std::error_code ec;
  std::filesystem::rename(partial_path(), path_, ec);
  if (ec) {
    discard();
    throw Error("output_write_failed", path_, "",
                "renaming the finished NetCDF output " + partial_path() + " to " + path_ + " failed: " + ec.message());
  }
}

void NetcdfOutput::discard() noexcept {
  if (ncid_ >= 0) nc_abort(ncid_);
  ncid_ = -1;
  std::error_code ec;
  std::filesystem::remove(partial_path(), ec);
}

}  // namespace esi::io
