// Arrays to cells (spec §4.3, §9.6.8): every shaped variable becomes one scalar per cell, named
// "Comp.x[i,j,k]" (1-based), and every array equation one scalar equation per cell it defines.
//
// The meaning of an array expression at one cell is computed by the Expander (expander.hpp),
// once per cell, by walking the expression with the cell's coordinates: `aggregate` binds its
// output indices to the cell and spells its contraction out as one n-ary sum (a left fold in
// ascending index order, which is also the normative order of prefix scans), `makearray` picks
// the last region holding the cell, `index` gathers with static indices (out of range: 0 for
// states and observeds, an error for constant data), and elementwise arithmetic aligns named
// operands by index-set name. The scalar equations that result are what the kernels compile,
// so a gridded document runs on every existing method and target. With FlattenOptions::grid
// the array equations become per-region programs instead (regions.cpp), one program per box
// of cells, independent of the grid size; this expansion is their reference and their fallback.
#include <algorithm>
#include <charconv>

#include "esm/arrays/lowering.hpp"

namespace esi::esm {

void assign_cell_name(std::string& out, const std::string& name,
                      const std::vector<std::int64_t>& cell) {
  // One allocation at most (a grid names 10^5-10^6 cells this way): digits go straight into
  // the string's own buffer.
  char digits[24];
  std::size_t length = name.size() + 1 + cell.size();  // "[", the commas and "]"
  for (const std::int64_t c : cell)
    length +=
        static_cast<std::size_t>(std::to_chars(digits, digits + sizeof digits, c).ptr - digits);
  out.clear();
  out.reserve(length);
  out += name;
  out += '[';
  for (std::size_t i = 0; i < cell.size(); ++i) {
    if (i) out += ',';
    const auto end = std::to_chars(digits, digits + sizeof digits, cell[i]).ptr;
    out.append(digits, end);
  }
  out += ']';
}

std::string cell_name(const std::string& name, const std::vector<std::int64_t>& cell) {
  std::string out;
  assign_cell_name(out, name, cell);
  return out;
}

namespace detail {
namespace arrays {
namespace {

/// Cells of an extent list, first index fastest.
std::vector<std::vector<std::int64_t>> all_cells(const std::vector<std::int64_t>& extents) {
  std::vector<std::vector<std::int64_t>> out;
  for (auto e : extents)
    if (e <= 0) return out;
  std::vector<std::int64_t> c(extents.size(), 1);
  while (true) {
    out.push_back(c);
    std::size_t d = 0;
    while (d < c.size() && c[d] == extents[d]) c[d++] = 1;
    if (d == c.size()) break;
    ++c[d];
  }
  return out;
}

/// The cell-by-cell form in progress: declarations are built aside (committed at the end with
/// the tendencies); observed, initial-value and algebraic equations are replaced in `st` as
/// they are expanded.
struct CellExpansion {
  explicit CellExpansion(FlattenState& s) : st(s), ex(s), pool(s.sys.pool) {}

  FlattenState& st;
  Expander ex;
  Pool& pool;
  std::map<std::string, Declared> declared;
  std::vector<std::string> order;
  std::vector<std::pair<std::size_t, std::string>> parameter_arrays;  // (position in order, name)
  std::map<std::string, std::vector<Tendency>> tendencies;
  std::vector<std::string> tendency_order;

  NodeId scalar(NodeId e, const std::string& file, const std::string& pointer) {
    if (e == expr::kNoNode || !ex.needs_cells(e)) return e;
    ex.locate(file, pointer);
    return ex.at(e, Frame{});
  }

  void declare_cell(const Declared& d, const ArrayShape& shape, const std::vector<std::int64_t>& cell) {
    Declared c = d;
    c.var.name = cell_name(d.var.name, cell);
    c.var.shape.clear();
    c.var.description.clear();  // kept once, on System::Array
    c.var.array = d.var.name;
    c.var.cell = cell;
    if (d.var.initial != expr::kNoNode) {
      ex.locate(d.var.file, d.var.pointer);
      c.var.initial = ex.at(d.var.initial, Frame{shape.axes, absolute(cell)});
    }
    declared[c.var.name] = std::move(c);
  }
};

/// Declarations: each array's cells take its place, in order. The cells of a parameter array
/// are declared only where an equation reads them (after the equations are expanded): a
/// reanalysis field over a global grid is read on a regional slice, and declaring its other
/// cells would only cost memory.
void declare_cells(CellExpansion& C) {
  FlattenState& st = C.st;
  for (const auto& name : st.declaration_order) {
    Declared& d = st.declared[name];
    auto a = st.arrays.find(name);
    if (a == st.arrays.end()) {
      d.var.initial = C.scalar(d.var.initial, d.var.file, d.var.pointer);
      C.order.push_back(name);
      C.declared[name] = d;
      continue;
    }
    st.sys.arrays.push_back({name, a->second.axes, a->second.extents, !d.unknown, d.var.units, d.var.description});
    if (!d.unknown) {
      C.parameter_arrays.emplace_back(C.order.size(), name);
      continue;
    }
    for (const auto& cell : all_cells(a->second.extents)) {
      C.declare_cell(d, a->second, cell);
      C.order.push_back(cell_name(name, cell));
    }
  }
}

/// The tendencies, one per cell of each state array (the cells a left-hand side defines).
void expand_tendencies(CellExpansion& C) {
  FlattenState& st = C.st;
  Expander& ex = C.ex;
  Pool& pool = C.pool;
  for (const auto& x : st.tendency_order) {
    const auto& list = st.tendencies[x];
    auto a = st.arrays.find(x);
    if (a == st.arrays.end()) {
      C.tendency_order.push_back(x);
      for (auto t : list) {
        if (t.lhs_aggregate != expr::kNoNode)
          throw Error("array_shape_mismatch", t.file, t.pointer,
                      "the left-hand side indexes '" + x + "', which is not an array");
        t.rhs = C.scalar(t.rhs, t.file, t.pointer);
        C.tendencies[x].push_back(t);
      }
      continue;
    }
    for (const auto& cell : all_cells(a->second.extents)) {
      const std::string name = cell_name(x, cell);
      std::vector<Tendency> cell_list;
      std::map<std::size_t, const Tendency*> piece_of;  // component -> its equation defining this cell
      for (const auto& t : list) {
        ex.locate(t.file, t.pointer);
        LhsCell lc{Frame{a->second.axes, absolute(cell)}, {}};
        if (t.lhs_aggregate != expr::kNoNode) {
          auto found = lhs_cell(pool, t.lhs_aggregate, a->second, absolute(cell), t.file, t.pointer, ex);
          if (!found) continue;
          lc = std::move(*found);
          note_cell_piece(piece_of, t, name);
        }
        Tendency c = t;
        c.lhs_aggregate = expr::kNoNode;
        c.rhs = ex.at(t.rhs, lc.frame, lc.bindings);
        cell_list.push_back(c);
      }
      if (cell_list.empty())
        throw Error("array_region_uncovered", list[0].file, list[0].pointer,
                    "no equation gives the time derivative of " + name + " (the left-hand sides "
                    "cover only part of '" + x + "')");
      C.tendency_order.push_back(name);
      C.tendencies[name] = std::move(cell_list);
    }
  }
}

/// Defining (observed) equations (`order_out` their order) or initial-value equations, one per
/// cell of each array they define.
void expand_equations(CellExpansion& C, std::map<std::string, FlatEquation>& eqs,
                      std::vector<std::string>* order_out, bool initial) {
  FlattenState& st = C.st;
  Expander& ex = C.ex;
  Pool& pool = C.pool;
  std::map<std::string, FlatEquation> out;
  std::vector<std::string> names;
  if (order_out) names = *order_out;
  else
    for (const auto& [k, v] : eqs) names.push_back(k);
  std::vector<std::string> new_order;
  for (const auto& y : names) {
    const FlatEquation& eq = eqs.at(y);
    auto a = st.arrays.find(y);
    if (a == st.arrays.end()) {
      FlatEquation e = eq;
      e.rhs = C.scalar(e.rhs, e.file, e.pointer);
      out[y] = e;
      new_order.push_back(y);
      continue;
    }
    // The equations that define y: one, or pieces that each define some cells (index(y, 1) =
    // a, an aggregate over the rest).
    std::vector<const FlatEquation*> defining{&eq};
    if (!initial)
      if (auto p = st.observed_pieces.find(y); p != st.observed_pieces.end())
        for (const auto& piece : p->second) defining.push_back(&piece);
    for (const auto& cell : all_cells(a->second.extents)) {
      const std::string name = cell_name(y, cell);
      const FlatEquation* by = nullptr;
      LhsCell lc{Frame{a->second.axes, absolute(cell)}, {}};
      for (const FlatEquation* d : defining) {
        ex.locate(d->file, d->pointer);
        LhsCell here{Frame{a->second.axes, absolute(cell)}, {}};
        if (d->lhs != expr::kNoNode && (pool.node(d->lhs).op == Op::Index || pool.node(d->lhs).op == Op::Aggregate)) {
          auto found = lhs_cell(pool, d->lhs, a->second, absolute(cell), d->file, d->pointer, ex);
          if (!found) continue;  // index(y, i) = rhs or aggregate(index(y, i)) = rhs: some cells
          here = std::move(*found);
        }
        if (by)
          throw Error("array_cell_defined_twice", d->file, d->pointer,
                      "this equation defines " + name + ", which " + by->pointer +
                          " already defines; each cell needs exactly one");
        by = d;
        lc = std::move(here);
      }
      if (!by)
        throw Error("array_region_uncovered", eq.file, eq.pointer,
                    "the equation" + std::string(defining.size() > 1 ? "s define" : " defines") +
                        " only some cells of '" + y + "'; " + name + " has no value");
      FlatEquation e = *by;
      ex.locate(by->file, by->pointer);
      e.lhs = initial ? pool.make(Op::Ic, std::vector<NodeId>{pool.symbol(name)}) : pool.symbol(name);
      ex.coordinates_of(st.coordinate_targets.count(y) ? &a->second : nullptr);
      e.rhs = ex.at(by->rhs, lc.frame, lc.bindings);
      ex.coordinates_of(nullptr);
      out[name] = e;
      new_order.push_back(name);
    }
  }
  eqs = std::move(out);
  if (order_out) *order_out = std::move(new_order);
}

/// The parameter cells the expanded equations read, in declaration order, first index fastest.
void declare_parameter_cells(CellExpansion& C) {
  FlattenState& st = C.st;
  std::vector<std::string> with_cells;
  std::size_t next = 0;
  for (std::size_t k = 0; k <= C.order.size(); ++k) {
    for (; next < C.parameter_arrays.size() && C.parameter_arrays[next].first == k; ++next) {
      const std::string& name = C.parameter_arrays[next].second;
      const ArrayShape& shape = st.arrays.at(name);
      std::vector<std::vector<std::int64_t>> cells(C.ex.used_cells(name).begin(), C.ex.used_cells(name).end());
      std::sort(cells.begin(), cells.end(), [](const auto& x, const auto& y) {
        return std::lexicographical_compare(x.rbegin(), x.rend(), y.rbegin(), y.rend());
      });
      for (const auto& cell : cells) {
        C.declare_cell(st.declared[name], shape, cell);
        with_cells.push_back(cell_name(name, cell));
      }
    }
    if (k < C.order.size()) with_cells.push_back(C.order[k]);
  }
  C.order = std::move(with_cells);
}

/// The cell-by-cell form of every array equation.
void expand_to_cells(FlattenState& st) {
  CellExpansion C(st);
  declare_cells(C);
  expand_tendencies(C);
  expand_equations(C, st.observed_eqs, &st.observed_order, false);
  st.observed_pieces.clear();  // now cells of observed_eqs
  expand_equations(C, st.initial_eqs, nullptr, true);
  for (auto& eq : st.algebraic_eqs) {
    eq.lhs = C.scalar(eq.lhs, eq.file, eq.pointer);
    eq.rhs = C.scalar(eq.rhs, eq.file, eq.pointer);
  }
  declare_parameter_cells(C);

  std::set<std::string> bound;
  for (const auto& b : st.bound_parameters) {
    if (auto a = st.arrays.find(b); a != st.arrays.end())
      for (const auto& cell : all_cells(a->second.extents)) bound.insert(cell_name(b, cell));
    else
      bound.insert(b);
  }
  st.bound_parameters = std::move(bound);
  st.declared = std::move(C.declared);
  st.declaration_order = std::move(C.order);
  st.tendencies = std::move(C.tendencies);
  st.tendency_order = std::move(C.tendency_order);
}

}  // namespace
}  // namespace arrays

void expand_arrays(FlattenState& st) {
  using namespace arrays;
  lift_pointwise(st);
  if (st.arrays.empty()) {
    // No shaped variable, but an equation may still use array operations on literal data.
    bool any = false;
    Expander probe(st);
    for (const auto& [x, list] : st.tendencies)
      for (const auto& t : list) any = any || probe.needs_cells(t.rhs);
    for (const auto& [y, eq] : st.observed_eqs) any = any || probe.needs_cells(eq.rhs);
    if (!any) return;
  }
  {
    // Derived index sets first: their sizes are the extents of the arrays shaped over them.
    Expander derive(st);
    derive.materialize_derived_sets();
  }
  infer_extents(st);
  if (st.grid && !st.arrays.empty()) {
    try {
      lower_to_regions(st);
      return;
    } catch (const NotRelative& why) {
      st.sys.grid_fallback = why.why;
    }
  }
  expand_to_cells(st);
}

}  // namespace detail
}  // namespace esi::esm
