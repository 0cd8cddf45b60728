// Shared internals of the structural checks (src/esm/checks/structural*.cpp). Not a public header.
//
// The checks work directly on the document JSON. This header provides the component tree
// (models, reaction systems and their subsystems, spec §4.6/§4.7), scoped-reference resolution
// (§4.9.2), the expression walkers (§4.9.5: every Expression child, not just `args`) and the
// finding sink.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "esi/core/error.hpp"
#include "esi/esm/structural.hpp"

namespace esi::esm::structural_detail {

using nlohmann::json;

enum class CompKind { Model, ReactionSystem, Stub };
enum class SymKind { Unknown, Parameter, Species, ReactionParameter };

/// One model / reaction system node of the document, with its subsystems.
struct Component {
  const json* node = nullptr;
  CompKind kind = CompKind::Stub;
  std::string name;     ///< local key
  std::string dotted;   ///< dot path from the document root ("Parent.Child")
  std::string pointer;  ///< JSON pointer of the node
  Component* parent = nullptr;
  std::map<std::string, std::unique_ptr<Component>> subs;
  std::map<std::string, SymKind> symbols;  ///< variables, or species + parameters

  bool is_stub() const { return kind == CompKind::Stub; }
  const json* field(const char* key) const;  ///< node[key] when node is an object, else nullptr
};

/// Outcome of resolving a (possibly dotted) name.
enum class Resolution { Found, Opaque, NoSystem, NoVariable };

struct Context {
  const json& doc;
  std::string file;
  std::vector<Diagnostic>& out;

  std::map<std::string, std::unique_ptr<Component>> roots;  ///< top-level models + reaction systems
  std::string time_var = "t";
  std::set<std::string> index_sets;
  std::set<std::string> axis_names;       ///< §4.9.1(ii): index sets, `dim` values, spatial `wrt`s
  std::set<std::string> doc_level_names;  ///< metaparameters, coordinates, callback variables
  bool index_sets_may_be_incomplete = false;  ///< template imports / stubs may add index sets
  std::set<std::pair<std::string, std::string>> reported;  ///< (code, pointer) already emitted

  Context(const json& d, std::string f, std::vector<Diagnostic>& o)
      : doc(d), file(std::move(f)), out(o) {}

  void report(const std::string& code, const std::string& pointer, const std::string& message);

  /// All components, parents before children, roots in name order.
  std::vector<Component*> all_components() const;

  /// Resolves a system path ("A", "A.B.C") as seen from `from` (its own subsystems, then each
  /// ancestor's, then the document roots). Sets `opaque` when the walk crosses a ref stub.
  Component* find_system(std::string_view path, const Component* from, bool& opaque) const;

  /// Resolves a variable reference (bare or dotted) as seen from component `from` (nullptr: only
  /// fully-qualified references from the document root, as in coupling entries).
  Resolution resolve(std::string_view name, const Component* from, SymKind* kind = nullptr) const;
};

// ---- expression helpers (structural_expr.cpp) --------------------------------------------

/// Calls `f(name)` for each free symbol of `e`: strings in reference positions that are not
/// bound by an enclosing aggregate/argmin (output_idx, ranges keys, arg), integral (`var`) or
/// template (`params`, passed in `bound`). Skips literal-only ops (const, enum) and the
/// non-expression fields (ranges, regions, join, attrs, shape, ...). `templates` is the
/// component's `expression_templates` (or nullptr): with it, a string binding of a param the
/// template body uses as a scalar field is recognized as a literal (§9.6.1).
void for_each_free_symbol(const json& e, const std::function<void(const std::string&)>& f,
                          const std::set<std::string>& bound = {}, const json* templates = nullptr);

/// Pre-order visit of every ExpressionNode object in `e`, descending every Expression child
/// (args, expr, filter, key, lower, upper, values, axes, bindings). `f` returns false to skip
/// the node's children.
void visit_nodes(const json& e, const std::function<bool(const json& node)>& f);

/// Collects axis-naming scalar fields (`dim`, spatial `wrt`) anywhere in `j` (§4.9.1 (ii)).
void collect_axis_names(const json& j, const std::string& time_var, std::set<std::string>& out);

/// The variable an equation LHS defines, for the forms §6.3.1 distinguishes. `derivative` is set
/// for D(x, t) forms (also under index/aggregate wrappers); returns "" for expression LHSs.
std::string lhs_target(const json& lhs, const std::string& time_var, bool& derivative, bool& is_ic);

/// Whether `e` is a time derivative node (D with wrt absent or equal to the time variable).
bool is_time_derivative(const json& e, const std::string& time_var);

/// obj[key] when obj is an object holding a string there, else "" (never throws).
std::string get_str(const json& obj, const char* key);

/// obj[key] when obj is an object holding that key, else nullptr.
const json* get_field(const json& obj, const char* key);

/// Strings in `names`, joined as "'a', 'b'".
std::string quote_list(const std::vector<std::string>& names);

// ---- classification (classify.cpp) ----------------------------------------------------------

/// §6.3.1 classification with an explicit independent variable (`domain.independent_variable`).
Classification classify(const json& model, const std::string& time_var);

/// A spatial derivative (D with a non-time wrt, or grad/div/laplacian) anywhere in `e`.
bool has_spatial_derivative(const json& e, const std::string& time_var);

// ---- the check families ---------------------------------------------------------------------

void check_names(Context& ctx);     // structural_names.cpp: undefined refs, reactions, events
void check_balance(Context& ctx);   // structural_balance.cpp: §4.9.4, §6.3.1 system_kind
void check_coupling(Context& ctx);  // structural_coupling.cpp: §10, circular dependencies
void check_arrays(Context& ctx);    // structural_arrays.cpp: §4.3 broadcast, index sets, shapes
void check_operators(Context& ctx);   // structural_ops.cpp: §4.2 arity and spelling, §4.3.2, manifolds
void check_templates(Context& ctx);   // structural_templates.cpp: §9.7.3 body DAG, depth, size
void check_components(Context& ctx);  // structural_components.cpp: ids, tests, ic, observed loops

}  // namespace esi::esm::structural_detail
