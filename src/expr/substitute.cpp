#include "esi/expr/substitute.hpp"

#include <vector>

namespace esi::expr {

NodeId substitute(Pool& pool, NodeId root, const std::unordered_map<StrId, NodeId>& map,
                  std::unordered_map<NodeId, NodeId>& memo) {
  if (auto m = memo.find(root); m != memo.end()) return m->second;
  const Node n = pool.node(root);
  NodeId result = root;
  if (n.op == Op::Symbol) {
    if (auto s = map.find(n.name); s != map.end()) result = s->second;
  } else if (n.child_count > 0) {
    std::vector<NodeId> kids(pool.children(root).begin(), pool.children(root).end());
    bool changed = false;
    for (auto& k : kids) {
      const NodeId s = substitute(pool, k, map, memo);
      changed |= s != k;
      k = s;
    }
    if (changed) result = pool.make(n.op, kids, n.arg_count, n.name, n.attrs);
  }
  memo[root] = result;
  return result;
}

}  // namespace esi::expr
