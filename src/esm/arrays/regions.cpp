// The per-region form of array equations (FlattenOptions::grid, spec §4.3 without cells): each
// array equation becomes boxes of output cells with one relative program per box.
#include <algorithm>
#include <functional>
#include <limits>
#include <tuple>

#include "esm/arrays/lowering.hpp"

namespace esi::esm::detail::arrays {

namespace {

/// Scalar operations whose value at a cell is the operation of its operands' values there (what
/// eval does with them): a tendency is formed operand by operand through them.
bool formed_term_by_term(Op op) {
  switch (op) {
    case Op::Add: case Op::Sub: case Op::Neg: case Op::Mul: case Op::Div: case Op::Pow:
    case Op::Max: case Op::Min: case Op::Exp: case Op::Log: case Op::Abs: case Op::Sqrt:
      return true;
    default:
      return false;
  }
}

/// A box of output cells, 1-based and inclusive.
struct Box {
  std::vector<std::int64_t> lo, hi;
};

/// Splits the extents into boxes on each of which `form(rep)` (the expressions of a group of
/// equations at the box's lowest cell, formed in relative mode) holds unchanged. Each box is
/// found by forming the expressions at the lowest cell of what is left and letting every
/// build-time comparison narrow the box; the rest is split into at most one box per axis.
template <class Form>
std::vector<std::pair<Box, std::vector<NodeId>>> find_regions(Expander& ex,
                                                              const std::vector<std::int64_t>& extents,
                                                              Form&& form) {
  constexpr std::size_t kMaxRegions = 20000;
  std::vector<std::pair<Box, std::vector<NodeId>>> out;
  std::vector<Box> work;
  for (auto e : extents)
    if (e <= 0) return out;
  work.push_back(Box{std::vector<std::int64_t>(extents.size(), 1), extents});
  while (!work.empty()) {
    Box b = std::move(work.back());
    work.pop_back();
    ex.begin_region(b.lo, b.lo, b.hi);
    std::vector<NodeId> rhs;
    try {
      rhs = form(b.lo);
    } catch (...) {
      ex.end_region();
      throw;
    }
    Box v{ex.region_lo(), ex.region_hi()};
    ex.end_region();
    for (std::size_t d = 0; d < extents.size(); ++d) {
      if (v.hi[d] < b.hi[d]) {
        Box rest = b;
        rest.lo[d] = v.hi[d] + 1;
        work.push_back(std::move(rest));
        b.hi[d] = v.hi[d];
      }
    }
    out.emplace_back(std::move(v), std::move(rhs));
    if (out.size() > kMaxRegions)
      throw NotRelative{"more than " + std::to_string(kMaxRegions) + " distinct regions"};
  }
  std::sort(out.begin(), out.end(), [](const auto& x, const auto& y) {
    return std::lexicographical_compare(x.first.lo.rbegin(), x.first.lo.rend(), y.first.lo.rbegin(),
                                        y.first.lo.rend());
  });
  return out;
}

std::vector<System::GridRegion> to_regions(std::vector<std::pair<Box, std::vector<NodeId>>> found) {
  std::vector<System::GridRegion> out;
  for (auto& [box, rhs] : found) out.push_back({std::move(box.lo), std::move(box.hi), std::move(rhs)});
  return out;
}

/// What lower_to_regions builds aside before it commits, in the order it is formed (which is
/// the order its nodes are interned in the pool).
struct RegionLowering {
  explicit RegionLowering(FlattenState& s) : st(s), ex(s), pool(s.sys.pool) {}

  FlattenState& st;
  Expander ex;
  Pool& pool;
  std::set<std::string> observed_arrays, state_arrays;
  std::vector<System::GridEquation> observed, tendencies, initial;
  std::vector<System::Array> term_arrays;  ///< split-off terms of tendencies, as observed arrays
  /// State arrays whose initial value is an expression over the cells.
  std::map<std::string, NodeId> cellwise_initial;

  NodeId scalar(NodeId e, const std::string& file, const std::string& pointer) {
    if (e == expr::kNoNode || !ex.needs_cells(e)) return e;
    ex.locate(file, pointer);
    return ex.at(e, Frame{});
  }
};

/// Which arrays get equations of their own: observed arrays and state arrays (those with a time
/// derivative); parameter arrays get none. Any other array unknown is not a region program.
void sort_arrays(RegionLowering& L) {
  FlattenState& st = L.st;
  Expander& ex = L.ex;
  for (const auto& [name, shape] : st.arrays) {
    const Declared& d = st.declared.at(name);
    if (!d.unknown) ex.grid_only_.insert(name);
    else if (st.observed_eqs.count(name)) {
      if (st.observed_pieces.count(name))
        throw NotRelative{"'" + name + "' is defined piece by piece, by several equations"};
      L.observed_arrays.insert(name);
      ex.grid_only_.insert(name);
    } else if (st.tendencies.count(name)) {
      L.state_arrays.insert(name);
    } else {
      throw NotRelative{"'" + name + "' is an array unknown with neither a time derivative nor a "
                        "defining equation"};
    }
  }
}

/// Observed arrays, one equation each (their order is settled by the kernel's dependency
/// sort of what each reads).
void lower_observed_arrays(RegionLowering& L) {
  FlattenState& st = L.st;
  Expander& ex = L.ex;
  Pool& pool = L.pool;
  for (const auto& y : st.observed_order) {
    if (!L.observed_arrays.count(y)) continue;
    const FlatEquation& eq = st.observed_eqs.at(y);
    const ArrayShape& shape = st.arrays.at(y);
    ex.locate(eq.file, eq.pointer);
    System::GridEquation g{System::GridEquation::Kind::Observed, {y}, shape.extents, {}, eq.file, eq.pointer};
    g.regions = to_regions(find_regions(ex, shape.extents, [&](const std::vector<std::int64_t>& rep) {
      LhsCell lc{Frame{shape.axes, ex.moving(rep)}, {}};
      if (eq.lhs != expr::kNoNode && (pool.node(eq.lhs).op == Op::Index || pool.node(eq.lhs).op == Op::Aggregate)) {
        auto found = lhs_cell(pool, eq.lhs, shape, ex.moving(rep), eq.file, eq.pointer, ex);
        if (!found)
          throw Error("array_region_uncovered", eq.file, eq.pointer,
                      "the equation defines only some cells of '" + y + "'; " +
                          cell_name(y, rep) + " has no value");
        lc = std::move(*found);
      }
      ex.coordinates_of(st.coordinate_targets.count(y) ? &shape : nullptr);
      const NodeId value = ex.at(eq.rhs, lc.frame, lc.bindings);
      ex.coordinates_of(nullptr);
      return std::vector<NodeId>{value};
    }));
    L.observed.push_back(std::move(g));
  }
}

/// A group of state arrays whose equations are all `D(x) = rhs`, by operator terms: the
/// tendency is arithmetic (sums, products, quotients) over terms such as one flux divergence
/// per direction. Each term that is not the same everywhere gets its own boxes (a zonal flux:
/// seven zonal classes) and becomes an observed array; the tendency is then one program over
/// the whole grid that reads them. Without this the boxes of all directions multiply (7^3
/// programs, each with every direction in it).
void lower_operator_terms(RegionLowering& L, const std::vector<std::int64_t>& extents,
                          const std::vector<std::string>& names) {
  FlattenState& st = L.st;
  Expander& ex = L.ex;
  Pool& pool = L.pool;
  const auto& first = st.tendencies.at(names[0]);
  std::map<std::pair<NodeId, std::vector<std::string>>, NodeId> leaf_value;
  std::function<NodeId(NodeId, const std::string&, const ArrayShape&, const Tendency&)> split =
      [&](NodeId e, const std::string& x, const ArrayShape& shape, const Tendency& t) -> NodeId {
    if (!ex.needs_cells(e)) return e;
    const expr::Node n = pool.node(e);
    if (formed_term_by_term(n.op)) {
      const auto c = pool.children(e);
      std::vector<NodeId> kids(c.begin(), c.end());
      bool changed = false;
      for (auto& k : kids) {
        const NodeId v = split(k, x, shape, t);
        changed |= v != k;
        k = v;
      }
      return changed ? pool.make(n.op, kids, n.arg_count, n.name, n.attrs) : e;
    }
    const auto key = std::make_pair(e, shape.axes);
    if (auto hit = leaf_value.find(key); hit != leaf_value.end()) return hit->second;
    ex.locate(t.file, t.pointer);
    auto found = find_regions(ex, extents, [&](const std::vector<std::int64_t>& rep) {
      return std::vector<NodeId>{ex.at(e, Frame{shape.axes, ex.moving(rep)}, {})};
    });
    NodeId v;
    if (found.size() == 1) {
      v = found[0].second[0];
    } else {
      const std::string name = x + "~term" + std::to_string(L.term_arrays.size() + 1);
      System::Array a;
      a.name = name;
      a.axes = shape.axes;
      a.extents = extents;
      a.description = "a term of the time derivative of " + x;
      L.term_arrays.push_back(std::move(a));
      L.observed.push_back(System::GridEquation{System::GridEquation::Kind::Observed, {name}, extents,
                                               to_regions(std::move(found)), t.file, t.pointer});
      std::string read = name + "[";
      for (std::size_t d = 0; d < extents.size(); ++d) read += (d ? ",@" : "@") + std::to_string(d);
      v = pool.symbol(read + "]");
    }
    leaf_value.emplace(key, v);
    return v;
  };
  System::GridRegion whole{std::vector<std::int64_t>(extents.size(), 1), extents, {}};
  std::vector<std::vector<std::string>> sources;
  for (const auto& x : names) {
    const ArrayShape& shape = st.arrays.at(x);
    std::vector<NodeId> parts;
    sources.emplace_back();
    for (const auto& t : st.tendencies.at(x)) {
      parts.push_back(split(t.rhs, x, shape, t));
      sources.back().push_back(st.components[t.component].path);
    }
    whole.rhs.push_back(parts.size() == 1 ? parts[0] : pool.make(Op::Add, parts));
  }
  L.tendencies.push_back(System::GridEquation{System::GridEquation::Kind::Tendency, names, extents,
                                            {std::move(whole)}, first[0].file, first[0].pointer,
                                            std::move(sources)});
}

/// A group of state arrays some of whose equations are written cell by cell (an `index` or
/// `aggregate` left-hand side): one program per box of cells.
void lower_cellwise_tendencies(RegionLowering& L, const std::vector<std::int64_t>& extents,
                               const std::vector<std::string>& names) {
  FlattenState& st = L.st;
  Expander& ex = L.ex;
  Pool& pool = L.pool;
  const auto& first = st.tendencies.at(names[0]);
  System::GridEquation g{System::GridEquation::Kind::Tendency, names, extents, {}, first[0].file,
                         first[0].pointer};
  // Each term is formed once per box of cells on which it holds: a term's own box comes
  // from the comparisons made while forming it (pointwise chemistry makes none and holds
  // everywhere; a zonal flux holds along a zonal class of cells whatever the latitude).
  // Sums and products are formed term by term for that (as eval forms them anyway).
  struct Formed {
    std::vector<std::int64_t> lo, hi;
    NodeId value;
  };
  std::map<std::tuple<std::string, std::size_t, NodeId>, std::vector<Formed>> formed;
  g.regions = to_regions(find_regions(ex, extents, [&](const std::vector<std::int64_t>& rep) {
    std::vector<NodeId> out;
    for (const auto& x : names) {
      const ArrayShape& shape = st.arrays.at(x);
      const auto& list = st.tendencies.at(x);
      std::vector<NodeId> parts;
      std::map<std::size_t, const Tendency*> piece_of;
      for (std::size_t ti = 0; ti < list.size(); ++ti) {
        const Tendency& t = list[ti];
        const std::uint64_t tests_before = ex.moving_tests();
        ex.locate(t.file, t.pointer);
        LhsCell lc{Frame{shape.axes, ex.moving(rep)}, {}};
        if (t.lhs_aggregate != expr::kNoNode) {
          auto found = lhs_cell(pool, t.lhs_aggregate, shape, ex.moving(rep), t.file, t.pointer, ex);
          if (!found) continue;
          lc = std::move(*found);
          note_cell_piece(piece_of, t, cell_name(x, rep));
        }
        if (ex.moving_tests() != tests_before) {  // the left-hand side depends on the box
          parts.push_back(ex.at(t.rhs, lc.frame, lc.bindings));
          continue;
        }
        std::function<NodeId(NodeId)> form = [&](NodeId e) -> NodeId {
          const auto key = std::make_tuple(x, ti, e);
          std::vector<Formed>& known = formed[key];
          for (const Formed& f : known) {
            bool inside = true;
            for (std::size_t d = 0; d < rep.size() && inside; ++d)
              inside = f.lo[d] <= rep[d] && rep[d] <= f.hi[d];
            if (!inside) continue;
            ex.narrow(f.lo, f.hi);
            return f.value;
          }
          const expr::Node n = pool.node(e);
          if ((formed_term_by_term(n.op) || n.op == Op::IfElse) && ex.needs_cells(e)) {
            const auto c = pool.children(e);
            std::vector<NodeId> kids(c.begin(), c.end());
            bool changed = false;
            for (auto& k : kids) {
              const NodeId v = form(k);
              changed |= v != k;
              k = v;
            }
            return changed ? pool.make(n.op, kids, n.arg_count, n.name, n.attrs) : e;
          }
          auto saved = ex.open_box();
          const NodeId v = ex.at(e, lc.frame, lc.bindings);
          auto own = ex.close_box(std::move(saved));
          formed[key].push_back({std::move(own.first), std::move(own.second), v});
          return v;
        };
        parts.push_back(form(t.rhs));
      }
      if (parts.empty())
        throw Error("array_region_uncovered", list[0].file, list[0].pointer,
                    "no equation gives the time derivative of " + cell_name(x, rep) +
                        " (the left-hand sides cover only part of '" + x + "')");
      out.push_back(parts.size() == 1 ? parts[0] : pool.make(Op::Add, parts));
    }
    return out;
  }));
  L.tendencies.push_back(std::move(g));
}

/// State arrays: one equation per set of arrays with the same extents, so the arrays of one
/// transport operator (air mass, tracer masses) share one program per box.
void lower_state_arrays(RegionLowering& L) {
  FlattenState& st = L.st;
  std::map<std::vector<std::int64_t>, std::vector<std::string>> by_extents;
  for (const auto& x : st.tendency_order)
    if (L.state_arrays.count(x)) by_extents[st.arrays.at(x).extents].push_back(x);
  for (const auto& [extents, names] : by_extents) {
    bool cellwise_lhs = false;
    for (const auto& x : names)
      for (const auto& t : st.tendencies.at(x)) cellwise_lhs = cellwise_lhs || t.lhs_aggregate != expr::kNoNode;
    if (!cellwise_lhs) {
      lower_operator_terms(L, extents, names);
      continue;
    }
    lower_cellwise_tendencies(L, extents, names);
  }
}

/// Initial values of state arrays given by an expression over the cells (ic equations, or a
/// declared initial value that depends on the cell).
void lower_initial_values(RegionLowering& L) {
  FlattenState& st = L.st;
  Expander& ex = L.ex;
  Pool& pool = L.pool;
  for (const auto& x : L.state_arrays) {
    const ArrayShape& shape = st.arrays.at(x);
    NodeId rhs = expr::kNoNode, lhs = expr::kNoNode;
    std::string file, pointer;
    if (auto ic = st.initial_eqs.find(x); ic != st.initial_eqs.end()) {
      rhs = ic->second.rhs;
      lhs = ic->second.lhs;
      file = ic->second.file;
      pointer = ic->second.pointer;
    } else {
      const Declared& d = st.declared.at(x);
      if (d.var.initial == expr::kNoNode || !ex.needs_cells(d.var.initial)) continue;
      rhs = d.var.initial;
      file = d.var.file;
      pointer = d.var.pointer;
    }
    L.cellwise_initial[x] = rhs;
    ex.locate(file, pointer);
    System::GridEquation g{System::GridEquation::Kind::Initial, {x}, shape.extents, {}, file, pointer};
    g.regions = to_regions(find_regions(ex, shape.extents, [&](const std::vector<std::int64_t>& rep) {
      LhsCell lc{Frame{shape.axes, ex.moving(rep)}, {}};
      if (lhs != expr::kNoNode && pool.node(lhs).op == Op::Index) {
        auto found = lhs_cell(pool, lhs, shape, ex.moving(rep), file, pointer, ex);
        if (!found)
          throw Error("array_region_uncovered", file, pointer,
                      "the initial-value equation covers only some cells of '" + x + "'");
        lc = std::move(*found);
      }
      ex.coordinates_of(st.coordinate_targets.count(x) ? &shape : nullptr);
      const NodeId value = ex.at(rhs, lc.frame, lc.bindings);
      ex.coordinates_of(nullptr);
      return std::vector<NodeId>{value};
    }));
    L.initial.push_back(std::move(g));
  }
}

/// The scalar equations, as without regions (they may read state cells by name, nothing else
/// gridded).
struct ScalarEquations {
  std::map<std::string, std::vector<Tendency>> tendencies;
  std::vector<std::string> tendency_order;
  std::map<std::string, FlatEquation> observed_eqs, initial_eqs;
  std::vector<std::string> observed_order;
  std::vector<FlatEquation> algebraic;
};

ScalarEquations lower_scalars(RegionLowering& L) {
  FlattenState& st = L.st;
  ScalarEquations out;
  for (const auto& x : st.tendency_order) {
    if (L.state_arrays.count(x)) continue;
    out.tendency_order.push_back(x);
    for (auto t : st.tendencies.at(x)) {
      if (t.lhs_aggregate != expr::kNoNode)
        throw Error("array_shape_mismatch", t.file, t.pointer,
                    "the left-hand side indexes '" + x + "', which is not an array");
      t.rhs = L.scalar(t.rhs, t.file, t.pointer);
      out.tendencies[x].push_back(t);
    }
  }
  for (const auto& y : st.observed_order) {
    if (L.observed_arrays.count(y)) continue;
    FlatEquation e = st.observed_eqs.at(y);
    e.rhs = L.scalar(e.rhs, e.file, e.pointer);
    out.observed_eqs[y] = e;
    out.observed_order.push_back(y);
  }
  for (const auto& [x, eq] : st.initial_eqs) {
    if (L.state_arrays.count(x)) continue;
    if (st.arrays.count(x))
      throw NotRelative{"an initial-value equation for '" + x + "', which is not a state array"};
    FlatEquation e = eq;
    e.rhs = L.scalar(e.rhs, e.file, e.pointer);
    out.initial_eqs[x] = e;
  }
  out.algebraic = st.algebraic_eqs;
  for (auto& eq : out.algebraic) {
    eq.lhs = L.scalar(eq.lhs, eq.file, eq.pointer);
    eq.rhs = L.scalar(eq.rhs, eq.file, eq.pointer);
  }
  return out;
}

/// Declarations: a state array's cells take its place (first index fastest); observed and
/// parameter arrays have no cells.
struct Declarations {
  std::map<std::string, Declared> declared;
  std::vector<std::string> order;
  std::vector<System::Array> arrays;
};

Declarations region_declarations(RegionLowering& L) {
  FlattenState& st = L.st;
  Declarations out;
  for (const auto& name : st.declaration_order) {
    Declared d = st.declared.at(name);
    auto a = st.arrays.find(name);
    if (a == st.arrays.end()) {
      d.var.initial = L.scalar(d.var.initial, d.var.file, d.var.pointer);
      out.order.push_back(name);
      out.declared[name] = d;
      continue;
    }
    System::Array arr{name, a->second.axes, a->second.extents, !d.unknown, d.var.units, d.var.description};
    if (!d.unknown) {
      std::int64_t n = 1;
      for (auto e : a->second.extents) n *= e;
      arr.values.assign(static_cast<std::size_t>(n),
                        d.var.default_value ? *d.var.default_value : std::numeric_limits<double>::quiet_NaN());
    }
    out.arrays.push_back(std::move(arr));
    if (!L.state_arrays.count(name)) continue;
    // The cells become states when the system is assembled (flatten), straight from here:
    // a 72x46x72 grid has 10^5-10^6 of them.
    if (L.cellwise_initial.count(name)) d.var.initial = expr::kNoNode;
    d.grid_cell = true;
    out.order.push_back(name);
    out.declared[name] = std::move(d);
  }
  return out;
}

}  // namespace

void lower_to_regions(FlattenState& st) {
  RegionLowering L(st);
  sort_arrays(L);
  lower_observed_arrays(L);
  lower_state_arrays(L);
  lower_initial_values(L);
  ScalarEquations scalars = lower_scalars(L);
  Declarations decls = region_declarations(L);
  std::set<std::string> bound;
  for (const auto& b : st.bound_parameters) {
    if (st.arrays.count(b)) throw NotRelative{"an array parameter '" + b + "' bound by an equation"};
    bound.insert(b);
  }

  // Commit.
  for (auto& a : L.term_arrays) decls.arrays.push_back(std::move(a));
  st.sys.arrays = std::move(decls.arrays);
  st.sys.grid = std::move(L.observed);
  for (auto& g : L.tendencies) st.sys.grid.push_back(std::move(g));
  for (auto& g : L.initial) st.sys.grid.push_back(std::move(g));
  st.bound_parameters = std::move(bound);
  st.declared = std::move(decls.declared);
  st.declaration_order = std::move(decls.order);
  st.tendencies = std::move(scalars.tendencies);
  st.tendency_order = std::move(scalars.tendency_order);
  st.observed_eqs = std::move(scalars.observed_eqs);
  st.observed_order = std::move(scalars.observed_order);
  st.initial_eqs = std::move(scalars.initial_eqs);
  st.algebraic_eqs = std::move(scalars.algebraic);
}

}  // namespace esi::esm::detail::arrays
