// What array equations say about cells: the cell a left-hand side defines, and the extents of
// axes that only the equations give.
#include <algorithm>

#include "esi/expr/parse.hpp"
#include "esm/arrays/lowering.hpp"

namespace esi::esm::detail::arrays {

std::optional<OffsetIndex> offset_index(const Pool& pool, NodeId e) {
  const expr::Node& n = pool.node(e);
  const auto symbol = [&](NodeId s) -> std::optional<expr::StrId> {
    const expr::Node& m = pool.node(s);
    if (m.op != Op::Symbol || !pool.str(m.name).starts_with("$")) return std::nullopt;
    return m.name;
  };
  const auto integer = [&](NodeId s) -> std::optional<std::int64_t> {
    const expr::Node& m = pool.node(s);
    if (m.op != Op::Number || m.number != static_cast<double>(static_cast<std::int64_t>(m.number)))
      return std::nullopt;
    return static_cast<std::int64_t>(m.number);
  };
  if (auto s = symbol(e)) return OffsetIndex{*s, 0};
  const auto args = pool.args(e);
  if (args.size() != 2 || (n.op != Op::Add && n.op != Op::Sub)) return std::nullopt;
  if (auto s = symbol(args[0]))
    if (auto c = integer(args[1])) return OffsetIndex{*s, n.op == Op::Add ? *c : -*c};
  if (n.op == Op::Add)
    if (auto s = symbol(args[1]))
      if (auto c = integer(args[0])) return OffsetIndex{*s, *c};
  return std::nullopt;
}

std::optional<LhsCell> lhs_cell(Pool& pool, NodeId lhs, const ArrayShape& target,
                                const std::vector<Ix>& cell, const std::string& file,
                                const std::string& pointer, Expander& ex) {
  const bool aggregate = pool.node(lhs).op == Op::Aggregate;
  const json attrs = aggregate ? expr::attrs_json(pool, lhs) : json::object();
  const json out = attrs.value("output_idx", json::array());
  const json ranges = attrs.value("ranges", json::object());
  NodeId ix = lhs;  // index(D(x), i, j) or index(y, i, j)
  if (aggregate) {  // its body: D(index(x, i, j)) or index(y, i, j)
    const NodeId body = pool.children(lhs)[attrs["expr"]["$child"].get<std::size_t>()];
    ix = pool.node(body).op == Op::D ? pool.args(body)[0] : body;
  }
  const auto idx = pool.args(ix);
  if (idx.size() != cell.size() + 1)
    throw Error("array_shape_mismatch", file, pointer,
                "the left-hand side gives " + std::to_string(idx.size() - 1) + " indices to an array of " +
                    std::to_string(cell.size()) + " axes");
  LhsCell lc;
  if (aggregate) lc.frame.pos.assign(out.size(), Ix{1, -1});
  else lc.frame = Frame{target.axes, cell};
  for (std::size_t d = 0; d < cell.size(); ++d) {
    const expr::Node& in = pool.node(idx[d + 1]);
    if (in.op == Op::Number) {
      if (!ex.test(SVal{static_cast<double>(cell[d].v), cell[d].axis}, Op::Eq, SVal{in.number, -1}))
        return std::nullopt;
      continue;
    }
    const std::optional<OffsetIndex> oi = offset_index(pool, idx[d + 1]);
    if (!oi)
      throw Error("invalid_equation", file, pointer,
                  "each index on a left-hand side must be an integer, an index symbol or an index "
                  "symbol plus or minus an integer (i + 1)");
    const std::string plain = std::string(pool.str(oi->symbol)).substr(1);
    // The cell at i + c binds i to the cell's position minus c.
    const Ix bound{cell[d].v - oi->offset, cell[d].axis};
    lc.bindings.emplace_back(oi->symbol, bound);
    if (!aggregate) continue;
    auto it = std::find(out.begin(), out.end(), json(plain));
    if (it == out.end())
      throw Error("invalid_equation", file, pointer,
                  "index '" + plain + "' on the left-hand side is not one of the aggregate's output indices");
    lc.frame.pos[static_cast<std::size_t>(it - out.begin())] = bound;
    if (auto r = ranges.find(plain); r != ranges.end() && r->is_array() && r->size() == 2 &&
                                     r->at(0).is_number_integer() && r->at(1).is_number_integer() &&
                                     !(ex.test(bound, Op::Ge, r->at(0).get<std::int64_t>()) &&
                                       ex.test(bound, Op::Le, r->at(1).get<std::int64_t>())))
      return std::nullopt;
  }
  return lc;
}

void note_cell_piece(std::map<std::size_t, const Tendency*>& seen, const Tendency& t, const std::string& cell) {
  if (const auto [it, first] = seen.emplace(t.component, &t); !first)
    throw Error("array_cell_defined_twice", t.file, t.pointer,
                "this equation defines the time derivative of " + cell + ", which " + it->second->pointer +
                    " already defines; each cell needs exactly one");
}

namespace {

/// The stop of range `r` (or the size of its `from` index set); nullopt when not literal.
std::optional<std::int64_t> range_stop(const FlattenState& st, const json& r) {
  if (r.is_object() && r.contains("from") && r["from"].is_string()) {
    auto s = st.doc.index_set_sizes.find(r["from"].get<std::string>());
    if (s != st.doc.index_set_sizes.end()) return s->second;
  }
  if (r.is_array() && !r.empty() && r.back().is_number_integer()) return r.back().get<std::int64_t>();
  return std::nullopt;
}

}  // namespace

void infer_extents(FlattenState& st) {
  Pool& pool = st.sys.pool;
  for (auto& [name, shape] : st.arrays) {
    for (std::size_t d = 0; d < shape.extents.size(); ++d) {
      if (shape.extents[d] >= 0) continue;
      std::int64_t extent = -1;
      auto consider = [&](std::optional<std::int64_t> v) {
        if (v) extent = std::max(extent, *v);
      };
      auto from_rhs = [&](NodeId rhs) {
        const expr::Node& n = pool.node(rhs);
        const json attrs = expr::attrs_json(pool, rhs);
        if (n.op == Op::Aggregate) {
          const json out = attrs.value("output_idx", json::array());
          const json ranges = attrs.value("ranges", json::object());
          if (d < out.size() && out[d].is_string() && ranges.contains(out[d].get<std::string>()))
            consider(range_stop(st, ranges[out[d].get<std::string>()]));
        } else if (n.op == Op::MakeArray) {
          for (const auto& reg : attrs.value("regions", json::array()))
            if (reg.is_array() && d < reg.size() && reg[d].is_array() && reg[d].size() == 2 &&
                reg[d][1].is_number_integer())
              consider(reg[d][1].get<std::int64_t>());
        }
      };
      // A left-hand side that defines cells: index(D(x), 3, ...) or index(y, 3, ...) says that
      // cell exists; an aggregate's index i or i + c over a range reaches the range's stop (+ c).
      auto from_lhs = [&](NodeId lhs) {
        const Op lop = pool.node(lhs).op;
        if (lop == Op::Index) {
          const auto idx = pool.args(lhs);
          if (d + 1 < idx.size() && pool.node(idx[d + 1]).op == Op::Number)
            consider(static_cast<std::int64_t>(pool.node(idx[d + 1]).number));
          return;
        }
        if (lop != Op::Aggregate) return;
        const json attrs = expr::attrs_json(pool, lhs);
        const NodeId body = pool.children(lhs)[attrs["expr"]["$child"].get<std::size_t>()];
        const auto idx = pool.args(pool.node(body).op == Op::D ? pool.args(body)[0] : body);
        if (d + 1 >= idx.size()) return;
        if (pool.node(idx[d + 1]).op == Op::Number) {
          consider(static_cast<std::int64_t>(pool.node(idx[d + 1]).number));
        } else if (const auto oi = offset_index(pool, idx[d + 1])) {
          const json ranges = attrs.value("ranges", json::object());
          const std::string key = std::string(pool.str(oi->symbol)).substr(1);
          if (ranges.contains(key))
            if (const auto stop = range_stop(st, ranges[key])) consider(*stop + oi->offset);
        }
      };
      if (auto t = st.tendencies.find(name); t != st.tendencies.end())
        for (const auto& tend : t->second) {
          if (tend.lhs_aggregate == expr::kNoNode) from_rhs(tend.rhs);
          else from_lhs(tend.lhs_aggregate);
        }
      if (auto o = st.observed_eqs.find(name); o != st.observed_eqs.end() && o->second.lhs != expr::kNoNode)
        from_lhs(o->second.lhs);
      if (auto p = st.observed_pieces.find(name); p != st.observed_pieces.end())
        for (const auto& eq : p->second) from_lhs(eq.lhs);
      if (auto o = st.observed_eqs.find(name); o != st.observed_eqs.end()) from_rhs(o->second.rhs);
      if (auto i = st.initial_eqs.find(name); i != st.initial_eqs.end()) from_rhs(i->second.rhs);
      if (extent < 0) {
        const Declared& decl = st.declared.at(name);
        if (shape.axes[d] == implicit_axis_name(name, d))
          throw Error("undefined_index_set", decl.var.file, decl.var.pointer,
                      "'" + name + "' is declared without a shape and no equation that defines it gives "
                      "the extent of its axis " + std::to_string(d + 1) +
                      " (an integer index, or an index over a range, on a left-hand side)");
        throw Error("undefined_index_set", decl.var.file, pointer_join(pointer_join(decl.var.pointer, "shape"), d),
                    "'" + name + "' is shaped over '" + shape.axes[d] +
                        "', which is not a declared index set, and no equation defining it gives "
                        "that axis a range");
      }
      shape.extents[d] = extent;
    }
  }
}

}  // namespace esi::esm::detail::arrays
