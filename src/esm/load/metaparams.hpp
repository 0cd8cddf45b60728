// Private: metaparameter expressions (spec §9.7.6) — integer literals, names, and + - * / over
// them — folded with exact 64-bit arithmetic.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace esi::esm::detail {

/// Folds `e` in `env`. Throws esi::Error: `metaparameter_type_error` (non-integer, inexact
/// division, overflow, other ops) or `metaparameter_unbound` (a name not in `env`).
std::int64_t fold_metaparameter(const nlohmann::json& e, const std::map<std::string, std::int64_t>& env,
                                const std::string& file, const std::string& pointer);

/// Substitutes every metaparameter name of `env` appearing in an Expression position (and in
/// structural integer sites: index-set sizes, aggregate dense ranges, makearray regions) of
/// `node` by its integer value.
void substitute_metaparameters(nlohmann::json& node, const std::map<std::string, nlohmann::json>& env);

}  // namespace esi::esm::detail
