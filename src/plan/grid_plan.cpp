// Passes 1-4 in the per-region form (System::grid).
//
// Operator formation. A tendency is the sum of one contribution per component that writes the
// state array (GridEquation::sources); each contribution is split into additive terms, with
// products and quotients distributed over one additive factor, so a flux-form transport
// (sum over directions of flux divergences, minus q times the mass divergence, over m) falls
// apart per direction. A term goes to the operator named by its component and by the grid
// axes it reaches along: the axes along which it reads any array at a nonzero offset (directly
// or inside the split-off term arrays "X~termN", which are pieces of the tendency itself) or
// reads a state at a nonzero offset through any observed array. Axes are matched by index-set
// name, a "_nodes" suffix ignored (faces of lon belong to lon); an offset into an array over a
// differently named axis (a regional slice of a global field, F[@0+13]) is an index shift into
// another grid, not a reach. So reseact_3d_chem gives Transport3D.lon, .lat, .lev and the
// pointwise SuperFast; a composed pointwise process of another component would be its own.
//
// Locality and footprint come from the reads of states only, composed through observed arrays
// (an observed array's own reach over all of its regions, added to the offset it is read at).
// A read at a fixed position from a box of more than one cell along an axis has no fixed
// offset: unbounded along that axis (a column sum along the vertical: column; along a
// horizontal axis: global).
#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "esi/core/error.hpp"
#include "esi/expr/differentiate.hpp"
#include "plan/plan_internal.hpp"

namespace esi::plan::detail {
namespace {

using expr::Op;
using Kind = esm::System::GridEquation::Kind;

std::string base_axis(std::string a) {
  if (a.size() > 6 && a.compare(a.size() - 6, 6, "_nodes") == 0) a.resize(a.size() - 6);
  return a;
}

struct Interval {
  bool set = false, unbounded = false;
  /// A read of an array over cell faces (an axis "X_nodes"): the face between two cells is
  /// half a cell off whatever its offset, so it reaches along X (a flux difference
  /// Mx[@0+1] - Mx[@0] split into two terms keeps its direction in both).
  bool face = false;
  std::int64_t lo = 0, hi = 0;
  void add(std::int64_t l, std::int64_t h, bool unb) {
    if (!set) lo = l, hi = h;
    else lo = std::min(lo, l), hi = std::max(hi, h);
    set = true;
    unbounded = unbounded || unb;
  }
  void add(const Interval& o) {
    if (o.set) add(o.lo, o.hi, o.unbounded);
    face = face || o.face;
  }
  bool moves() const { return set && (unbounded || face || lo != 0 || hi != 0); }
};
using AxisMap = std::map<std::string, Interval>;  // by base axis name

struct Reach {
  std::map<std::string, AxisMap> states;  ///< per state array read
  AxisMap any;                            ///< the grouping signature's offsets
  bool global = false;                    ///< a state read along an axis it cannot be placed on
  void add(const Reach& o) {
    for (const auto& [s, m] : o.states)
      for (const auto& [a, i] : m) states[s][a].add(i);
    for (const auto& [a, i] : o.any) any[a].add(i);
    global = global || o.global;
  }
};

struct ArrayInfo {
  enum class What { State, Parameter, Observed } what = What::Parameter;
  const esm::System::Array* array = nullptr;
  int equation = -1;  ///< Observed: index into System::grid
};

struct GridPlanner {
  esm::System& s;
  std::unordered_map<std::string, ArrayInfo> arrays;
  std::unordered_map<std::string, Reach> observed_reach;  // own reach, by array (memo)
  std::unordered_set<std::string> in_progress;

  explicit GridPlanner(esm::System& sys) : s(sys) {
    for (const auto& a : s.arrays) {
      ArrayInfo info;
      info.array = &a;
      info.what = a.parameter ? ArrayInfo::What::Parameter
                              : (a.first_state >= 0 ? ArrayInfo::What::State : ArrayInfo::What::Observed);
      arrays[a.name] = info;
    }
    for (std::size_t k = 0; k < s.grid.size(); ++k)
      if (s.grid[k].kind == Kind::Observed)
        for (const auto& t : s.grid[k].targets) arrays[t].equation = static_cast<int>(k);
  }

  std::vector<std::string> symbols(NodeId root) {
    std::vector<std::string> out;
    std::unordered_set<NodeId> seen{root};
    std::vector<NodeId> stack{root};
    while (!stack.empty()) {
      const NodeId id = stack.back();
      stack.pop_back();
      const expr::Node& n = s.pool.node(id);
      if (n.op == Op::Symbol) out.emplace_back(s.pool.str(n.name));
      for (NodeId k : s.pool.children(id))
        if (seen.insert(k).second) stack.push_back(k);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  /// Reach of `e` evaluated at the cells of `box` of an array over `axes`.
  Reach reach_of(NodeId e, const std::vector<std::string>& axes, const std::vector<std::int64_t>& lo,
                 const std::vector<std::int64_t>& hi) {
    Reach out;
    for (const auto& name : symbols(e)) {
      RelativeRead read;
      if (!esm::parse_relative_read(name, read) || read.array == "$index") continue;
      auto it = arrays.find(read.array);
      if (it == arrays.end()) continue;
      const ArrayInfo& info = it->second;
      const auto& read_axes = info.array->axes;
      // Each index of the read placed on an output axis: the offset interval along it.
      std::vector<std::string> placed(read.axis.size());
      std::vector<Interval> base(read.axis.size());
      bool unplaced = false;
      for (std::size_t j = 0; j < read.axis.size(); ++j) {
        const std::string own = j < read_axes.size() ? base_axis(read_axes[j]) : "";
        if (read.axis[j] >= 0) {
          const int a = read.axis[j];
          if (static_cast<std::size_t>(a) < axes.size() && base_axis(axes[a]) == own) {
            placed[j] = own;
            base[j].add(read.offset[j], read.offset[j], false);
          } else {
            unplaced = true;  // an index shift into a grid over another axis
          }
        } else {
          std::size_t a = 0;
          while (a < axes.size() && base_axis(axes[a]) != own) ++a;
          placed[j] = own;
          if (a < axes.size()) base[j].add(read.offset[j] - hi[a], read.offset[j] - lo[a], hi[a] > lo[a]);
          else base[j].add(0, 0, true);  // an axis the output lacks: the read spans it
        }
      }
      if (info.what != ArrayInfo::What::Parameter) {
        const bool term_array = read.array.find("~term") != std::string::npos;
        for (std::size_t j = 0; j < placed.size(); ++j)
          if (!placed[j].empty() && base[j].set) {
            Interval i = base[j];
            i.face = j < read_axes.size() && base_axis(read_axes[j]) != read_axes[j];
            out.any[placed[j]].add(i);
          }
        if (info.what == ArrayInfo::What::State) {
          if (unplaced) out.global = true;
          for (std::size_t j = 0; j < placed.size(); ++j)
            if (!placed[j].empty()) out.states[read.array][placed[j]].add(base[j]);
        } else {
          const Reach& inner = own_reach(read.array);
          out.global = out.global || inner.global;
          auto compose = [&](const AxisMap& m, AxisMap& into) {
            std::set<std::string> covered;
            for (std::size_t j = 0; j < placed.size(); ++j) {
              const std::string own = j < read_axes.size() ? base_axis(read_axes[j]) : "";
              covered.insert(own);
              auto f = m.find(own);
              if (placed[j].empty()) {
                if (f != m.end() && f->second.set) out.global = true;
                continue;
              }
              Interval r = base[j];
              if (f != m.end() && f->second.set) {
                r.lo += f->second.lo;
                r.hi += f->second.hi;
                r.unbounded = r.unbounded || f->second.unbounded;
                r.face = r.face || f->second.face;
              }
              into[placed[j]].add(r);
            }
            for (const auto& [a, i] : m)
              if (!covered.count(a)) into[a].add(i);
          };
          for (const auto& [state, m] : inner.states) compose(m, out.states[state]);
          if (term_array) compose(inner.any, out.any);
        }
      }
    }
    return out;
  }

  const Reach& own_reach(const std::string& array) {
    if (auto it = observed_reach.find(array); it != observed_reach.end()) return it->second;
    const ArrayInfo& info = arrays.at(array);
    Reach r;
    if (info.equation >= 0 && in_progress.insert(array).second) {
      const auto& g = s.grid[info.equation];
      std::size_t k = 0;
      while (k < g.targets.size() && g.targets[k] != array) ++k;
      for (const auto& region : g.regions) r.add(reach_of(region.rhs[k], info.array->axes, region.lo, region.hi));
      in_progress.erase(array);
    }
    return observed_reach.emplace(array, std::move(r)).first->second;
  }
};

struct Group {
  std::string component;
  std::vector<std::string> signature;
  std::map<std::size_t, std::vector<NodeId>> row_terms;  // target position in the plan's rows -> terms
  std::map<std::size_t, Reach> row_reach;
  std::set<std::string> term_arrays;
  int multi_region_equation = -1;
};

}  // namespace

void plan_grid(esm::System& s, Plan& plan) {
  GridPlanner gp(s);
  std::set<std::string> reaction_systems;
  for (const auto& r : s.reactions) reaction_systems.insert(r.component);

  // The tendency grid: the extents of the largest tendency equation (all of them share it in
  // the documents we know; state arrays over other extents keep their own axes by name).
  const esm::System::GridEquation* main = nullptr;
  for (const auto& g : s.grid)
    if (g.kind == Kind::Tendency && (!main || g.targets.size() > main->targets.size())) main = &g;
  const esm::System::Array& first = *gp.arrays.at(main->targets[0]).array;
  plan.axes = first.axes;
  plan.extents = first.extents;
  plan.vertical_axis = vertical_axis_of(plan.axes);
  const std::string vertical = base_axis(plan.vertical_axis);

  std::vector<std::string> row_names;  // every target, in equation order
  std::map<std::pair<std::string, std::vector<std::string>>, std::size_t> group_of;
  std::vector<Group> groups;
  auto group_for = [&](const std::string& component, const std::vector<std::string>& sig) -> Group& {
    auto [it, fresh] = group_of.emplace(std::make_pair(component, sig), groups.size());
    if (fresh) groups.push_back(Group{component, sig, {}, {}, {}, -1});
    return groups[it->second];
  };

  for (std::size_t gi = 0; gi < s.grid.size(); ++gi) {
    const auto& g = s.grid[gi];
    if (g.kind != Kind::Tendency) continue;
    const auto& axes = gp.arrays.at(g.targets[0]).array->axes;
    for (std::size_t k = 0; k < g.targets.size(); ++k) {
      const std::size_t row = row_names.size();
      row_names.push_back(g.targets[k]);
      const std::string owner = owner_component(g.targets[k], s.components);
      if (g.regions.size() != 1) {
        // Written cell by cell (several boxes): one operator per equation, not split.
        Reach r;
        for (const auto& region : g.regions) r.add(gp.reach_of(region.rhs[k], axes, region.lo, region.hi));
        std::vector<std::string> sig;
        for (const auto& [a, i] : r.any)
          if (i.moves()) sig.push_back(a);
        Group& grp = group_for(owner + "#" + std::to_string(gi), sig);
        grp.component = owner;
        grp.multi_region_equation = static_cast<int>(gi);
        grp.row_terms[row].push_back(expr::kNoNode);
        grp.row_reach[row].add(r);
        continue;
      }
      const auto& region = g.regions[0];
      const NodeId rhs = region.rhs[k];
      std::vector<std::pair<std::string, NodeId>> parts;
      const std::vector<std::string> none;
      const auto& sources = k < g.sources.size() ? g.sources[k] : none;
      if (sources.size() > 1 && s.pool.node(rhs).op == Op::Add && s.pool.args(rhs).size() == sources.size()) {
        for (std::size_t p = 0; p < sources.size(); ++p) parts.emplace_back(sources[p], s.pool.args(rhs)[p]);
      } else {
        parts.emplace_back(sources.size() == 1 ? sources[0] : owner, rhs);
      }
      for (const auto& [component, part] : parts) {
        for (NodeId term : additive_terms(s.pool, part, true)) {
          if (s.pool.node(term).op == Op::Number && s.pool.node(term).number == 0) continue;
          Reach r = gp.reach_of(term, axes, region.lo, region.hi);
          std::vector<std::string> sig;
          std::set<std::string> moving;
          for (const auto& [a, i] : r.any)
            if (i.moves()) moving.insert(a);
          for (const auto& [st, m] : r.states)
            for (const auto& [a, i] : m)
              if (i.moves()) moving.insert(a);
          // Signature in the grid's axis order.
          for (const auto& a : axes)
            if (moving.count(base_axis(a))) sig.push_back(base_axis(a));
          for (const auto& a : moving)
            if (std::find(sig.begin(), sig.end(), a) == sig.end()) sig.push_back(a);
          Group& grp = group_for(component, sig);
          grp.row_terms[row].push_back(term);
          grp.row_reach[row].add(r);
          for (const auto& name : gp.symbols(term)) {
            RelativeRead read;
            if (esm::parse_relative_read(name, read) && read.array.find("~term") != std::string::npos)
              grp.term_arrays.insert(read.array);
          }
        }
      }
    }
  }

  // Operators from the groups: rows, reach, locality, footprint, block pattern.
  for (Group& grp : groups) {
    Operator op;
    op.component = grp.component;
    op.name = grp.component.empty() ? "(top level)" : grp.component;
    for (const auto& a : grp.signature) op.name += "." + a;
    const bool reactions = reaction_systems.count(grp.component) > 0;
    op.origin = (reactions ? "reactions of " : "equations of ") + (grp.component.empty() ? "the document" : grp.component);
    if (!grp.signature.empty()) {
      op.origin += ", terms reaching along ";
      for (std::size_t k = 0; k < grp.signature.size(); ++k) op.origin += (k ? ", " : "") + grp.signature[k];
    }
    op.term_arrays.assign(grp.term_arrays.begin(), grp.term_arrays.end());
    Reach total;
    std::set<std::string> read_states;
    for (auto& [row, terms] : grp.row_terms) {
      op.rows.push_back(row_names[row]);
      const bool whole = !(terms.size() == 1 && terms[0] == expr::kNoNode);
      op.terms += whole ? terms.size() : 1;
      op.rhs.push_back(whole ? sum_of(s.pool, terms) : expr::kNoNode);
      const Reach& r = grp.row_reach[row];
      total.add(r);
      for (const auto& [st, m] : r.states) {
        read_states.insert(st);
        FootprintEntry f{row_names[row], st, {}, {}, {}};
        for (const auto& a : plan.axes) {
          auto it = m.find(base_axis(a));
          const Interval i = it == m.end() ? Interval{} : it->second;
          f.lo.push_back(i.set ? i.lo : 0);
          f.hi.push_back(i.set ? i.hi : 0);
          f.unbounded.push_back(i.unbounded);
        }
        op.footprint.push_back(std::move(f));
      }
    }
    // Locality.
    bool horizontal = false, vertical_moves = false, unbounded_horizontal = total.global;
    for (const auto& a : plan.axes) {
      AxisReach ar{a, 0, 0, false};
      for (const auto& [st, m] : total.states) {
        auto it = m.find(base_axis(a));
        if (it == m.end() || !it->second.set) continue;
        ar.minus = std::max(ar.minus, -it->second.lo);
        ar.plus = std::max(ar.plus, it->second.hi);
        ar.unbounded = ar.unbounded || it->second.unbounded;
      }
      const bool moves = ar.unbounded || ar.minus > 0 || ar.plus > 0;
      if (base_axis(a) == vertical && !vertical.empty()) vertical_moves = vertical_moves || moves;
      else {
        horizontal = horizontal || moves;
        unbounded_horizontal = unbounded_horizontal || ar.unbounded;
      }
      op.reach.push_back(ar);
    }
    for (const auto& [st, m] : total.states)
      for (const auto& [a, i] : m) {
        const auto& axis = a;  // clang 14 cannot capture a structured binding in a lambda
        if (std::find_if(plan.axes.begin(), plan.axes.end(),
                         [&](const std::string& x) { return base_axis(x) == axis; }) == plan.axes.end() &&
            i.unbounded)
          unbounded_horizontal = true;
      }
    op.locality = unbounded_horizontal ? Locality::Global
                  : horizontal         ? Locality::Stencil
                  : vertical_moves     ? Locality::Column
                                       : Locality::Pointwise;
    if (op.locality == Locality::Column) {
      op.column_axis = plan.vertical_axis;
      for (const auto& a : op.reach)
        if (a.axis == plan.vertical_axis) {
          std::int64_t extent = 0;
          for (std::size_t k = 0; k < plan.axes.size(); ++k)
            if (plan.axes[k] == a.axis) extent = plan.extents[k];
          op.column_bandwidth = a.unbounded ? extent - 1 : std::max(a.minus, a.plus);
        }
    }
    // Species coupling: row array -> state arrays it reads (CSR in rows-then-reads order).
    std::vector<std::string> species = op.rows;
    for (const auto& st : read_states)
      if (std::find(species.begin(), species.end(), st) == species.end()) species.push_back(st);
    std::map<std::string, int> pos;
    for (std::size_t k = 0; k < species.size(); ++k) pos[species[k]] = static_cast<int>(k);
    std::vector<std::vector<std::pair<int, NodeId>>> by_row(species.size());
    // Pointwise: the exact block from the symbolic derivative by each state read at offset 0.
    bool chain_through_observed = false;
    const NodeId zero = s.pool.number(0.0);
    for (std::size_t r = 0; r < op.rows.size(); ++r) {
      const int row = pos[op.rows[r]];
      for (const auto& f : op.footprint) {
        if (f.row != op.rows[r]) continue;
        NodeId d = expr::kNoNode;
        if (op.locality == Locality::Pointwise && op.rhs[r] != expr::kNoNode) {
          std::string sym = f.read + "[";
          for (std::size_t k = 0; k < gp.arrays.at(f.read).array->axes.size(); ++k)
            sym += (k ? ",@" : "@") + std::to_string(k);
          sym += "]";
          d = expr::differentiate(s.pool, op.rhs[r], s.pool.intern(sym));
          if (d == zero) {
            // Read only through an observed array (no symbolic entry): structural entry.
            if (!expr::depends_on(s.pool, op.rhs[r], s.pool.intern(sym))) chain_through_observed = true;
            else continue;
            d = expr::kNoNode;
          }
        }
        by_row[row].emplace_back(pos[f.read], d);
      }
    }
    op.block.species = species;
    const std::vector<NodeId> entries = fill_block_rows(op.block, by_row);
    op.has_pattern = true;
    if (op.locality == Locality::Pointwise && !chain_through_observed &&
        std::none_of(entries.begin(), entries.end(), [](NodeId d) { return d == expr::kNoNode; }))
      plan_block_structure(s, op, entries);
    plan.operators.push_back(std::move(op));
  }
}

}  // namespace esi::plan::detail
