// The Expander: the value of an array expression at one cell (or, in relative mode, over a box
// of cells), shared by the cell-by-cell form (expand.cpp) and the per-region form (regions.cpp).
// Its member functions are defined by idea: expander.cpp (cells, regions, build-time
// comparisons), static_values.cpp, eval.cpp (symbols, gathers, makearray), index_sets.cpp
// (ranges, ragged sets), aggregate.cpp (aggregate, argmin/argmax), joins.cpp, derived_sets.cpp
// (derived index sets, skolem, rank) and geometry.cpp (polygon leaves).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "esi/core/error.hpp"
#include "esm/flatten/flatten_internal.hpp"

namespace esi::esm::detail::arrays {

using expr::NodeId;
using expr::Op;
using expr::Pool;

/// Visits each node of `root` once, in pre-order, left to right; `visit(id)` returns false to
/// skip the node's children. Iterative: expressions nest up to kMaxExpressionDepth.
template <class Visit>
void walk(const Pool& pool, NodeId root, Visit&& visit) {
  std::vector<NodeId> stack{root};
  std::unordered_set<NodeId> seen;
  while (!stack.empty()) {
    const NodeId id = stack.back();
    stack.pop_back();
    if (!seen.insert(id).second || !visit(id)) continue;
    const auto kids = pool.children(id);
    for (std::size_t i = kids.size(); i-- > 0;) stack.push_back(kids[i]);
  }
}

/// A position along one axis. `v` is its value at the cell being evaluated. When a region
/// program is formed (relative mode), `axis` >= 0 says the position moves with the output cell
/// along that output axis (at output cell x it is x[axis] + (v - rep[axis])); -1 that it is the
/// same at every cell.
struct Ix {
  std::int64_t v = 0;
  int axis = -1;
};

/// A build-time number (index arithmetic, filters) that may move with the cell like Ix.
struct SVal {
  double v = 0;
  int axis = -1;
};

/// Thrown in relative mode when an expression is not one program over a box of cells (it
/// reads literal data or tables at cell-dependent positions, or compares positions along two
/// axes): the document then becomes cells one by one, as before.
struct NotRelative {
  std::string why;
};

/// Thrown (only while a gather probes its indices) when an index reads a value known only
/// while the model runs: the gather then selects its cell at run time.
struct RuntimeIndex {
  std::string name;  ///< the value read (what a derived index set cannot be computed from)
  bool parameter = false;  ///< a parameter without a constant value (not a state)
};

inline std::vector<Ix> absolute(const std::vector<std::int64_t>& cell) {
  std::vector<Ix> out;
  for (auto v : cell) out.push_back({v, -1});
  return out;
}
inline std::vector<std::int64_t> plain(const std::vector<Ix>& pos) {
  std::vector<std::int64_t> out;
  for (const Ix& x : pos) out.push_back(x.v);
  return out;
}

/// Where an expression is being evaluated: the cell's position along the axes of the value
/// being produced. `axes` names them when the value is a declared array (then operands align
/// by index-set name); an empty `axes` with a non-empty `pos` is an anonymous (positional) frame.
struct Frame {
  std::vector<std::string> axes;
  std::vector<Ix> pos;
  bool scalar() const { return pos.empty(); }
};

/// The range of one aggregate index (§4.3.1).
struct Range {
  std::int64_t start = 1, step = 1, stop = 0;
  std::string from;  ///< index-set name when given as {"from": set}
  /// For {"from": S, "of": [i, ...]} over a ragged S: the enclosing indices whose members
  /// it iterates (empty for every other range).
  std::vector<expr::StrId> of;
  bool ragged() const { return !of.empty(); }
  bool contains(std::int64_t v) const {
    return step > 0 ? v >= start && v <= stop && (v - start) % step == 0
                    : v <= start && v >= stop && (start - v) % (-step) == 0;
  }
};

/// `over` with each ragged index moved after the indices it depends on (otherwise the
/// order is kept: the first index is the outermost, spec §4.3.1's accumulation order).
void parents_first(std::vector<std::pair<expr::StrId, Range>>& over);

/// One join key column's value at the current index combination: a number (an integer id
/// or a categorical position) known when the model is built, with its member name when it
/// is a categorical index, or an expression read while the model runs.
struct KeyValue {
  SVal number;
  std::optional<std::string> member;
  NodeId runtime = expr::kNoNode;
};

/// The node whose `id` is `id` (an aggregate or intersect_polygon) in the equations, with
/// the file and pointer of its equation.
struct Producer {
  NodeId node = expr::kNoNode;
  std::string file, pointer;
};

class Expander {
 public:
  Expander(FlattenState& st) : st_(st), pool_(st.sys.pool) {
    for (const auto& [name, shape] : st.arrays) array_ids_.emplace(pool_.intern(name), &shape);
  }

  void locate(const std::string& file, const std::string& pointer) {
    file_ = file;
    pointer_ = pointer;
  }

  /// The value of `e` at one cell (or the scalar value when `f` is scalar), with index
  /// symbols already bound by a left-hand side.
  NodeId at(NodeId e, const Frame& f, const std::vector<std::pair<expr::StrId, Ix>>& bindings = {});

  /// Whether `e` needs this pass: it mentions an array, an index symbol or an array operation.
  bool needs_cells(NodeId e);

  /// The parsed attributes of a node (parsed once: every cell reads them again).
  const json& attrs(NodeId id);

  /// Relative mode (per-region programs): positions carry the output axis they move with,
  /// reads of arrays become relative symbols ("C.x[@0+1,@1,3]": output axis 0 plus one,
  /// output axis 1, absolute 3), and every build-time comparison that involves a moving
  /// position narrows [lo, hi], the box of output cells on which the expression formed at
  /// `rep` holds unchanged.
  void begin_region(const std::vector<std::int64_t>& rep, const std::vector<std::int64_t>& lo,
                    const std::vector<std::int64_t>& hi);
  void end_region() { relative_ = false; }
  /// Arrays that get no cells in the per-region form (observed and parameter arrays): an
  /// absolute read of one of their cells outside a region program cannot be served.
  std::set<std::string> grid_only_;
  /// Comparisons that involved a moving position so far: an expression formed without any
  /// is the same program in every box.
  std::uint64_t moving_tests() const { return moving_tests_; }
  /// Brackets the forming of one sub-expression to learn the box of output cells on which it
  /// alone holds: `open` sets the region aside, `close` returns the sub-expression's own box
  /// and narrows the region set aside by it.
  std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>> open_box();
  std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>> close_box(
      std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>> saved);
  void narrow(const std::vector<std::int64_t>& lo, const std::vector<std::int64_t>& hi);
  const std::vector<std::int64_t>& region_lo() const { return lo_; }
  const std::vector<std::int64_t>& region_hi() const { return hi_; }
  /// The output cell's position along each output axis, moving with it.
  std::vector<Ix> moving(const std::vector<std::int64_t>& rep) const;

  /// `a op b` at the representative cell; in relative mode also narrows the region to the
  /// output cells where the outcome is the same (op one of Lt, Le, Gt, Ge, Eq, Ne).
  bool test(SVal a, Op op, SVal b);
  bool test(Ix a, Op op, std::int64_t b);

  /// Cells of parameter array `name` that expanded expressions read.
  const std::set<std::vector<std::int64_t>>& used_cells(const std::string& name) { return used_[name]; }

  const ArrayShape* array_of(NodeId symbol) const {
    const expr::Node& n = pool_.node(symbol);
    if (n.op != Op::Symbol) return nullptr;
    auto it = array_ids_.find(n.name);
    return it == array_ids_.end() ? nullptr : it->second;
  }

  [[noreturn]] void fail(const std::string& code, const std::string& message) const {
    throw Error(code, file_, pointer_, message);
  }

  /// Materializes every derived index set of the document (sizes the arrays shaped over them).
  void materialize_derived_sets();

  /// While set (the equation of an array in FlattenState::coordinate_targets is expanded), an
  /// unbound index symbol naming a spatial coordinate of these cells reads its value there.
  void coordinates_of(const ArrayShape* cells) { coordinates_ = cells; }

 private:
  const ArrayShape* coordinates_ = nullptr;
  /// The coordinate `name` of the cell at `f` (spec §11.4, §6.6.5): along the axis it names
  /// (an axis of the cells, else x / lon the first, y / lat the second, z / lev the third), the
  /// `coordinates` registry's `values` of that name when they have one entry per cell of the
  /// axis, else the cell's node on the unit interval, (i - 1) / (N - 1). kNoNode when `name`
  /// is not a coordinate of these cells.
  NodeId coordinate(std::string_view name, const Frame& f);
  FlattenState& st_;
  Pool& pool_;
  std::unordered_map<expr::StrId, const ArrayShape*> array_ids_;
  std::unordered_map<NodeId, json> attrs_cache_;
  std::unordered_map<NodeId, std::vector<expr::StrId>> symbols_cache_;
  /// Per makearray value: (index symbol, axis position) pairs its `index` nodes use.
  std::unordered_map<NodeId, std::vector<std::pair<expr::StrId, std::size_t>>> implicit_cache_;
  std::map<std::string, std::set<std::vector<std::int64_t>>> used_;

  bool relative_ = false;
  std::vector<std::int64_t> rep_, lo_, hi_;
  std::uint64_t moving_tests_ = 0;
  int static_nesting_ = 0;
  int runtime_probe_ = 0;  ///< > 0 while gather() probes whether its indices are static

  std::vector<std::uint8_t> needs_memo_;  // by node: 0 unknown, 1 no, 2 yes
  std::string file_, pointer_;
  /// Index symbol bindings ('$'-prefixed names), innermost last.
  std::vector<std::pair<expr::StrId, Ix>> env_;
  /// Memo of one evaluation context (one cell under one set of index bindings).
  struct MemoHash {
    std::size_t operator()(const std::pair<NodeId, std::uint64_t>& k) const {
      return std::hash<std::uint64_t>()((k.second << 32) ^ k.first) * 0x9e3779b97f4a7c15ull;
    }
  };
  std::unordered_map<std::pair<NodeId, std::uint64_t>, NodeId, MemoHash> memo_;
  std::uint64_t context_ = 0, next_context_ = 1;
  int static_depth_ = 0;

  /// > 0 while join keys must be read as build-time numbers (an argmin's join).
  int static_keys_ = 0;
  /// Derived index sets being materialized, outermost first (a set met again is a cycle).
  std::vector<std::string> deriving_;
  /// For rank(S): each bound index symbol and the index set it draws from, innermost last.
  std::vector<std::pair<expr::StrId, std::string>> drawn_env_;

  // ---- cells and names (expander.cpp) ----

  /// The symbol of one cell, remembering parameter cells (declared only where read); in
  /// relative mode the relative read ("C.x[@0-1,@1,2]").
  NodeId cell_symbol(const std::string& name, const std::vector<Ix>& cell);
  std::string relative_name(const std::string& name, const std::vector<Ix>& cell) const;

  std::string name_of(NodeId id) const { return std::string(pool_.str(pool_.node(id).name)); }

  /// Copies: evaluating an operand interns nodes, which may move the pool's child storage that
  /// a span from pool_.args() points into.
  std::vector<NodeId> args_of(NodeId id) const {
    const auto a = pool_.args(id);
    return {a.begin(), a.end()};
  }
  std::vector<NodeId> children_of(NodeId id) const {
    const auto c = pool_.children(id);
    return {c.begin(), c.end()};
  }

  std::string pretty(NodeId symbol) const {
    std::string s = name_of(symbol);
    return s.starts_with("$") ? s.substr(1) : s;
  }

  std::optional<Ix> bound(expr::StrId sym) const {
    for (auto it = env_.rbegin(); it != env_.rend(); ++it)
      if (it->first == sym) return it->second;
    return std::nullopt;
  }

  // ---- static integers: indices, region bounds, filters (static_values.cpp) ----

  /// Evaluates an index or filter expression, which must be known when the model is built. In
  /// relative mode a value may move with the output cell (offset arithmetic `i + 1`); anything
  /// but a shift of one moving position is not a region program (NotRelative).
  SVal static_value(NodeId e);
  /// The build-time value of a scalar or one cell ("C.nbr[2,1]"): a constant parameter's
  /// default, or an observed whose definition folds to a number (a connectivity table written
  /// as an equation). Anything that changes while the model runs is not static.
  double static_constant(NodeId symbol);
  /// A constant parameter's value at `cell` given by FlattenOptions::inputs (by flat name, or a
  /// name that ends the flat name after a dot and names no other input): one number for every
  /// cell or a nested array, first axis outermost; nullopt when none is given or it does not fit
  /// (apply_inputs reports a misfit).
  std::optional<double> input_value(const std::string& array, const std::vector<std::int64_t>& cell) const;
  Ix static_int(NodeId e, const char* what);
  /// A region or range bound as it stands in the JSON (metaparameters already folded).
  std::int64_t json_int(const json& j, const char* what);

  // ---- evaluation (eval.cpp) ----

  NodeId eval(NodeId e, const Frame& f);

  /// Runs `body` in a fresh memo context (new index bindings or a new frame).
  template <class F>
  NodeId in_context(F&& body) {
    const std::uint64_t saved = context_;
    context_ = next_context_++;
    const NodeId r = body();
    context_ = saved;
    return r;
  }

  NodeId eval_uncached(NodeId e, const Frame& f);
  /// A bare reference to array `a` inside a value over frame `f`: named operands align by
  /// index-set name (a subset of the frame's axes, in any order), anonymous frames positionally.
  NodeId symbol_cell(NodeId sym, const ArrayShape& a, const Frame& f);
  NodeId const_cell(const json& value, const std::vector<Ix>& pos, const char* what);
  /// index(A, i1, ..., in) with static indices.
  NodeId gather(NodeId e, const Frame& f);
  /// A gather whose position along some axes is known only while the model runs (a
  /// connectivity table reloaded on a schedule or a remesh, an index computed from states):
  /// the cell is selected at run time by comparing the position with each candidate,
  /// ifelse(p == 1, x[1], ifelse(p == 2, x[2], ... fallback)), so the value read is the
  /// cell's own, bit for bit. A position matching no cell reads 0 for states and observeds
  /// (spec §4.3.3); parameters have no out-of-range value, so there it reads NaN, which stops
  /// a run at the first non-finite value instead of hiding the error.
  NodeId runtime_gather(const std::string& name, const ArrayShape& a, std::vector<Ix> idx,
                        const std::vector<NodeId>& runtime);
  /// Spec §4.3.3: a gather of a state or observed outside its extent reads 0; constant data
  /// (parameters) has no such value and is an error.
  NodeId out_of_range(const std::string& name, const ArrayShape& a, const std::vector<Ix>& idx,
                      std::size_t d);

  // makearray (§4.3.2)
  NodeId makearray_cell(NodeId e, const Frame& f);
  /// The value of a makearray entry at frame position `f.pos` of region [lo, hi].
  NodeId region_value(NodeId value, const Frame& f, const std::vector<std::int64_t>& lo,
                      const std::vector<std::int64_t>& hi);
  /// Binds each unbound index symbol of `value` used at position d of an `index` (bare or in
  /// offset arithmetic such as `i + 1`) to pos[d].
  void bind_implicit_indices(NodeId value, const std::vector<Ix>& pos);
  bool is_array_valued(NodeId e);

  // reshape, transpose, concat (§4.3.5; shape_ops.cpp)
  /// The extents of an array-valued expression (an anonymous operand's shape): a variable's,
  /// a literal's, a shape operator's, a makearray's bounding stops, an aggregate's output
  /// ranges, or the broadcast of an elementwise expression's operands (Julia's convention:
  /// left-aligned, trailing axes padded with 1). Empty for a scalar.
  std::vector<std::int64_t> extents_of(NodeId e);
  std::vector<std::int64_t> extents_uncached(NodeId e);
  std::unordered_map<NodeId, std::vector<std::int64_t>> extents_cache_;
  /// The positions an anonymous result of `extents` is read at in frame `f`: its axes align
  /// with the frame's positionally, an axis of extent 1 is read at 1 (it broadcasts).
  std::vector<Ix> positional(const Frame& f, const std::vector<std::int64_t>& extents, const char* what);
  /// A transpose's `perm` (result axis k is operand axis perm[k]; default: the axes reversed).
  std::vector<std::size_t> permutation(NodeId e, std::size_t rank);
  std::size_t concat_axis(NodeId e);  ///< 0-based
  NodeId transpose_cell(NodeId e, const Frame& f);
  NodeId reshape_cell(NodeId e, const Frame& f);
  NodeId concat_cell(NodeId e, const Frame& f);

  // ---- index sets and ranges (index_sets.cpp) ----

  /// Whether `v` is in `r`, narrowing the region in relative mode.
  bool contains(const Range& r, Ix v);
  Range range_of(const json& r, const std::string& sym);
  /// The declaration of index set `name` when it is ragged (schema IndexSet kind "ragged": a
  /// per-parent inner set given by an `offsets` factor, its size for each parent, and a
  /// `values` factor, its k-th member), else nullptr.
  const json* ragged_set(const std::string& name) const;
  /// The flat name of the array a ragged set names as its `role` factor (a document-scoped
  /// index set names it as its model declares it).
  std::string ragged_factor(const std::string& set, const char* role);
  /// An integer cell of a ragged set's factor, known when the model is built.
  std::int64_t ragged_int(const std::string& set, const std::string& array, const std::vector<std::int64_t>& cell);
  /// The members of a ragged range at the current values of its enclosing indices, in the
  /// order the `values` factor stores them: values[parent..., k] for k = 1 .. offsets[parent...].
  std::vector<std::int64_t> ragged_members(const Range& r, expr::StrId sym);
  /// Visits every combination of the indices `over`, whose values sit in env_[first + i]: the
  /// first index outermost, each ascending through its range, a ragged one through the members
  /// of its enclosing indices' set in stored order (recomputed when those move).
  template <class Visit>
  void each_combination(const std::vector<std::pair<expr::StrId, Range>>& over, std::size_t first, Visit&& visit);
  /// The extent an unranged contracted index runs over: the axis of the first array it indexes.
  Range inferred_range(NodeId body, expr::StrId sym);
  /// '$'-symbols of `body` in first-appearance (pre-order) order (cached: it does not depend
  /// on the cell).
  const std::vector<expr::StrId>& symbols_of(NodeId body);
  void symbols_in_order(NodeId body, std::vector<expr::StrId>& out);

  // ---- aggregate (§4.3.1) and argmin / argmax (§4.2) (aggregate.cpp) ----

  /// The ⊕ of an aggregate: "+", "*", "max", "min" or "or". The semiring names its (⊕, ⊗)
  /// pair; the body is written with its ⊗ already spelled out (`i * j` under max_product,
  /// `i + j` under min_sum), so only ⊕ matters here.
  std::string reduction_of(const json& attrs);
  NodeId identity_of(const std::string& reduce);
  /// The terms of a reduction combined by ⊕ (a single term under bool_and_or is still a truth
  /// value, 1 or 0, not the body's number).
  NodeId reduced(std::vector<NodeId>& terms, const std::string& reduce);
  NodeId aggregate_cell(NodeId e, const Frame& f);
  /// The value of the `arg` index (1-based) at which the body is smallest (largest), over the
  /// combinations of the node's `ranges` in ascending order; equal values resolve to the
  /// smallest arg (the normative tie-break). A body known when the model is built gives the
  /// index as a number; otherwise the comparisons are made while the model runs, one strict
  /// comparison per candidate in ascending order, which keeps the first (smallest) optimum.
  NodeId argmin_cell(NodeId e, bool max);

  // ---- join (§4.3.1; RFC semiring-faq §5.3) (joins.cpp) ----

  /// The index of this aggregate that draws from index set `set` (exactly one must).
  /// `key` is the join key as written; `array` says it is a variable over `set`, not the set.
  expr::StrId index_drawing_from(const std::string& set,
                                 const std::vector<std::pair<expr::StrId, std::string>>& drawn_from,
                                 const std::string& key, bool array = false);
  KeyValue index_key(expr::StrId id, const std::vector<std::pair<expr::StrId, std::string>>& drawn_from);
  KeyValue key_value(const std::string& key, const std::vector<std::pair<expr::StrId, std::string>>& drawn_from);
  /// Whether the current index combination passes every join clause: nullopt when a key
  /// known at build time excludes it, kNoNode when it is admitted outright, otherwise the
  /// condition (on keys read while the model runs) that admits it.
  std::optional<NodeId> join_condition(const json& join,
                                       const std::vector<std::pair<expr::StrId, std::string>>& drawn_from);

  // ---- derived index sets, skolem and rank (RFC semiring-faq §5.5, §5.7; spec §8.6.1)
  // (derived_sets.cpp) ----

  bool is_derived(const std::string& set) const;
  /// The size of derived index set `set`, materializing it (and, through the ranges and arrays
  /// its producer reads, the sets it depends on) the first time.
  std::int64_t derived_size(const std::string& set);
  /// An array's shape with the derived index sets it is shaped over materialized.
  const ArrayShape& ready(const ArrayShape& a);
  Producer find_producer(const std::string& id);
  /// The derived set whose `from_faq` is the producer `id` (materialized).
  const DerivedSet& set_produced_by(const std::string& id, const char* what);
  DerivedSet materialize(const std::string& set);
  /// The members of the set a `distinct` aggregate produces: every combination of its ranges
  /// that passes its filter and joins mints its `key`; equal keys are one member, and members
  /// are in the sorted order of their keys (RFC §5.7), so the result does not depend on the
  /// enumeration order.
  void distinct_members(NodeId e, const std::string& set, DerivedSet& out);
  /// The value of a key (`skolem(label, args...)` or a plain expression) when the model is
  /// built: its label and argument values.
  std::pair<std::string, std::vector<double>> static_key(NodeId key);
  double skolem_id(const std::pair<std::string, std::vector<double>>& key);
  /// A skolem term used as a value (a bin key stored in an array, a join column): the number
  /// that stands for its key. Keys are minted when the model is built (RFC §5.7).
  NodeId skolem_value(NodeId e);
  /// rank(S): the dense 0-based id of the member of S that the innermost index drawing from S
  /// is at (its position in S's sorted order, minus one).
  NodeId rank_value(NodeId e);
  /// One cell of the array a `distinct` aggregate defines over the set it produces: the
  /// reduction of its body over the combinations whose key minted that member.
  NodeId distinct_cell(NodeId e, const Frame& f);

  // ---- polygon_intersection_area and intersect_polygon (§8.6.1) (geometry.cpp) ----

  /// A polygon operand's vertices, known when the model is built: a [verts, 2] array (a
  /// literal, or an array whose definition folds to numbers).
  std::vector<std::array<double, 2>> polygon_operand(NodeId operand, const char* which, const char* op);
  /// Whether a geometry leaf's `manifold` is the unit sphere (great-circle edges, lon-lat in
  /// degrees, areas in sr) rather than the plane; 'geodesic' (ellipsoidal edges) is refused.
  bool on_sphere(NodeId e, const char* op);
  /// The overlap area of two polygons: Sutherland-Hodgman clipping of one by the other (which
  /// must be convex), then the shoelace area of the clip ring, or on the sphere its spherical
  /// excess (steradians).
  NodeId polygon_intersection_area(NodeId e);
  /// The overlap of two polygon operands (spec §8.6.1: deduplicated rings of at least 3
  /// vertices): the first clipped by the second, Sutherland-Hodgman, one of them convex.
  std::vector<std::array<double, 2>> clipped(NodeId first, NodeId second, const char* op, bool spherical);
  /// The overlap ring of an `intersect_polygon`: distinct vertices, counter-clockwise,
  /// starting at the lowest-leftmost one, closed by repeating it; empty when the polygons do
  /// not overlap in an area.
  std::vector<std::array<double, 2>> intersection_ring(NodeId e);
  /// Cell (v, c) of the ring an `intersect_polygon` returns: coordinate c of vertex v.
  NodeId ring_cell(NodeId e, const Frame& f);
};

template <class Visit>
void Expander::each_combination(const std::vector<std::pair<expr::StrId, Range>>& over, std::size_t first,
                                Visit&& visit) {
  const std::size_t n = over.size();
  std::vector<std::int64_t> pos(n, 0), len(n, 0);
  std::vector<std::vector<std::int64_t>> members(n);
  auto place = [&](std::size_t i) {
    const Range& r = over[i].second;
    env_[first + i].second =
        Ix{r.ragged() ? members[i][static_cast<std::size_t>(pos[i])] : r.start + pos[i] * r.step, -1};
  };
  auto setup = [&](std::size_t i) {
    const Range& r = over[i].second;
    pos[i] = 0;
    if (r.ragged()) {
      members[i] = ragged_members(r, over[i].first);
      len[i] = static_cast<std::int64_t>(members[i].size());
    } else {
      const std::int64_t span = r.step > 0 ? r.stop - r.start : r.start - r.stop;
      len[i] = span < 0 ? 0 : span / (r.step > 0 ? r.step : -r.step) + 1;
    }
    if (len[i] > 0) place(i);
  };
  // The deepest index below `level` that can take its next value; nullopt when none can.
  auto advance = [&](std::size_t level) -> std::optional<std::size_t> {
    for (std::size_t e = level; e-- > 0;)
      if (++pos[e] < len[e]) {
        place(e);
        return e;
      }
    return std::nullopt;
  };
  std::size_t level = 0;
  for (;;) {
    while (level < n) {
      setup(level);
      if (len[level] > 0) {
        ++level;
        continue;
      }
      const auto e = advance(level);
      if (!e) return;
      level = *e + 1;
    }
    visit();
    const auto e = advance(n);
    if (!e) return;
    level = *e + 1;
  }
}

}  // namespace esi::esm::detail::arrays
