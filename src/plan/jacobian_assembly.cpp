// Jacobian assembly per planned operator (seed 004): see jacobian_assembly.hpp.
#include "esi/plan/jacobian_assembly.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <unordered_map>

#include "esi/core/error.hpp"
#include "plan/plan_internal.hpp"

namespace esi::plan {

using expr::NodeId;
using expr::Op;
using Kind = esm::System::GridEquation::Kind;

const char* layout_name(LayoutKind k) {
  switch (k) {
    case LayoutKind::LaneDense: return "lane_dense";
    case LayoutKind::LaneSparse: return "lane_sparse";
    case LayoutKind::Csr: return "csr";
    case LayoutKind::ColumnBanded: return "column_banded";
  }
  return "?";
}

namespace {

std::int64_t linear(const std::vector<std::int64_t>& pos, const std::vector<std::int64_t>& extents) {
  std::int64_t k = 0, stride = 1;
  for (std::size_t d = 0; d < pos.size(); ++d) {
    k += (pos[d] - 1) * stride;
    stride *= extents[d];
  }
  return k;
}

/// Every cell of `extents`, first index fastest (the order of the state cells).
std::vector<std::vector<std::int64_t>> all_cells(const std::vector<std::int64_t>& extents) {
  std::int64_t total = 1;
  for (std::int64_t e : extents) total *= e;
  std::vector<std::vector<std::int64_t>> out;
  out.reserve(static_cast<std::size_t>(total));
  std::vector<std::int64_t> pos(extents.size(), 1);
  for (std::int64_t k = 0; k < total; ++k) {
    out.push_back(pos);
    for (std::size_t d = 0; d < pos.size(); ++d) {
      if (++pos[d] <= extents[d]) break;
      pos[d] = 1;
    }
  }
  return out;
}

const esm::System::GridRegion& region_at(const esm::System::GridEquation& g, const std::vector<std::int64_t>& cell) {
  for (const auto& r : g.regions) {
    bool inside = true;
    for (std::size_t d = 0; d < cell.size() && inside; ++d) inside = r.lo[d] <= cell[d] && cell[d] <= r.hi[d];
    if (inside) return r;
  }
  throw Error("internal_error", g.file, g.pointer, "no region of '" + g.targets[0] + "' holds a cell");
}

/// Rewrites relative expressions of the per-region form as scalar expressions at one cell, in
/// the system's pool: state reads become the state cell's symbol, parameter arrays their value,
/// observed arrays their own region expression at the cell read (memoized per cell), $index
/// the position. What the expressions mean at that cell, with nothing relative left, so the
/// scalar machinery (differentiate, compile_outputs) applies.
class CellInstantiator {
 public:
  explicit CellInstantiator(esm::System& s) : s_(s) {
    for (std::size_t k = 0; k < s.arrays.size(); ++k) array_of_[s.arrays[k].name] = k;
    for (std::size_t k = 0; k < s.grid.size(); ++k)
      for (std::size_t j = 0; j < s.grid[k].targets.size(); ++j)
        (s.grid[k].kind == Kind::Observed ? observed_eq_ : tendency_eq_)[s.grid[k].targets[j]] = {k, j};
  }

  NodeId at(NodeId e, const std::vector<std::int64_t>& cell) {
    std::unordered_map<NodeId, NodeId> memo;
    return walk(e, cell, memo);
  }

  /// The whole tendency of state array `array` at `cell` (from the region holding it).
  NodeId tendency(const std::string& array, const std::vector<std::int64_t>& cell) {
    const auto [k, j] = tendency_eq_.at(array);
    return at(region_at(s_.grid[k], cell).rhs[j], cell);
  }

 private:
  const detail::RelativeRead* parsed(expr::StrId name) {
    auto it = parsed_.find(name);
    if (it == parsed_.end()) {
      detail::RelativeRead r;
      if (!esm::parse_relative_read(std::string(s_.pool.str(name)), r)) r.array.clear();
      it = parsed_.emplace(name, std::move(r)).first;
    }
    return it->second.array.empty() ? nullptr : &it->second;
  }

  NodeId read(const detail::RelativeRead& r, const std::vector<std::int64_t>& cell) {
    std::vector<std::int64_t> pos(r.axis.size());
    for (std::size_t j = 0; j < r.axis.size(); ++j) pos[j] = r.axis[j] >= 0 ? cell[r.axis[j]] + r.offset[j] : r.offset[j];
    if (r.array == "$index") return s_.pool.number(static_cast<double>(pos[0]));
    auto found = array_of_.find(r.array);
    if (found == array_of_.end())
      throw Error("undefined_variable", "", "", "the Jacobian found no array '" + r.array + "'");
    const esm::System::Array& a = s_.arrays[found->second];
    for (std::size_t d = 0; d < pos.size(); ++d)
      if (d >= a.extents.size() || pos[d] < 1 || pos[d] > a.extents[d])
        throw Error("internal_error", "", "", "a relative read of '" + r.array + "' falls outside it");
    const std::int64_t lin = linear(pos, a.extents);
    if (a.parameter) return s_.pool.number(a.values[static_cast<std::size_t>(lin)]);
    if (a.first_state >= 0) return s_.pool.symbol(s_.states[static_cast<std::size_t>(a.first_state + lin)].name);
    const auto key = std::make_pair(found->second, lin);
    if (auto it = observed_cells_.find(key); it != observed_cells_.end()) return it->second;
    const auto [k, j] = observed_eq_.at(r.array);
    const NodeId v = at(region_at(s_.grid[k], pos).rhs[j], pos);
    observed_cells_.emplace(key, v);
    return v;
  }

  NodeId walk(NodeId id, const std::vector<std::int64_t>& cell, std::unordered_map<NodeId, NodeId>& memo) {
    if (auto it = memo.find(id); it != memo.end()) return it->second;
    const expr::Node n = s_.pool.node(id);  // copy: the pool grows below
    NodeId out = id;
    if (n.op == Op::Symbol) {
      if (const detail::RelativeRead* r = parsed(n.name)) out = read(*r, cell);
    } else if (n.child_count > 0) {
      std::vector<NodeId> kids(s_.pool.children(id).begin(), s_.pool.children(id).end());
      bool changed = false;
      for (NodeId& k : kids) {
        const NodeId r = walk(k, cell, memo);
        changed |= r != k;
        k = r;
      }
      if (changed) out = s_.pool.make(n.op, kids, n.arg_count, n.name, n.attrs);
    }
    memo.emplace(id, out);
    return out;
  }

  esm::System& s_;
  std::unordered_map<std::string, std::size_t> array_of_;
  std::unordered_map<std::string, std::pair<std::size_t, std::size_t>> observed_eq_, tendency_eq_;
  std::unordered_map<expr::StrId, detail::RelativeRead> parsed_;
  std::map<std::pair<std::size_t, std::int64_t>, NodeId> observed_cells_;
};

std::uint64_t fingerprint_of(const OperatorJacobian& j) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a
  auto mix = [&](std::uint64_t x) {
    for (int b = 0; b < 8; ++b) {
      h ^= (x >> (8 * b)) & 0xff;
      h *= 1099511628211ull;
    }
  };
  for (char c : j.op) mix(static_cast<unsigned char>(c));
  mix(j.grid);
  for (int d : j.program.dofs) mix(static_cast<std::uint64_t>(d));
  for (int r : j.program.row_ptr) mix(static_cast<std::uint64_t>(r));
  for (int c : j.program.col) mix(static_cast<std::uint64_t>(c));
  return h;
}

/// The row (position in dofs) of each nonzero.
std::vector<int> rows_of(const kernel::JacobianProgram& p) {
  std::vector<int> out(p.col.size());
  for (std::size_t r = 0; r + 1 < p.row_ptr.size(); ++r)
    for (int k = p.row_ptr[r]; k < p.row_ptr[r + 1]; ++k) out[static_cast<std::size_t>(k)] = static_cast<int>(r);
  return out;
}

void set_sources(ScatterPlan& p) {
  p.source.assign(p.slots, -1);
  for (std::size_t k = 0; k < p.slot.size(); ++k) p.source[static_cast<std::size_t>(p.slot[k])] = static_cast<std::int32_t>(k);
}

[[noreturn]] void cannot_hold(const OperatorJacobian& jac, int row, int col, const std::string& why) {
  const esm::System& s = *jac.program.source;
  const auto& rv = s.states[static_cast<std::size_t>(jac.program.dofs[static_cast<std::size_t>(row)])];
  const auto& cv = s.states[static_cast<std::size_t>(jac.program.dofs[static_cast<std::size_t>(col)])];
  throw Error("layout_cannot_hold", rv.file, rv.pointer,
              "operator '" + jac.op + "': the entry d rhs(" + rv.name + ") / d " + cv.name + " " + why);
}

void require_scalar_form(const OperatorJacobian& jac, LayoutKind k) {
  if (jac.grid)
    throw Error("layout_not_applicable", "", "",
                std::string("operator '") + jac.op + "' is gridded (one instance is the whole grid); the " +
                    layout_name(k) + " layout holds one block per lane (scalar form)");
}

}  // namespace

OperatorJacobian compile_operator_jacobian(const esm::System& system, const Plan& plan, const Operator& op,
                                           const kernel::CompileOptions& options) {
  const bool grid = plan.form == "grid";
  std::vector<int> species_of;
  std::vector<std::vector<std::int64_t>> cell_of;
  esm::System sys = system;
  std::vector<int> dofs;
  std::vector<NodeId> rhs;
  if (!grid) {
    std::unordered_map<std::string, std::size_t> row_of;
    for (std::size_t r = 0; r < op.rows.size(); ++r) row_of[op.rows[r]] = r;
    for (const std::string& name : op.block.species) {
      const int i = sys.state_index(name);
      if (i < 0) throw Error("undefined_variable", "", "", "operator '" + op.name + "' names no state '" + name + "'");
      dofs.push_back(i);
      auto it = row_of.find(name);
      rhs.push_back(it == row_of.end() ? expr::kNoNode : op.rhs[it->second]);
    }
  } else {
    CellInstantiator cells(sys);
    std::unordered_map<std::string, std::size_t> row_of;
    for (std::size_t r = 0; r < op.rows.size(); ++r) row_of[op.rows[r]] = r;
    for (std::size_t sp = 0; sp < op.block.species.size(); ++sp) {
      const std::string& name = op.block.species[sp];
      const esm::System::Array* array = nullptr;
      for (const auto& a : sys.arrays)
        if (a.name == name && a.first_state >= 0) array = &a;
      if (!array) throw Error("undefined_variable", "", "", "operator '" + op.name + "' names no state array '" + name + "'");
      const std::int64_t first = array->first_state;
      const auto extents = array->extents;
      auto row = row_of.find(name);
      std::int64_t k = 0;
      for (const auto& cell : all_cells(extents)) {
        dofs.push_back(static_cast<int>(first + k++));
        species_of.push_back(static_cast<int>(sp));
        cell_of.push_back(cell);
        if (row == row_of.end()) rhs.push_back(expr::kNoNode);
        else if (op.rhs[row->second] == expr::kNoNode) rhs.push_back(cells.tendency(name, cell));
        else rhs.push_back(cells.at(op.rhs[row->second], cell));
      }
    }
  }
  OperatorJacobian out{op.name, grid,
                       kernel::compile_jacobian_of(std::move(sys), std::move(dofs), std::move(rhs), options),
                       std::move(species_of), std::move(cell_of), 0, options};
  if (out.grid && !op.rows.empty() && out.program.col.empty()) {
    const esm::System& s = *out.program.source;
    const int first = s.state_index(esm::cell_name(op.rows[0], out.cell.empty() ? std::vector<std::int64_t>{} : out.cell[0]));
    const auto& v = first >= 0 ? s.states[static_cast<std::size_t>(first)] : esm::FlatVariable{};
    throw Error("empty_jacobian", v.file, v.pointer,
                "operator '" + op.name + "' writes the state array " + op.rows[0] +
                    " but its Jacobian has no entry: nothing it reads was recognised as a state");
  }
  out.fingerprint = fingerprint_of(out);
  return out;
}

ScatterPlan plan_lane_dense(const OperatorJacobian& jac) {
  require_scalar_form(jac, LayoutKind::LaneDense);
  ScatterPlan p;
  p.kind = LayoutKind::LaneDense;
  p.fingerprint = jac.fingerprint;
  p.n = static_cast<int>(jac.n());
  p.slots = jac.n() * jac.n();
  const std::vector<int> rows = rows_of(jac.program);
  for (std::size_t k = 0; k < rows.size(); ++k)
    p.slot.push_back(static_cast<std::int32_t>(rows[k] * p.n + jac.program.col[k]));
  // (A value program writing all n^2 slots in place, zeros included, measured slower than
  // this: the tape then stores n^2 registers per lane instead of nnz plus a memset.)
  set_sources(p);
  return p;
}

OperatorJacobian scalar_operator_jacobian(std::string op, kernel::JacobianProgram program,
                                          const kernel::CompileOptions& options) {
  OperatorJacobian out{std::move(op), false, std::move(program), {}, {}, 0, options};
  out.fingerprint = fingerprint_of(out);
  return out;
}

ScatterPlan plan_lane_sparse(const OperatorJacobian& jac, const linalg::SparseLuPlan& lu) {
  require_scalar_form(jac, LayoutKind::LaneSparse);
  if (lu.n != static_cast<int>(jac.n()))
    throw Error("layout_not_applicable", "", "",
                "operator '" + jac.op + "' has " + std::to_string(jac.n()) + " unknowns per block; the LU plan is for " +
                    std::to_string(lu.n));
  ScatterPlan p;
  p.kind = LayoutKind::LaneSparse;
  p.fingerprint = jac.fingerprint;
  p.n = lu.n;
  p.slots = lu.nonzeros();
  p.in_place = true;
  // Slots from the factor pattern itself (not from_input, which belongs to whatever pattern
  // the LU was planned for): an entry the factor lacks is refused, not written elsewhere.
  const std::vector<int> rows = rows_of(jac.program);
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const int pr = lu.position[static_cast<std::size_t>(rows[k])];
    const int pc = lu.position[static_cast<std::size_t>(jac.program.col[k])];
    const auto b = lu.col.begin() + lu.row_ptr[static_cast<std::size_t>(pr)];
    const auto e = lu.col.begin() + lu.row_ptr[static_cast<std::size_t>(pr) + 1];
    const auto it = std::lower_bound(b, e, pc);
    if (it == e || *it != pc) cannot_hold(jac, rows[k], jac.program.col[k], "has no slot in the LU plan's factor pattern");
    p.slot.push_back(static_cast<std::int32_t>(it - lu.col.begin()));
  }
  // A value program whose output q is factor slot q (0 at fill and at diagonals J lacks):
  // the LU storage is written in place, fully, with no zeroing pass and no copy.
  esm::System copy = *jac.program.source;
  const NodeId zero = copy.pool.number(0.0);
  std::vector<NodeId> outputs(p.slots, zero);
  for (std::size_t k = 0; k < p.slot.size(); ++k) outputs[static_cast<std::size_t>(p.slot[k])] = jac.program.entries[k];
  // Column by column, as compile_jacobian_of orders its own program; the slots no entry fills
  // (zeros) first.
  std::vector<std::size_t> order;
  order.reserve(p.slots);
  std::vector<bool> filled(p.slots, false);
  for (std::int32_t q : p.slot) filled[static_cast<std::size_t>(q)] = true;
  for (std::size_t q = 0; q < p.slots; ++q)
    if (!filled[q]) order.push_back(q);
  for (std::size_t k : kernel::column_major_order(jac.program.col))
    order.push_back(static_cast<std::size_t>(p.slot[k]));
  p.direct = kernel::compile_outputs(copy, outputs, jac.options, order);
  return p;
}

ScatterPlan plan_csr(const OperatorJacobian& jac) {
  ScatterPlan p;
  p.kind = LayoutKind::Csr;
  p.fingerprint = jac.fingerprint;
  p.n = static_cast<int>(jac.n());
  p.slots = jac.nonzeros();
  p.in_place = true;
  for (std::size_t k = 0; k < jac.nonzeros(); ++k) p.slot.push_back(static_cast<std::int32_t>(k));
  return p;
}

ScatterPlan plan_column_banded(const OperatorJacobian& jac, const Plan& plan, const Operator& op) {
  if (!jac.grid || op.locality != Locality::Column || op.column_bandwidth < 0 || op.name != jac.op)
    throw Error("layout_not_applicable", "", "",
                "operator '" + jac.op + "' is not a column operator of a gridded plan; the column_banded layout holds "
                    "one band matrix per grid column");
  std::size_t vertical = plan.axes.size();
  for (std::size_t d = 0; d < plan.axes.size(); ++d)
    if (plan.axes[d] == op.column_axis) vertical = d;
  if (vertical == plan.axes.size())
    throw Error("layout_not_applicable", "", "", "operator '" + jac.op + "' has no vertical axis among the plan's axes");
  ScatterPlan p;
  p.kind = LayoutKind::ColumnBanded;
  p.fingerprint = jac.fingerprint;
  p.levels = static_cast<int>(plan.extents[vertical]);
  p.species = static_cast<int>(op.block.species.size());
  p.n = p.levels * p.species;
  p.half_bandwidth = static_cast<int>((op.column_bandwidth + 1) * p.species - 1);
  p.slots = static_cast<std::size_t>(2 * p.half_bandwidth + 1) * static_cast<std::size_t>(p.n);
  std::size_t columns = 1;
  for (std::size_t d = 0; d < plan.extents.size(); ++d)
    if (d != vertical) columns *= static_cast<std::size_t>(plan.extents[d]);
  p.storage_lanes = columns;
  // Per dof: its grid column and its index within the column.
  std::vector<std::int64_t> column_of(jac.n()), index_of(jac.n());
  for (std::size_t i = 0; i < jac.n(); ++i) {
    const auto& cell = jac.cell[i];
    if (cell.size() != plan.axes.size())
      cannot_hold(jac, static_cast<int>(i), static_cast<int>(i), "belongs to an array not over the grid's axes");
    std::int64_t c = 0, stride = 1;
    for (std::size_t d = 0; d < cell.size(); ++d) {
      if (d == vertical) continue;
      c += (cell[d] - 1) * stride;
      stride *= plan.extents[d];
    }
    column_of[i] = c;
    index_of[i] = (cell[vertical] - 1) * p.species + jac.species[i];
  }
  const std::vector<int> rows = rows_of(jac.program);
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const int r = rows[k], c = jac.program.col[k];
    if (column_of[static_cast<std::size_t>(r)] != column_of[static_cast<std::size_t>(c)])
      cannot_hold(jac, r, c, "couples two grid columns");
    const std::int64_t i = index_of[static_cast<std::size_t>(r)], j = index_of[static_cast<std::size_t>(c)];
    if (std::abs(i - j) > p.half_bandwidth)
      cannot_hold(jac, r, c, "lies outside the planned column bandwidth " + std::to_string(op.column_bandwidth));
    p.slot.push_back(static_cast<std::int32_t>((j - i + p.half_bandwidth) * p.n + i));
    p.lane.push_back(static_cast<std::int32_t>(column_of[static_cast<std::size_t>(r)]));
  }
  // Columns may differ in pattern (a boundary column): every slot is zeroed in every column,
  // then the nonzeros are scattered over it.
  for (std::size_t q = 0; q < p.slots; ++q) p.zero_slots.push_back(static_cast<std::int32_t>(q));
  return p;
}

namespace {

const kernel::Program& program_of(const OperatorJacobian& jac, const ScatterPlan& plan) {
  return plan.direct ? *plan.direct : jac.program.values;
}

void check_pair(const OperatorJacobian& jac, const ScatterPlan& plan) {
  if (plan.fingerprint != jac.fingerprint)
    throw Error("layout_from_another_build", "", "",
                std::string("this ") + layout_name(plan.kind) + " scatter plan was made for another Jacobian program than "
                    "operator '" + jac.op + "''s");
}

/// out[q * L + l] = slab[source[q] * L + l], or 0 where source[q] < 0; W = L when W > 0.
template <class T, std::size_t W>
void gather_slots(const ScatterPlan& plan, const T* slab, T* out, std::size_t L) {
  const std::size_t width = W > 0 ? W : L;
  for (std::size_t q = 0; q < plan.slots; ++q) {
    T* dst = out + q * width;
    const std::int32_t k = plan.source[q];
    if (k < 0) {
      for (std::size_t l = 0; l < width; ++l) dst[l] = T(0);
    } else {
      const T* src = slab + static_cast<std::size_t>(k) * width;
      for (std::size_t l = 0; l < width; ++l) dst[l] = src[l];
    }
  }
}

template <class T>
T* slab_of(JacWorkspace& ws);
template <>
double* slab_of<double>(JacWorkspace& ws) { return ws.slab64.data(); }
template <>
float* slab_of<float>(JacWorkspace& ws) { return ws.slab32.data(); }

}  // namespace

JacWorkspace make_workspace(const OperatorJacobian& jac, const ScatterPlan& plan, std::size_t lanes, kernel::DType dtype) {
  check_pair(jac, plan);
  JacWorkspace w{plan.fingerprint, plan.kind, lanes, program_of(jac, plan).make_workspace(lanes, dtype), {}, {}};
  if (!plan.in_place) {
    if (dtype == kernel::DType::F64) w.slab64.assign(jac.nonzeros() * lanes, 0.0);
    else w.slab32.assign(jac.nonzeros() * lanes, 0.0f);
  }
  return w;
}

void prepare(const OperatorJacobian& jac, const ScatterPlan& plan, JacWorkspace& ws, std::span<const double> p) {
  check_pair(jac, plan);
  program_of(jac, plan).prepare(ws.ws, p);
}

template <class T>
void eval_into(const OperatorJacobian& jac, const ScatterPlan& plan, JacWorkspace& ws, kernel::LaneView<const T> u,
               std::span<const double> t, T* out, std::span<const kernel::ForcingField<T>> forcing) {
  check_pair(jac, plan);
  if (ws.fingerprint != plan.fingerprint || ws.kind != plan.kind)
    throw Error("layout_from_another_build", "", "", "the workspace was made for another scatter plan");
  const std::size_t L = u.columns;
  if (L > ws.lanes || (plan.storage_lanes && L != 1))
    throw Error("assembly_size_mismatch", "", "",
                std::to_string(L) + " lanes given; the workspace holds " + std::to_string(ws.lanes) +
                    (plan.storage_lanes ? " and a gridded operator takes one instance per call" : ""));
  kernel::RunArgs<T> a;
  a.u = u;
  a.t = t;
  a.forcing = forcing;
  if (plan.in_place) {
    a.du = {out, plan.slots, L, L};
    kernel::run(program_of(jac, plan), ws.ws, a);
    return;
  }
  T* slab = slab_of<T>(ws);
  a.du = {slab, jac.nonzeros(), L, L};
  kernel::run(program_of(jac, plan), ws.ws, a);
  const std::size_t SL = plan.storage_lanes ? plan.storage_lanes : L;
  const std::size_t nnz = jac.nonzeros();
  if (plan.lane.empty()) {
    // Storage in slot order: sequential writes, the slab (nonzeros x L) read from cache. The
    // usual block widths get loops of fixed length (vectorized; a runtime L is not at -O2).
    switch (L) {
      case 4: gather_slots<T, 4>(plan, slab, out, L); break;
      case 8: gather_slots<T, 8>(plan, slab, out, L); break;
      case 16: gather_slots<T, 16>(plan, slab, out, L); break;
      case 32: gather_slots<T, 32>(plan, slab, out, L); break;
      case 64: gather_slots<T, 64>(plan, slab, out, L); break;
      default: gather_slots<T, 0>(plan, slab, out, L); break;
    }
  } else {
    for (const std::int32_t q : plan.zero_slots) std::fill_n(out + static_cast<std::size_t>(q) * SL, SL, T(0));
    for (std::size_t k = 0; k < nnz; ++k)
      out[static_cast<std::size_t>(plan.slot[k]) * SL + static_cast<std::size_t>(plan.lane[k])] = slab[k];
  }
}

template <class T>
void apply(const OperatorJacobian& jac, const ScatterPlan& plan, const T* values, std::size_t lanes, const T* v, T* y) {
  check_pair(jac, plan);
  const auto& rp = jac.program.row_ptr;
  const auto& col = jac.program.col;
  const std::size_t L = lanes;
  if (!plan.lane.empty()) {
    const std::size_t SL = plan.storage_lanes;
    for (std::size_t r = 0; r + 1 < rp.size(); ++r)
      for (int k = rp[r]; k < rp[r + 1]; ++k)
        y[r] += values[static_cast<std::size_t>(plan.slot[k]) * SL + static_cast<std::size_t>(plan.lane[k])] *
                v[static_cast<std::size_t>(col[k])];
    return;
  }
  for (std::size_t r = 0; r + 1 < rp.size(); ++r) {
    T* yr = y + r * L;
    for (int k = rp[r]; k < rp[r + 1]; ++k) {
      const T* jk = values + static_cast<std::size_t>(plan.slot[k]) * L;
      const T* vc = v + static_cast<std::size_t>(col[k]) * L;
      for (std::size_t l = 0; l < L; ++l) yr[l] += jk[l] * vc[l];
    }
  }
}

template <class T>
void apply_transpose(const OperatorJacobian& jac, const ScatterPlan& plan, const T* values, std::size_t lanes,
                     const double* lambda, double* g) {
  check_pair(jac, plan);
  const auto& rp = jac.program.row_ptr;
  const auto& col = jac.program.col;
  const std::size_t L = lanes;
  if (!plan.lane.empty()) {
    const std::size_t SL = plan.storage_lanes;
    for (std::size_t r = 0; r + 1 < rp.size(); ++r)
      for (int k = rp[r]; k < rp[r + 1]; ++k)
        g[static_cast<std::size_t>(col[k])] +=
            static_cast<double>(values[static_cast<std::size_t>(plan.slot[k]) * SL + static_cast<std::size_t>(plan.lane[k])]) *
            lambda[r];
    return;
  }
  for (std::size_t r = 0; r + 1 < rp.size(); ++r) {
    const double* lr = lambda + r * L;
    for (int k = rp[r]; k < rp[r + 1]; ++k) {
      const T* jk = values + static_cast<std::size_t>(plan.slot[k]) * L;
      double* gc = g + static_cast<std::size_t>(col[k]) * L;
      for (std::size_t l = 0; l < L; ++l) gc[l] += static_cast<double>(jk[l]) * lr[l];
    }
  }
}

template void eval_into<double>(const OperatorJacobian&, const ScatterPlan&, JacWorkspace&, kernel::LaneView<const double>,
                                std::span<const double>, double*, std::span<const kernel::ForcingField<double>>);
template void eval_into<float>(const OperatorJacobian&, const ScatterPlan&, JacWorkspace&, kernel::LaneView<const float>,
                               std::span<const double>, float*, std::span<const kernel::ForcingField<float>>);
template void apply<double>(const OperatorJacobian&, const ScatterPlan&, const double*, std::size_t, const double*, double*);
template void apply<float>(const OperatorJacobian&, const ScatterPlan&, const float*, std::size_t, const float*, float*);
template void apply_transpose<double>(const OperatorJacobian&, const ScatterPlan&, const double*, std::size_t,
                                      const double*, double*);
template void apply_transpose<float>(const OperatorJacobian&, const ScatterPlan&, const float*, std::size_t,
                                     const double*, double*);

}  // namespace esi::plan
