#include "esi/kernel/jacobian.hpp"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "esi/core/error.hpp"
#include "esi/expr/differentiate.hpp"

namespace esi::kernel {

using expr::NodeId;
using expr::Op;

struct DefinitionInliner::Impl {
  esm::System& sys;
  std::unordered_map<expr::StrId, NodeId> definition;  // observed name -> its RHS
  std::unordered_map<expr::StrId, NodeId> tendency;     // state name -> its RHS
  std::unordered_map<NodeId, NodeId> memo;
  std::unordered_set<NodeId> in_progress;

  Impl(esm::System& s, bool tendencies) : sys(s) {
    for (std::size_t i = 0; i < s.observed.size(); ++i)
      definition[s.pool.intern(s.observed[i].name)] = s.observed_rhs[i];
    if (tendencies)
      for (std::size_t i = 0; i < s.states.size(); ++i)
        if (s.state_rhs[i] != expr::kNoNode) tendency[s.pool.intern(s.states[i].name)] = s.state_rhs[i];
  }

  NodeId replaced_by(NodeId id) {
    const expr::Node& n = sys.pool.node(id);
    if (n.op == Op::Symbol) {
      auto it = definition.find(n.name);
      return it == definition.end() ? expr::kNoNode : it->second;
    }
    if (n.op == Op::D && n.arg_count == 1 && (n.name == 0 || sys.pool.str(n.name) == "t")) {
      const expr::Node& x = sys.pool.node(sys.pool.args(id)[0]);
      auto it = x.op == Op::Symbol ? tendency.find(x.name) : tendency.end();
      return it == tendency.end() ? expr::kNoNode : it->second;
    }
    return expr::kNoNode;
  }

  NodeId operator()(NodeId id) {
    if (auto it = memo.find(id); it != memo.end()) return it->second;
    NodeId out = id;
    if (const NodeId def = replaced_by(id); def != expr::kNoNode) {
      if (!in_progress.insert(id).second)
        throw Error("observed_cycle", "", "", "a definition reaches itself while inlining");
      out = (*this)(def);
      in_progress.erase(id);
    } else if (sys.pool.node(id).child_count > 0) {
      const expr::Node n = sys.pool.node(id);  // copy: the pool grows below
      std::vector<NodeId> kids(sys.pool.children(id).begin(), sys.pool.children(id).end());
      bool changed = false;
      for (NodeId& k : kids) {
        const NodeId r = (*this)(k);
        changed |= r != k;
        k = r;
      }
      if (changed) out = sys.pool.make(n.op, kids, n.arg_count, n.name, n.attrs);
    }
    memo.emplace(id, out);
    return out;
  }
};

DefinitionInliner::DefinitionInliner(esm::System& system, bool tendencies)
    : impl_(std::make_unique<Impl>(system, tendencies)) {}
DefinitionInliner::~DefinitionInliner() = default;
expr::NodeId DefinitionInliner::operator()(expr::NodeId root) { return (*impl_)(root); }

JacobianProgram compile_jacobian(const esm::System& system, const CompileOptions& options) {
  std::vector<int> dofs = options.dofs;
  if (dofs.empty())
    for (std::size_t i = 0; i < system.states.size(); ++i) dofs.push_back(static_cast<int>(i));
  std::vector<NodeId> rhs;
  for (int i : dofs) {
    if (i < 0 || static_cast<std::size_t>(i) >= system.states.size())
      throw Error("invalid_dof", "", "", "state index " + std::to_string(i) + " is out of range");
    // Cells of a per-region system have their equations in System::grid, not here.
    if (system.state_rhs[static_cast<std::size_t>(i)] == expr::kNoNode)
      throw Error("not_differentiable", system.states[i].file, system.states[i].pointer,
                  "state '" + system.states[i].name +
                      "' has no scalar equation (a cell of an array in the per-region form): its "
                      "Jacobian is not built from that form");
    rhs.push_back(system.state_rhs[static_cast<std::size_t>(i)]);
  }
  // Derivatives are interned into a private copy of the pool.
  return compile_jacobian_of(system, std::move(dofs), std::move(rhs), options);
}

std::vector<std::size_t> column_major_order(std::span<const int> col) {
  // A mass-action reaction's partial with respect to one state (k * the other reactants) feeds
  // every row the reaction touches, and those rows' entries sit in one column; row by row they
  // lie hundreds of instructions apart and the partial waits in memory (fullchem: 1,786 values
  // went through the spill area). The values are the same in any order.
  std::vector<std::size_t> order(col.size());
  for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return col[a] < col[b]; });
  return order;
}

JacobianProgram compile_jacobian_of(esm::System system, std::vector<int> dofs, std::vector<NodeId> rhs_of,
                                    const CompileOptions& options) {
  auto owned = std::make_shared<esm::System>(std::move(system));
  esm::System& sys = *owned;
  if (rhs_of.size() != dofs.size())
    throw Error("invalid_dof", "", "", "one right-hand side per row is needed");
  for (int i : dofs)
    if (i < 0 || static_cast<std::size_t>(i) >= sys.states.size())
      throw Error("invalid_dof", "", "", "state index " + std::to_string(i) + " is out of range");
  std::vector<int> row_ptr{0}, col;
  DefinitionInliner inline_defs(sys);
  std::vector<expr::StrId> wrt;
  std::unordered_map<expr::StrId, std::size_t> column_of;
  for (int j : dofs) {
    const expr::StrId name = sys.pool.intern(sys.states[j].name);
    column_of.emplace(name, wrt.size());
    wrt.push_back(name);
  }
  const NodeId zero = sys.pool.number(0.0);
  std::vector<NodeId> entries;
  std::vector<std::size_t> columns;
  for (std::size_t r = 0; r < dofs.size(); ++r) {
    if (rhs_of[r] == expr::kNoNode) {
      row_ptr.push_back(static_cast<int>(col.size()));
      continue;
    }
    const esm::FlatVariable& state = sys.states[static_cast<std::size_t>(dofs[r])];
    try {
      const NodeId rhs = inline_defs(rhs_of[r]);
      // One walk per row, visiting only the states the row mentions: work in the number of
      // nonzeros, not rows x columns (fullchem has 272^2 pairs and 2,977 nonzeros; a system of
      // 10^5 independent equations has 10^5 nonzeros).
      columns.clear();
      for (expr::StrId s : expr::symbols_under(sys.pool, rhs))
        if (auto c = column_of.find(s); c != column_of.end()) columns.push_back(c->second);
      std::sort(columns.begin(), columns.end());
      for (std::size_t c : columns) {
        const NodeId d = expr::differentiate(sys.pool, rhs, wrt[c]);
        if (d == zero) continue;  // identically zero (floor, comparisons, ...)
        entries.push_back(d);
        col.push_back(static_cast<int>(c));
      }
    } catch (const Error& e) {
      if (!e.diagnostic().file.empty() || !e.diagnostic().pointer.empty()) throw;
      throw Error(e.code(), state.file, state.pointer,
                  "the equation of '" + state.name + "': " + e.diagnostic().message);
    }
    row_ptr.push_back(static_cast<int>(col.size()));
  }
  Program values = compile_outputs(sys, entries, options, column_major_order(col));
  return {std::move(dofs), std::move(row_ptr), std::move(col), std::move(values), std::move(entries),
          std::move(owned)};
}

}  // namespace esi::kernel
