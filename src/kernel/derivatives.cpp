#include "esi/kernel/derivatives.hpp"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "esi/core/error.hpp"
#include "esi/expr/differentiate.hpp"

namespace esi::kernel {
namespace {

using expr::NodeId;
using expr::StrId;
using ColumnOf = std::unordered_map<StrId, int>;

ColumnOf parameter_columns(esm::System& sys, std::span<const int> parameters) {
  ColumnOf out;
  for (std::size_t k = 0; k < parameters.size(); ++k) {
    const int i = parameters[k];
    if (i < 0 || static_cast<std::size_t>(i) >= sys.parameters.size())
      throw Error("invalid_parameter", "", "",
                  "parameter index " + std::to_string(i) + " is out of range");
    if (!out.emplace(sys.pool.intern(sys.parameters[i].name), static_cast<int>(k)).second)
      throw Error("invalid_parameter", "", "",
                  "parameter '" + sys.parameters[i].name + "' is listed twice");
  }
  return out;
}

/// The rows of compile_jacobian: options.dofs or every state, each with a scalar equation.
std::vector<int> state_rows(const esm::System& sys, const std::vector<int>& wanted) {
  std::vector<int> dofs = wanted;
  if (dofs.empty())
    for (std::size_t i = 0; i < sys.states.size(); ++i) dofs.push_back(static_cast<int>(i));
  for (int i : dofs) {
    if (i < 0 || static_cast<std::size_t>(i) >= sys.states.size())
      throw Error("invalid_dof", "", "", "state index " + std::to_string(i) + " is out of range");
    if (sys.state_rhs[static_cast<std::size_t>(i)] == expr::kNoNode)
      throw Error("not_differentiable", sys.states[i].file, sys.states[i].pointer,
                  "state '" + sys.states[i].name +
                      "' has no scalar equation (a cell of an array in the per-region form): its "
                      "derivatives are not built from that form");
  }
  return dofs;
}

/// An adjoint must not run on a derivative that was silently taken as zero, so a refusal of
/// `differentiate` becomes the adjoint's own code, located at the equation it came from.
[[noreturn]] void throw_located(const Error& e, const esm::FlatVariable& state,
                                const std::string& what) {
  if (!e.diagnostic().file.empty() || !e.diagnostic().pointer.empty()) throw e;
  const std::string code =
      e.code() == "not_differentiable" ? "adjoint_unsupported_function" : e.code();
  throw Error(code, state.file, state.pointer, what + ": " + e.diagnostic().message);
}

/// Appends d root / d s for every symbol s under `root` that `column_of` maps, in increasing
/// column order, dropping structural zeros. Visits only the symbols the expression mentions.
void append_partials(expr::Pool& pool, NodeId root, const ColumnOf& column_of,
                     std::vector<int>& cols, std::vector<NodeId>& values) {
  std::vector<std::pair<int, StrId>> hits;
  for (StrId s : expr::symbols_under(pool, root))
    if (auto c = column_of.find(s); c != column_of.end()) hits.emplace_back(c->second, s);
  std::sort(hits.begin(), hits.end());
  const NodeId zero = pool.number(0.0);
  for (const auto& [c, s] : hits) {
    const NodeId d = expr::differentiate(pool, root, s);
    if (d == zero) continue;  // identically zero (floor, comparisons, ...)
    cols.push_back(c);
    values.push_back(d);
  }
}

/// Computation order of outputs [first, first + cols.size()): column by column, for the reason
/// column_major_order gives (one partial feeds every output of its column).
void append_column_order(std::span<const int> cols, std::size_t first,
                         std::vector<std::size_t>& order) {
  for (std::size_t k : column_major_order(cols)) order.push_back(first + k);
}

/// The pattern and symbolic values of SecondDerivativeProgram, before they are compiled.
struct SecondPattern {
  std::vector<int> u_entry, u_state, p_entry, p_param;
  std::vector<NodeId> u_values, p_values;

  void add_entry(expr::Pool& pool, NodeId entry, int e, const ColumnOf& states,
                 const ColumnOf& params) {
    const std::size_t u0 = u_state.size(), p0 = p_param.size();
    append_partials(pool, entry, states, u_state, u_values);
    append_partials(pool, entry, params, p_param, p_values);
    u_entry.insert(u_entry.end(), u_state.size() - u0, e);
    p_entry.insert(p_entry.end(), p_param.size() - p0, e);
  }
};

}  // namespace

std::vector<int> differentiable_parameters(const esm::System& system,
                                           const CompileOptions& options) {
  const std::unordered_set<std::string> per_cell(options.forcing.begin(), options.forcing.end());
  std::vector<int> out;
  for (std::size_t i = 0; i < system.parameters.size(); ++i) {
    const esm::FlatVariable& v = system.parameters[i];
    const bool fixed = v.cadence == esm::Cadence::Constant || v.cadence == esm::Cadence::Sampled;
    if (fixed && !per_cell.count(v.name)) out.push_back(static_cast<int>(i));
  }
  return out;
}

ParameterJacobianProgram compile_parameter_jacobian(const esm::System& system,
                                                    std::span<const int> parameters,
                                                    const CompileOptions& options) {
  auto owned = std::make_shared<esm::System>(system);  // derivatives are interned into a copy
  esm::System& sys = *owned;
  std::vector<int> dofs = state_rows(sys, options.dofs);
  const ColumnOf column_of = parameter_columns(sys, parameters);
  DefinitionInliner inline_defs(sys);
  std::vector<int> row_ptr{0}, col;
  std::vector<NodeId> entries;
  for (int i : dofs) {
    const esm::FlatVariable& state = sys.states[static_cast<std::size_t>(i)];
    try {
      append_partials(sys.pool, inline_defs(sys.state_rhs[static_cast<std::size_t>(i)]), column_of,
                      col, entries);
    } catch (const Error& e) {
      throw_located(e, state,
                    "the derivative of the equation of '" + state.name + "' by a parameter");
    }
    row_ptr.push_back(static_cast<int>(col.size()));
  }
  Program values = compile_outputs(sys, entries, options, column_major_order(col));
  return {.dofs = std::move(dofs),
          .parameters = std::vector<int>(parameters.begin(), parameters.end()),
          .row_ptr = std::move(row_ptr),
          .col = std::move(col),
          .values = std::move(values),
          .entries = std::move(entries),
          .source = std::move(owned)};
}

SecondDerivativeProgram compile_second_derivatives(const JacobianProgram& jac,
                                                   std::span<const int> parameters,
                                                   const CompileOptions& options) {
  if (!jac.source || jac.entries.size() != jac.col.size() ||
      jac.row_ptr.size() != jac.dofs.size() + 1)
    throw Error("invalid_jacobian", "", "",
                "the Jacobian program has no symbolic entries to differentiate");
  auto owned = std::make_shared<esm::System>(*jac.source);
  esm::System& sys = *owned;
  const ColumnOf params = parameter_columns(sys, parameters);
  ColumnOf states;
  for (std::size_t c = 0; c < jac.dofs.size(); ++c)
    states.emplace(sys.pool.intern(sys.states.name(static_cast<std::size_t>(jac.dofs[c]))),
                   static_cast<int>(c));
  SecondPattern pat;
  for (std::size_t r = 0; r < jac.dofs.size(); ++r) {
    for (int e = jac.row_ptr[r]; e < jac.row_ptr[r + 1]; ++e) {
      try {
        pat.add_entry(sys.pool, jac.entries[static_cast<std::size_t>(e)], e, states, params);
      } catch (const Error& err) {
        const esm::FlatVariable& state = sys.states[static_cast<std::size_t>(jac.dofs[r])];
        const std::string column = sys.states.name(static_cast<std::size_t>(jac.dofs[jac.col[e]]));
        throw_located(err, state,
                      "the second derivative of d '" + state.name + "' / d '" + column + "'");
      }
    }
  }
  std::vector<std::size_t> order;
  append_column_order(pat.u_state, 0, order);
  append_column_order(pat.p_param, pat.u_values.size(), order);
  std::vector<NodeId> entries = std::move(pat.u_values);
  entries.insert(entries.end(), pat.p_values.begin(), pat.p_values.end());
  Program values = compile_outputs(sys, entries, options, order);
  return {.parameters = std::vector<int>(parameters.begin(), parameters.end()),
          .u_entry = std::move(pat.u_entry),
          .u_state = std::move(pat.u_state),
          .p_entry = std::move(pat.p_entry),
          .p_param = std::move(pat.p_param),
          .values = std::move(values),
          .entries = std::move(entries),
          .source = std::move(owned)};
}

Program compile_first_derivatives(const JacobianProgram& jac, const ParameterJacobianProgram& dfdp,
                                  const CompileOptions& options) {
  if (!jac.source || jac.entries.size() != jac.col.size() || jac.dofs != dfdp.dofs)
    throw Error("invalid_jacobian", "", "",
                "the Jacobian and the parameter Jacobian are not of the same equations");
  esm::System sys = *jac.source;  // J's entries live in this pool; df/dp's are rebuilt in it
  const ColumnOf column_of = parameter_columns(sys, dfdp.parameters);
  DefinitionInliner inline_defs(sys);
  std::vector<int> col;
  std::vector<NodeId> entries = jac.entries;
  for (std::size_t r = 0; r < jac.dofs.size(); ++r) {
    append_partials(sys.pool, inline_defs(sys.state_rhs[static_cast<std::size_t>(jac.dofs[r])]), column_of, col,
                    entries);
    if (col.size() != static_cast<std::size_t>(dfdp.row_ptr[r + 1]))
      throw Error("invalid_jacobian", "", "", "the parameter Jacobian's pattern differs from its equations'");
  }
  if (col != dfdp.col) throw Error("invalid_jacobian", "", "", "the parameter Jacobian's pattern differs from its equations'");
  std::vector<std::size_t> order;
  append_column_order(jac.col, 0, order);
  append_column_order(dfdp.col, jac.col.size(), order);
  return compile_outputs(sys, entries, options, order);
}

VectorJacobianProgram compile_vector_jacobian_product(const JacobianProgram& jac,
                                                      std::span<const int> parameters,
                                                      const CompileOptions& options) {
  if (!jac.source || jac.row_ptr.size() != jac.dofs.size() + 1)
    throw Error("invalid_jacobian", "", "", "the Jacobian program has no equations to differentiate");
  esm::System sys = *jac.source;
  (void)parameter_columns(sys, parameters);  // range and repeat checks
  DefinitionInliner inline_defs(sys);
  std::vector<NodeId> rhs, weights;
  std::vector<std::string> weight_names;
  std::vector<StrId> wrt;
  for (std::size_t r = 0; r < jac.dofs.size(); ++r) {
    const auto i = static_cast<std::size_t>(jac.dofs[r]);
    rhs.push_back(inline_defs(sys.state_rhs[i]));
    // Not an ESM identifier (spaces), so no model name is captured.
    weight_names.push_back("adjoint weight #" + std::to_string(r));
    weights.push_back(sys.pool.symbol(weight_names.back()));
    wrt.push_back(sys.pool.intern(sys.states.name(i)));
  }
  for (int k : parameters) wrt.push_back(sys.pool.intern(sys.parameters[static_cast<std::size_t>(k)].name));
  std::vector<NodeId> outputs;
  try {
    outputs = expr::differentiate_reverse(sys.pool, rhs, weights, wrt);
  } catch (const Error& e) {
    // Located at the first equation the forward rules refuse too (the same rules run here).
    for (std::size_t r = 0; r < jac.dofs.size(); ++r) {
      const esm::FlatVariable& state = sys.states[static_cast<std::size_t>(jac.dofs[r])];
      try {
        for (StrId s : wrt) (void)expr::differentiate(sys.pool, rhs[r], s);
      } catch (const Error& row) {
        throw_located(row, state, "the derivative of the equation of '" + state.name + "'");
      }
    }
    throw;
  }
  CompileOptions o = options;
  o.cell_inputs.insert(o.cell_inputs.end(), weight_names.begin(), weight_names.end());
  Program values = compile_outputs(sys, outputs, o);
  return {.dofs = jac.dofs,
          .parameters = std::vector<int>(parameters.begin(), parameters.end()),
          .weight_names = std::move(weight_names),
          .values = std::move(values)};
}

}  // namespace esi::kernel
