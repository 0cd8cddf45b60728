// Replacing symbols by expressions in the hash-consed pool.
#pragma once

#include <unordered_map>

#include "esi/expr/expr.hpp"

namespace esi::expr {

/// `root` with every Symbol whose name is a key of `map` replaced by its node (one pass: the
/// replacements are not themselves rewritten). `memo[x]` holds x rewritten; it stays valid for
/// any root under the same `map`, so one memo can serve many calls. Recursive over the
/// expression's depth (bounded by the loader, esm::kMaxExpressionDepth).
NodeId substitute(Pool& pool, NodeId root, const std::unordered_map<StrId, NodeId>& map,
                  std::unordered_map<NodeId, NodeId>& memo);

}  // namespace esi::expr
