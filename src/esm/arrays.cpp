// Arrays to cells (spec §4.3, §9.6.8): every shaped variable becomes one scalar per cell, named
// "Comp.x[i,j,k]" (1-based), and every array equation one scalar equation per cell it defines.
//
// The meaning of an array expression at one cell is computed here, once per cell, by walking
// the expression with the cell's coordinates: `aggregate` binds its output indices to the cell
// and spells its contraction out as one n-ary sum (a left fold in ascending index order, which
// is also the normative order of prefix scans), `makearray` picks the last region holding the
// cell, `index` gathers with static indices (out of range: 0 for states and observeds, an
// error for constant data), and elementwise arithmetic aligns named operands by index-set name.
// The scalar equations that result are what the kernels compile, so a gridded document runs on
// every existing method and target. The per-region program compiler (one program per region,
// independent of the grid size) is the next step; this expansion is its reference.
#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "esi/core/error.hpp"
#include "esi/expr/parse.hpp"
#include "esm/flatten_internal.hpp"
#include "esm/sphere_polygon.hpp"

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

namespace {

using expr::NodeId;
using expr::Op;
using expr::Pool;

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

std::string list_json(const std::vector<std::string>& v) { return json(v).dump(); }

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

std::vector<Ix> absolute(const std::vector<std::int64_t>& cell) {
  std::vector<Ix> out;
  for (auto v : cell) out.push_back({v, -1});
  return out;
}
std::vector<std::int64_t> plain(const std::vector<Ix>& pos) {
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
  NodeId at(NodeId e, const Frame& f, const std::vector<std::pair<expr::StrId, Ix>>& bindings = {}) {
    memo_.clear();
    context_ = next_context_++;
    env_ = bindings;
    drawn_env_.clear();
    const NodeId r = eval(e, f);
    env_.clear();
    return r;
  }

  /// Whether `e` needs this pass: it mentions an array, an index symbol or an array operation.
  bool needs_cells(NodeId e) {
    if (e < needs_memo_.size() && needs_memo_[e] != 0) return needs_memo_[e] == 2;
    const expr::Node& n = pool_.node(e);
    bool r = false;
    switch (n.op) {
      case Op::Symbol:
        r = array_ids_.count(n.name) || pool_.str(n.name).starts_with("$");
        break;
      case Op::Index: case Op::MakeArray: case Op::Aggregate: case Op::Broadcast: case Op::Const:
      case Op::Skolem: case Op::Rank: case Op::IntersectPolygon:
        r = true;
        break;
      default:
        for (NodeId k : pool_.children(e)) r = r || needs_cells(k);
    }
    if (e >= needs_memo_.size()) needs_memo_.resize(std::max<std::size_t>(pool_.size(), e + 1), 0);
    needs_memo_[e] = r ? 2 : 1;
    return r;
  }

  /// The parsed attributes of a node (parsed once: every cell reads them again).
  const json& attrs(NodeId id) {
    auto it = attrs_cache_.find(id);
    if (it == attrs_cache_.end()) it = attrs_cache_.emplace(id, expr::attrs_json(pool_, id)).first;
    return it->second;
  }

  /// Relative mode (per-region programs): positions carry the output axis they move with,
  /// reads of arrays become relative symbols ("C.x[@0+1,@1,3]": output axis 0 plus one,
  /// output axis 1, absolute 3), and every build-time comparison that involves a moving
  /// position narrows [lo, hi], the box of output cells on which the expression formed at
  /// `rep` holds unchanged.
  void begin_region(const std::vector<std::int64_t>& rep, const std::vector<std::int64_t>& lo,
                    const std::vector<std::int64_t>& hi) {
    relative_ = true;
    rep_ = rep;
    lo_ = lo;
    hi_ = hi;
  }
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
  std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>> open_box() {
    auto saved = std::make_pair(lo_, hi_);
    constexpr std::int64_t kFar = std::int64_t{1} << 40;
    std::fill(lo_.begin(), lo_.end(), -kFar);
    std::fill(hi_.begin(), hi_.end(), kFar);
    return saved;
  }
  std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>> close_box(
      std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>> saved) {
    auto own = std::make_pair(lo_, hi_);
    lo_ = std::move(saved.first);
    hi_ = std::move(saved.second);
    narrow(own.first, own.second);
    return own;
  }
  void narrow(const std::vector<std::int64_t>& lo, const std::vector<std::int64_t>& hi) {
    for (std::size_t d = 0; d < lo_.size(); ++d) {
      lo_[d] = std::max(lo_[d], lo[d]);
      hi_[d] = std::min(hi_[d], hi[d]);
    }
  }
  const std::vector<std::int64_t>& region_lo() const { return lo_; }
  const std::vector<std::int64_t>& region_hi() const { return hi_; }
  /// The output cell's position along each output axis, moving with it.
  std::vector<Ix> moving(const std::vector<std::int64_t>& rep) const {
    std::vector<Ix> out;
    for (std::size_t d = 0; d < rep.size(); ++d) out.push_back({rep[d], static_cast<int>(d)});
    return out;
  }

  /// `a op b` at the representative cell; in relative mode also narrows the region to the
  /// output cells where the outcome is the same (op one of Lt, Le, Gt, Ge, Eq, Ne).
  bool test(SVal a, Op op, SVal b) {
    auto truth = [op](double d) {
      switch (op) {
        case Op::Lt: return d < 0;
        case Op::Le: return d <= 0;
        case Op::Gt: return d > 0;
        case Op::Ge: return d >= 0;
        case Op::Eq: return d == 0;
        default: return d != 0;
      }
    };
    const double d0 = a.v - b.v;
    const bool now = truth(d0);
    if (!relative_ || a.axis == b.axis) return now;  // fixed, or a difference along one axis
    ++moving_tests_;
    if (a.axis >= 0 && b.axis >= 0)
      throw NotRelative{"a build-time comparison of positions along two different axes"};
    const int axis = a.axis >= 0 ? a.axis : b.axis;
    const double s = a.axis >= 0 ? 1.0 : -1.0;  // d(x) = d0 + s (x - rep)
    const double r = static_cast<double>(rep_[axis]);
    const double t = r - d0 / s;  // d(t) = 0
    const bool below = truth(-s), above = truth(s), at_t = truth(0.0);
    const bool t_int = t == std::floor(t);
    constexpr std::int64_t kFar = std::int64_t{1} << 40;
    std::int64_t lo = -kFar, hi = kFar;
    if (r < t) {
      hi = static_cast<std::int64_t>(std::ceil(t)) - 1;
      if (t_int && at_t == now) hi = above == now ? kFar : static_cast<std::int64_t>(t);
    } else if (r > t) {
      lo = static_cast<std::int64_t>(std::floor(t)) + 1;
      if (t_int && at_t == now) lo = below == now ? -kFar : static_cast<std::int64_t>(t);
    } else {
      lo = below == now ? -kFar : static_cast<std::int64_t>(t);
      hi = above == now ? kFar : static_cast<std::int64_t>(t);
    }
    lo_[axis] = std::max(lo_[axis], lo);
    hi_[axis] = std::min(hi_[axis], hi);
    return now;
  }
  bool test(Ix a, Op op, std::int64_t b) {
    return test(SVal{static_cast<double>(a.v), a.axis}, op, SVal{static_cast<double>(b), -1});
  }

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

 private:
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

  /// The symbol of one cell, remembering parameter cells (declared only where read); in
  /// relative mode the relative read ("C.x[@0-1,@1,2]").
  NodeId cell_symbol(const std::string& name, const std::vector<Ix>& cell) {
    if (relative_) return pool_.symbol(relative_name(name, cell));
    if (static_nesting_ == 0 && grid_only_.count(name))
      throw NotRelative{"'" + name + "' is read cell by cell outside an array equation"};
    auto d = st_.declared.find(name);
    if (d != st_.declared.end() && !d->second.unknown) used_[name].insert(plain(cell));
    return pool_.symbol(cell_name(name, plain(cell)));
  }
  std::string relative_name(const std::string& name, const std::vector<Ix>& cell) const {
    std::string out = name + "[";
    for (std::size_t d = 0; d < cell.size(); ++d) {
      if (d) out += ",";
      if (cell[d].axis < 0) {
        out += std::to_string(cell[d].v);
        continue;
      }
      const std::int64_t off = cell[d].v - rep_[cell[d].axis];
      out += "@" + std::to_string(cell[d].axis);
      if (off > 0) out += "+" + std::to_string(off);
      if (off < 0) out += std::to_string(off);
    }
    return out + "]";
  }
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

  // ---- static integers (indices, region bounds, filters) ----

  std::optional<Ix> bound(expr::StrId sym) const {
    for (auto it = env_.rbegin(); it != env_.rend(); ++it)
      if (it->first == sym) return it->second;
    return std::nullopt;
  }

  /// Evaluates an index or filter expression, which must be known when the model is built. In
  /// relative mode a value may move with the output cell (offset arithmetic `i + 1`); anything
  /// but a shift of one moving position is not a region program (NotRelative).
  SVal static_value(NodeId e) {
    const expr::Node n = pool_.node(e);
    const std::vector<NodeId> args = args_of(e);
    auto a = [&](std::size_t i) { return static_value(args[i]); };
    auto fixed = [](double v) { return SVal{v, -1}; };
    auto moving_op = [&]() -> SVal {
      throw NotRelative{"'" + std::string(expr::op_name(n.op)) +
                        "' of a cell position in an index expression"};
    };
    auto cmp = [&](Op op) { return fixed(test(a(0), op, a(1)) ? 1.0 : 0.0); };
    auto truthy = [&](SVal x) { return test(x, Op::Ne, fixed(0.0)); };
    switch (n.op) {
      case Op::Number: return fixed(n.number);
      case Op::Symbol:
        if (auto v = bound(n.name)) return SVal{static_cast<double>(v->v), v->axis};
        return fixed(static_constant(e));
      case Op::Add: {
        SVal v = a(0);
        for (std::size_t i = 1; i < args.size(); ++i) {
          const SVal x = a(i);
          if (v.axis >= 0 && x.axis >= 0) return moving_op();
          v = SVal{v.v + x.v, std::max(v.axis, x.axis)};
        }
        return v;
      }
      case Op::Mul: {
        SVal v = a(0);
        for (std::size_t i = 1; i < args.size(); ++i) {
          const SVal x = a(i);
          if (v.axis >= 0 && x.axis >= 0) return moving_op();
          const SVal& m = v.axis >= 0 ? v : x;
          const SVal& c = v.axis >= 0 ? x : v;
          if (m.axis >= 0 && c.v == 0) v = fixed(0.0);
          else if (m.axis >= 0 && c.v != 1) return moving_op();
          else v = SVal{v.v * x.v, m.axis};
        }
        return v;
      }
      case Op::Sub: {
        if (args.size() == 1) {
          const SVal x = a(0);
          return x.axis >= 0 ? moving_op() : fixed(-x.v);
        }
        const SVal x = a(0), y = a(1);
        if (y.axis >= 0 && x.axis != y.axis) return moving_op();
        return SVal{x.v - y.v, x.axis == y.axis ? -1 : x.axis};
      }
      case Op::Neg: {
        const SVal x = a(0);
        return x.axis >= 0 ? moving_op() : fixed(-x.v);
      }
      case Op::Div: {
        const SVal x = a(0), y = a(1);
        if (y.axis >= 0 || (x.axis >= 0 && y.v != 1)) return moving_op();
        return SVal{x.v / y.v, x.axis};
      }
      case Op::Min: case Op::Max: {
        SVal v = a(0);
        for (std::size_t i = 1; i < args.size(); ++i) {
          const SVal x = a(i);
          const bool keep = test(v, n.op == Op::Min ? Op::Le : Op::Ge, x);
          if (!keep) v = x;
        }
        return v;
      }
      case Op::Abs: {
        const SVal x = a(0);
        if (x.axis < 0) return fixed(std::abs(x.v));
        if (!test(x, Op::Ge, fixed(0.0))) return moving_op();
        return x;
      }
      case Op::Floor: case Op::Ceil: {
        const SVal x = a(0);
        if (x.axis >= 0) return x;  // positions are integers
        return fixed(n.op == Op::Floor ? std::floor(x.v) : std::ceil(x.v));
      }
      case Op::Lt: return cmp(Op::Lt);
      case Op::Le: return cmp(Op::Le);
      case Op::Gt: return cmp(Op::Gt);
      case Op::Ge: return cmp(Op::Ge);
      case Op::Eq: return cmp(Op::Eq);
      case Op::Ne: return cmp(Op::Ne);
      case Op::And: {
        bool v = true;
        for (std::size_t i = 0; i < args.size() && v; ++i) v = truthy(a(i));
        return fixed(v);
      }
      case Op::Or: {
        bool v = false;
        for (std::size_t i = 0; i < args.size() && !v; ++i) v = truthy(a(i));
        return fixed(v);
      }
      case Op::Not: return fixed(!truthy(a(0)));
      case Op::True: return fixed(1.0);
      case Op::IfElse: return truthy(a(0)) ? a(1) : a(2);
      case Op::Skolem: return fixed(skolem_id(static_key(e)));
      case Op::Index: {
        // A gather from literal data (connectivity, enum tables) is static too.
        ++static_nesting_;
        struct Unnest {
          int& n;
          ~Unnest() { --n; }
        } unnest{static_nesting_};
        const NodeId v = gather(e, Frame{});
        if (pool_.node(v).op == Op::Number) return fixed(pool_.node(v).number);
        if (pool_.node(v).op != Op::Symbol) {
          // A gather that itself selects at run time: its value is not known now either.
          if ((runtime_probe_ > 0 && static_depth_ == 0) || !deriving_.empty())
            throw RuntimeIndex{"a table read at a position known only while the model runs"};
          fail("unsupported_array_feature",
               "an index reads a table at a position known only while the model runs; such "
               "indices are supported only as the position of a gather");
        }
        return fixed(static_constant(v));
      }
      default:
        fail("unsupported_array_feature",
             "'" + std::string(expr::op_name(n.op)) +
                 "' in an index expression: gathers at run-time positions are not supported yet "
                 "(indices must be computable when the model is built)");
    }
  }

  /// The build-time value of a scalar or one cell ("C.nbr[2,1]"): a constant parameter's
  /// default, or an observed whose definition folds to a number (a connectivity table written
  /// as an equation). Anything that changes while the model runs is not static.
  double static_constant(NodeId symbol) {
    const std::string name = name_of(symbol);
    if (name.find('@') != std::string::npos)
      throw NotRelative{"an index reads '" + name + "', a cell-dependent table entry"};
    std::string array = name;
    std::vector<std::int64_t> cell;
    if (const auto open = name.find('['); open != std::string::npos && name.back() == ']') {
      array = name.substr(0, open);
      std::string rest = name.substr(open + 1, name.size() - open - 2);
      for (std::size_t p = 0; p <= rest.size();) {
        const std::size_t comma = std::min(rest.find(',', p), rest.size());
        cell.push_back(std::stoll(rest.substr(p, comma - p)));
        p = comma + 1;
      }
    }
    const auto d = st_.declared.find(array);
    const bool parameter = d != st_.declared.end() && !d->second.unknown;
    auto runtime = [&]() -> double {
      // A gather asked for this position may read it while the model runs instead.
      if ((runtime_probe_ > 0 && static_depth_ == 0) || !deriving_.empty())
        throw RuntimeIndex{"'" + pretty(symbol) + "'", parameter};
      fail("unsupported_array_feature",
           "an index reads '" + pretty(symbol) +
               "', a value known only while the model runs; gathers at run-time positions are "
               "not supported yet (indices must be computable when the model is built)");
    };
    if (auto d = st_.declared.find(array); d != st_.declared.end() && !d->second.unknown) {
      if (d->second.var.cadence != Cadence::Constant) return runtime();
      // The caller's input replaces the default (apply_inputs), so it is the value here too.
      if (auto v = input_value(array, cell)) return *v;
      if (d->second.var.default_value) return *d->second.var.default_value;
      return runtime();
    }
    auto o = st_.observed_eqs.find(array);
    if (o == st_.observed_eqs.end() || static_depth_ > 64) return runtime();
    // Evaluate that definition at the cell, with this evaluation's state set aside.
    auto saved_env = std::move(env_);
    auto saved_memo = std::move(memo_);
    const std::uint64_t saved_context = context_;
    const bool saved_relative = relative_;
    relative_ = false;
    ++static_nesting_;
    ++static_depth_;
    env_.clear();
    memo_.clear();
    context_ = next_context_++;
    const auto a = st_.arrays.find(array);
    Frame f;
    if (a != st_.arrays.end()) f = Frame{a->second.axes, absolute(cell)};
    const NodeId v = eval(o->second.rhs, f);
    const double value = static_value(v).v;
    --static_depth_;
    --static_nesting_;
    relative_ = saved_relative;
    env_ = std::move(saved_env);
    memo_ = std::move(saved_memo);
    context_ = saved_context;
    return value;
  }

  /// A constant parameter's value at `cell` given by FlattenOptions::inputs (by flat name, or a
  /// name that ends the flat name after a dot and names no other input): one number for every
  /// cell or a nested array, first axis outermost; nullopt when none is given or it does not fit
  /// (apply_inputs reports a misfit).
  std::optional<double> input_value(const std::string& array, const std::vector<std::int64_t>& cell) const {
    if (!st_.inputs || !st_.inputs->is_object()) return std::nullopt;
    const json* v = nullptr;
    for (auto it = st_.inputs->begin(); it != st_.inputs->end(); ++it)
      if (it.key() == array ||
          (array.size() > it.key().size() && array.ends_with("." + it.key()) && !v))
        v = &*it;
    if (!v) return std::nullopt;
    if (!v->is_number())
      for (std::int64_t c : cell) {
        if (!v->is_array() || c < 1 || c > static_cast<std::int64_t>(v->size())) return std::nullopt;
        v = &(*v)[static_cast<std::size_t>(c - 1)];
      }
    if (!v->is_number()) return std::nullopt;
    return v->get<double>();
  }

  Ix static_int(NodeId e, const char* what) {
    const SVal s = static_value(e);
    const double v = s.v;
    if (!std::isfinite(v) || v != std::floor(v) || std::abs(v) > 1e15)
      fail("array_index_not_integer", std::string(what) + " evaluates to " + json(v).dump() +
                                          ", which is not an integer");
    return Ix{static_cast<std::int64_t>(v), s.axis};
  }

  /// A region or range bound as it stands in the JSON (metaparameters already folded).
  std::int64_t json_int(const json& j, const char* what) {
    if (j.is_number_integer()) return j.get<std::int64_t>();
    if (j.is_number_float() && j.get<double>() == std::floor(j.get<double>())) return j.get<std::int64_t>();
    if (j.is_object() && j.contains("op") && j.contains("args") && j["args"].is_array()) {
      const std::string op = j["op"].get<std::string>();
      std::vector<std::int64_t> v;
      for (const auto& x : j["args"]) v.push_back(json_int(x, what));
      if (op == "+" && !v.empty()) { std::int64_t s = 0; for (auto x : v) s += x; return s; }
      if (op == "*" && !v.empty()) { std::int64_t s = 1; for (auto x : v) s *= x; return s; }
      if (op == "-" && v.size() == 2) return v[0] - v[1];
      if (op == "-" && v.size() == 1) return -v[0];
      if (op == "/" && v.size() == 2 && v[1] != 0 && v[0] % v[1] == 0) return v[0] / v[1];
    }
    fail("array_index_not_static", std::string(what) + " " + j.dump() +
                                       " is not an integer known when the model is built (an "
                                       "unbound metaparameter?)");
  }

  // ---- evaluation ----

  NodeId eval(NodeId e, const Frame& f) {
    if (!needs_cells(e)) return e;  // the same at every cell: nothing to walk
    const auto key = std::make_pair(e, context_);
    if (auto m = memo_.find(key); m != memo_.end()) return m->second;
    const NodeId r = eval_uncached(e, f);
    memo_.emplace(key, r);
    return r;
  }

  /// Runs `body` in a fresh memo context (new index bindings or a new frame).
  template <class F>
  NodeId in_context(F&& body) {
    const std::uint64_t saved = context_;
    context_ = next_context_++;
    const NodeId r = body();
    context_ = saved;
    return r;
  }

  NodeId eval_uncached(NodeId e, const Frame& f) {
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

  /// A bare reference to array `a` inside a value over frame `f`: named operands align by
  /// index-set name (a subset of the frame's axes, in any order), anonymous frames positionally.
  NodeId symbol_cell(NodeId sym, const ArrayShape& a, const Frame& f) {
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

  NodeId const_cell(const json& value, const std::vector<Ix>& pos, const char* what) {
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

  /// index(A, i1, ..., in) with static indices.
  NodeId gather(NodeId e, const Frame& f) {
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

  /// A gather whose position along some axes is known only while the model runs (a
  /// connectivity table reloaded on a schedule or a remesh, an index computed from states):
  /// the cell is selected at run time by comparing the position with each candidate,
  /// ifelse(p == 1, x[1], ifelse(p == 2, x[2], ... fallback)), so the value read is the
  /// cell's own, bit for bit. A position matching no cell reads 0 for states and observeds
  /// (spec §4.3.3); parameters have no out-of-range value, so there it reads NaN, which stops
  /// a run at the first non-finite value instead of hiding the error.
  NodeId runtime_gather(const std::string& name, const ArrayShape& a, std::vector<Ix> idx,
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

  /// Spec §4.3.3: a gather of a state or observed outside its extent reads 0; constant data
  /// (parameters) has no such value and is an error.
  NodeId out_of_range(const std::string& name, const ArrayShape& a, const std::vector<Ix>& idx,
                      std::size_t d) {
    auto decl = st_.declared.find(name);
    if (decl != st_.declared.end() && decl->second.unknown) return pool_.number(0.0, true);
    fail("const_array_out_of_range",
         "'" + name + "' is read at " + cell_name(name, plain(idx)).substr(name.size()) + ", outside its " +
             std::to_string(a.extents[d]) + " entries along '" + a.axes[d] +
             "' (a parameter array has no out-of-range value)");
  }

  // ---- makearray (§4.3.2) ----

  NodeId makearray_cell(NodeId e, const Frame& f) {
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

  /// The value of a makearray entry at frame position `f.pos` of region [lo, hi].
  NodeId region_value(NodeId value, const Frame& f, const std::vector<std::int64_t>& lo,
                      const std::vector<std::int64_t>& hi) {
    const expr::Node& vn = pool_.node(value);
    if (vn.op == Op::Aggregate) {
      const json& attrs = this->attrs(value);
      const json out = attrs.value("output_idx", json::array());
      const json ranges = attrs.value("ranges", json::object());
      if (out.size() == f.pos.size()) return eval(value, f);
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

  /// Binds each unbound index symbol of `value` used at position d of an `index` (bare or in
  /// offset arithmetic such as `i + 1`) to pos[d].
  void bind_implicit_indices(NodeId value, const std::vector<Ix>& pos) {
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

  bool is_array_valued(NodeId e) {
    const expr::Node& n = pool_.node(e);
    switch (n.op) {
      case Op::Symbol: return array_of(e) != nullptr;
      case Op::MakeArray: return true;
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

  // ---- aggregate (§4.3.1) ----

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

  /// Whether `v` is in `r`, narrowing the region in relative mode.
  bool contains(const Range& r, Ix v) {
    if (v.axis < 0 || !relative_) return r.contains(v.v);
    if (r.step == 1) return test(v, Op::Ge, r.start) && test(v, Op::Le, r.stop);
    if (r.step == -1) return test(v, Op::Le, r.start) && test(v, Op::Ge, r.stop);
    throw NotRelative{"an output index with a strided range"};
  }

  Range range_of(const json& r, const std::string& sym) {
    Range out;
    if (r.is_object() && r.contains("from") && r["from"].is_string()) {
      out.from = r["from"].get<std::string>();
      if (const json* set = ragged_set(out.from)) {
        const json parents = set->value("of", json::array());
        const json of = r.value("of", json::array());
        if (!of.is_array() || of.size() != parents.size() || of.empty())
          fail("invalid_range", "index '" + sym + "' ranges over the ragged index set '" + out.from + "' of " +
                                    parents.dump() + ", so its range needs \"of\" naming " +
                                    std::to_string(parents.size()) +
                                    " enclosing index(es) whose members it iterates");
        for (const auto& p : of) {
          if (!p.is_string()) fail("invalid_range", "the \"of\" of index '" + sym + "' must name indices");
          out.of.push_back(pool_.intern("$" + p.get<std::string>()));
        }
        return out;
      }
      if (r.contains("of"))
        fail("invalid_range", "index '" + sym + "' has \"of\" but ranges over '" + out.from +
                                  "', which is not a ragged index set");
      auto size = st_.doc.index_set_sizes.find(out.from);
      if (size == st_.doc.index_set_sizes.end() && is_derived(out.from)) {
        out.stop = derived_size(out.from);
        return out;
      }
      if (size == st_.doc.index_set_sizes.end())
        fail("unsupported_array_feature", "index '" + sym + "' ranges over '" + out.from +
                                              "', an index set without a size (only interval "
                                              "index sets become cells so far)");
      out.stop = size->second;
      return out;
    }
    if (r.is_array() && (r.size() == 2 || r.size() == 3)) {
      out.start = json_int(r[0], "a range bound");
      out.stop = json_int(r[r.size() - 1], "a range bound");
      if (r.size() == 3) out.step = json_int(r[1], "a range step");
      if (out.step == 0) fail("invalid_range", "index '" + sym + "' has a range with step 0");
      return out;
    }
    fail("unsupported_array_feature", "index '" + sym + "' has the range " + r.dump() +
                                          ", a form not supported yet");
  }

  /// The declaration of index set `name` when it is ragged (schema IndexSet kind "ragged": a
  /// per-parent inner set given by an `offsets` factor, its size for each parent, and a
  /// `values` factor, its k-th member), else nullptr.
  const json* ragged_set(const std::string& name) const {
    auto sets = st_.doc.doc.find("index_sets");  // (not value(): a pointer into it is kept)
    if (sets == st_.doc.doc.end() || !sets->is_object()) return nullptr;
    auto it = sets->find(name);
    if (it == sets->end() || !it->is_object() || it->value("kind", std::string()) != "ragged") return nullptr;
    return &*it;
  }

  /// The flat name of the array a ragged set names as its `role` factor (a document-scoped
  /// index set names it as its model declares it).
  std::string ragged_factor(const std::string& set, const char* role) {
    const json& decl = *ragged_set(set);
    const std::string name = decl.value(role, std::string());
    const std::string where = "the ragged index set '" + set + "' names '" + name + "' as its " + role;
    if (st_.arrays.count(name)) return name;
    std::vector<std::string> hits;
    for (const auto& [flat, shape] : st_.arrays)
      if (flat.size() > name.size() + 1 && flat.ends_with("." + name)) hits.push_back(flat);
    if (hits.size() == 1) return hits[0];
    if (hits.empty())
      throw Error("undefined_variable", st_.doc.file, pointer_join(pointer_join("/index_sets", set), role),
                  where + ", but no model declares an array of that name");
    throw Error("ambiguous_reference", st_.doc.file, pointer_join(pointer_join("/index_sets", set), role),
                where + ", which several models declare (" + hits[0] + ", " + hits[1] + ")");
  }

  /// An integer cell of a ragged set's factor, known when the model is built.
  std::int64_t ragged_int(const std::string& set, const std::string& array, const std::vector<std::int64_t>& cell) {
    const ArrayShape& a = st_.arrays.at(array);
    if (a.extents.size() != cell.size())
      fail("invalid_ragged_set", "the ragged index set '" + set + "' reads '" + array + "' with " +
                                     std::to_string(cell.size()) + " indices, but it has " +
                                     std::to_string(a.extents.size()) + " axes");
    for (std::size_t d = 0; d < cell.size(); ++d)
      if (cell[d] < 1 || cell[d] > a.extents[d])
        fail("invalid_ragged_set", "the ragged index set '" + set + "' reads " + cell_name(array, cell) +
                                       ", outside '" + array + "' (" + std::to_string(a.extents[d]) +
                                       " along '" + a.axes[d] + "')");
    if (const ArrayShape* shape = array_of(pool_.symbol(array))) ready(*shape);
    double v = 0;
    ++runtime_probe_;
    try {
      v = static_constant(pool_.symbol(cell_name(array, cell)));
      --runtime_probe_;
    } catch (const RuntimeIndex&) {
      --runtime_probe_;
      fail("unsupported_array_feature",
           "the ragged index set '" + set + "' reads " + cell_name(array, cell) +
               ", which has no constant value in the document; its members are enumerated when the "
               "model is built, so its offsets and values must be known then");
    } catch (...) {
      --runtime_probe_;
      throw;
    }
    if (v != std::floor(v) || std::abs(v) > 9.0e15)
      fail("invalid_ragged_set", "the ragged index set '" + set + "' reads " + cell_name(array, cell) + " = " +
                                     std::to_string(v) + ", which is not an integer");
    return static_cast<std::int64_t>(v);
  }

  /// The members of a ragged range at the current values of its enclosing indices, in the
  /// order the `values` factor stores them: values[parent..., k] for k = 1 .. offsets[parent...].
  std::vector<std::int64_t> ragged_members(const Range& r, expr::StrId sym) {
    std::vector<std::int64_t> parent;
    for (expr::StrId p : r.of) {
      const auto ix = bound(p);
      if (!ix)
        fail("array_index_unbound", "index '" + std::string(pool_.str(sym)).substr(1) + "' iterates the members of '" +
                                        r.from + "' of index '" + std::string(pool_.str(p)).substr(1) +
                                        "', which no output index or range of the aggregate binds");
      if (relative_ && ix->axis >= 0) throw NotRelative{"the members of a ragged index set"};
      parent.push_back(ix->v);
    }
    const std::string offsets = ragged_factor(r.from, "offsets"), values = ragged_factor(r.from, "values");
    const std::int64_t n = ragged_int(r.from, offsets, parent);
    if (n < 0)
      fail("invalid_ragged_set", "the ragged index set '" + r.from + "' has " + std::to_string(n) +
                                     " members at " + cell_name(offsets, parent));
    std::vector<std::int64_t> out;
    std::vector<std::int64_t> cell = parent;
    cell.push_back(0);
    for (std::int64_t k = 1; k <= n; ++k) {
      cell.back() = k;
      out.push_back(ragged_int(r.from, values, cell));
    }
    return out;
  }

  /// `over` with each ragged index moved after the indices it depends on (otherwise the
  /// order is kept: the first index is the outermost, spec §4.3.1's accumulation order).
  static void parents_first(std::vector<std::pair<expr::StrId, Range>>& over) {
    std::vector<std::pair<expr::StrId, Range>> out, waiting;
    auto placed = [&](expr::StrId p) {
      for (const auto& [id, r] : out)
        if (id == p) return true;
      // not one of these indices: bound outside (an output index), or nowhere (reported then)
      for (const auto& [id, r] : over)
        if (id == p) return false;
      return true;
    };
    auto ready_now = [&](const Range& r) { return std::all_of(r.of.begin(), r.of.end(), placed); };
    for (auto& e : over) {
      if (e.second.ragged() && !ready_now(e.second)) {
        waiting.push_back(std::move(e));
        continue;
      }
      out.push_back(std::move(e));
      for (bool moved = true; moved;) {
        moved = false;
        for (auto it = waiting.begin(); it != waiting.end(); ++it)
          if (ready_now(it->second)) {
            out.push_back(std::move(*it));
            waiting.erase(it);
            moved = true;
            break;
          }
      }
    }
    for (auto& e : waiting) out.push_back(std::move(e));  // a cycle: ragged_members reports it
    over = std::move(out);
  }

  /// Visits every combination of the indices `over`, whose values sit in env_[first + i]: the
  /// first index outermost, each ascending through its range, a ragged one through the members
  /// of its enclosing indices' set in stored order (recomputed when those move).
  template <class Visit>
  void each_combination(const std::vector<std::pair<expr::StrId, Range>>& over, std::size_t first, Visit&& visit) {
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

  /// The extent an unranged contracted index runs over: the axis of the first array it indexes.
  Range inferred_range(NodeId body, expr::StrId sym) {
    std::optional<Range> found;
    walk(pool_, body, [&](NodeId id) {
      const expr::Node& n = pool_.node(id);
      if (found) return false;
      if (n.op == Op::Index) {
        const auto args = pool_.args(id);
        if (const ArrayShape* a = array_of(args[0]))
          for (std::size_t i = 1; i < args.size() && i - 1 < a->extents.size() && !found; ++i)
            if (pool_.node(args[i]).op == Op::Symbol && pool_.node(args[i]).name == sym)
              found = Range{1, 1, a->extents[i - 1], a->axes[i - 1]};
      }
      return true;
    });
    if (found) return *found;
    fail("array_index_unbound", "contracted index '" + std::string(pool_.str(sym)).substr(1) +
                                    "' has no range and indexes no array it could take one from");
  }

  /// '$'-symbols of `body` in first-appearance (pre-order) order.
  /// '$'-symbols of `body` in first-appearance (pre-order) order (cached: it does not depend
  /// on the cell).
  const std::vector<expr::StrId>& symbols_of(NodeId body) {
    auto cached = symbols_cache_.find(body);
    if (cached != symbols_cache_.end()) return cached->second;
    std::vector<expr::StrId> out;
    auto add = [&](expr::StrId s) {
      if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
    };
    walk(pool_, body, [&](NodeId id) {
      const expr::Node& n = pool_.node(id);
      if (n.op == Op::Symbol && pool_.str(n.name).starts_with("$")) add(n.name);
      if (n.op == Op::Aggregate || n.op == Op::Argmin || n.op == Op::Argmax) {
        // A nested reduction binds its own indices: only the others are free here.
        const json& a = attrs(id);
        std::set<expr::StrId> own;
        for (const auto& o : a.value("output_idx", json::array()))
          if (o.is_string()) own.insert(pool_.intern("$" + o.get<std::string>()));
        if (auto r = a.find("ranges"); r != a.end() && r->is_object())
          for (auto it = r->begin(); it != r->end(); ++it) own.insert(pool_.intern("$" + it.key()));
        for (NodeId k : children_of(id))
          for (expr::StrId sym : symbols_of(k))
            if (!own.count(sym)) add(sym);
        return false;
      }
      return true;
    });
    return symbols_cache_.emplace(body, std::move(out)).first->second;
  }

  void symbols_in_order(NodeId body, std::vector<expr::StrId>& out) {
    for (expr::StrId s : symbols_of(body))
      if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  }

  // ---- polygon_intersection_area (§8.6.1) ----

  /// A polygon operand's vertices, known when the model is built: a [verts, 2] array (a
  /// literal, or an array whose definition folds to numbers).
  std::vector<std::array<double, 2>> polygon_operand(NodeId operand, const char* which, const char* op) {
    std::vector<std::array<double, 2>> ring;
    const expr::Node& on = pool_.node(operand);
    if (on.op == Op::Const) {
      const json v = attrs(operand).value("value", json());
      if (!v.is_array()) fail("invalid_polygon", std::string("the ") + which + " polygon of '" + op + "' must be a [verts, 2] array");
      for (const auto& p : v) {
        if (!p.is_array() || p.size() != 2 || !p[0].is_number() || !p[1].is_number())
          fail("invalid_polygon", std::string("a vertex of the ") + which + " polygon is not a pair of numbers");
        ring.push_back({p[0].get<double>(), p[1].get<double>()});
      }
      return ring;
    }
    // A whole [verts, 2] array, or one ring of a stack of them: index(polys, i) of a
    // [cells, verts, 2] array (the leading indices fixed, the last two axes the ring).
    NodeId array_node = operand;
    std::vector<std::int64_t> lead;
    if (on.op == Op::Index && !pool_.args(operand).empty() && array_of(pool_.args(operand)[0])) {
      const std::vector<NodeId> args = args_of(operand);
      array_node = args[0];
      for (std::size_t i = 1; i < args.size(); ++i) {
        const Ix ix = static_int(args[i], "an index");
        if (relative_ && ix.axis >= 0) throw NotRelative{"a polygon operand at a cell-dependent position"};
        lead.push_back(ix.v);
      }
    }
    const ArrayShape* a = array_of(array_node);
    if (a) ready(*a);
    if (!a || a->extents.size() != lead.size() + 2 || a->extents.back() != 2)
      fail("invalid_polygon", std::string("the ") + which + " polygon of '" + op + "' must be an "
                              "array of shape [verts, 2] (lon-lat vertex pairs), or index(A, i, ...) "
                              "of an array whose last two axes are [verts, 2]");
    const std::string name = name_of(array_node);
    for (std::size_t d = 0; d < lead.size(); ++d)
      if (lead[d] < 1 || lead[d] > a->extents[d])
        fail("invalid_polygon", "the " + std::string(which) + " polygon is ring " + std::to_string(lead[d]) +
                                    " of '" + name + "', which has " + std::to_string(a->extents[d]) +
                                    " along '" + a->axes[d] + "'");
    for (std::int64_t v = 1; v <= a->extents[lead.size()]; ++v) {
      std::array<double, 2> xy{};
      for (std::int64_t c = 1; c <= 2; ++c) {
        ++runtime_probe_;
        try {
          std::vector<std::int64_t> cell = lead;
          cell.push_back(v);
          cell.push_back(c);
          xy[c - 1] = static_constant(pool_.symbol(cell_name(name, cell)));
          --runtime_probe_;
        } catch (const RuntimeIndex&) {
          --runtime_probe_;
          if (!deriving_.empty()) throw;
          fail("unsupported_array_feature",
               "'" + std::string(op) + "' of '" + name + "', whose vertices are known only while the "
               "model runs, is not supported yet (only polygons known when the model is built)");
        } catch (...) {
          --runtime_probe_;
          throw;
        }
      }
      ring.push_back(xy);
    }
    return ring;
  }

  /// Spec §8.6.1: consecutive duplicate vertices (the wrap pair included, so an explicit
  /// closing vertex too) are dropped under np.allclose's tolerance (atol 1e-8, rtol 1e-5).
  static std::vector<std::array<double, 2>> deduplicated(const std::vector<std::array<double, 2>>& ring) {
    auto close = [](const std::array<double, 2>& a, const std::array<double, 2>& b) {
      for (int k = 0; k < 2; ++k)
        if (!(std::abs(a[k] - b[k]) <= 1e-8 + 1e-5 * std::abs(b[k]))) return false;
      return true;
    };
    std::vector<std::array<double, 2>> out;
    for (const auto& p : ring)
      if (out.empty() || !close(out.back(), p)) out.push_back(p);
    while (out.size() > 1 && close(out.back(), out.front())) out.pop_back();
    return out;
  }

  static double signed_area(const std::vector<std::array<double, 2>>& ring) {
    double s = 0;
    for (std::size_t i = 0; i < ring.size(); ++i) {
      const auto& a = ring[i];
      const auto& b = ring[(i + 1) % ring.size()];
      s += a[0] * b[1] - b[0] * a[1];
    }
    return s / 2;
  }

  static bool convex(const std::vector<std::array<double, 2>>& ring) {
    int sign = 0;
    for (std::size_t i = 0; i < ring.size(); ++i) {
      const auto& a = ring[i];
      const auto& b = ring[(i + 1) % ring.size()];
      const auto& c = ring[(i + 2) % ring.size()];
      const double cross = (b[0] - a[0]) * (c[1] - b[1]) - (b[1] - a[1]) * (c[0] - b[0]);
      const int s = cross > 0 ? 1 : cross < 0 ? -1 : 0;
      if (s != 0 && sign != 0 && s != sign) return false;
      if (s != 0) sign = s;
    }
    return true;
  }

  /// Whether a geometry leaf's `manifold` is the unit sphere (great-circle edges, lon-lat in
  /// degrees, areas in sr) rather than the plane; 'geodesic' (ellipsoidal edges) is refused.
  bool on_sphere(NodeId e, const char* op) {
    const std::string manifold = attrs(e).value("manifold", std::string());
    if (manifold == "planar") return false;
    if (manifold == "spherical") return true;
    fail("unsupported_array_feature", std::string("'") + op + "' on the '" + manifold +
                                          "' manifold is not supported yet (only 'planar' and 'spherical')");
  }

  /// The overlap area of two polygons: Sutherland-Hodgman clipping of one by the other (which
  /// must be convex), then the shoelace area of the clip ring, or on the sphere its spherical
  /// excess (steradians).
  NodeId polygon_intersection_area(NodeId e) {
    const bool spherical = on_sphere(e, "polygon_intersection_area");
    const std::vector<NodeId> args = args_of(e);
    if (args.size() != 2) fail("invalid_polygon", "'polygon_intersection_area' takes two polygons");
    const auto subject = clipped(args[0], args[1], "polygon_intersection_area", spherical);
    const double area = subject.size() < 3 ? 0.0 : spherical ? sphere::area(subject) : std::abs(signed_area(subject));
    return pool_.number(area, false);
  }

  /// The overlap of two polygon operands (spec §8.6.1: deduplicated rings of at least 3
  /// vertices): the first clipped by the second, Sutherland-Hodgman, one of them convex.
  std::vector<std::array<double, 2>> clipped(NodeId first, NodeId second, const char* op, bool spherical) {
    auto a = deduplicated(polygon_operand(first, "first", op));
    auto b = deduplicated(polygon_operand(second, "second", op));
    for (const auto* ring : {&a, &b})
      if (ring->size() < 3)
        fail("invalid_polygon", std::string("a polygon of '") + op + "' has fewer than 3 distinct vertices");
    if (spherical) {
      auto ring = sphere::clip(a, b);
      if (!ring)
        fail("unsupported_array_feature",
             std::string("'") + op + "' on the sphere of two polygons neither of which is convex, or of a "
                                     "polygon wider than a hemisphere, is not supported yet");
      return *ring;
    }
    if (!convex(b)) std::swap(a, b);
    if (!convex(b))
      fail("unsupported_array_feature",
           std::string("'") + op + "' of two non-convex polygons is not supported yet (one must be convex)");
    if (signed_area(b) < 0) std::reverse(b.begin(), b.end());
    std::vector<std::array<double, 2>> subject = a;
    for (std::size_t i = 0; i < b.size() && !subject.empty(); ++i) {
      const auto& p = b[i];
      const auto& q = b[(i + 1) % b.size()];
      auto side = [&](const std::array<double, 2>& x) {
        return (q[0] - p[0]) * (x[1] - p[1]) - (q[1] - p[1]) * (x[0] - p[0]);
      };
      std::vector<std::array<double, 2>> out;
      for (std::size_t j = 0; j < subject.size(); ++j) {
        const auto& s = subject[j];
        const auto& t = subject[(j + 1) % subject.size()];
        const double ds = side(s), dt = side(t);
        if (ds >= 0) out.push_back(s);
        if ((ds >= 0) != (dt >= 0)) {
          const double r = ds / (ds - dt);
          out.push_back({s[0] + r * (t[0] - s[0]), s[1] + r * (t[1] - s[1])});
        }
      }
      subject = std::move(out);
    }
    return subject;
  }

  // ---- argmin / argmax (§4.2: index-returning reductions) ----

  /// The value of the `arg` index (1-based) at which the body is smallest (largest), over the
  /// combinations of the node's `ranges` in ascending order; equal values resolve to the
  /// smallest arg (the normative tie-break). A body known when the model is built gives the
  /// index as a number; otherwise the comparisons are made while the model runs, one strict
  /// comparison per candidate in ascending order, which keeps the first (smallest) optimum.
  NodeId argmin_cell(NodeId e, bool max) {
    const json& attrs = this->attrs(e);
    const char* op = max ? "argmax" : "argmin";
    for (const char* k : {"distinct", "key"})
      if (attrs.contains(k))
        fail("unsupported_array_feature",
             std::string("an '") + op + "' with '" + k + "' is not supported yet when arrays become cells");
    const std::vector<NodeId> kids = children_of(e);
    NodeId body = expr::kNoNode, filter = expr::kNoNode;
    if (auto x = attrs.find("expr"); x != attrs.end() && x->is_object() && x->contains("$child"))
      body = kids[(*x)["$child"].get<std::size_t>()];
    if (auto x = attrs.find("filter"); x != attrs.end() && x->is_object() && x->contains("$child"))
      filter = kids[(*x)["$child"].get<std::size_t>()];
    if (body == expr::kNoNode) fail("invalid_aggregate", std::string("an '") + op + "' needs an 'expr'");
    const json ranges = attrs.value("ranges", json::object());
    const std::string arg = attrs.value("arg", std::string());
    if (arg.empty() || !ranges.is_object() || !ranges.contains(arg))
      fail("invalid_aggregate", std::string("an '") + op + "' needs an 'arg' naming one of its 'ranges' indices");
    std::vector<std::pair<expr::StrId, Range>> over;
    for (auto it = ranges.begin(); it != ranges.end(); ++it) {
      over.emplace_back(pool_.intern("$" + it.key()), range_of(*it, it.key()));
      if (over.back().second.ragged())
        fail("unsupported_array_feature", std::string("an '") + op + "' over the ragged index set '" +
                                              over.back().second.from + "' is not supported yet");
    }
    const expr::StrId arg_id = pool_.intern("$" + arg);
    // A join prunes the candidates (the bin-skolem broad phase): its keys must be known when
    // the model is built, the enclosing aggregates' indices and these ranges place them.
    const json join = attrs.value("join", json::array());
    std::vector<std::pair<expr::StrId, std::string>> drawn_from = drawn_env_;
    for (const auto& [id, r] : over)
      if (!r.from.empty()) drawn_from.emplace_back(id, r.from);
    auto joined = [&]() {
      if (join.empty()) return true;
      ++runtime_probe_;
      ++static_keys_;
      try {
        const std::optional<NodeId> c = join_condition(join, drawn_from);
        --runtime_probe_;
        --static_keys_;
        if (c && *c != expr::kNoNode) throw RuntimeIndex{"a join key"};
        return c.has_value();
      } catch (const RuntimeIndex& why) {
        --runtime_probe_;
        --static_keys_;
        fail("unsupported_array_feature",
             std::string("an '") + op + "' whose join reads " + why.name +
                 ", known only while the model runs, is not supported yet (its join keys must be "
                 "known when the model is built)");
      }
    };

    const std::size_t mark = env_.size();
    for (const auto& [id, r] : over) env_.emplace_back(id, Ix{r.start, -1});
    std::vector<std::int64_t> value;
    for (const auto& [id, r] : over) value.push_back(r.start);
    auto in_range = [&](std::size_t i) {
      const Range& r = over[i].second;
      return r.step > 0 ? value[i] <= r.stop : value[i] >= r.stop;
    };
    bool empty = false;
    for (std::size_t i = 0; i < over.size(); ++i) empty = empty || !in_range(i);
    NodeId best_value = expr::kNoNode, best_arg = expr::kNoNode;
    const Op better = max ? Op::Gt : Op::Lt;
    while (!empty) {
      const bool admitted =
          (filter == expr::kNoNode || test(static_value(filter), Op::Ne, SVal{0.0, -1})) && joined();
      if (admitted) {
        const NodeId v = in_context([&] { return eval(body, Frame{}); });
        const NodeId g = pool_.number(static_cast<double>(bound(arg_id)->v), true);
        if (best_value == expr::kNoNode) {
          best_value = v;
          best_arg = g;
        } else if (pool_.node(v).op == Op::Number && pool_.node(best_value).op == Op::Number) {
          const double a = pool_.node(v).number, b = pool_.node(best_value).number;
          if (max ? a > b : a < b) {
            best_value = v;
            best_arg = g;
          }
        } else {
          const NodeId c = pool_.make(better, std::vector<NodeId>{v, best_value});
          best_arg = pool_.make(Op::IfElse, std::vector<NodeId>{c, g, best_arg});
          best_value = pool_.make(Op::IfElse, std::vector<NodeId>{c, v, best_value});
        }
      }
      std::size_t d = over.size();
      bool done = true;
      while (d-- > 0) {
        value[d] += over[d].second.step;
        if (in_range(d)) {
          env_[mark + d].second = Ix{value[d], -1};
          done = false;
          break;
        }
        value[d] = over[d].second.start;
        env_[mark + d].second = Ix{value[d], -1};
      }
      if (done) break;
    }
    env_.resize(mark);
    if (best_arg == expr::kNoNode)
      fail("argmin_empty_candidates",
           std::string("the '") + op + "' has no candidate (its ranges or filter admit none), so no index witnesses the optimum");
    return best_arg;
  }

  // ---- join (§4.3.1; RFC semiring-faq §5.3) ----

  /// One join key column's value at the current index combination: a number (an integer id
  /// or a categorical position) known when the model is built, with its member name when it
  /// is a categorical index, or an expression read while the model runs.
  struct KeyValue {
    SVal number;
    std::optional<std::string> member;
    NodeId runtime = expr::kNoNode;
  };

  /// The index of this aggregate that draws from index set `set` (exactly one must).
  /// `key` is the join key as written; `array` says it is a variable over `set`, not the set.
  expr::StrId index_drawing_from(const std::string& set,
                                 const std::vector<std::pair<expr::StrId, std::string>>& drawn_from,
                                 const std::string& key, bool array = false) {
    const std::string what = array ? "join key '" + key + "' is an array over index set '" + set + "'"
                                   : "join key '" + key + "' names index set '" + set + "'";
    std::optional<expr::StrId> found;
    for (const auto& [id, from] : drawn_from) {
      if (from != set) continue;
      if (found && *found != id)
        fail("invalid_join", what + ", from which several indices of the aggregate draw, so "
                                    "the key's position is ambiguous");
      found = id;
    }
    if (!found)
      fail("invalid_join", what + ", from which no index of the aggregate draws (give that "
                                  "index a range {\"from\": \"" + set + "\"})");
    return *found;
  }

  KeyValue index_key(expr::StrId id, const std::vector<std::pair<expr::StrId, std::string>>& drawn_from) {
    const auto v = bound(id);
    if (!v) fail("invalid_join", "join key '" + std::string(pool_.str(id)).substr(1) + "' is not bound here");
    KeyValue out{SVal{static_cast<double>(v->v), v->axis}, std::nullopt, expr::kNoNode};
    for (const auto& [sym, set] : drawn_from) {
      if (sym != id) continue;
      const json& sets = st_.doc.doc.value("index_sets", json::object());
      auto it = sets.find(set);
      if (it == sets.end() || !it->is_object() || !it->contains("members")) break;
      const json& members = (*it)["members"];
      if (relative_ && v->axis >= 0)
        throw NotRelative{"a join on the categorical members of a moving index"};
      if (v->v >= 1 && v->v <= static_cast<std::int64_t>(members.size()) && members[v->v - 1].is_string())
        out.member = members[v->v - 1].get<std::string>();
      break;
    }
    return out;
  }

  KeyValue key_value(const std::string& key, const std::vector<std::pair<expr::StrId, std::string>>& drawn_from) {
    if (key.starts_with("$")) return index_key(pool_.intern(key), drawn_from);
    if (key.starts_with("#")) return index_key(index_drawing_from(key.substr(1), drawn_from, key.substr(1)), drawn_from);
    // A variable: a key column over index sets of the aggregate, read at their indices (a
    // constant parameter's value is known now; anything else is read while the model runs).
    if (auto d = st_.declared.find(key); d != st_.declared.end() && !d->second.unknown &&
                                         d->second.var.cadence == Cadence::Constant &&
                                         d->second.var.default_value)
      return KeyValue{SVal{*d->second.var.default_value, -1}, std::nullopt, expr::kNoNode};
    auto a = st_.arrays.find(key);
    if (a == st_.arrays.end()) {
      // A derived index set is computed when the model is built: its join keys must be too.
      if (!deriving_.empty() || static_keys_ > 0)
        return KeyValue{SVal{static_constant(pool_.symbol(key)), -1}, std::nullopt, expr::kNoNode};
      return KeyValue{SVal{}, std::nullopt, pool_.symbol(key)};
    }
    std::vector<Ix> idx;
    for (const auto& axis : a->second.axes) idx.push_back(*bound(index_drawing_from(axis, drawn_from, key, true)));
    if (!deriving_.empty() || static_keys_ > 0)
      return KeyValue{SVal{static_constant(pool_.symbol(cell_name(key, plain(idx)))), -1}, std::nullopt, expr::kNoNode};
    return KeyValue{SVal{}, std::nullopt, cell_symbol(key, idx)};
  }

  /// Whether the current index combination passes every join clause: nullopt when a key
  /// known at build time excludes it, kNoNode when it is admitted outright, otherwise the
  /// condition (on keys read while the model runs) that admits it.
  std::optional<NodeId> join_condition(const json& join,
                                       const std::vector<std::pair<expr::StrId, std::string>>& drawn_from) {
    std::vector<NodeId> runtime;
    for (const json& clause : join)
      for (const json& pair : clause["on"]) {
        const KeyValue a = key_value(pair[0].get<std::string>(), drawn_from);
        const KeyValue b = key_value(pair[1].get<std::string>(), drawn_from);
        if (a.runtime == expr::kNoNode && b.runtime == expr::kNoNode) {
          const bool equal = a.member && b.member ? *a.member == *b.member
                                                  : test(a.number, Op::Eq, b.number);
          if (!equal) return std::nullopt;
          continue;
        }
        auto node = [&](const KeyValue& k) {
          if (k.runtime != expr::kNoNode) return k.runtime;
          if (k.number.axis >= 0) return pool_.symbol(relative_name("$index", {Ix{static_cast<std::int64_t>(k.number.v), k.number.axis}}));
          return pool_.number(k.number.v, k.number.v == std::floor(k.number.v));
        };
        runtime.push_back(pool_.make(Op::Eq, std::vector<NodeId>{node(a), node(b)}));
      }
    if (runtime.empty()) return expr::kNoNode;
    if (runtime.size() == 1) return runtime[0];
    return pool_.make(Op::And, runtime);
  }

  /// The ⊕ of an aggregate: "+", "*", "max", "min" or "or". The semiring names its (⊕, ⊗)
  /// pair; the body is written with its ⊗ already spelled out (`i * j` under max_product,
  /// `i + j` under min_sum), so only ⊕ matters here.
  std::string reduction_of(const json& attrs) {
    const std::string semiring = attrs.value("semiring", std::string("sum_product"));
    std::string reduce = attrs.value("reduce", std::string("+"));
    if (semiring == "max_product" || semiring == "max_sum") reduce = "max";
    else if (semiring == "min_product" || semiring == "min_sum") reduce = "min";
    else if (semiring == "bool_and_or") reduce = "or";  // (∨, false; ∧, true)
    else if (semiring != "sum_product")
      fail("unsupported_array_feature", "the '" + semiring + "' semiring is not supported yet");
    if (reduce != "+" && reduce != "*" && reduce != "max" && reduce != "min" &&
        !(reduce == "or" && semiring == "bool_and_or"))
      fail("invalid_reduce", "reduce '" + reduce + "' is not one of +, *, max, min");
    return reduce;
  }

  NodeId identity_of(const std::string& reduce) {
    return pool_.number(reduce == "+" || reduce == "or" ? 0.0 : reduce == "*" ? 1.0
                        : reduce == "max" ? -std::numeric_limits<double>::infinity()
                                          : std::numeric_limits<double>::infinity(),
                        reduce == "+" || reduce == "*" || reduce == "or");
  }

  /// The terms of a reduction combined by ⊕ (a single term under bool_and_or is still a truth
  /// value, 1 or 0, not the body's number).
  NodeId reduced(std::vector<NodeId>& terms, const std::string& reduce) {
    if (terms.empty()) return identity_of(reduce);
    if (terms.size() == 1 && reduce == "or")
      return pool_.make(Op::Ne, std::vector<NodeId>{terms[0], pool_.number(0.0, true)});
    if (terms.size() == 1) return terms[0];
    const Op op = reduce == "+" ? Op::Add : reduce == "*" ? Op::Mul : reduce == "max" ? Op::Max
                  : reduce == "min" ? Op::Min : Op::Or;
    return pool_.make(op, terms);
  }

  NodeId aggregate_cell(NodeId e, const Frame& f) {
    const json& attrs = this->attrs(e);
    if (attrs.contains("distinct") && attrs["distinct"] == true) return distinct_cell(e, f);
    for (const char* k : {"distinct", "key", "of"})
      if (attrs.contains(k))
        fail("unsupported_array_feature",
             std::string("an aggregate with '") + k + "' is not supported yet when arrays become cells");
    const std::string reduce = reduction_of(attrs);

    const std::vector<NodeId> kids = children_of(e);
    const expr::Node& n = pool_.node(e);
    NodeId body = expr::kNoNode, filter = expr::kNoNode;
    if (auto x = attrs.find("expr"); x != attrs.end() && x->is_object() && x->contains("$child"))
      body = kids[(*x)["$child"].get<std::size_t>()];
    if (auto x = attrs.find("filter"); x != attrs.end() && x->is_object() && x->contains("$child"))
      filter = kids[(*x)["$child"].get<std::size_t>()];
    (void)n;
    if (body == expr::kNoNode) fail("invalid_aggregate", "an aggregate needs an 'expr'");

    const json out = attrs.value("output_idx", json::array());
    const json ranges = attrs.value("ranges", json::object());
    if (out.size() != f.pos.size())
      fail("array_shape_mismatch",
           "an aggregate with " + std::to_string(out.size()) + " output indices gives a value over " +
               std::to_string(out.size()) + " axes where " + std::to_string(f.pos.size()) +
               (f.pos.size() == 1 ? " is" : " are") + " expected");

    const std::size_t mark = env_.size();
    Frame body_frame;  // named axes for bare arrays in the body: the `from` ranges
    std::vector<expr::StrId> bound_here;
    std::vector<std::pair<expr::StrId, std::string>> drawn_from;  // index -> its index set
    for (std::size_t k = 0; k < out.size(); ++k) {
      if (!out[k].is_string()) {
        if (test(f.pos[k], Op::Ne, 1))
          fail("array_shape_mismatch", "a singleton output axis is read at " + std::to_string(f.pos[k].v));
        continue;
      }
      const std::string sym = out[k].get<std::string>();
      const expr::StrId id = pool_.intern("$" + sym);
      if (auto r = ranges.find(sym); r != ranges.end()) {
        const Range range = range_of(*r, sym);
        if (range.ragged())
          fail("unsupported_array_feature", "the output index '" + sym + "' ranges over the ragged index set '" +
                                                range.from + "'; an array over a ragged set is not supported "
                                                "yet (a ragged set may be contracted over)");
        if (!contains(range, f.pos[k]))
          fail("array_region_uncovered",
               "the aggregate defines '" + sym + "' over " + r->dump() + " but is asked for " +
                   sym + " = " + std::to_string(f.pos[k].v));
        if (!range.from.empty()) {
          body_frame.axes.push_back(range.from);
          body_frame.pos.push_back(f.pos[k]);
        }
      } else if (!f.axes.empty()) {
        body_frame.axes.push_back(f.axes[k]);
        body_frame.pos.push_back(f.pos[k]);
      }
      env_.emplace_back(id, f.pos[k]);
      bound_here.push_back(id);
      if (auto r = ranges.find(sym); r != ranges.end() && r->is_object() && r->contains("from"))
        drawn_from.emplace_back(id, (*r)["from"].get<std::string>());
      else if (!f.axes.empty())
        drawn_from.emplace_back(id, f.axes[k]);
    }
    // Contracted indices: those the body or filter use that nothing binds yet.
    std::vector<expr::StrId> order;
    symbols_in_order(body, order);
    if (filter != expr::kNoNode) symbols_in_order(filter, order);
    // A repeated output index (["g", "g"]): §4.3.1 defines result[O] with each index taking
    // each value of its range, which names only the diagonal, and gives the repetition no
    // other meaning. Each axis is read here on its own, against the index's range (so a body
    // that does not read the index, a constant fill, is the same on every cell); a body that
    // reads it at a cell where the axes disagree would see one of two values, and is refused.
    for (std::size_t k = 0; k < out.size(); ++k)
      for (std::size_t j = 0; j < k; ++j) {
        if (!out[k].is_string() || out[j] != out[k]) continue;
        const expr::StrId id = pool_.intern("$" + out[k].get<std::string>());
        if (std::find(order.begin(), order.end(), id) == order.end()) continue;
        if (test(SVal{static_cast<double>(f.pos[j].v), f.pos[j].axis}, Op::Ne,
                 SVal{static_cast<double>(f.pos[k].v), f.pos[k].axis}))
          fail("array_shape_mismatch",
               "the output index '" + out[k].get<std::string>() + "' appears on output axes " +
                   std::to_string(j + 1) + " and " + std::to_string(k + 1) +
                   " and the body reads it, but this cell has it at " + std::to_string(f.pos[j].v) +
                   " on one and " + std::to_string(f.pos[k].v) +
                   " on the other: a repeated output index names the diagonal only (spec "
                   "§4.3.1); give each axis its own index");
      }
    for (auto it = ranges.begin(); it != ranges.end(); ++it) {
      const expr::StrId id = pool_.intern("$" + it.key());
      if (std::find(order.begin(), order.end(), id) == order.end()) order.push_back(id);
    }
    std::vector<std::pair<expr::StrId, Range>> contracted;
    for (expr::StrId id : order) {
      if (std::find(bound_here.begin(), bound_here.end(), id) != bound_here.end()) continue;
      const std::string sym = std::string(pool_.str(id)).substr(1);
      if (auto r = ranges.find(sym); r != ranges.end()) contracted.emplace_back(id, range_of(*r, sym));
      else if (!bound(id)) contracted.emplace_back(id, inferred_range(body, id));
    }
    parents_first(contracted);
    for (const auto& [id, range] : contracted)
      if (!range.from.empty()) drawn_from.emplace_back(id, range.from);
    const json join = attrs.value("join", json::array());
    const NodeId identity = identity_of(reduce);
    // rank(S) in the body reads the position of the index drawing from S.
    const std::size_t drawn_mark = drawn_env_.size();
    drawn_env_.insert(drawn_env_.end(), drawn_from.begin(), drawn_from.end());

    std::vector<NodeId> terms;
    for (const auto& [id, r] : contracted) env_.emplace_back(id, Ix{r.start, -1});
    const std::size_t first = env_.size() - contracted.size();
    // Every combination of the contracted indices, the first one outermost (ascending order:
    // the normative accumulation order of §4.3.1).
    each_combination(contracted, first, [&] {
      const bool admitted =
          filter == expr::kNoNode || test(static_value(filter), Op::Ne, SVal{0.0, -1});
      std::optional<NodeId> joined = join.empty() ? std::optional<NodeId>(expr::kNoNode)
                                                   : join_condition(join, drawn_from);
      if (admitted && joined) {
        NodeId term = in_context([&] { return eval(body, body_frame); });
        // A key known only while the model runs gates its term: an unmatched combination
        // contributes the additive identity (spec §4.3.1 join).
        if (*joined != expr::kNoNode) term = pool_.make(Op::IfElse, std::vector<NodeId>{*joined, term, identity});
        terms.push_back(term);
      }
    });
    env_.resize(mark);
    drawn_env_.resize(drawn_mark);
    return reduced(terms, reduce);
  }

  // ---- derived index sets, skolem and rank (RFC semiring-faq §5.5, §5.7; spec §8.6.1) ----

 public:
  /// Materializes every derived index set of the document (sizes the arrays shaped over them).
  void materialize_derived_sets() {
    const json& sets = st_.doc.doc.value("index_sets", json::object());
    for (auto it = sets.begin(); it != sets.end(); ++it)
      if (is_derived(it.key())) derived_size(it.key());
  }

 private:
  /// > 0 while join keys must be read as build-time numbers (an argmin's join).
  int static_keys_ = 0;
  /// Derived index sets being materialized, outermost first (a set met again is a cycle).
  std::vector<std::string> deriving_;
  /// For rank(S): each bound index symbol and the index set it draws from, innermost last.
  std::vector<std::pair<expr::StrId, std::string>> drawn_env_;

  bool is_derived(const std::string& set) const {
    const json& sets = st_.doc.doc.value("index_sets", json::object());
    auto it = sets.find(set);
    return it != sets.end() && it->is_object() && it->value("kind", std::string()) == "derived" &&
           !st_.doc.index_set_sizes.count(set);
  }

  static std::string set_pointer(const std::string& set) {
    return pointer_join(pointer_join("/index_sets", set), "from_faq");
  }

  /// The size of derived index set `set`, materializing it (and, through the ranges and arrays
  /// its producer reads, the sets it depends on) the first time.
  std::int64_t derived_size(const std::string& set) {
    if (auto d = st_.derived.find(set); d != st_.derived.end()) return d->second.size;
    if (std::find(deriving_.begin(), deriving_.end(), set) != deriving_.end()) {
      std::string chain;
      for (const auto& s : deriving_) chain += "'" + s + "' -> ";
      throw Error("derived_index_set_cycle", st_.doc.file, set_pointer(deriving_.front()),
                  "the derived index set '" + set + "' is needed to compute itself (" + chain + "'" + set +
                      "'): a derived set's producer may not range over, or read arrays shaped over, "
                      "a set that depends on it");
    }
    // Evaluate aside: this may be asked in the middle of another evaluation.
    auto saved_env = std::move(env_);
    auto saved_drawn = std::move(drawn_env_);
    auto saved_memo = std::move(memo_);
    const std::uint64_t saved_context = context_;
    const bool saved_relative = relative_;
    const std::string saved_file = file_, saved_pointer = pointer_;
    relative_ = false;
    env_.clear();
    drawn_env_.clear();
    memo_.clear();
    context_ = next_context_++;
    deriving_.push_back(set);
    DerivedSet out = materialize(set);
    deriving_.pop_back();
    relative_ = saved_relative;
    env_ = std::move(saved_env);
    drawn_env_ = std::move(saved_drawn);
    memo_ = std::move(saved_memo);
    context_ = saved_context;
    file_ = saved_file;
    pointer_ = saved_pointer;
    const std::int64_t size = out.size;
    st_.derived[set] = std::move(out);
    for (auto& [name, shape] : st_.arrays)
      for (std::size_t d = 0; d < shape.axes.size(); ++d)
        if (shape.axes[d] == set && shape.extents[d] < 0) shape.extents[d] = size;
    return size;
  }

  /// An array's shape with the derived index sets it is shaped over materialized.
  const ArrayShape& ready(const ArrayShape& a) {
    for (std::size_t d = 0; d < a.axes.size(); ++d)
      if (a.extents[d] < 0 && is_derived(a.axes[d])) derived_size(a.axes[d]);
    return a;
  }

  /// The node whose `id` is `id` (an aggregate or intersect_polygon) in the equations, with
  /// the file and pointer of its equation.
  struct Producer {
    NodeId node = expr::kNoNode;
    std::string file, pointer;
  };
  Producer find_producer(const std::string& id) {
    Producer found;
    auto search = [&](NodeId root, const std::string& file, const std::string& pointer) {
      if (found.node != expr::kNoNode || root == expr::kNoNode) return;
      walk(pool_, root, [&](NodeId n) {
        if (found.node != expr::kNoNode) return false;
        const Op op = pool_.node(n).op;
        if ((op == Op::Aggregate || op == Op::IntersectPolygon) && attrs(n).value("id", json()) == id)
          found = {n, file, pointer};
        return true;
      });
    };
    for (const auto& [y, eq] : st_.observed_eqs) search(eq.rhs, eq.file, eq.pointer);
    for (const auto& [x, list] : st_.tendencies)
      for (const auto& t : list) search(t.rhs, t.file, t.pointer);
    for (const auto& [x, eq] : st_.initial_eqs) search(eq.rhs, eq.file, eq.pointer);
    for (const auto& eq : st_.algebraic_eqs) search(eq.rhs, eq.file, eq.pointer);
    return found;
  }

  /// The derived set whose `from_faq` is the producer `id` (materialized).
  const DerivedSet& set_produced_by(const std::string& id, const char* what) {
    const json& sets = st_.doc.doc.value("index_sets", json::object());
    for (auto it = sets.begin(); it != sets.end(); ++it)
      if (is_derived(it.key()) && it->value("from_faq", json()) == id) {
        derived_size(it.key());
        return st_.derived.at(it.key());
      }
    fail("unsupported_array_feature",
         std::string("a ") + what + (id.empty() ? std::string(" without an 'id'") : " with id '" + id + "'") +
             " that no derived index set names (`from_faq`) is not supported: its members form the "
             "index set, so declare one {\"kind\": \"derived\", \"from_faq\": <its id>}");
  }

  DerivedSet materialize(const std::string& set) {
    const std::string id = st_.doc.doc["index_sets"][set].value("from_faq", std::string());
    const Producer p = find_producer(id);
    if (p.node == expr::kNoNode)
      throw Error("derived_index_set_unknown_producer", st_.doc.file, set_pointer(set),
                  "the derived index set '" + set + "' is produced by the node with id '" + id +
                      "' (from_faq), but no aggregate or intersect_polygon of the document has that id");
    locate(p.file, p.pointer);
    DerivedSet out;
    out.producer = id;
    ++runtime_probe_;
    try {
      if (pool_.node(p.node).op == Op::IntersectPolygon) {
        out.ring = intersection_ring(p.node);
        out.size = static_cast<std::int64_t>(out.ring.size());
      } else {
        distinct_members(p.node, set, out);
      }
      --runtime_probe_;
    } catch (const RuntimeIndex& why) {
      --runtime_probe_;
      // A parameter without a value in the document may be data supplied later: the document
      // is not wrong, esi just cannot build the set from it. A state is never constant (the
      // relational engine does not run on the hot path, RFC §6.1).
      if (why.parameter)
        fail("unsupported_array_feature",
             "the derived index set '" + set + "' (from_faq '" + id + "') is computed from the parameter " +
                 why.name + ", which has no constant value in the document; a derived set is "
                 "materialized once, when the model is built, so esi needs its data there (a default, "
                 "or an equation of constants); data supplied only at run time is not supported for it");
      fail("derived_index_set_not_static",
           "the derived index set '" + set + "' (from_faq '" + id + "') is computed from " + why.name +
               ", which changes while the model runs (a state, or a value computed from one); a "
               "derived set is materialized once, before the run, so everything its producer reads "
               "must be constant");
    } catch (...) {
      --runtime_probe_;
      throw;
    }
    return out;
  }

  /// The members of the set a `distinct` aggregate produces: every combination of its ranges
  /// that passes its filter and joins mints its `key`; equal keys are one member, and members
  /// are in the sorted order of their keys (RFC §5.7), so the result does not depend on the
  /// enumeration order.
  void distinct_members(NodeId e, const std::string& set, DerivedSet& out) {
    const json& attrs = this->attrs(e);
    if (!(attrs.contains("distinct") && attrs["distinct"] == true))
      fail("unsupported_array_feature",
           "the derived index set '" + set + "' names an aggregate that is not `distinct: true`; only "
           "distinct aggregates (and intersect_polygon rings) produce index sets");
    const std::vector<NodeId> kids = children_of(e);
    auto child = [&](const char* field) {
      auto x = attrs.find(field);
      return x != attrs.end() && x->is_object() && x->contains("$child")
                 ? kids[(*x)["$child"].get<std::size_t>()]
                 : expr::kNoNode;
    };
    const NodeId key = child("key"), filter = child("filter");
    if (key == expr::kNoNode)
      fail("invalid_aggregate", "the distinct aggregate that produces index set '" + set +
                                    "' has no 'key' (the skolem term that names each member)");
    const json ranges = attrs.value("ranges", json::object());
    std::vector<std::pair<expr::StrId, Range>> over;
    std::vector<std::pair<expr::StrId, std::string>> drawn_from;
    for (auto it = ranges.begin(); it != ranges.end(); ++it) {
      const expr::StrId id = pool_.intern("$" + it.key());
      over.emplace_back(id, range_of(*it, it.key()));
      if (!over.back().second.from.empty()) drawn_from.emplace_back(id, over.back().second.from);
    }
    const json join = attrs.value("join", json::array());
    std::map<std::pair<std::string, std::vector<double>>,
             std::vector<std::vector<std::pair<expr::StrId, std::int64_t>>>> members;
    parents_first(over);
    for (const auto& [id, r] : over) env_.emplace_back(id, Ix{r.start, -1});
    each_combination(over, 0, [&] {
      memo_.clear();
      const bool admitted = filter == expr::kNoNode || static_value(filter).v != 0.0;
      bool joined = true;
      if (admitted && !join.empty()) {
        const std::optional<NodeId> c = join_condition(join, drawn_from);
        if (c && *c != expr::kNoNode)
          throw RuntimeIndex{"a join key read only while the model runs"};
        joined = c.has_value();
      }
      if (admitted && joined) {
        std::vector<std::pair<expr::StrId, std::int64_t>> binding;
        for (std::size_t i = 0; i < over.size(); ++i) binding.emplace_back(over[i].first, env_[i].second.v);
        members[static_key(key)].push_back(std::move(binding));
      }
    });
    env_.clear();
    for (auto& [k, list] : members) out.contributions.push_back(std::move(list));
    out.size = static_cast<std::int64_t>(out.contributions.size());
  }

  /// The value of a key (`skolem(label, args...)` or a plain expression) when the model is
  /// built: its label and argument values.
  std::pair<std::string, std::vector<double>> static_key(NodeId key) {
    if (pool_.node(key).op != Op::Skolem) return {std::string(), {static_value(key).v}};
    std::pair<std::string, std::vector<double>> out{attrs(key).value("label", std::string()), {}};
    for (NodeId a : args_of(key)) {
      const SVal v = static_value(a);
      if (relative_ && v.axis >= 0) throw NotRelative{"a skolem key of a cell position"};
      out.second.push_back(v.v);
    }
    return out;
  }

  double skolem_id(const std::pair<std::string, std::vector<double>>& key) {
    auto it = st_.skolem_ids.find(key);
    if (it == st_.skolem_ids.end())
      it = st_.skolem_ids.emplace(key, static_cast<double>(st_.skolem_ids.size() + 1)).first;
    return it->second;
  }

  /// A skolem term used as a value (a bin key stored in an array, a join column): the number
  /// that stands for its key. Keys are minted when the model is built (RFC §5.7).
  NodeId skolem_value(NodeId e) {
    ++runtime_probe_;
    try {
      const double id = skolem_id(static_key(e));
      --runtime_probe_;
      return pool_.number(id, true);
    } catch (const RuntimeIndex& why) {
      --runtime_probe_;
      if (!deriving_.empty()) throw;
      fail("unsupported_array_feature",
           "a 'skolem' key of " + why.name +
               (why.parameter ? ", a parameter with no value in the document (data a caller may supply, "
                                "e.g. with --inputs),"
                              : ", a value known only while the model runs,") +
               " cannot be minted: keys are minted once, when the model is built (RFC semiring-faq "
               "§5.7), so their arguments must be constants then");
    } catch (...) {
      --runtime_probe_;
      throw;
    }
  }

  /// rank(S): the dense 0-based id of the member of S that the innermost index drawing from S
  /// is at (its position in S's sorted order, minus one).
  NodeId rank_value(NodeId e) {
    const std::vector<NodeId> args = args_of(e);
    const std::string set = args.size() == 1 ? name_of(args[0]).substr(1) : std::string();
    for (auto it = drawn_env_.rbegin(); it != drawn_env_.rend(); ++it) {
      if (it->second != set) continue;
      const auto v = bound(it->first);
      if (!v) break;
      if (v->axis >= 0 && relative_)
        return pool_.make(Op::Sub, std::vector<NodeId>{pool_.symbol(relative_name("$index", {*v})),
                                                       pool_.number(1.0, true)});
      return pool_.number(static_cast<double>(v->v - 1), true);
    }
    fail("unsupported_array_feature",
         "'rank(" + set + ")' is used where no index of an enclosing aggregate draws from '" + set +
             "' (give one a range {\"from\": \"" + set + "\"}; rank is that member's dense id)");
  }

  /// One cell of the array a `distinct` aggregate defines over the set it produces: the
  /// reduction of its body over the combinations whose key minted that member.
  NodeId distinct_cell(NodeId e, const Frame& f) {
    const json& attrs = this->attrs(e);
    const DerivedSet& set = set_produced_by(attrs.value("id", std::string()), "distinct aggregate");
    const json out = attrs.value("output_idx", json::array());
    if (out.size() != 1 || f.pos.size() != 1)
      fail("array_shape_mismatch", "a distinct aggregate has one output index, the member of the set it "
                                   "produces, and defines an array over that set alone");
    if (relative_ && f.pos[0].axis >= 0) throw NotRelative{"the members of a derived index set"};
    const std::int64_t m = f.pos[0].v;
    if (m < 1 || m > set.size)
      fail("array_shape_mismatch", "member " + std::to_string(m) + " of a derived index set with " +
                                       std::to_string(set.size) + " members");
    const std::string reduce = reduction_of(attrs);
    const std::vector<NodeId> kids = children_of(e);
    NodeId body = expr::kNoNode;
    if (auto x = attrs.find("expr"); x != attrs.end() && x->is_object() && x->contains("$child"))
      body = kids[(*x)["$child"].get<std::size_t>()];
    if (body == expr::kNoNode) fail("invalid_aggregate", "an aggregate needs an 'expr'");
    std::vector<NodeId> terms;
    const std::size_t mark = env_.size();
    if (out[0].is_string()) env_.emplace_back(pool_.intern("$" + out[0].get<std::string>()), Ix{m, -1});
    for (const auto& binding : set.contributions[static_cast<std::size_t>(m - 1)]) {
      const std::size_t inner = env_.size();
      for (const auto& [sym, v] : binding) env_.emplace_back(sym, Ix{v, -1});
      NodeId term = in_context([&] { return eval(body, Frame{}); });
      if (pool_.node(term).op == Op::True) term = pool_.number(1.0, true);
      terms.push_back(term);
      env_.resize(inner);
    }
    env_.resize(mark);
    return reduced(terms, reduce);
  }

  /// The overlap ring of an `intersect_polygon`: distinct vertices, counter-clockwise,
  /// starting at the lowest-leftmost one, closed by repeating it; empty when the polygons do
  /// not overlap in an area.
  std::vector<std::array<double, 2>> intersection_ring(NodeId e) {
    const bool spherical = on_sphere(e, "intersect_polygon");
    const std::vector<NodeId> args = args_of(e);
    if (args.size() != 2) fail("invalid_polygon", "'intersect_polygon' takes two polygons");
    auto ring = deduplicated(clipped(args[0], args[1], "intersect_polygon", spherical));
    if (ring.size() < 3) return {};
    // (the spherical clip already turns the ring counter-clockwise seen from outside)
    if (!spherical && signed_area(ring) < 0) std::reverse(ring.begin(), ring.end());
    // The lowest latitude, and among the vertices level with it (equal under the §8.6.1
    // point tolerance: crossing points carry rounding) the westernmost.
    double low = ring[0][1];
    for (const auto& p : ring) low = std::min(low, p[1]);
    auto lowest = ring.end();
    for (auto it = ring.begin(); it != ring.end(); ++it)
      if (std::abs((*it)[1] - low) <= 1e-8 + 1e-5 * std::abs(low) && (lowest == ring.end() || (*it)[0] < (*lowest)[0]))
        lowest = it;
    std::rotate(ring.begin(), lowest, ring.end());
    ring.push_back(ring.front());
    return ring;
  }

  /// Cell (v, c) of the ring an `intersect_polygon` returns: coordinate c of vertex v.
  NodeId ring_cell(NodeId e, const Frame& f) {
    const DerivedSet& set = set_produced_by(attrs(e).value("id", std::string()), "intersect_polygon");
    if (f.pos.size() != 2)
      fail("array_shape_mismatch", "'intersect_polygon' gives a [ring, 2] array (vertex, lon-lat) but is "
                                   "used as a value over " + std::to_string(f.pos.size()) + " axes");
    if (relative_ && (f.pos[0].axis >= 0 || f.pos[1].axis >= 0))
      throw NotRelative{"the vertices of an intersection ring"};
    const std::int64_t v = f.pos[0].v, c = f.pos[1].v;
    if (v < 1 || v > set.size || c < 1 || c > 2)
      fail("array_shape_mismatch", "the intersection ring has " + std::to_string(set.size) +
                                       " vertices of 2 coordinates but is read at [" + std::to_string(v) +
                                       "," + std::to_string(c) + "]");
    return pool_.number(set.ring[static_cast<std::size_t>(v - 1)][static_cast<std::size_t>(c - 1)], false);
  }
};

/// One cell of an equation written cell by cell: the frame its right-hand side is evaluated
/// in and the index symbols the left-hand side binds.
struct LhsCell {
  Frame frame;
  std::vector<std::pair<expr::StrId, Ix>> bindings;
};

/// The cell `cell` of the target of a left-hand side `aggregate(D(index(x, i, j)), ...)` or
/// `index(D(x), i, j)`; nullopt when that left-hand side does not define the cell.
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

/// The stop of range `r` (or the size of its `from` index set); nullopt when not literal.
std::optional<std::int64_t> range_stop(const FlattenState& st, const json& r) {
  if (r.is_object() && r.contains("from") && r["from"].is_string()) {
    auto s = st.doc.index_set_sizes.find(r["from"].get<std::string>());
    if (s != st.doc.index_set_sizes.end()) return s->second;
  }
  if (r.is_array() && !r.empty() && r.back().is_number_integer()) return r.back().get<std::int64_t>();
  return std::nullopt;
}

/// Extents of axes named by no index set (`"shape": ["i"]` with `"ranges": {"i": [1, 2]}` on
/// the defining equation): the largest stop any defining equation gives that axis.
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

}  // namespace

bool in_component(const std::string& name, const std::string& system) {
  return name.size() > system.size() && name.compare(0, system.size(), system) == 0 && name[system.size()] == '.';
}

/// The grid a 0-D system is lifted onto: the most frequent highest-rank shape among the arrays
/// the gridded side's equations for the 0-D system's unknowns read (`D(Chem.NO) = -div(M NO)/m`
/// reads m over [lon, lat, lev]); failing that, among the gridded system's unknowns.
const ArrayShape* lifting_grid(const FlattenState& st, const std::string& scalar_system,
                               const std::string& grid_system) {
  std::map<std::vector<std::string>, std::pair<int, const ArrayShape*>> votes;
  auto vote = [&](const std::string& name) {
    auto a = st.arrays.find(name);
    if (a == st.arrays.end()) return;
    auto& v = votes[a->second.axes];
    ++v.first;
    v.second = &a->second;
  };
  for (const auto& [x, list] : st.tendencies) {
    if (!in_component(x, scalar_system)) continue;
    for (const auto& t : list) {
      std::set<std::string> names;
      free_symbols(st.sys.pool, t.rhs, names);
      for (const auto& n : names) vote(n);
    }
  }
  if (votes.empty())
    for (const auto& [name, shape] : st.arrays)
      if (in_component(name, grid_system) && st.declared.count(name) && st.declared.at(name).unknown) vote(name);
  const ArrayShape* best = nullptr;
  int best_votes = 0;
  for (const auto& [axes, v] : votes)
    if (!best || axes.size() > best->axes.size() || (axes.size() == best->axes.size() && v.first > best_votes)) {
      best = v.second;
      best_votes = v.first;
    }
  return best;
}

/// `operator_compose` of a 0-D system with a gridded one, lifting "pointwise" (spec §10.5, the
/// default): every unknown of the 0-D system becomes an array over the grid, so its equations
/// (mass-action rates included) hold cell by cell; its parameters stay scalars and broadcast,
/// unless a variable_map feeds them from an array, which then substitutes cell by cell.
void lift_pointwise(FlattenState& st) {
  const json& coupling = st.doc.doc.value("coupling", json::array());
  if (!coupling.is_array()) return;
  auto gridded = [&](const std::string& system) {
    for (const auto& [name, shape] : st.arrays)
      if (in_component(name, system)) return true;
    return false;
  };
  for (std::size_t i = 0; i < coupling.size(); ++i) {
    const json& c = coupling[i];
    if (!c.is_object() || c.value("type", std::string()) != "operator_compose") continue;
    std::vector<std::string> grids, scalars;
    for (const auto& s : c.value("systems", json::array()))
      if (s.is_string() && st.component_index.count(s.get<std::string>()))
        (gridded(s.get<std::string>()) ? grids : scalars).push_back(s.get<std::string>());
    if (grids.empty() || scalars.empty()) continue;
    const std::string lifting = c.value("lifting", std::string("pointwise"));
    const std::string ptr = pointer_join("/coupling", i);
    if (lifting != "pointwise")
      throw Error("unsupported_array_feature", st.doc.file, pointer_join(ptr, "lifting"),
                  "lifting '" + lifting + "' (spec §10.5) is not supported yet; 'pointwise' is");
    for (const auto& system : scalars) {
      const ArrayShape* grid = lifting_grid(st, system, grids[0]);
      if (!grid)
        throw Error("array_shape_mismatch", st.doc.file, ptr,
                    "found no grid to lift '" + system + "' onto: '" + grids[0] + "' has no array unknowns");
      const ArrayShape shape{grid->axes, grid->extents};
      for (auto& [name, d] : st.declared)
        if (in_component(name, system) && d.unknown && !st.arrays.count(name)) {
          st.arrays[name] = shape;
          d.var.shape = shape.axes;
        }
    }
  }
  // Bindings by variable_map: an array-valued binding is substituted now, so the cells see the
  // array; a scalar data-source field bound to an array parameter (a reanalysis variable read
  // from files) leaves the array in place, a parameter the caller supplies (--inputs).
  std::unordered_map<expr::StrId, NodeId> now;
  Pool& pool = st.sys.pool;
  for (auto it = st.replacements.begin(); it != st.replacements.end();) {
    std::set<std::string> names;
    free_symbols(pool, it->second, names);
    bool reads_array = false;
    for (const auto& n : names) reads_array = reads_array || st.arrays.count(n);
    if (st.arrays.count(it->first) && !reads_array) {
      st.removed_parameters.erase(it->first);
      it = st.replacements.erase(it);
      continue;
    }
    if (reads_array) {
      now[pool.intern(it->first)] = it->second;
      it = st.replacements.erase(it);
      continue;
    }
    ++it;
  }
  if (now.empty()) return;
  std::unordered_map<NodeId, NodeId> memo;
  auto sub = [&](NodeId& e) {
    if (e != expr::kNoNode) e = substitute(pool, e, now, memo);
  };
  for (auto& [x, list] : st.tendencies)
    for (auto& t : list) sub(t.rhs);
  for (auto& [y, eq] : st.observed_eqs) sub(eq.rhs);
  for (auto& [x, eq] : st.initial_eqs) sub(eq.rhs);
  for (auto& eq : st.algebraic_eqs) {
    sub(eq.lhs);
    sub(eq.rhs);
  }
  for (auto& [name, d] : st.declared) sub(d.var.initial);
}

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

/// The per-region form of every array equation (FlattenOptions::grid). Builds everything
/// aside and commits to `st` only at the end, so a NotRelative leaves `st` as it was.
void lower_to_regions(FlattenState& st) {
  Expander ex(st);
  Pool& pool = st.sys.pool;
  std::set<std::string> observed_arrays, state_arrays;
  for (const auto& [name, shape] : st.arrays) {
    const Declared& d = st.declared.at(name);
    if (!d.unknown) ex.grid_only_.insert(name);
    else if (st.observed_eqs.count(name)) {
      observed_arrays.insert(name);
      ex.grid_only_.insert(name);
    } else if (st.tendencies.count(name)) {
      state_arrays.insert(name);
    } else {
      throw NotRelative{"'" + name + "' is an array unknown with neither a time derivative nor a "
                        "defining equation"};
    }
  }
  auto scalar = [&](NodeId e, const std::string& file, const std::string& pointer) {
    if (e == expr::kNoNode || !ex.needs_cells(e)) return e;
    ex.locate(file, pointer);
    return ex.at(e, Frame{});
  };
  auto to_regions = [](std::vector<std::pair<Box, std::vector<NodeId>>> found) {
    std::vector<System::GridRegion> out;
    for (auto& [box, rhs] : found) out.push_back({std::move(box.lo), std::move(box.hi), std::move(rhs)});
    return out;
  };
  std::vector<System::GridEquation> observed, tendencies, initial;

  // Observed arrays, one equation each (their order is settled by the kernel's dependency
  // sort of what each reads).
  for (const auto& y : st.observed_order) {
    if (!observed_arrays.count(y)) continue;
    const FlatEquation& eq = st.observed_eqs.at(y);
    const ArrayShape& shape = st.arrays.at(y);
    ex.locate(eq.file, eq.pointer);
    System::GridEquation g{System::GridEquation::Kind::Observed, {y}, shape.extents, {}, eq.file, eq.pointer};
    g.regions = to_regions(find_regions(ex, shape.extents, [&](const std::vector<std::int64_t>& rep) {
      LhsCell lc{Frame{shape.axes, ex.moving(rep)}, {}};
      if (eq.lhs != expr::kNoNode && pool.node(eq.lhs).op == Op::Index) {
        auto found = lhs_cell(pool, eq.lhs, shape, ex.moving(rep), eq.file, eq.pointer, ex);
        if (!found)
          throw Error("array_region_uncovered", eq.file, eq.pointer,
                      "the equation defines only some cells of '" + y + "'; " +
                          cell_name(y, rep) + " has no value");
        lc = std::move(*found);
      }
      return std::vector<NodeId>{ex.at(eq.rhs, lc.frame, lc.bindings)};
    }));
    observed.push_back(std::move(g));
  }

  // State arrays: one equation per set of arrays with the same extents, so the arrays of one
  // transport operator (air mass, tracer masses) share one program per box.
  std::map<std::vector<std::int64_t>, std::vector<std::string>> by_extents;
  for (const auto& x : st.tendency_order)
    if (state_arrays.count(x)) by_extents[st.arrays.at(x).extents].push_back(x);
  std::vector<System::Array> term_arrays;  // the split-off terms below, as observed arrays
  for (const auto& [extents, names] : by_extents) {
    const auto& first = st.tendencies.at(names[0]);
    bool cellwise_lhs = false;
    for (const auto& x : names)
      for (const auto& t : st.tendencies.at(x)) cellwise_lhs = cellwise_lhs || t.lhs_aggregate != expr::kNoNode;
    if (!cellwise_lhs) {
      // Operator terms: the tendency is arithmetic (sums, products, quotients) over terms such
      // as one flux divergence per direction. Each term that is not the same everywhere gets
      // its own boxes (a zonal flux: seven zonal classes) and becomes an observed array; the
      // tendency is then one program over the whole grid that reads them. Without this the
      // boxes of all directions multiply (7^3 programs, each with every direction in it).
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
          const std::string name = x + "~term" + std::to_string(term_arrays.size() + 1);
          System::Array a;
          a.name = name;
          a.axes = shape.axes;
          a.extents = extents;
          a.description = "a term of the time derivative of " + x;
          term_arrays.push_back(std::move(a));
          observed.push_back(System::GridEquation{System::GridEquation::Kind::Observed, {name}, extents,
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
      tendencies.push_back(System::GridEquation{System::GridEquation::Kind::Tendency, names, extents,
                                                {std::move(whole)}, first[0].file, first[0].pointer,
                                                std::move(sources)});
      continue;
    }
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
        for (std::size_t ti = 0; ti < list.size(); ++ti) {
          const Tendency& t = list[ti];
          const std::uint64_t tests_before = ex.moving_tests();
          ex.locate(t.file, t.pointer);
          LhsCell lc{Frame{shape.axes, ex.moving(rep)}, {}};
          if (t.lhs_aggregate != expr::kNoNode) {
            auto found = lhs_cell(pool, t.lhs_aggregate, shape, ex.moving(rep), t.file, t.pointer, ex);
            if (!found) continue;
            lc = std::move(*found);
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
    tendencies.push_back(std::move(g));
  }

  // Initial values of state arrays given by an expression over the cells (ic equations, or a
  // declared initial value that depends on the cell).
  std::map<std::string, NodeId> cellwise_initial;
  for (const auto& x : state_arrays) {
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
    cellwise_initial[x] = rhs;
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
      return std::vector<NodeId>{ex.at(rhs, lc.frame, lc.bindings)};
    }));
    initial.push_back(std::move(g));
  }

  // Scalars: as without regions (they may read state cells by name, nothing else gridded).
  std::map<std::string, std::vector<Tendency>> scalar_tendencies;
  std::vector<std::string> tendency_order;
  for (const auto& x : st.tendency_order) {
    if (state_arrays.count(x)) continue;
    tendency_order.push_back(x);
    for (auto t : st.tendencies.at(x)) {
      if (t.lhs_aggregate != expr::kNoNode)
        throw Error("array_shape_mismatch", t.file, t.pointer,
                    "the left-hand side indexes '" + x + "', which is not an array");
      t.rhs = scalar(t.rhs, t.file, t.pointer);
      scalar_tendencies[x].push_back(t);
    }
  }
  std::map<std::string, FlatEquation> observed_eqs, initial_eqs;
  std::vector<std::string> observed_order;
  for (const auto& y : st.observed_order) {
    if (observed_arrays.count(y)) continue;
    FlatEquation e = st.observed_eqs.at(y);
    e.rhs = scalar(e.rhs, e.file, e.pointer);
    observed_eqs[y] = e;
    observed_order.push_back(y);
  }
  for (const auto& [x, eq] : st.initial_eqs) {
    if (state_arrays.count(x)) continue;
    if (st.arrays.count(x))
      throw NotRelative{"an initial-value equation for '" + x + "', which is not a state array"};
    FlatEquation e = eq;
    e.rhs = scalar(e.rhs, e.file, e.pointer);
    initial_eqs[x] = e;
  }
  std::vector<FlatEquation> algebraic = st.algebraic_eqs;
  for (auto& eq : algebraic) {
    eq.lhs = scalar(eq.lhs, eq.file, eq.pointer);
    eq.rhs = scalar(eq.rhs, eq.file, eq.pointer);
  }

  // Declarations: a state array's cells take its place (first index fastest); observed and
  // parameter arrays have no cells.
  std::map<std::string, Declared> declared;
  std::vector<std::string> order;
  std::vector<System::Array> arrays;
  for (const auto& name : st.declaration_order) {
    Declared d = st.declared.at(name);
    auto a = st.arrays.find(name);
    if (a == st.arrays.end()) {
      d.var.initial = scalar(d.var.initial, d.var.file, d.var.pointer);
      order.push_back(name);
      declared[name] = d;
      continue;
    }
    System::Array arr{name, a->second.axes, a->second.extents, !d.unknown, d.var.units, d.var.description};
    if (!d.unknown) {
      std::int64_t n = 1;
      for (auto e : a->second.extents) n *= e;
      arr.values.assign(static_cast<std::size_t>(n),
                        d.var.default_value ? *d.var.default_value : std::numeric_limits<double>::quiet_NaN());
    }
    arrays.push_back(std::move(arr));
    if (!state_arrays.count(name)) continue;
    // The cells become states when the system is assembled (flatten), straight from here:
    // a 72x46x72 grid has 10^5-10^6 of them.
    if (cellwise_initial.count(name)) d.var.initial = expr::kNoNode;
    d.grid_cell = true;
    order.push_back(name);
    declared[name] = std::move(d);
  }
  std::set<std::string> bound;
  for (const auto& b : st.bound_parameters) {
    if (st.arrays.count(b)) throw NotRelative{"an array parameter '" + b + "' bound by an equation"};
    bound.insert(b);
  }

  // Commit.
  for (auto& a : term_arrays) arrays.push_back(std::move(a));
  st.sys.arrays = std::move(arrays);
  st.sys.grid = std::move(observed);
  for (auto& g : tendencies) st.sys.grid.push_back(std::move(g));
  for (auto& g : initial) st.sys.grid.push_back(std::move(g));
  st.bound_parameters = std::move(bound);
  st.declared = std::move(declared);
  st.declaration_order = std::move(order);
  st.tendencies = std::move(scalar_tendencies);
  st.tendency_order = std::move(tendency_order);
  st.observed_eqs = std::move(observed_eqs);
  st.observed_order = std::move(observed_order);
  st.initial_eqs = std::move(initial_eqs);
  st.algebraic_eqs = std::move(algebraic);
}

void expand_arrays(FlattenState& st) {
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
  Expander ex(st);
  Pool& pool = st.sys.pool;
  auto scalar = [&](NodeId e, const std::string& file, const std::string& pointer) {
    if (e == expr::kNoNode || !ex.needs_cells(e)) return e;
    ex.locate(file, pointer);
    return ex.at(e, Frame{});
  };

  // Declarations: each array's cells take its place, in order. The cells of a parameter array
  // are declared only where an equation reads them (after the equations are expanded): a
  // reanalysis field over a global grid is read on a regional slice, and declaring its other
  // cells would only cost memory.
  std::map<std::string, Declared> declared;
  std::vector<std::string> order;
  std::vector<std::pair<std::size_t, std::string>> parameter_arrays;  // (position in order, name)
  auto declare_cell = [&](const Declared& d, const ArrayShape& shape, const std::vector<std::int64_t>& cell) {
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
  };
  for (const auto& name : st.declaration_order) {
    Declared& d = st.declared[name];
    auto a = st.arrays.find(name);
    if (a == st.arrays.end()) {
      d.var.initial = scalar(d.var.initial, d.var.file, d.var.pointer);
      order.push_back(name);
      declared[name] = d;
      continue;
    }
    st.sys.arrays.push_back({name, a->second.axes, a->second.extents, !d.unknown, d.var.units, d.var.description});
    if (!d.unknown) {
      parameter_arrays.emplace_back(order.size(), name);
      continue;
    }
    for (const auto& cell : all_cells(a->second.extents)) {
      declare_cell(d, a->second, cell);
      order.push_back(cell_name(name, cell));
    }
  }

  // Tendencies.
  std::map<std::string, std::vector<Tendency>> tendencies;
  std::vector<std::string> tendency_order;
  for (const auto& x : st.tendency_order) {
    const auto& list = st.tendencies[x];
    auto a = st.arrays.find(x);
    if (a == st.arrays.end()) {
      tendency_order.push_back(x);
      for (auto t : list) {
        if (t.lhs_aggregate != expr::kNoNode)
          throw Error("array_shape_mismatch", t.file, t.pointer,
                      "the left-hand side indexes '" + x + "', which is not an array");
        t.rhs = scalar(t.rhs, t.file, t.pointer);
        tendencies[x].push_back(t);
      }
      continue;
    }
    for (const auto& cell : all_cells(a->second.extents)) {
      const std::string name = cell_name(x, cell);
      std::vector<Tendency> cell_list;
      for (const auto& t : list) {
        ex.locate(t.file, t.pointer);
        LhsCell lc{Frame{a->second.axes, absolute(cell)}, {}};
        if (t.lhs_aggregate != expr::kNoNode) {
          auto found = lhs_cell(pool, t.lhs_aggregate, a->second, absolute(cell), t.file, t.pointer, ex);
          if (!found) continue;
          lc = std::move(*found);
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
      tendency_order.push_back(name);
      tendencies[name] = std::move(cell_list);
    }
  }

  // Defining (observed) equations and initial-value equations.
  auto expand_equations = [&](std::map<std::string, FlatEquation>& eqs, std::vector<std::string>* order_out,
                              bool initial) {
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
        e.rhs = scalar(e.rhs, e.file, e.pointer);
        out[y] = e;
        new_order.push_back(y);
        continue;
      }
      ex.locate(eq.file, eq.pointer);
      for (const auto& cell : all_cells(a->second.extents)) {
        const std::string name = cell_name(y, cell);
        FlatEquation e = eq;
        LhsCell lc{Frame{a->second.axes, absolute(cell)}, {}};
        if (eq.lhs != expr::kNoNode && pool.node(eq.lhs).op == Op::Index) {  // index(y, i) = rhs
          auto found = lhs_cell(pool, eq.lhs, a->second, absolute(cell), eq.file, eq.pointer, ex);
          if (!found)
            throw Error("array_region_uncovered", eq.file, eq.pointer,
                        "the equation defines only some cells of '" + y + "'; " + name + " has no value");
          lc = std::move(*found);
        }
        e.lhs = initial ? pool.make(Op::Ic, std::vector<NodeId>{pool.symbol(name)}) : pool.symbol(name);
        e.rhs = ex.at(eq.rhs, lc.frame, lc.bindings);
        out[name] = e;
        new_order.push_back(name);
      }
    }
    eqs = std::move(out);
    if (order_out) *order_out = std::move(new_order);
  };
  expand_equations(st.observed_eqs, &st.observed_order, false);
  expand_equations(st.initial_eqs, nullptr, true);
  for (auto& eq : st.algebraic_eqs) {
    eq.lhs = scalar(eq.lhs, eq.file, eq.pointer);
    eq.rhs = scalar(eq.rhs, eq.file, eq.pointer);
  }

  // The parameter cells the expanded equations read, in declaration order, first index fastest.
  {
    std::vector<std::string> with_cells;
    std::size_t next = 0;
    for (std::size_t k = 0; k <= order.size(); ++k) {
      for (; next < parameter_arrays.size() && parameter_arrays[next].first == k; ++next) {
        const std::string& name = parameter_arrays[next].second;
        const ArrayShape& shape = st.arrays.at(name);
        std::vector<std::vector<std::int64_t>> cells(ex.used_cells(name).begin(), ex.used_cells(name).end());
        std::sort(cells.begin(), cells.end(), [](const auto& x, const auto& y) {
          return std::lexicographical_compare(x.rbegin(), x.rend(), y.rbegin(), y.rend());
        });
        for (const auto& cell : cells) {
          declare_cell(st.declared[name], shape, cell);
          with_cells.push_back(cell_name(name, cell));
        }
      }
      if (k < order.size()) with_cells.push_back(order[k]);
    }
    order = std::move(with_cells);
  }

  std::set<std::string> bound;
  for (const auto& b : st.bound_parameters) {
    if (auto a = st.arrays.find(b); a != st.arrays.end())
      for (const auto& cell : all_cells(a->second.extents)) bound.insert(cell_name(b, cell));
    else
      bound.insert(b);
  }
  st.bound_parameters = std::move(bound);
  st.declared = std::move(declared);
  st.declaration_order = std::move(order);
  st.tendencies = std::move(tendencies);
  st.tendency_order = std::move(tendency_order);
}

}  // namespace detail
}  // namespace esi::esm
