// The pointwise split (pointwise_split.hpp): which addends of a gridded system's tendencies run
// per cell, and the cell system they make.
#include "esi/plan/pointwise_split.hpp"

#include "esi/esm/relative_read.hpp"

#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace esi::plan {

namespace {

using esm::System;
using expr::NodeId;
using expr::Op;
using Kind = System::GridEquation::Kind;

constexpr std::size_t kPositionInput = PointwiseSplit::kPosition;

class Splitter {
 public:
  Splitter(const System& g, PointwiseSplit& out) : g_(g), out_(out) {
    for (std::size_t a = 0; a < g.arrays.size(); ++a) array_at_[g.arrays[a].name] = a;
    for (std::size_t e = 0; e < g.grid.size(); ++e)
      if (g.grid[e].kind == Kind::Observed)
        for (std::size_t k = 0; k < g.grid[e].targets.size(); ++k)
          observed_at_[g.grid[e].targets[k]] = {e, k};
  }

  bool run(std::string& why);

 private:
  bool is_state_array(std::size_t a) const {
    return !g_.arrays[a].parameter && g_.arrays[a].first_state >= 0;
  }

  /// Whether observed array `a` reads a state (directly or through other observed arrays).
  bool reads_state(std::size_t a) {
    if (auto it = reads_state_.find(a); it != reads_state_.end()) return it->second;
    reads_state_[a] = true;  // a cycle (impossible in dependency order) counts as reading
    bool reads = false;
    const auto [e, k] = observed_at_.at(g_.arrays[a].name);
    std::vector<NodeId> stack;
    for (const auto& region : g_.grid[e].regions) stack.push_back(region.rhs[k]);
    std::unordered_set<NodeId> seen;
    while (!stack.empty() && !reads) {
      const NodeId id = stack.back();
      stack.pop_back();
      if (!seen.insert(id).second) continue;
      const auto& n = g_.pool.node(id);
      if (n.op == Op::Symbol) {
        const std::string name(g_.pool.str(n.name));
        const auto open = name.find('[');
        if (open == std::string::npos) {
          const int s = g_.state_index(name);
          reads = s >= 0;
          continue;
        }
        auto it = array_at_.find(name.substr(0, open));
        if (it == array_at_.end()) continue;
        if (is_state_array(it->second)) reads = true;
        else if (observed_at_.count(g_.arrays[it->second].name)) reads = reads_state(it->second);
        continue;
      }
      for (NodeId c : g_.pool.children(id)) stack.push_back(c);
    }
    reads_state_[a] = reads;
    return reads;
  }

  /// The cell's version of `id` (in the cell system's pool), or kNoNode when it is not
  /// pointwise; `why_not_` then says why.
  NodeId to_cell(NodeId id) {
    if (auto it = memo_.find(id); it != memo_.end()) return it->second;
    const NodeId result = rewrite(id);
    memo_[id] = result;
    return result;
  }

  NodeId rewrite(NodeId id) {
    expr::Pool& pool = out_.cell.pool;
    const auto& n = g_.pool.node(id);
    if (n.op == Op::Symbol) {
      const std::string name(g_.pool.str(n.name));
      if (name.find('[') == std::string::npos) {
        const int s = g_.state_index(name);
        if (s >= 0) {
          why_not_ = "reads the scalar state '" + name + "'";
          return expr::kNoNode;
        }
        return id;  // a parameter, a scalar observed or t: the same symbol in the copied pool
      }
      esm::RelativeRead read;
      if (!esm::parse_relative_read(name, read) || !read.own_cell()) {
        why_not_ = "reads '" + name + "' away from the cell itself";
        return expr::kNoNode;
      }
      const std::string& base = read.array;
      const std::vector<int>& axes = read.axis;
      if (base == "$index") {  // the cell's own position along an axis, as a number
        if (axes.size() != 1 || axes[0] < 0 || std::size_t(axes[0]) >= extents_.size()) {
          why_not_ = "reads '" + name + "'";
          return expr::kNoNode;
        }
        return pool.symbol(input(kPositionInput, name, name, axes, false));
      }
      auto it = array_at_.find(base);
      if (it == array_at_.end()) {
        why_not_ = "reads '" + name + "', which is not an array of the system";
        return expr::kNoNode;
      }
      const std::size_t a = it->second;
      bool identity = axes.size() == extents_.size();
      for (std::size_t d = 0; d < axes.size(); ++d) identity = identity && axes[d] == int(d);
      if (is_state_array(a)) {
        if (!identity) {
          why_not_ = "reads the state array '" + name + "' with another shape than the cell's";
          return expr::kNoNode;
        }
        states_read_.insert(a);
        return pool.symbol(base);
      }
      if (auto o = observed_at_.find(base); o != observed_at_.end()) {
        const auto& eq = g_.grid[o->second.first];
        if (identity && eq.regions.size() == 1 && eq.extents == extents_) {
          const std::string saved = why_not_;
          const NodeId inlined = to_cell(eq.regions[0].rhs[o->second.second]);
          if (inlined != expr::kNoNode) return inlined;
          why_not_ = saved;
        }
        if (reads_state(a)) {
          why_not_ = "reads the observed array '" + base + "', which is not pointwise";
          return expr::kNoNode;
        }
      }
      return pool.symbol(input(a, name, base, axes, identity));
    }
    const auto kids_in = g_.pool.children(id);
    if (kids_in.empty()) return id;
    std::vector<NodeId> kids;
    kids.reserve(kids_in.size());
    bool changed = false;
    for (NodeId c : kids_in) {
      const NodeId k = to_cell(c);
      if (k == expr::kNoNode) return expr::kNoNode;
      changed = changed || k != c;
      kids.push_back(k);
    }
    if (!changed) return id;
    return pool.make(n.op, kids, n.arg_count, n.name, n.attrs);
  }

  /// The cell parameter name of an array read per cell (registered on first use).
  std::string input(std::size_t a, const std::string& name, const std::string& base,
                    const std::vector<int>& axes, bool identity) {
    const std::string key = identity ? base : name;
    if (!inputs_.count(key)) {
      inputs_[key] = out_.cell_input_names.size();
      out_.cell_input_names.push_back(key);
      out_.cell_input_array.push_back(a);
      out_.cell_input_axes.push_back(axes);
    }
    return key;
  }

  /// Top-level addends of a sum (nested sums flattened).
  void addends(NodeId id, std::vector<NodeId>& out) const {
    const auto& n = g_.pool.node(id);
    if (n.op == Op::Add) {
      for (NodeId c : g_.pool.args(id)) addends(c, out);
      return;
    }
    out.push_back(id);
  }

  const System& g_;
  PointwiseSplit& out_;
  std::unordered_map<std::string, std::size_t> array_at_;
  std::unordered_map<std::string, std::pair<std::size_t, std::size_t>> observed_at_;
  std::unordered_map<std::size_t, bool> reads_state_;
  std::unordered_map<NodeId, NodeId> memo_;
  std::map<std::string, std::size_t> inputs_;
  std::set<std::size_t> states_read_;
  std::vector<std::int64_t> extents_;
  std::string why_not_;
};

bool Splitter::run(std::string& why) {
  System& rest = out_.rest;
  System& cell = out_.cell;
  // Per state array: its pointwise sum in the cell pool (the same in every box), if any.
  std::map<std::size_t, NodeId> pointwise;
  for (auto& eq : rest.grid) {
    if (eq.kind != Kind::Tendency) continue;
    if (extents_.empty()) extents_ = eq.extents;
    if (eq.extents != extents_) {
      why = "the tendencies run over grids of different shapes";
      return false;
    }
    for (std::size_t k = 0; k < eq.targets.size(); ++k) {
      const std::size_t a = array_at_.at(eq.targets[k]);
      std::optional<NodeId> common;
      for (auto& region : eq.regions) {
        std::vector<NodeId> terms, kept, cell_terms;
        addends(region.rhs[k], terms);
        for (NodeId term : terms) {
          const NodeId c = to_cell(term);
          if (c == expr::kNoNode) kept.push_back(term);
          else cell_terms.push_back(c);
        }
        const NodeId sum = cell_terms.empty()     ? expr::kNoNode
                           : cell_terms.size() == 1 ? cell_terms[0]
                                                    : cell.pool.make(Op::Add, cell_terms);
        if (common && *common != sum) {
          why = "the pointwise part of the tendency of '" + eq.targets[k] + "' differs between boxes";
          return false;
        }
        common = sum;
        region.rhs[k] = kept.empty()     ? rest.pool.number(0.0)
                        : kept.size() == 1 ? kept[0]
                                           : rest.pool.make(Op::Add, kept);
        if (!kept.empty()) out_.has_rest = true;
      }
      if (common && *common != expr::kNoNode) pointwise[a] = *common;
    }
  }
  if (pointwise.empty()) {
    why = "no tendency has a pointwise addend" + (why_not_.empty() ? "" : " (the last one tried " + why_not_ + ")");
    return false;
  }
  out_.extents = extents_;
  // The cell: states named by their arrays, parameters = the scalar ones plus the inputs.
  cell.states.clear();
  cell.state_rhs.clear();
  cell.grid.clear();
  cell.arrays.clear();
  cell.algebraic.clear();
  cell.algebraic_equations.clear();
  cell.reactions.clear();
  cell.events = nlohmann::json::array();
  cell.grid_fallback.clear();
  for (const auto& [a, rhs] : pointwise) {
    esm::FlatVariable v;
    v.name = g_.arrays[a].name;
    v.units = g_.arrays[a].units;
    v.description = g_.arrays[a].description;
    v.default_value = 0.0;
    cell.states.push_back(std::move(v));
    cell.state_rhs.push_back(rhs);
    out_.cell_state_array.push_back(a);
  }
  // States read but not integrated per cell are held over the step, like any input.
  for (std::size_t a : states_read_)
    if (!pointwise.count(a)) {
      std::vector<int> axes(extents_.size());
      for (std::size_t d = 0; d < axes.size(); ++d) axes[d] = int(d);
      input(a, g_.arrays[a].name, g_.arrays[a].name, axes, true);
    }
  std::vector<esm::FlatVariable> params;
  for (const auto& p : g_.parameters)
    if (p.array.empty()) params.push_back(p);
  for (const std::string& name : out_.cell_input_names) {
    esm::FlatVariable v;
    v.name = name;
    v.default_value = 0.0;
    const std::size_t a = out_.cell_input_array[inputs_.at(name)];
    if (a != kPositionInput) v.units = g_.arrays[a].units;
    params.push_back(std::move(v));
  }
  cell.parameters = std::move(params);
  return true;
}

}  // namespace

std::optional<PointwiseSplit> split_pointwise(const esm::System& grid_system, std::string& why) {
  why.clear();
  if (grid_system.grid.empty()) {
    why = "the system is not in the per-region grid form";
    return std::nullopt;
  }
  PointwiseSplit out;
  out.rest = grid_system;
  out.cell = grid_system;
  Splitter s(grid_system, out);
  if (!s.run(why)) return std::nullopt;
  return out;
}

}  // namespace esi::plan
