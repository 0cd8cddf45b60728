// What array equations say about cells: the cell a left-hand side defines, and the extents of
// axes that only the equations give.
#include <algorithm>

#include "esi/expr/parse.hpp"
#include "esm/arrays/lowering.hpp"

namespace esi::esm::detail::arrays {

std::optional<LhsCell> lhs_cell(Pool& pool, NodeId lhs, const ArrayShape& target,
                                const std::vector<Ix>& cell, const std::string& file,
                                const std::string& pointer, Expander& ex) {
  const bool aggregate = pool.node(lhs).op == Op::Aggregate;
  const json attrs = aggregate ? expr::attrs_json(pool, lhs) : json::object();
  const json out = attrs.value("output_idx", json::array());
  const json ranges = attrs.value("ranges", json::object());
  NodeId ix = lhs;  // index(D(x), i, j)
  if (aggregate) ix = pool.args(pool.children(lhs)[attrs["expr"]["$child"].get<std::size_t>()])[0];
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
    const std::string sym = in.op == Op::Symbol ? std::string(pool.str(in.name)) : "";
    if (sym.empty() || sym[0] != '$')
      throw Error("invalid_equation", file, pointer,
                  "each index on a left-hand side must be an index symbol or an integer");
    const std::string plain = sym.substr(1);
    lc.bindings.emplace_back(in.name, cell[d]);
    if (!aggregate) continue;
    auto it = std::find(out.begin(), out.end(), json(plain));
    if (it == out.end())
      throw Error("invalid_equation", file, pointer,
                  "index '" + plain + "' on the left-hand side is not one of the aggregate's output indices");
    lc.frame.pos[static_cast<std::size_t>(it - out.begin())] = cell[d];
    if (auto r = ranges.find(plain); r != ranges.end() && r->is_array() && r->size() == 2 &&
                                     r->at(0).is_number_integer() && r->at(1).is_number_integer() &&
                                     !(ex.test(cell[d], Op::Ge, r->at(0).get<std::int64_t>()) &&
                                       ex.test(cell[d], Op::Le, r->at(1).get<std::int64_t>())))
      return std::nullopt;
  }
  return lc;
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
      if (auto t = st.tendencies.find(name); t != st.tendencies.end())
        for (const auto& tend : t->second) {
          if (tend.lhs_aggregate == expr::kNoNode) {
            from_rhs(tend.rhs);
            continue;
          }
          if (pool.node(tend.lhs_aggregate).op != Op::Aggregate) continue;
          const json attrs = expr::attrs_json(pool, tend.lhs_aggregate);
          const NodeId body = pool.children(tend.lhs_aggregate)[attrs["expr"]["$child"].get<std::size_t>()];
          const auto idx = pool.args(pool.args(body)[0]);
          if (d + 1 < idx.size() && pool.node(idx[d + 1]).op == Op::Symbol) {
            const std::string sym(pool.str(pool.node(idx[d + 1]).name));
            const json ranges = attrs.value("ranges", json::object());
            const std::string key = sym.starts_with("$") ? sym.substr(1) : sym;
            if (ranges.contains(key)) consider(range_stop(st, ranges[key]));
          }
        }
      if (auto o = st.observed_eqs.find(name); o != st.observed_eqs.end()) from_rhs(o->second.rhs);
      if (auto i = st.initial_eqs.find(name); i != st.initial_eqs.end()) from_rhs(i->second.rhs);
      if (extent < 0) {
        const Declared& decl = st.declared.at(name);
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
