// The value of an expression at one cell: symbols aligned by index-set name, literal arrays,
// gathers (static, or selected while the model runs) and makearray regions (§4.3.2, §4.3.3).
#include <algorithm>
#include <functional>
#include <limits>

#include "esi/expr/parse.hpp"
#include "esm/arrays/expander.hpp"

namespace esi::esm::detail::arrays {

namespace {

std::string list_json(const std::vector<std::string>& v) { return json(v).dump(); }

}  // namespace

NodeId Expander::eval(NodeId e, const Frame& f) {
  if (!needs_cells(e)) return e;  // the same at every cell: nothing to walk
  const auto key = std::make_pair(e, context_);
  if (auto m = memo_.find(key); m != memo_.end()) return m->second;
  const NodeId r = eval_uncached(e, f);
  memo_.emplace(key, r);
  return r;
}

NodeId Expander::eval_uncached(NodeId e, const Frame& f) {
  const expr::Node n = pool_.node(e);
  switch (n.op) {
    case Op::Number:
      return e;
    case Op::Symbol: {
      const std::string_view s = pool_.str(n.name);
      if (s.starts_with("$")) {
        if (auto v = bound(n.name)) {
          if (v->axis < 0) return pool_.number(static_cast<double>(v->v), true);
          // An index used as a number in a region program: the cell's own position.
          return pool_.symbol(relative_name("$index", {*v}));
        }
        if (coordinates_)
          if (const NodeId c = coordinate(s.substr(1), f); c != expr::kNoNode) return c;
        fail("array_index_unbound", "index symbol '" + std::string(s.substr(1)) +
                                        "' is used outside the aggregate that binds it");
      }
      if (const ArrayShape* a = array_of(e)) return symbol_cell(e, *a, f);
      return e;
    }
    case Op::Const: {
      const json v = attrs(e).value("value", json());
      if (v.is_number()) return pool_.number(v.get<double>(), v.is_number_integer());
      if (f.scalar())
        fail("array_used_as_scalar", "a literal array is used where one value is expected");
      return const_cell(v, f.pos, "literal array");
    }
    case Op::Index:
      return gather(e, f);
    case Op::MakeArray:
      return makearray_cell(e, f);
    case Op::Transpose:
      return transpose_cell(e, f);
    case Op::Reshape:
      return reshape_cell(e, f);
    case Op::Concat:
      return concat_cell(e, f);
    case Op::Aggregate:
      return aggregate_cell(e, f);
    case Op::Argmin: case Op::Argmax:
      return argmin_cell(e, n.op == Op::Argmax);
    case Op::PolygonIntersectionArea:
      return polygon_intersection_area(e);
    case Op::Skolem:
      return skolem_value(e);
    case Op::Rank:
      return rank_value(e);
    case Op::IntersectPolygon:
      return ring_cell(e, f);
    case Op::Broadcast: {
      const json& attrs = this->attrs(e);
      const Op fn = expr::op_from_name(attrs.value("fn", std::string()));
      std::vector<NodeId> kids;
      for (NodeId k : args_of(e)) kids.push_back(eval(k, f));
      if (fn == Op::Sub && kids.size() == 1) return pool_.make(Op::Neg, kids);
      if ((fn == Op::Add || fn == Op::Mul) && kids.size() == 1) return kids[0];
      return pool_.make(fn, kids);
    }
    case Op::D:
      if (n.name != 0 && pool_.str(n.name) != "t")
        fail("unlowered_operator", "spatial derivative D(..., wrt=" + std::string(pool_.str(n.name)) +
                                       ") has no rewrite rule that lowers it");
      [[fallthrough]];
    default: {
      if (n.op == Op::Other)
        fail("unlowered_operator", "operator '" + std::string(pool_.str(n.name)) +
                                       "' has no evaluator and no rewrite rule lowered it");
      std::vector<NodeId> kids(pool_.children(e).begin(), pool_.children(e).end());
      bool changed = false;
      for (auto& k : kids) {
        if (n.op == Op::Fn && pool_.node(k).op == Op::Const) continue;  // closed-function tables
        const NodeId v = eval(k, f);
        changed |= v != k;
        k = v;
      }
      return changed ? pool_.make(n.op, kids, n.arg_count, n.name, n.attrs) : e;
    }
  }
}

NodeId Expander::coordinate(std::string_view name, const Frame& f) {
  const ArrayShape& cells = *coordinates_;
  std::size_t axis = cells.axes.size();
  for (std::size_t d = 0; d < cells.axes.size(); ++d)
    if (cells.axes[d] == name) axis = d;
  if (axis == cells.axes.size()) {
    const std::size_t by_role = name == "x" || name == "lon" ? 0 : name == "y" || name == "lat" ? 1
                                : name == "z" || name == "lev"                          ? 2
                                                                                        : cells.axes.size();
    axis = by_role;
  }
  if (axis >= cells.axes.size() || axis >= f.pos.size()) return expr::kNoNode;
  const Ix at = f.pos[axis];
  const std::int64_t n = cells.extents[axis];
  // The registry is read in place: this runs once per cell.
  if (const auto registry = st_.doc.doc.find("coordinates"); registry != st_.doc.doc.end() && registry->is_object())
    if (const auto entry = registry->find(std::string(name)); entry != registry->end() && entry->is_object())
      if (const auto values = entry->find("values");
          values != entry->end() && values->is_array() && static_cast<std::int64_t>(values->size()) == n) {
        if (relative_ && at.axis >= 0) throw NotRelative{"a coordinate read from the coordinates registry"};
        return const_cell(*values, {at}, "coordinate");
      }
  if (n <= 1) return pool_.number(0.0);
  const NodeId denominator = pool_.number(static_cast<double>(n - 1));
  if (at.axis < 0) return pool_.number(static_cast<double>(at.v - 1) / static_cast<double>(n - 1));
  // A region program: the cell's own position, the same arithmetic while it runs.
  const NodeId position = pool_.symbol(relative_name("$index", {at}));
  return pool_.make(Op::Div, std::vector<NodeId>{pool_.make(Op::Sub, std::vector<NodeId>{position, pool_.number(1.0, true)}), denominator});
}

NodeId Expander::symbol_cell(NodeId sym, const ArrayShape& a, const Frame& f) {
  ready(a);
  const std::string name = name_of(sym);
  if (f.scalar())
    fail("array_used_as_scalar", "'" + name + "' is an array over " + list_json(a.axes) +
                                     " but is used where one value is expected; index it or "
                                     "aggregate over it");
  std::vector<Ix> cell;
  if (!f.axes.empty()) {
    for (const auto& axis : a.axes) {
      auto it = std::find(f.axes.begin(), f.axes.end(), axis);
      if (it == f.axes.end())
        fail("array_shape_mismatch", "'" + name + "' is an array over " + list_json(a.axes) +
                                         ", which does not align with a result over " +
                                         list_json(f.axes) + " (axis '" + axis +
                                         "' is not among the result's)");
      cell.push_back(f.pos[static_cast<std::size_t>(it - f.axes.begin())]);
    }
  } else {
    if (a.axes.size() > f.pos.size())
      fail("array_shape_mismatch", "'" + name + "' has " + std::to_string(a.axes.size()) +
                                       " axes but is used in a value with " +
                                       std::to_string(f.pos.size()));
    for (std::size_t d = 0; d < a.axes.size(); ++d) cell.push_back(f.pos[d]);
  }
  for (std::size_t d = 0; d < cell.size(); ++d)
    if (!test(cell[d], Op::Ge, 1) || !test(cell[d], Op::Le, a.extents[d]))
      fail("array_shape_mismatch", "'" + name + "' has " + std::to_string(a.extents[d]) +
                                       " entries along '" + a.axes[d] + "' but is read at " +
                                       std::to_string(cell[d].v));
  return cell_symbol(name, cell);
}

NodeId Expander::const_cell(const json& value, const std::vector<Ix>& pos, const char* what) {
  const json* v = &value;
  for (std::size_t d = 0; d < pos.size(); ++d) {
    if (relative_ && pos[d].axis >= 0)
      throw NotRelative{std::string("a ") + what + " read at a cell-dependent position"};
    if (!v->is_array() || pos[d].v < 1 || pos[d].v > static_cast<std::int64_t>(v->size()))
      fail("const_array_out_of_range",
           std::string("the ") + what + " is read at index " + std::to_string(pos[d].v) +
               " along axis " + std::to_string(d + 1) + ", outside its " +
               std::to_string(v->is_array() ? v->size() : 0) +
               " entries (constant data has no out-of-range value)");
    v = &(*v)[static_cast<std::size_t>(pos[d].v - 1)];
  }
  if (!v->is_number())
    fail("array_shape_mismatch", std::string("the ") + what + " has more axes than indices given");
  return pool_.number(v->get<double>(), v->is_number_integer());
}

NodeId Expander::gather(NodeId e, const Frame& f) {
  const std::vector<NodeId> args = args_of(e);
  if (args.empty()) fail("invalid_index", "'index' needs an array operand");
  const NodeId src = args[0];
  if (const ArrayShape* a = array_of(src)) ready(*a);
  std::vector<Ix> idx;
  std::vector<NodeId> runtime(args.size() - 1, expr::kNoNode);  // per index: read while running
  bool any_runtime = false;
  for (std::size_t i = 1; i < args.size(); ++i) {
    if (!array_of(src)) {
      idx.push_back(static_int(args[i], "an index"));
      continue;
    }
    ++runtime_probe_;
    try {
      idx.push_back(static_int(args[i], "an index"));
      --runtime_probe_;
    } catch (const RuntimeIndex&) {
      --runtime_probe_;
      if (relative_) throw NotRelative{"a gather at a position known only while the model runs"};
      idx.push_back(Ix{1, -1});
      runtime[i - 1] = eval(args[i], Frame{});
      any_runtime = true;
    } catch (...) {
      --runtime_probe_;
      throw;
    }
  }
  if (any_runtime) return runtime_gather(name_of(src), *array_of(src), idx, runtime);
  const expr::Node& sn = pool_.node(src);
  if (sn.op == Op::Const)
    return const_cell(attrs(src).value("value", json()), idx, "literal array");
  if (const ArrayShape* a = array_of(src)) {
    const std::string name = name_of(src);
    if (idx.size() != a->axes.size())
      fail("array_shape_mismatch", "'" + name + "' has " + std::to_string(a->axes.size()) +
                                       " axes but is indexed with " + std::to_string(idx.size()) +
                                       " indices");
    for (std::size_t d = 0; d < idx.size(); ++d)
      if (!test(idx[d], Op::Ge, 1) || !test(idx[d], Op::Le, a->extents[d]))
        return out_of_range(name, *a, idx, d);
    return cell_symbol(name, idx);
  }
  if (sn.op == Op::Symbol) {
    // Literal array data given as a parameter's default has no name-level shape here.
    fail("array_shape_mismatch", "'" + pretty(src) + "' is indexed but is not an array");
  }
  (void)f;
  // An array-valued expression (an elementwise product, an aggregate): its value at idx.
  return in_context([&] { return eval(src, Frame{{}, idx}); });
}

NodeId Expander::runtime_gather(const std::string& name, const ArrayShape& a, std::vector<Ix> idx,
                      const std::vector<NodeId>& runtime) {
  if (idx.size() != a.axes.size())
    fail("array_shape_mismatch", "'" + name + "' has " + std::to_string(a.axes.size()) +
                                     " axes but is indexed with " + std::to_string(idx.size()) +
                                     " indices");
  std::int64_t candidates = 1;
  for (std::size_t d = 0; d < idx.size(); ++d) {
    if (runtime[d] != expr::kNoNode) {
      candidates *= std::max<std::int64_t>(a.extents[d], 1);
      continue;
    }
    if (idx[d].v < 1 || idx[d].v > a.extents[d]) return out_of_range(name, a, idx, d);
  }
  if (candidates > 4096)
    fail("unsupported_array_feature",
         "a gather from '" + name + "' at positions known only while the model runs would "
         "compare against " + std::to_string(candidates) + " cells; at most 4096 are supported");
  auto decl = st_.declared.find(name);
  const bool unknown = decl == st_.declared.end() || decl->second.unknown;
  const NodeId fallback = unknown ? pool_.number(0.0, true)
                                  : pool_.number(std::numeric_limits<double>::quiet_NaN(), false);
  std::function<NodeId(std::size_t)> select = [&](std::size_t d) -> NodeId {
    if (d == idx.size()) return cell_symbol(name, idx);
    if (runtime[d] == expr::kNoNode) return select(d + 1);
    NodeId out = fallback;
    for (std::int64_t c = a.extents[d]; c >= 1; --c) {
      idx[d] = Ix{c, -1};
      const NodeId hit = select(d + 1);
      const NodeId test = pool_.make(Op::Eq, std::vector<NodeId>{runtime[d], pool_.number(static_cast<double>(c), true)});
      out = pool_.make(Op::IfElse, std::vector<NodeId>{test, hit, out});
    }
    return out;
  };
  return select(0);
}

NodeId Expander::out_of_range(const std::string& name, const ArrayShape& a, const std::vector<Ix>& idx,
                    std::size_t d) {
  auto decl = st_.declared.find(name);
  if (decl != st_.declared.end() && decl->second.unknown) return pool_.number(0.0, true);
  fail("const_array_out_of_range",
       "'" + name + "' is read at " + cell_name(name, plain(idx)).substr(name.size()) + ", outside its " +
           std::to_string(a.extents[d]) + " entries along '" + a.axes[d] +
           "' (a parameter array has no out-of-range value)");
}

// ---- makearray (§4.3.2) ----

NodeId Expander::makearray_cell(NodeId e, const Frame& f) {
  const json& attrs = this->attrs(e);
  const json regions = attrs.value("regions", json::array());
  const std::vector<NodeId> values = children_of(e);
  if (f.scalar())
    fail("array_used_as_scalar", "a 'makearray' is used where one value is expected");
  for (std::size_t r = regions.size(); r-- > 0;) {
    const json& reg = regions[r];
    if (!reg.is_array() || reg.size() != f.pos.size())
      fail("array_shape_mismatch", "makearray region " + std::to_string(r + 1) + " has " +
                                       std::to_string(reg.is_array() ? reg.size() : 0) +
                                       " dimensions but the array it builds has " +
                                       std::to_string(f.pos.size()));
    std::vector<std::int64_t> lo, hi;
    bool inside = true;
    for (std::size_t d = 0; d < reg.size(); ++d) {
      if (!reg[d].is_array() || reg[d].size() != 2)
        fail("array_shape_mismatch", "a makearray region bound must be a [start, stop] pair");
      lo.push_back(json_int(reg[d][0], "a makearray region bound"));
      hi.push_back(json_int(reg[d][1], "a makearray region bound"));
      inside = inside && test(f.pos[d], Op::Ge, lo[d]) && test(f.pos[d], Op::Le, hi[d]);
    }
    if (!inside) continue;
    if (r >= values.size()) fail("array_shape_mismatch", "makearray has fewer values than regions");
    return in_context([&] { return region_value(values[r], f, lo, hi); });
  }
  fail("array_region_uncovered",
       "no makearray region covers cell " + cell_name("", plain(f.pos)) +
           " (later regions overwrite earlier ones, but every cell needs one)");
}

NodeId Expander::region_value(NodeId value, const Frame& f, const std::vector<std::int64_t>& lo,
                    const std::vector<std::int64_t>& hi) {
  const expr::Node& vn = pool_.node(value);
  if (vn.op == Op::Aggregate) {
    const json& attrs = this->attrs(value);
    const json out = attrs.value("output_idx", json::array());
    const json ranges = attrs.value("ranges", json::object());
    if (out.size() == f.pos.size()) {
      // A `1` in output_idx is a singleton axis (the spec's row [1, i] filling one row of a
      // block): it is read at 1 wherever the region places it.
      if (std::none_of(out.begin(), out.end(), [](const json& o) { return o.is_number(); })) return eval(value, f);
      Frame at = f;
      for (std::size_t d = 0; d < out.size(); ++d)
        if (out[d].is_number()) {
          if (hi[d] != lo[d])
            fail("array_shape_mismatch", "a makearray value with a singleton axis " + std::to_string(d + 1) +
                                             " fills a region " + std::to_string(hi[d] - lo[d] + 1) + " wide there");
          at.pos[d] = Ix{1, -1};
        }
      return eval(value, at);
    }
    // Fewer output indices than the array has axes: they run along the region's axes that a
    // `from` range names, then along its non-singleton axes in order.
    std::vector<bool> used(f.pos.size(), false);
    std::vector<Ix> sub(out.size(), Ix{1, -1});
    std::vector<int> dim(out.size(), -1);
    for (std::size_t k = 0; k < out.size(); ++k) {
      if (!out[k].is_string()) continue;
      auto r = ranges.find(out[k].get<std::string>());
      if (r != ranges.end() && r->is_object() && r->contains("from") && !f.axes.empty()) {
        auto it = std::find(f.axes.begin(), f.axes.end(), (*r)["from"].get<std::string>());
        if (it != f.axes.end() && !used[it - f.axes.begin()]) {
          dim[k] = static_cast<int>(it - f.axes.begin());
          used[dim[k]] = true;
        }
      }
    }
    for (std::size_t k = 0; k < out.size(); ++k) {
      if (!out[k].is_string() || dim[k] >= 0) continue;
      for (std::size_t d = 0; d < f.pos.size(); ++d)
        if (!used[d] && hi[d] > lo[d]) {
          dim[k] = static_cast<int>(d);
          used[d] = true;
          break;
        }
      if (dim[k] < 0)
        for (std::size_t d = 0; d < f.pos.size(); ++d)
          if (!used[d]) {
            dim[k] = static_cast<int>(d);
            used[d] = true;
            break;
          }
      if (dim[k] < 0)
        fail("array_shape_mismatch", "a makearray value has more output indices than its region has axes");
    }
    for (std::size_t k = 0; k < out.size(); ++k)
      if (dim[k] >= 0) sub[k] = f.pos[dim[k]];
    return eval(value, Frame{{}, sub});
  }
  // Index symbols no aggregate binds run along the axes they index, at this cell.
  const std::size_t mark = env_.size();
  bind_implicit_indices(value, f.pos);
  struct Restore {
    std::vector<std::pair<expr::StrId, Ix>>& env;
    std::size_t mark;
    ~Restore() { env.resize(mark); }
  } restore{env_, mark};
  if (!is_array_valued(value)) return eval(value, Frame{});
  if (!f.axes.empty()) return eval(value, f);
  std::vector<Ix> rel;
  for (std::size_t d = 0; d < f.pos.size(); ++d) rel.push_back({f.pos[d].v - lo[d] + 1, f.pos[d].axis});
  return eval(value, Frame{{}, rel});
}

void Expander::bind_implicit_indices(NodeId value, const std::vector<Ix>& pos) {
  auto it = implicit_cache_.find(value);
  if (it == implicit_cache_.end()) {
    std::vector<std::pair<expr::StrId, std::size_t>> uses;
    walk(pool_, value, [&](NodeId id) {
      const expr::Node& n = pool_.node(id);
      if (n.op == Op::Aggregate) return false;  // binds its own indices
      if (n.op == Op::Index) {
        const auto args = pool_.args(id);
        for (std::size_t d = 1; d < args.size(); ++d)
          for (expr::StrId sym : symbols_of(args[d])) uses.emplace_back(sym, d - 1);
      }
      return true;
    });
    it = implicit_cache_.emplace(value, std::move(uses)).first;
  }
  for (const auto& [sym, d] : it->second)
    if (d < pos.size() && !bound(sym)) env_.emplace_back(sym, pos[d]);
}

bool Expander::is_array_valued(NodeId e) {
  const expr::Node& n = pool_.node(e);
  switch (n.op) {
    case Op::Symbol: return array_of(e) != nullptr;
    case Op::MakeArray: case Op::Transpose: case Op::Reshape: case Op::Concat: return true;
    case Op::Aggregate: {
      const json& attrs = this->attrs(e);
      return !attrs.value("output_idx", json::array()).empty();
    }
    case Op::Const: return !attrs(e).value("value", json()).is_number();
    case Op::Index: case Op::Fn: return false;
    default:
      for (NodeId k : pool_.args(e))
        if (is_array_valued(k)) return true;
      return false;
  }
}

}  // namespace esi::esm::detail::arrays
