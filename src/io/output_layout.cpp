// io::output_layout (output_layout.hpp): the variables, dimensions and coordinates of a run's
// output, computed without touching a file.
#include "esi/io/output_layout.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <unordered_map>
#include <utility>

#include "esi/io/netcdf_output.hpp"

namespace esi::io {
namespace {

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
std::vector<Quantity> output_quantities(const esm::System& system,
                                        const std::vector<std::string>& columns) {
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

std::size_t find_dim(const std::vector<LayoutDimension>& dims, const std::string& axis,
                     std::int64_t extent) {
  for (std::size_t k = 0; k < dims.size(); ++k)
    if (dims[k].axis == axis && dims[k].extent == extent) return k;
  return dims.size();
}

/// The coordinate variables of `dims`: the registry's entries first, then categorical members,
/// then 1-based indices.
void add_coordinates(OutputLayout& out, const esm::System& system, const nlohmann::json& registry,
                     const nlohmann::json& index_sets, NameTable& names) {
  std::vector<LayoutDimension>& dims = out.dimensions;
  std::vector<bool> has_coordinate(dims.size(), false);
  for (const auto& [key, entry] : registry.items()) {
    if (!entry.is_object()) continue;
    std::vector<double> values;
    std::vector<std::size_t> over;  // the entry's axes, first index first
    if (entry.contains("values") && entry["values"].is_array()) {
      for (const auto& v : entry["values"])
        if (v.is_number()) values.push_back(v.get<double>());
      if (values.size() != entry["values"].size()) continue;
      const auto n = static_cast<std::int64_t>(values.size());
      std::size_t target = dims.size();
      for (std::size_t d = 0; d < dims.size(); ++d)
        if (dims[d].extent == n && (key == dims[d].axis || ends_with(key, "_" + dims[d].axis)))
          target = d;
      if (target == dims.size()) {
        int same_length = 0;
        for (std::size_t d = 0; d < dims.size(); ++d)
          if (dims[d].extent == n) ++same_length, target = d;
        if (same_length != 1) target = dims.size();
      }
      if (target == dims.size()) continue;
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
      if (std::find(over.begin(), over.end(), dims.size()) != over.end()) continue;
    } else {
      continue;
    }
    LayoutCoordinate c;
    c.own_dimension = over.size() == 1 && !has_coordinate[over[0]] && monotonic(values);
    c.numbers = std::move(values);
    if (c.own_dimension) {
      c.name = dims[over[0]].name;
      c.dims = over;
      has_coordinate[over[0]] = true;
    } else {
      c.name = names.claim(key);
      c.dims.assign(over.rbegin(), over.rend());
    }
    for (const char* attr : {"standard_name", "units", "axis"})
      if (entry.contains(attr) && entry[attr].is_string())
        c.attributes.emplace_back(attr, entry[attr].get<std::string>());
    c.attributes.emplace_back("esm_coordinate", key);
    out.coordinates.push_back(std::move(c));
  }
  for (std::size_t k = 0; k < dims.size(); ++k) {
    if (has_coordinate[k]) continue;
    const LayoutDimension& d = dims[k];
    LayoutCoordinate c;
    c.name = d.name;
    c.dims = {k};
    c.own_dimension = true;
    const nlohmann::json* set = index_sets.contains(d.axis) ? &index_sets[d.axis] : nullptr;
    const nlohmann::json* members =
        set != nullptr && set->is_object() && set->value("kind", "") == "categorical" &&
                set->contains("members") && (*set)["members"].is_array() &&
                static_cast<std::int64_t>((*set)["members"].size()) == d.extent
            ? &(*set)["members"]
            : nullptr;
    bool all_numbers = members != nullptr, all_strings = members != nullptr;
    if (members != nullptr)
      for (const auto& m : *members)
        all_numbers = all_numbers && m.is_number(), all_strings = all_strings && m.is_string();
    if (all_numbers) {
      for (const auto& m : *members) c.numbers.push_back(m.get<double>());
      c.attributes.emplace_back("long_name", d.axis + " members");
    } else if (all_strings) {
      for (const auto& m : *members) c.strings.push_back(m.get<std::string>());
      c.attributes.emplace_back("long_name", d.axis + " members");
    } else {
      for (std::int64_t i = 1; i <= d.extent; ++i) c.indices.push_back(i);
      c.attributes.emplace_back("long_name", d.axis + " index (1-based)");
    }
    c.attributes.emplace_back("esm_index_set", d.axis);
    has_coordinate[k] = true;
    out.coordinates.push_back(std::move(c));
  }
}

}  // namespace

OutputLayout output_layout(const esm::System& system, const std::vector<std::string>& columns,
                           const nlohmann::json* document) {
  std::vector<Quantity> quantities = output_quantities(system, columns);
  OutputLayout out;
  NameTable names;
  out.time = names.claim("time");

  // One dimension per (index set, extent) the output arrays use.
  const nlohmann::json empty = nlohmann::json::object();
  const nlohmann::json& index_sets = document != nullptr && document->contains("index_sets") &&
                                             (*document)["index_sets"].is_object()
                                         ? (*document)["index_sets"]
                                         : empty;
  const nlohmann::json& registry = document != nullptr && document->contains("coordinates") &&
                                           (*document)["coordinates"].is_object()
                                       ? (*document)["coordinates"]
                                       : empty;
  for (const Quantity& q : quantities)
    if (q.array != nullptr)
      for (std::size_t d = 0; d < q.array->axes.size(); ++d)
        if (find_dim(out.dimensions, q.array->axes[d], q.array->extents[d]) ==
            out.dimensions.size())
          out.dimensions.push_back(
              {names.claim(q.array->axes[d]), q.array->axes[d], q.array->extents[d]});

  add_coordinates(out, system, registry, index_sets, names);

  for (Quantity& q : quantities) {
    LayoutVariable v;
    v.flat = q.flat;
    v.is_array = q.array != nullptr;
    if (q.array != nullptr)
      for (std::size_t d = q.array->axes.size(); d-- > 0;)
        v.dims.push_back(find_dim(out.dimensions, q.array->axes[d], q.array->extents[d]));
    v.name = names.claim(q.flat);
    const std::string units = q.array != nullptr    ? q.array->units
                              : q.scalar != nullptr ? q.scalar->units
                                                    : "";
    const std::string description = q.array != nullptr    ? q.array->description
                                    : q.scalar != nullptr ? q.scalar->description
                                                          : "";
    if (!units.empty()) v.attributes.emplace_back("units", units);
    const std::string long_name = netcdf_long_name(description, q.flat);
    v.attributes.emplace_back("long_name", long_name);
    if (!description.empty() && description != long_name)
      v.attributes.emplace_back("description", description);
    v.attributes.emplace_back("esm_name", q.flat);
    v.attributes.emplace_back("esm_kind", q.kind);
    v.has_missing = std::find(q.gather.begin(), q.gather.end(), -1) != q.gather.end();
    std::string coordinates;
    for (const LayoutCoordinate& c : out.coordinates) {
      if (c.own_dimension) continue;
      const bool applies = std::all_of(c.dims.begin(), c.dims.end(), [&](std::size_t d) {
        return std::find(v.dims.begin(), v.dims.end(), d) != v.dims.end();
      });
      if (applies) coordinates += (coordinates.empty() ? "" : " ") + c.name;
    }
    if (!coordinates.empty()) v.attributes.emplace_back("coordinates", coordinates);
    v.gather = std::move(q.gather);
    out.variables.push_back(std::move(v));
  }
  return out;
}

}  // namespace esi::io
