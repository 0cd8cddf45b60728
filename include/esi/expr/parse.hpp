// Reading expressions from JSON (spec §4.1) into the Pool, and writing them back.
//
// Parsing checks only what makes a node meaningless (a non-string op, a non-array args, a
// boolean or null where an Expression is expected); arity rules and name resolution belong to
// the esm validator, which knows the context.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "esi/expr/expr.hpp"

namespace esi::expr {

/// Parses `value` (a number, a name or an op node). Throws esi::Error with code
/// `invalid_expression` at `file` + `pointer` for malformed input.
NodeId parse(Pool& pool, const nlohmann::json& value, const std::string& file,
             const std::string& pointer);

/// Serializes back to the JSON form (integers stay integers).
nlohmann::json to_json(const Pool& pool, NodeId id);

/// Infix rendering for humans: `k1 * O3 * NO`, `D(O3, t)`, `ifelse(a < b, a, b)`.
std::string to_infix(const Pool& pool, NodeId id);

/// The attrs JSON of a node (an empty object when the node has none).
nlohmann::json attrs_json(const Pool& pool, NodeId id);

}  // namespace esi::expr
