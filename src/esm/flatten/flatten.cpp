// Flattening orchestration: declarations, model equations, reactions, coupling,
// classification and ordering, initial values and overrides.
#include "esi/esm/flatten.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "esi/core/error.hpp"
#include "esi/esm/units.hpp"
#include "esi/expr/parse.hpp"
#include "esm/flatten/flatten_internal.hpp"

namespace esi::esm {
namespace detail {

using expr::NodeId;
using expr::Op;

void free_symbols(const expr::Pool& pool, NodeId root, std::set<std::string>& out) {
  std::vector<NodeId> stack{root};
  std::set<NodeId> seen;
  while (!stack.empty()) {
    const NodeId id = stack.back();
    stack.pop_back();
    if (!seen.insert(id).second) continue;
    const expr::Node& n = pool.node(id);
    if (n.op == Op::Symbol) out.insert(std::string(pool.str(n.name)));
    for (NodeId c : pool.children(id)) stack.push_back(c);
  }
}

namespace {

Cadence cadence_of(const json& v) {
  if (auto u = v.find("update"); u != v.end() && u->is_object()) {
    return u->value("kind", std::string()) == "wiener" ? Cadence::Brownian : Cadence::Discrete;
  }
  if (v.contains("distribution")) return Cadence::Sampled;
  return Cadence::Constant;
}

/// The factor that turns a `default` given in `default_units` into the declared `units` (1 when
/// either is absent or they are the same unit).
double default_conversion(const json& v, const std::string& file, const std::string& pointer) {
  const auto du = v.find("default_units");
  const auto u = v.find("units");
  if (du == v.end() || u == v.end() || !du->is_string() || !u->is_string() || *du == *u) return 1.0;
  const std::optional<Unit> from = parse_unit(du->get<std::string>());
  const std::optional<Unit> to = parse_unit(u->get<std::string>());
  if (!from || !to || !(from->dim == to->dim) || from->offset != to->offset)
    throw Error("unit_inconsistency", file, pointer_join(pointer, "default_units"),
                "the default is given in '" + du->get<std::string>() +
                    "', which cannot be converted to the declared units '" + u->get<std::string>() + "'");
  return from->scale / to->scale;
}

void declare(FlattenState& st, std::size_t c, const std::string& local, const json& v,
             const std::string& pointer, bool unknown, bool species, bool constant_species) {
  const Component& comp = st.components[c];
  Declared d;
  d.var.name = comp.path + "." + local;
  d.var.file = comp.file;
  d.var.pointer = pointer;
  d.unknown = unknown;
  d.species = species;
  d.constant_species = constant_species;
  d.component = c;
  if (v.is_object()) {
    d.var.units = v.value("units", std::string());
    d.var.description = v.value("description", std::string());
    // A default written in other units (`default_units`, same dimension and zero: the unit
    // check refuses anything else) is converted to the declared units here; using the number
    // as it stands would be silently off by the scale ratio (0.5 1/min read as 0.5 1/s).
    const double to_declared = default_conversion(v, comp.file, pointer);
    if (auto def = v.find("default"); def != v.end()) {
      if (def->is_number()) {
        d.var.default_value = def->get<double>() * to_declared;
      } else if (def->is_object() || def->is_string()) {
        d.var.initial = localize(st, c, *def, pointer_join(pointer, "default"));
        if (to_declared != 1.0)
          d.var.initial = st.sys.pool.make(
              expr::Op::Mul, std::vector<expr::NodeId>{st.sys.pool.number(to_declared), d.var.initial});
      }
    }
    if (auto sh = v.find("shape"); sh != v.end() && sh->is_array() && !sh->empty()) {
      ArrayShape shape;
      for (std::size_t a = 0; a < sh->size(); ++a) {
        const json& s = (*sh)[a];
        const std::string axis = s.is_string() ? s.get<std::string>() : s.dump();
        d.var.shape.push_back(axis);
        shape.axes.push_back(axis);
        if (s.is_number_integer() && s.get<std::int64_t>() >= 0) {  // a literal extent
          shape.extents.push_back(s.get<std::int64_t>());
          continue;
        }
        auto size = st.doc.index_set_sizes.find(axis);
        const json& sets = st.doc.doc.value("index_sets", json::object());
        if (size == st.doc.index_set_sizes.end() && !sets.contains(axis)) {
          // An axis named by no index set takes its extent from the ranges of the equations
          // that define the array (expand_arrays infers it, or says it cannot).
          shape.extents.push_back(-1);
          continue;
        }
        const std::string kind_of_axis =
            sets.contains(axis) && sets[axis].is_object() ? sets[axis].value("kind", std::string()) : "";
        if (size == st.doc.index_set_sizes.end() && kind_of_axis == "derived") {
          // Sized when the arrays become cells, once its producing node is evaluated
          // (materialize_derived_sets in arrays/derived_sets.cpp).
          shape.extents.push_back(-1);
          continue;
        }
        if (size == st.doc.index_set_sizes.end()) {
          const std::string kind =
              sets.contains(axis) && sets[axis].is_object() ? sets[axis].value("kind", std::string()) : "";
          throw Error(kind.empty() ? "undefined_index_set" : "unsupported_array_feature", comp.file,
                      pointer_join(pointer_join(pointer, "shape"), a),
                      kind.empty() ? "'" + d.var.name + "' is shaped over '" + axis +
                                         "', which is not a declared index set"
                                   : "'" + d.var.name + "' is shaped over the " + kind +
                                         " index set '" + axis +
                                         "'; only index sets with a size (interval) become cells so far");
        }
        shape.extents.push_back(size->second);
      }
      st.arrays[d.var.name] = std::move(shape);
    }
    if (!unknown) d.var.cadence = cadence_of(v);
  }
  st.declaration_order.push_back(d.var.name);
  st.declared[d.var.name] = std::move(d);
}

void add_model_declarations(FlattenState& st, std::size_t c) {
  const Component& comp = st.components[c];
  const json& m = *comp.node;
  if (auto vars = m.find("variables"); vars != m.end() && vars->is_object())
    for (auto it = vars->begin(); it != vars->end(); ++it) {
      const std::string type = it->is_object() ? it->value("type", std::string("parameter")) : "parameter";
      declare(st, c, it.key(), it.value(), pointer_join(pointer_join(comp.pointer, "variables"), it.key()),
              type == "unknown" || type == "state" || type == "observed", false, false);
    }
}

/// The names a coordinate expression over an array's cells may read as spatial coordinates
/// (spec §4.9.1 (iii), §11.4): x, y, z, lon, lat, lev, the array's axis names and the keys of
/// the document's `coordinates` registry, except names the component declares (those are its
/// variables).
std::set<std::string> coordinate_names(const FlattenState& st, const Component& comp, const ArrayShape& shape) {
  std::set<std::string> out{"x", "y", "z", "lon", "lat", "lev"};
  out.insert(shape.axes.begin(), shape.axes.end());
  const json registry = st.doc.doc.value("coordinates", json::object());
  if (registry.is_object())
    for (auto it = registry.begin(); it != registry.end(); ++it) out.insert(it.key());
  for (auto it = out.begin(); it != out.end();) it = comp.locals.count(*it) ? out.erase(it) : std::next(it);
  return out;
}

/// An unknown declared without a shape that equations define cell by cell: an array of `rank`
/// axes named after it (u_dim1, ...), extents inferred from those equations (infer_extents).
void declare_implicit_array(FlattenState& st, const std::string& name, std::size_t rank) {
  ArrayShape shape;
  for (std::size_t a = 0; a < rank; ++a) {
    shape.axes.push_back(implicit_axis_name(name, a));
    shape.extents.push_back(-1);
  }
  st.declared[name].var.shape = shape.axes;
  st.arrays[name] = std::move(shape);
}

/// D(index(x, i, ...)) as a whole left-hand side is the derivative of one cell, as
/// index(D(x), i, ...) is: rewritten into that form, which the array lowering reads. (Inside an
/// aggregate the D(index(...)) form is the one read.)
void cell_derivative_first(json& lhs) {
  if (!lhs.is_object()) return;
  if (lhs.value("op", std::string()) != "D" || !lhs.contains("args") || !lhs["args"].is_array() ||
      lhs["args"].size() != 1)
    return;
  json& inner = lhs["args"][0];
  if (!inner.is_object() || inner.value("op", std::string()) != "index" || !inner.contains("args") ||
      !inner["args"].is_array() || inner["args"].empty() || !inner["args"][0].is_string())
    return;
  json d = lhs;  // keeps wrt and any other attribute of the D node
  d["args"] = json::array({inner["args"][0]});
  json cell = inner;
  cell["args"][0] = std::move(d);
  lhs = std::move(cell);
}

/// The parts of a left-hand side that defines an array cell by cell: index(D(x), ...) and
/// aggregate(D(index(x, ...))) give x's time derivative; index(y, ...) and
/// aggregate(index(y, ...)) define y's cells (an observed array, or algebraic cells).
struct CellwiseLhs {
  std::string target;
  bool derivative = false;
  expr::NodeId index = expr::kNoNode;  ///< the index node: index(x, i, ...) or index(D(x), i, ...)
};

std::optional<CellwiseLhs> cellwise_lhs(const expr::Pool& pool, expr::NodeId lhs, const std::string& file,
                                        const std::string& pointer) {
  const expr::Node& ln = pool.node(lhs);
  const auto symbol_of = [&](expr::NodeId n) -> std::string {
    return pool.node(n).op == Op::Symbol ? std::string(pool.str(pool.node(n).name)) : "";
  };
  if (ln.op == Op::Index && !pool.args(lhs).empty()) {
    const expr::NodeId base = pool.args(lhs)[0];
    if (pool.node(base).op == Op::D) {
      if (pool.args(base).size() != 1 || symbol_of(pool.args(base)[0]).empty())
        throw Error("invalid_equation", file, pointer_join(pointer, "lhs"),
                    "index(D(x), i, ...) on a left-hand side must apply D to one variable");
      return CellwiseLhs{symbol_of(pool.args(base)[0]), true, lhs};
    }
    if (symbol_of(base).empty()) return std::nullopt;
    return CellwiseLhs{symbol_of(base), false, lhs};
  }
  if (ln.op != Op::Aggregate) return std::nullopt;
  const auto kids = pool.children(lhs);
  const expr::NodeId body = kids.size() > ln.arg_count ? kids[ln.arg_count] : expr::kNoNode;
  const bool derivative = body != expr::kNoNode && pool.node(body).op == Op::D && pool.args(body).size() == 1;
  const expr::NodeId ix = derivative ? pool.args(body)[0] : body;
  if (ix == expr::kNoNode || pool.node(ix).op != Op::Index || pool.args(ix).empty() ||
      symbol_of(pool.args(ix)[0]).empty())
    throw Error("invalid_equation", file, pointer_join(pointer, "lhs"),
                "an aggregate on a left-hand side must hold D(index(x, i, ...)) (a time derivative "
                "cell by cell) or index(y, i, ...) (cells defined by the right-hand side), one index "
                "per axis");
  return CellwiseLhs{symbol_of(pool.args(ix)[0]), derivative, ix};
}

/// A variable declared without a shape that an aggregate defines cell by cell is an array over
/// the aggregate's ranges: an index over an index set takes that set's name and size, any other
/// index names an axis whose extent the equations give (infer_extents).
void declare_array_from_aggregate(FlattenState& st, const std::string& x, expr::NodeId aggregate, expr::NodeId ix) {
  expr::Pool& pool = st.sys.pool;
  const json attrs = expr::attrs_json(pool, aggregate);
  const json ranges = attrs.value("ranges", json::object());
  ArrayShape shape;
  for (std::size_t a = 1; a < pool.args(ix).size(); ++a) {
    const expr::Node& in = pool.node(pool.args(ix)[a]);
    std::string sym = in.op == Op::Symbol ? std::string(pool.str(in.name)) : "";
    if (!sym.empty() && sym[0] == '$') sym.erase(0, 1);
    const json r = ranges.value(sym, json());
    // An offset index (i + 1) names no axis: the array's own, extent inferred.
    shape.axes.push_back(r.is_object() && r.contains("from") && r["from"].is_string() ? r["from"].get<std::string>()
                         : sym.empty() ? implicit_axis_name(x, a - 1)
                                       : sym);
    auto size = st.doc.index_set_sizes.find(shape.axes.back());
    shape.extents.push_back(size == st.doc.index_set_sizes.end() ? -1 : size->second);
  }
  st.declared[x].var.shape = shape.axes;
  st.arrays[x] = std::move(shape);
}

/// `index(y, m) = <distinct aggregate>` with y declared without a shape: y is the producer's
/// output, an array over the derived index set that names the producer. False otherwise.
bool declare_derived_output(FlattenState& st, const std::string& y, expr::NodeId lhs, expr::NodeId rhs) {
  expr::Pool& pool = st.sys.pool;
  if (pool.node(lhs).op != Op::Index || pool.args(lhs).size() != 2 || pool.node(rhs).op != Op::Aggregate)
    return false;
  const json attrs = expr::attrs_json(pool, rhs);
  const json sets = st.doc.doc.value("index_sets", json::object());
  if (attrs.value("distinct", false) != true || !attrs.contains("id")) return false;
  for (auto it = sets.begin(); it != sets.end(); ++it)
    if (it->is_object() && it->value("kind", std::string()) == "derived" && it->value("from_faq", json()) == attrs["id"]) {
      st.declared[y].var.shape = {it.key()};
      st.arrays[y] = ArrayShape{{it.key()}, {-1}};
      return true;
    }
  return false;
}

/// An equation whose left-hand side defines cells of an array (CellwiseLhs): recorded as a
/// tendency piece or an observed-array piece; false when `lhs` is no such form, or defines cells
/// of a variable another equation defines whole (then it is an implicit equation, as before).
bool add_cellwise(FlattenState& st, std::size_t c, expr::NodeId lhs, expr::NodeId rhs, const std::string& ep) {
  const Component& comp = st.components[c];
  expr::Pool& pool = st.sys.pool;
  const std::optional<CellwiseLhs> cw = cellwise_lhs(pool, lhs, comp.file, ep);
  if (!cw) return false;
  const std::string& x = cw->target;
  if (!cw->derivative && st.observed_eqs.count(x)) {
    const Op first = pool.node(st.observed_eqs[x].lhs).op;
    if (first != Op::Index && first != Op::Aggregate) return false;
    st.observed_pieces[x].push_back(FlatEquation{lhs, rhs, comp.file, ep});
    return true;
  }
  // Declared without a shape but defined cell by cell: an array whose extents follow from the
  // equations (spec §4.3, implicit dimensions).
  if (!st.arrays.count(x) && st.declared.count(x) && !(!cw->derivative && declare_derived_output(st, x, lhs, rhs))) {
    if (pool.node(lhs).op == Op::Aggregate) declare_array_from_aggregate(st, x, lhs, cw->index);
    else declare_implicit_array(st, x, pool.args(cw->index).size() - 1);
  }
  if (cw->derivative) {
    if (!st.tendencies.count(x)) st.tendency_order.push_back(x);
    Tendency t{rhs, c, comp.file, ep};
    t.lhs_aggregate = lhs;
    st.tendencies[x].push_back(t);
  } else {
    st.observed_eqs[x] = FlatEquation{lhs, rhs, comp.file, ep};
    st.observed_order.push_back(x);
  }
  return true;
}

void add_model(FlattenState& st, std::size_t c) {
  const Component& comp = st.components[c];
  const json& m = *comp.node;
  const json eqs = m.value("equations", json::array());
  expr::Pool& pool = st.sys.pool;
  for (std::size_t i = 0; i < eqs.size(); ++i) {
    const std::string ep = pointer_join(pointer_join(comp.pointer, "equations"), i);
    json eq = eqs[i];
    if (!eq.is_object() || !eq.contains("lhs") || !eq.contains("rhs"))
      throw Error("invalid_equation", comp.file, ep, "an equation needs 'lhs' and 'rhs'");
    cell_derivative_first(eq["lhs"]);
    // `index(D(x), i, j) = rhs`: i and j are index symbols on both sides.
    // `index(y, i) = rhs` defines observed y cell by cell.
    std::set<std::string> free_indices;
    if (const json& l = eq["lhs"]; l.is_object() && l.value("op", std::string()) == "index" &&
                                   l.contains("args") && l["args"].is_array() && !l["args"].empty() &&
                                   (l["args"][0].is_string() ||
                                    (l["args"][0].is_object() && l["args"][0].value("op", std::string()) == "D")))
      for (std::size_t a = 1; a < l["args"].size(); ++a)
        if (l["args"][a].is_string()) free_indices.insert(l["args"][a].get<std::string>());
    // `aggregate(D(index(x, i)), output_idx: [i]) = rhs`: the rhs may read i too.
    std::set<std::string> rhs_indices = free_indices;
    if (const json& l = eq["lhs"]; l.is_object() && l.value("op", std::string()) == "aggregate" &&
                                   l.contains("output_idx") && l["output_idx"].is_array())
      for (const auto& o : l["output_idx"])
        if (o.is_string()) rhs_indices.insert(o.get<std::string>());
    const NodeId lhs = localize(st, c, eq["lhs"], pointer_join(ep, "lhs"), free_indices);
    NodeId rhs;
    try {
      rhs = localize(st, c, eq["rhs"], pointer_join(ep, "rhs"), rhs_indices);
    } catch (const Error& e) {
      // ic(u) = f(x) with u an array and x a spatial coordinate (§11.4): the names the
      // document does not declare are read as coordinates of u's cells (Expander::coordinate).
      const expr::Node& l = pool.node(lhs);
      if (e.code() != "undefined_variable" || l.op != Op::Ic || pool.args(lhs).empty() ||
          pool.node(pool.args(lhs)[0]).op != Op::Symbol)
        throw;
      const std::string target(pool.str(pool.node(pool.args(lhs)[0]).name));
      const auto array = st.arrays.find(target);
      if (array == st.arrays.end()) throw;
      std::set<std::string> with_coordinates = rhs_indices;
      for (const std::string& name : coordinate_names(st, comp, array->second)) with_coordinates.insert(name);
      rhs = localize(st, c, eq["rhs"], pointer_join(ep, "rhs"), with_coordinates);
      st.coordinate_targets.insert(target);
    }
    const expr::Node& ln = pool.node(lhs);
    const auto target = [&]() -> std::string {
      const auto a = pool.args(lhs);
      if (a.size() != 1 || pool.node(a[0]).op != Op::Symbol)
        throw Error("invalid_equation", comp.file, pointer_join(ep, "lhs"),
                    std::string(ln.op == Op::D ? "D" : "ic") + " on a left-hand side must apply to one variable");
      return std::string(pool.str(pool.node(a[0]).name));
    };
    if (add_cellwise(st, c, lhs, rhs, ep)) {
      // an array defined cell by cell: its tendency, observed cells or algebraic cells
    } else if (ln.op == Op::D) {
      const std::string x = target();
      if (x == "_var") {
        st.placeholders.push_back({rhs, c, comp.file, ep});
        continue;
      }
      if (!st.tendencies.count(x)) st.tendency_order.push_back(x);
      st.tendencies[x].push_back({rhs, c, comp.file, ep});
    } else if (ln.op == Op::Ic) {
      const std::string x = target();
      st.initial_eqs[x] = FlatEquation{lhs, rhs, comp.file, ep};
    } else if (ln.op == Op::Symbol && !st.observed_eqs.count(std::string(pool.str(ln.name)))) {
      const std::string y(pool.str(ln.name));
      // A parent model may define a parameter of one of its subsystems (a binding).
      auto d = st.declared.find(y);
      if (d != st.declared.end() && !d->second.unknown && d->second.component != c) {
        d->second.unknown = true;
        st.bound_parameters.insert(y);
      }
      st.observed_eqs[y] = FlatEquation{lhs, rhs, comp.file, ep};
      st.observed_order.push_back(y);
    } else {
      // An implicit equation; a second bare-name equation for one variable is one too (it
      // constrains the other unknowns it reads, spec §6.3.1).
      st.algebraic_eqs.push_back(FlatEquation{lhs, rhs, comp.file, ep});
    }
  }
  add_events(st, c);
}

void add_reaction_system_declarations(FlattenState& st, std::size_t c) {
  const Component& comp = st.components[c];
  const json& rs = *comp.node;
  if (auto sp = rs.find("species"); sp != rs.end() && sp->is_object())
    for (auto it = sp->begin(); it != sp->end(); ++it) {
      const bool constant = it->is_object() && it->value("constant", false);
      declare(st, c, it.key(), it.value(), pointer_join(pointer_join(comp.pointer, "species"), it.key()),
              !constant, true, constant);
    }
  if (auto ps = rs.find("parameters"); ps != rs.end() && ps->is_object())
    for (auto it = ps->begin(); it != ps->end(); ++it)
      declare(st, c, it.key(), it.value(), pointer_join(pointer_join(comp.pointer, "parameters"), it.key()),
              false, false, false);
}

void add_extra_array(FlattenState& st, const FlattenOptions::ExtraArray& extra) {
  auto c = st.component_index.find(extra.component);
  if (c == st.component_index.end())
    throw Error("unknown_component", extra.file, extra.pointer, "no component '" + extra.component + "'");
  const std::string name = extra.component + "." + extra.name;
  Declared d;
  d.var.name = name;
  d.var.file = extra.file;
  d.var.pointer = extra.pointer;
  d.unknown = true;
  d.component = c->second;
  d.var.shape = extra.axes;
  st.declaration_order.push_back(name);
  st.declared[name] = d;
  if (!extra.axes.empty()) st.arrays[name] = ArrayShape{extra.axes, extra.extents};
  expr::NodeId rhs = expr::kNoNode;
  try {
    rhs = localize(st, c->second, extra.rhs, extra.pointer);
  } catch (const Error& e) {
    // A reference solution over the cells may read spatial coordinates (§6.6.5: sin(pi x)).
    if (e.code() != "undefined_variable" || extra.axes.empty()) throw;
    rhs = localize(st, c->second, extra.rhs, extra.pointer,
                   coordinate_names(st, st.components[c->second], st.arrays.at(name)));
    st.coordinate_targets.insert(name);
  }
  st.observed_eqs[name] = FlatEquation{st.sys.pool.symbol(name), rhs, extra.file, extra.pointer};
  st.observed_order.push_back(name);
}

/// Orders observeds so each reads only earlier ones (Kahn's algorithm, ties in authored order).
std::vector<std::string> order_observed(FlattenState& st) {
  const auto& names = st.observed_order;
  std::map<std::string, std::size_t> position;
  for (std::size_t i = 0; i < names.size(); ++i) position[names[i]] = i;
  std::vector<std::vector<std::size_t>> readers(names.size());
  std::vector<std::size_t> pending(names.size(), 0);
  for (std::size_t i = 0; i < names.size(); ++i) {
    std::set<std::string> deps;
    free_symbols(st.sys.pool, st.observed_eqs[names[i]].rhs, deps);
    for (const auto& d : deps)
      if (auto p = position.find(d); p != position.end()) {
        if (p->second == i)
          throw Error("algebraic_loop", st.observed_eqs[names[i]].file, st.observed_eqs[names[i]].pointer,
                      "observed '" + names[i] + "' is defined in terms of itself");
        readers[p->second].push_back(i);
        ++pending[i];
      }
  }
  std::vector<std::string> out;
  std::set<std::size_t> ready;
  for (std::size_t i = 0; i < names.size(); ++i)
    if (pending[i] == 0) ready.insert(i);
  while (!ready.empty()) {
    const std::size_t i = *ready.begin();
    ready.erase(ready.begin());
    out.push_back(names[i]);
    for (std::size_t r : readers[i])
      if (--pending[r] == 0) ready.insert(r);
  }
  if (out.size() != names.size()) {
    std::string cycle;
    for (std::size_t i = 0; i < names.size(); ++i)
      if (pending[i] > 0) cycle += (cycle.empty() ? "" : ", ") + names[i];
    const auto& first = st.observed_eqs[names[std::distance(pending.begin(),
        std::find_if(pending.begin(), pending.end(), [](std::size_t p) { return p > 0; }))]];
    throw Error("algebraic_loop", first.file, first.pointer,
                "observed quantities depend on each other in a cycle: " + cycle);
  }
  return out;
}

template <class Variables>  // std::vector<FlatVariable> or StateList
std::string resolve_override(const Variables& vars, const std::string& key, const std::string& what,
                             const std::string& file) {
  for (const auto& v : vars)
    if (v.name == key) return key;
  std::vector<std::string> hits;
  for (const auto& v : vars)
    if (v.name.size() > key.size() && v.name.compare(v.name.size() - key.size(), key.size(), key) == 0 &&
        v.name[v.name.size() - key.size() - 1] == '.')
      hits.push_back(v.name);
  if (hits.empty())
    throw Error("unknown_override", file, "", what + " '" + key + "' names no " + what + " of the system");
  if (hits.size() > 1) {
    std::string list;
    for (const auto& h : hits) list += (list.empty() ? "" : ", ") + h;
    throw Error("ambiguous_override", file, "", what + " '" + key + "' matches several: " + list);
  }
  return hits[0];
}

/// The array `key` names (flat or unique local name), or nullptr.
const System::Array* find_array(const System& sys, const std::string& key, const std::string& file) {
  const System::Array* hit = nullptr;
  for (const auto& a : sys.arrays) {
    if (a.name == key) return &a;
    if (a.name.size() > key.size() && a.name.compare(a.name.size() - key.size(), key.size(), key) == 0 &&
        a.name[a.name.size() - key.size() - 1] == '.') {
      if (hit)
        throw Error("ambiguous_override", file, "", "'" + key + "' matches several arrays: " + hit->name +
                                                        ", " + a.name);
      hit = &a;
    }
  }
  return hit;
}


/// Sets one variable (a scalar, or every cell of an array) from a caller-supplied value.
void apply_inputs(System& sys, const FlattenOptions& options, const std::string& file) {
  json all = options.inputs.is_object() ? options.inputs : json::object();
  for (const auto& [k, v] : options.parameter_overrides) all[k] = v;
  for (const auto& [k, v] : options.initial_conditions) all[k] = v;
  // Built on first use: a grid's state arrays are found by position, and a 72 x 46 x 72 grid
  // has millions of cell names.
  // Values: a parameter's index, or a state's index + parameters.size(). Indices, not
  // pointers: writing a cell of a lazy state run stores its entries (StateList).
  std::unordered_map<std::string, std::size_t> by_name;
  auto lookup = [&](const std::string& name) {
    if (by_name.empty()) {
      for (std::size_t i = 0; i < sys.parameters.size(); ++i)
        by_name.emplace(sys.parameters[i].name, i);
      std::unordered_set<std::string> by_position;  // per-region state arrays: cells by position
      for (const auto& a : sys.arrays)
        if (a.first_state >= 0) by_position.insert(a.name);
      sys.states.for_each_stored([&](std::size_t i, const FlatVariable& v) {
        if (v.array.empty() || !by_position.count(v.array))
          by_name.emplace(v.name, sys.parameters.size() + i);
      });
    }
    return by_name.find(name);
  };
  auto variable = [&](std::size_t at) -> FlatVariable& {
    return at < sys.parameters.size() ? sys.parameters[at]
                                      : sys.states.mutable_entry(at - sys.parameters.size());
  };
  for (auto it = all.begin(); it != all.end(); ++it) {
    const std::string& key = it.key();
    // Errors about a value from an inputs file point at it there.
    const bool from_file = options.inputs.contains(key) && !options.inputs_file.empty();
    const std::string where = from_file ? options.inputs_file : file;
    const std::string at = from_file ? pointer_join("", key) : "";
    const System::Array* a = find_array(sys, key, file);
    if (!a) {
      if (!it->is_number())
        throw Error("input_shape_mismatch", where, at,
                    "input '" + key + "' is not an array of the system, so its value must be one number");
      if (!options.inputs.contains(key)) continue;  // plain overrides are resolved below
      auto v = lookup(key);
      if (v == by_name.end()) {
        const std::string name = resolve_override(sys.parameters, key, "parameter", file);
        v = lookup(name);
      }
      FlatVariable& var = variable(v->second);
      var.default_value = it->get<double>();
      var.initial = expr::kNoNode;
      continue;
    }
    std::int64_t cells = 1;
    for (auto e : a->extents) cells *= e;
    // Per-region form: a parameter array keeps its values itself, an observed one takes none.
    System::Array* dense = nullptr;
    if (!sys.grid.empty() && a->first_state < 0) {
      if (!a->parameter)
        throw Error("unknown_override", where, at,
                    "'" + a->name + "' is defined by an equation; only parameters and states take inputs");
      dense = const_cast<System::Array*>(a);
    }
    std::vector<std::int64_t> cell(a->extents.size(), 1);
    for (std::int64_t n = 0; n < cells; ++n) {
      const json* value = &*it;
      if (!value->is_number())
        for (std::size_t d = 0; d < cell.size(); ++d) {
          if (!value->is_array() || value->size() != static_cast<std::size_t>(a->extents[d]))
            throw Error("input_shape_mismatch", where, at,
                        "input '" + key + "' must be one number or a nested array of shape " +
                            json(a->extents).dump() + " (axes " + json(a->axes).dump() + ")");
          value = &(*value)[static_cast<std::size_t>(cell[d] - 1)];
        }
      if (!value->is_number() || !std::isfinite(value->get<double>()))
        throw Error("input_shape_mismatch", where, at,
                    "input '" + key + "' holds " + value->dump() + " at " + cell_name("", cell) +
                        " where a finite number is expected");
      if (dense) {
        dense->values[static_cast<std::size_t>(n)] = value->get<double>();
        for (std::size_t d = 0; d < cell.size() && ++cell[d] > a->extents[d]; ++d) cell[d] = 1;
        continue;
      }
      FlatVariable* var = nullptr;
      if (a->first_state >= 0) {  // contiguous, first index fastest, as this loop counts
        var = &sys.states.mutable_entry(static_cast<std::size_t>(a->first_state + n));
      } else if (auto v = lookup(cell_name(a->name, cell)); v != by_name.end()) {
        var = &variable(v->second);
      }
      if (var) {
        var->default_value = value->get<double>();
        var->initial = expr::kNoNode;
      } else if (!a->parameter) {  // a parameter cell no equation reads is simply not there
        throw Error("unknown_override", where, at,
                    "'" + a->name + "' is defined by an equation; only parameters and states take inputs");
      }
      for (std::size_t d = 0; d < cell.size() && ++cell[d] > a->extents[d]; ++d) cell[d] = 1;
    }
  }
}

}  // namespace

// A model's and a reaction system's events alike (the schema allows both), tagged with
// where they were written; exec parses them against their component.
void add_events(FlattenState& st, std::size_t c) {
  const Component& comp = st.components[c];
  const json& m = *comp.node;
  for (const char* key : {"continuous_events", "discrete_events"})
    if (auto ev = m.find(key); ev != m.end() && ev->is_array())
      for (std::size_t i = 0; i < ev->size(); ++i) {
        json e = (*ev)[i];
        e["$component"] = comp.path;
        e["$kind"] = key;
        e["$pointer"] = pointer_join(pointer_join(comp.pointer, key), i);
        st.sys.events.push_back(std::move(e));
      }
}

}  // namespace detail

namespace {
System flatten_unchecked(const ResolvedDocument& doc, const FlattenOptions& options);
}

System flatten(const ResolvedDocument& doc, const FlattenOptions& options) {
  try {
    return flatten_unchecked(doc, options);
  } catch (const nlohmann::json::exception&) {
    // Only a schema-invalid document gets here (a field of the wrong JSON type); the library's
    // own text would mean nothing to a modeller.
    throw Error("invalid_document", doc.file, "",
                "the document does not have the shape the format requires (run 'esi validate' "
                "for located errors)");
  }
}

namespace {

/// Later stages (differentiation, simplification, the oracle, kernel lowering) walk expressions
/// recursively, and the Jacobian substitutes observeds into right-hand sides. So the depth an
/// expression reaches once every observed it reads is substituted is bounded here, with a
/// located error, instead of by the C++ stack: a chain of 10^4 observeds, each one more than
/// the last, is refused, not a crash. Depths are computed over the DAG with an explicit stack,
/// each node once, observeds in dependency order.
void check_substituted_depth(const System& sys) {
  const expr::Pool& pool = sys.pool;
  std::unordered_map<expr::StrId, std::size_t> observed_depth;
  std::vector<std::size_t> depth(pool.size(), 0);  // 0 = not computed yet
  auto depth_of = [&](expr::NodeId root) {
    std::vector<std::pair<expr::NodeId, bool>> stack{{root, false}};
    while (!stack.empty()) {
      auto [id, expanded] = stack.back();
      stack.pop_back();
      if (depth[id] != 0) continue;
      const auto kids = pool.children(id);
      if (!expanded) {
        stack.push_back({id, true});
        for (expr::NodeId k : kids)
          if (depth[k] == 0) stack.push_back({k, false});
        continue;
      }
      std::size_t d = 1;
      const expr::Node& n = pool.node(id);
      if (n.op == expr::Op::Symbol)
        if (auto o = observed_depth.find(n.name); o != observed_depth.end()) d = o->second;
      for (expr::NodeId k : kids) d = std::max(d, depth[k] + 1);
      depth[id] = d;
    }
    return depth[root];
  };
  auto check = [&](const FlatVariable& v, expr::NodeId rhs) {
    const std::size_t d = depth_of(rhs);
    if (d > kMaxExpressionDepth)
      throw Error("nesting_too_deep", v.file, v.pointer,
                  "'" + v.name + "' is defined by an expression that nests " + std::to_string(d) +
                      " levels deep once the observed quantities it reads are substituted (the "
                      "limit is " + std::to_string(kMaxExpressionDepth) +
                      "); a chain of definitions this long is refused rather than risk the "
                      "stack");
    return d;
  };
  for (std::size_t i = 0; i < sys.observed.size(); ++i)
    observed_depth[pool.find_string(sys.observed[i].name)] = check(sys.observed[i], sys.observed_rhs[i]);
  for (std::size_t i = 0; i < sys.states.size(); ++i)
    if (sys.state_rhs[i] != expr::kNoNode) check(sys.states[i], sys.state_rhs[i]);
  for (const auto& g : sys.grid)
    for (const auto& r : g.regions)
      for (expr::NodeId e : r.rhs) {
        const std::size_t d = depth_of(e);
        if (d > kMaxExpressionDepth)
          throw Error("nesting_too_deep", g.file, g.pointer,
                      "an array equation of '" + g.targets[0] + "' nests " + std::to_string(d) +
                          " levels deep once the observed quantities it reads are substituted");
      }
}

}  // namespace

/// An unknown whose only equation is its `ic` is held at that initial value: D(x) = 0. The
/// spec states an unknown's behaviour by its equations alone (§6.3) and gives no other meaning
/// to `ic(x) ~ v` for an x nothing else defines; the structural balance already credits such
/// an `ic` (structural_balance.cpp), and documents rely on it (valid/wildfire_atmosphere_ocean:
/// "u_ocean stays 0"). An unknown an observed, an implicit equation or a coupling defines keeps
/// its `ic_of_non_state` refusal: there the `ic` contradicts, or guesses for, that definition.
void hold_unknowns_given_only_an_initial_value(detail::FlattenState& st) {
  std::set<std::string> in_implicit;
  for (const auto& eq : st.algebraic_eqs) {
    detail::free_symbols(st.sys.pool, eq.lhs, in_implicit);
    detail::free_symbols(st.sys.pool, eq.rhs, in_implicit);
  }
  for (const auto& [x, eq] : st.initial_eqs) {
    auto d = st.declared.find(x);
    if (d == st.declared.end() || !d->second.unknown || d->second.species) continue;
    if (st.tendencies.count(x) || st.observed_eqs.count(x) || in_implicit.count(x) ||
        st.replacements.count(x) || st.removed_parameters.count(x))
      continue;
    st.tendency_order.push_back(x);
    st.tendencies[x].push_back({st.sys.pool.number(0.0, true), d->second.component, eq.file, eq.pointer});
  }
}

namespace {
System flatten_unchecked(const ResolvedDocument& doc, const FlattenOptions& options) {
  using namespace detail;
  System sys;
  FlattenState st(doc, sys);
  if (doc.library_only)
    throw Error("no_components", doc.file, "",
                "the document holds no model or reaction system to flatten (it is a library or "
                "data-source catalog)");
  collect_components(st, options.component);
  for (std::size_t c = 0; c < st.components.size(); ++c) {
    sys.components.push_back(st.components[c].path);
    if (st.components[c].reaction_system) add_reaction_system_declarations(st, c);
    else add_model_declarations(st, c);
  }
  for (std::size_t c = 0; c < st.components.size(); ++c) {
    if (st.components[c].reaction_system) add_reactions(st, c);
    else add_model(st, c);
  }
  for (const auto& extra : options.extra_arrays) add_extra_array(st, extra);
  if (options.component.empty()) apply_coupling(st);
  hold_unknowns_given_only_an_initial_value(st);
  st.grid = options.grid;
  st.inputs = &options.inputs;
  expand_arrays(st);

  // Substitute variable_map bindings everywhere (they may chain: apply to a fixpoint).
  std::unordered_map<expr::StrId, expr::NodeId> map;
  for (const auto& [name, value] : st.replacements) map[sys.pool.intern(name)] = value;
  // memo[x] is x with the bindings applied once, whichever equation x sits in: one memo serves
  // every call (gridded systems have 10^5 equations sharing subtrees).
  std::unordered_map<expr::NodeId, expr::NodeId> subst_memo;
  auto subst = [&](expr::NodeId e) {
    if (map.empty() || e == expr::kNoNode) return e;
    for (int pass = 0; pass < 16; ++pass) {
      std::unordered_map<expr::NodeId, expr::NodeId>& memo = subst_memo;
      const expr::NodeId next = substitute(sys.pool, e, map, memo);
      if (next == e) return e;
      e = next;
    }
    throw Error("circular_dependency", doc.file, "/coupling", "variable_map bindings form a cycle");
  };

  // States: every D(x, t) target.
  for (const auto& x : st.tendency_order) {
    auto d = st.declared.find(x);
    const auto& list = st.tendencies[x];
    if (list.empty()) continue;
    if (d == st.declared.end())
      throw Error("undefined_variable", list[0].file, list[0].pointer, "'" + x + "' is not declared");
    if (!d->second.unknown)
      throw Error("derivative_of_parameter", list[0].file, list[0].pointer,
                  "'" + x + "' is a parameter but has a time-derivative equation; declare it as an unknown");
    if (st.observed_eqs.count(x))
      throw Error("conflicting_equations", list[0].file, list[0].pointer,
                  "'" + x + "' has both a time-derivative equation and a defining equation");
    std::vector<expr::NodeId> parts;
    for (const auto& t : list) parts.push_back(t.rhs);
    const expr::NodeId rhs = parts.size() == 1 ? parts[0] : sys.pool.make(expr::Op::Add, parts);
    FlatVariable v = d->second.var;
    if (auto ic = st.initial_eqs.find(x); ic != st.initial_eqs.end()) v.initial = subst(ic->second.rhs);
    else v.initial = subst(v.initial);
    sys.states.push_back(std::move(v));
    sys.state_rhs.push_back(subst(rhs));
    std::vector<std::string> sources;
    for (const auto& t : list) sources.push_back(st.components[t.component].path);
    sys.state_sources.push_back(std::move(sources));
  }
  // Name lookups below go through hash sets: documents of 10^5 equations must flatten in
  // linear time (System::state_index is a linear scan).
  std::unordered_set<std::string> state_names;
  for (const auto& v : sys.states) state_names.insert(v.name);
  for (const auto& [x, eq] : st.initial_eqs)
    if (!state_names.count(x))
      throw Error("ic_of_non_state", eq.file, eq.pointer,
                  "ic(" + x + ") is given but '" + x + "' has no time-derivative equation (it is "
                  "defined by an observed, implicit or coupling equation, or is not an unknown)");

  for (const auto& y : order_observed(st)) {
    auto d = st.declared.find(y);
    const FlatEquation& eq = st.observed_eqs[y];
    if (d == st.declared.end())
      throw Error("undefined_variable", eq.file, eq.pointer, "'" + y + "' is not declared");
    if (!d->second.unknown && !st.removed_parameters.count(y))
      throw Error("equation_for_parameter", eq.file, eq.pointer,
                  "'" + y + "' is a parameter but has a defining equation; declare it as an unknown");
    sys.observed.push_back(d->second.var);
    sys.observed_rhs.push_back(subst(eq.rhs));
  }
  // Re-order after substitution (a variable_map may introduce new dependencies).
  {
    std::vector<std::string> names;
    for (const auto& v : sys.observed) names.push_back(v.name);
    st.observed_order = names;
    for (std::size_t i = 0; i < names.size(); ++i) st.observed_eqs[names[i]].rhs = sys.observed_rhs[i];
    const auto ordered = order_observed(st);
    std::unordered_map<std::string, std::size_t> position;
    for (std::size_t i = 0; i < names.size(); ++i) position.emplace(names[i], i);
    std::vector<FlatVariable> vars;
    std::vector<expr::NodeId> rhs;
    for (const auto& n : ordered) {
      const std::size_t i = position.at(n);
      vars.push_back(sys.observed[i]);
      rhs.push_back(sys.observed_rhs[i]);
    }
    sys.observed = std::move(vars);
    sys.observed_rhs = std::move(rhs);
  }

  // Algebraic unknowns: declared unknowns with neither kind of defining equation.
  std::unordered_set<std::string> observed_names;
  for (const auto& v : sys.observed) observed_names.insert(v.name);
  for (const auto& name : st.declaration_order) {
    const Declared& d = st.declared[name];
    if (d.grid_cell) {  // a state array whose derivative is a region program (System::grid)
      System::Array* a = nullptr;
      for (auto& arr : sys.arrays)
        if (arr.name == name) a = &arr;
      a->first_state = static_cast<std::int64_t>(sys.states.size());
      // One lazy run: no entry per cell is made unless something reads one (StateList).
      FlatVariable cell_var = d.var;
      cell_var.shape.clear();
      cell_var.description.clear();  // kept once, on System::Array
      sys.states.append_cells(std::move(cell_var), name, a->extents);
      sys.state_rhs.resize(sys.states.size(), expr::kNoNode);
      continue;  // state_sources stays short: a cell's entry would be empty
    }
    if (d.unknown) {
      if (state_names.count(name) || observed_names.count(name)) continue;
      if (st.removed_parameters.count(name)) continue;  // bound by a variable_map
      if (d.species) {
        sys.states.push_back(d.var);  // a species no reaction touches keeps its value
        sys.state_rhs.push_back(sys.pool.number(0.0, true));
        sys.state_sources.resize(sys.states.size());
        continue;
      }
      sys.algebraic.push_back(d.var);
    } else if (!st.removed_parameters.count(name)) {
      sys.parameters.push_back(d.var);
    }
  }
  for (auto& eq : st.algebraic_eqs) {
    eq.lhs = subst(eq.lhs);
    eq.rhs = subst(eq.rhs);
    sys.algebraic_equations.push_back(eq);
  }
  if (sys.algebraic.size() != sys.algebraic_equations.size()) {
    std::string names;
    for (const auto& a : sys.algebraic) names += (names.empty() ? "" : ", ") + a.name;
    const std::string where = sys.algebraic.empty() ? sys.algebraic_equations[0].file : sys.algebraic[0].file;
    const std::string ptr = sys.algebraic.empty() ? sys.algebraic_equations[0].pointer : sys.algebraic[0].pointer;
    throw Error("equation_count_mismatch", where, ptr,
                std::to_string(sys.algebraic.size()) + " unknown(s) without a defining equation (" +
                    (names.empty() ? std::string("none") : names) + ") but " +
                    std::to_string(sys.algebraic_equations.size()) + " implicit equation(s)");
  }

  for (auto& v : sys.observed) v.initial = subst(v.initial);
  for (auto& g : sys.grid)
    for (auto& r : g.regions)
      for (auto& e : r.rhs) e = subst(e);
  // Overrides by flat name or unique local name.
  apply_inputs(sys, options, doc.file);
  for (const auto& [key, value] : options.parameter_overrides) {
    if (esm::names_array(sys, key)) continue;  // applied cell by cell by apply_inputs
    const std::string name = resolve_override(sys.parameters, key, "parameter", doc.file);
    sys.parameters[sys.parameter_index(name)].default_value = value;
  }
  for (const auto& [key, value] : options.initial_conditions) {
    if (esm::names_array(sys, key)) continue;
    const std::string name = resolve_override(sys.states, key, "state", doc.file);
    auto& v = sys.states.mutable_entry(static_cast<std::size_t>(sys.state_index(name)));
    v.default_value = value;
    v.initial = expr::kNoNode;
  }
  sys.index_sets = doc.index_set_sizes;
  for (const auto& [name, set] : st.derived) sys.index_sets[name] = set.size;
  check_substituted_depth(sys);
  return sys;
}
}  // namespace

bool names_array(const System& system, const std::string& key) {
  return detail::find_array(system, key, "") != nullptr;
}

int System::state_index(const std::string& name) const {
  return static_cast<int>(states.find(name));
}
int System::observed_index(const std::string& name) const {
  for (std::size_t i = 0; i < observed.size(); ++i)
    if (observed[i].name == name) return static_cast<int>(i);
  return -1;
}
int System::parameter_index(const std::string& name) const {
  for (std::size_t i = 0; i < parameters.size(); ++i)
    if (parameters[i].name == name) return static_cast<int>(i);
  return -1;
}

}  // namespace esi::esm
