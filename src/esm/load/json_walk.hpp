// Private helpers for walking Expression positions inside raw ESM JSON.
//
// Used by the loader's renaming passes (metaparameter substitution, import prefixes, rebinding)
// before expressions enter the DAG. "Expression positions" are the whole value when it is a
// string, and inside an op node the entries of `args`, `values`, and the values of `expr`,
// `filter`, `lower`, `upper`, `bindings{}`, `axes{}`.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

namespace esi::esm::detail {

using nlohmann::json;

/// Calls `f(str)` on every string in an Expression position of `e` and replaces it with the
/// returned JSON when `f` returns a non-null value. Strings bound as aggregate index symbols
/// (output_idx / ranges keys of an enclosing aggregate) are not visited.
void rewrite_expression_names(json& e, const std::function<json(const std::string&)>& f);

/// Same walk, read-only: every free name in an Expression position.
void collect_expression_names(const json& e, std::set<std::string>& out);

/// Renames scalar axis fields (`wrt`, `dim`) and `{"from": name}` range references.
void rename_axis_fields(json& e, const std::map<std::string, std::string>& names);

/// Renames `apply_expression_template.name` references.
void rename_template_refs(json& e, const std::map<std::string, std::string>& names);

/// Visits every expression-bearing field of a component (model or reaction system): equations,
/// initialization equations, guesses, events, reactions' rates, template bodies and matches,
/// tests are NOT visited (they use local names as data). `f` receives the expression JSON.
void for_each_component_expression(json& component, const std::function<void(json&)>& f);

}  // namespace esi::esm::detail
