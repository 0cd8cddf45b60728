// Joins of an aggregate (§4.3.1; RFC semiring-faq §5.3): the value of each join key at an index
// combination, and whether the combination passes, now or by a condition read while running.
#include <cmath>

#include "esm/arrays/expander.hpp"

namespace esi::esm::detail::arrays {

expr::StrId Expander::index_drawing_from(const std::string& set,
                               const std::vector<std::pair<expr::StrId, std::string>>& drawn_from,
                               const std::string& key, bool array) {
  const std::string what = array ? "join key '" + key + "' is an array over index set '" + set + "'"
                                 : "join key '" + key + "' names index set '" + set + "'";
  std::optional<expr::StrId> found;
  for (const auto& [id, from] : drawn_from) {
    if (from != set) continue;
    if (found && *found != id)
      fail("invalid_join", what + ", from which several indices of the aggregate draw, so "
                                  "the key's position is ambiguous");
    found = id;
  }
  if (!found)
    fail("invalid_join", what + ", from which no index of the aggregate draws (give that "
                                "index a range {\"from\": \"" + set + "\"})");
  return *found;
}

KeyValue Expander::index_key(expr::StrId id, const std::vector<std::pair<expr::StrId, std::string>>& drawn_from) {
  const auto v = bound(id);
  if (!v) fail("invalid_join", "join key '" + std::string(pool_.str(id)).substr(1) + "' is not bound here");
  KeyValue out{SVal{static_cast<double>(v->v), v->axis}, std::nullopt, expr::kNoNode};
  for (const auto& [sym, set] : drawn_from) {
    if (sym != id) continue;
    const json& sets = st_.doc.doc.value("index_sets", json::object());
    auto it = sets.find(set);
    if (it == sets.end() || !it->is_object() || !it->contains("members")) break;
    const json& members = (*it)["members"];
    if (relative_ && v->axis >= 0)
      throw NotRelative{"a join on the categorical members of a moving index"};
    if (v->v >= 1 && v->v <= static_cast<std::int64_t>(members.size()) && members[v->v - 1].is_string())
      out.member = members[v->v - 1].get<std::string>();
    break;
  }
  return out;
}

KeyValue Expander::key_value(const std::string& key, const std::vector<std::pair<expr::StrId, std::string>>& drawn_from) {
  if (key.starts_with("$")) return index_key(pool_.intern(key), drawn_from);
  if (key.starts_with("#")) return index_key(index_drawing_from(key.substr(1), drawn_from, key.substr(1)), drawn_from);
  // A variable: a key column over index sets of the aggregate, read at their indices (a
  // constant parameter's value is known now; anything else is read while the model runs).
  if (auto d = st_.declared.find(key); d != st_.declared.end() && !d->second.unknown &&
                                       d->second.var.cadence == Cadence::Constant &&
                                       d->second.var.default_value)
    return KeyValue{SVal{*d->second.var.default_value, -1}, std::nullopt, expr::kNoNode};
  auto a = st_.arrays.find(key);
  if (a == st_.arrays.end()) {
    // A derived index set is computed when the model is built: its join keys must be too.
    if (!deriving_.empty() || static_keys_ > 0)
      return KeyValue{SVal{static_constant(pool_.symbol(key)), -1}, std::nullopt, expr::kNoNode};
    return KeyValue{SVal{}, std::nullopt, pool_.symbol(key)};
  }
  std::vector<Ix> idx;
  for (const auto& axis : a->second.axes) idx.push_back(*bound(index_drawing_from(axis, drawn_from, key, true)));
  if (!deriving_.empty() || static_keys_ > 0)
    return KeyValue{SVal{static_constant(pool_.symbol(cell_name(key, plain(idx)))), -1}, std::nullopt, expr::kNoNode};
  return KeyValue{SVal{}, std::nullopt, cell_symbol(key, idx)};
}

std::optional<NodeId> Expander::join_condition(const json& join,
                                     const std::vector<std::pair<expr::StrId, std::string>>& drawn_from) {
  std::vector<NodeId> runtime;
  for (const json& clause : join)
    for (const json& pair : clause["on"]) {
      const KeyValue a = key_value(pair[0].get<std::string>(), drawn_from);
      const KeyValue b = key_value(pair[1].get<std::string>(), drawn_from);
      if (a.runtime == expr::kNoNode && b.runtime == expr::kNoNode) {
        const bool equal = a.member && b.member ? *a.member == *b.member
                                                : test(a.number, Op::Eq, b.number);
        if (!equal) return std::nullopt;
        continue;
      }
      auto node = [&](const KeyValue& k) {
        if (k.runtime != expr::kNoNode) return k.runtime;
        if (k.number.axis >= 0) return pool_.symbol(relative_name("$index", {Ix{static_cast<std::int64_t>(k.number.v), k.number.axis}}));
        return pool_.number(k.number.v, k.number.v == std::floor(k.number.v));
      };
      runtime.push_back(pool_.make(Op::Eq, std::vector<NodeId>{node(a), node(b)}));
    }
  if (runtime.empty()) return expr::kNoNode;
  if (runtime.size() == 1) return runtime[0];
  return pool_.make(Op::And, runtime);
}

}  // namespace esi::esm::detail::arrays
