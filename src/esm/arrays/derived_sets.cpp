// Derived index sets (RFC semiring-faq §5.5, §5.7; spec §8.6.1): materialized once from the
// `distinct` aggregate or intersect_polygon that produces them; skolem keys and rank.
#include <algorithm>

#include "esm/arrays/expander.hpp"

namespace esi::esm::detail::arrays {

namespace {

std::string set_pointer(const std::string& set) {
  return pointer_join(pointer_join("/index_sets", set), "from_faq");
}

}  // namespace

void Expander::materialize_derived_sets() {
  const json& sets = st_.doc.doc.value("index_sets", json::object());
  for (auto it = sets.begin(); it != sets.end(); ++it)
    if (is_derived(it.key())) derived_size(it.key());
}

bool Expander::is_derived(const std::string& set) const {
  const json& sets = st_.doc.doc.value("index_sets", json::object());
  auto it = sets.find(set);
  return it != sets.end() && it->is_object() && it->value("kind", std::string()) == "derived" &&
         !st_.doc.index_set_sizes.count(set);
}

std::int64_t Expander::derived_size(const std::string& set) {
  if (auto d = st_.derived.find(set); d != st_.derived.end()) return d->second.size;
  if (std::find(deriving_.begin(), deriving_.end(), set) != deriving_.end()) {
    std::string chain;
    for (const auto& s : deriving_) chain += "'" + s + "' -> ";
    throw Error("derived_index_set_cycle", st_.doc.file, set_pointer(deriving_.front()),
                "the derived index set '" + set + "' is needed to compute itself (" + chain + "'" + set +
                    "'): a derived set's producer may not range over, or read arrays shaped over, "
                    "a set that depends on it");
  }
  // Evaluate aside: this may be asked in the middle of another evaluation.
  auto saved_env = std::move(env_);
  auto saved_drawn = std::move(drawn_env_);
  auto saved_memo = std::move(memo_);
  const std::uint64_t saved_context = context_;
  const bool saved_relative = relative_;
  const std::string saved_file = file_, saved_pointer = pointer_;
  relative_ = false;
  env_.clear();
  drawn_env_.clear();
  memo_.clear();
  context_ = next_context_++;
  deriving_.push_back(set);
  DerivedSet out = materialize(set);
  deriving_.pop_back();
  relative_ = saved_relative;
  env_ = std::move(saved_env);
  drawn_env_ = std::move(saved_drawn);
  memo_ = std::move(saved_memo);
  context_ = saved_context;
  file_ = saved_file;
  pointer_ = saved_pointer;
  const std::int64_t size = out.size;
  st_.derived[set] = std::move(out);
  for (auto& [name, shape] : st_.arrays)
    for (std::size_t d = 0; d < shape.axes.size(); ++d)
      if (shape.axes[d] == set && shape.extents[d] < 0) shape.extents[d] = size;
  return size;
}

const ArrayShape& Expander::ready(const ArrayShape& a) {
  for (std::size_t d = 0; d < a.axes.size(); ++d)
    if (a.extents[d] < 0 && is_derived(a.axes[d])) derived_size(a.axes[d]);
  return a;
}

Producer Expander::find_producer(const std::string& id) {
  Producer found;
  auto search = [&](NodeId root, const std::string& file, const std::string& pointer) {
    if (found.node != expr::kNoNode || root == expr::kNoNode) return;
    walk(pool_, root, [&](NodeId n) {
      if (found.node != expr::kNoNode) return false;
      const Op op = pool_.node(n).op;
      if ((op == Op::Aggregate || op == Op::IntersectPolygon) && attrs(n).value("id", json()) == id)
        found = {n, file, pointer};
      return true;
    });
  };
  for (const auto& [y, eq] : st_.observed_eqs) search(eq.rhs, eq.file, eq.pointer);
  for (const auto& [y, pieces] : st_.observed_pieces)
    for (const auto& eq : pieces) search(eq.rhs, eq.file, eq.pointer);
  for (const auto& [x, list] : st_.tendencies)
    for (const auto& t : list) search(t.rhs, t.file, t.pointer);
  for (const auto& [x, eq] : st_.initial_eqs) search(eq.rhs, eq.file, eq.pointer);
  for (const auto& eq : st_.algebraic_eqs) search(eq.rhs, eq.file, eq.pointer);
  return found;
}

const DerivedSet& Expander::set_produced_by(const std::string& id, const char* what) {
  const json& sets = st_.doc.doc.value("index_sets", json::object());
  for (auto it = sets.begin(); it != sets.end(); ++it)
    if (is_derived(it.key()) && it->value("from_faq", json()) == id) {
      derived_size(it.key());
      return st_.derived.at(it.key());
    }
  fail("unsupported_array_feature",
       std::string("a ") + what + (id.empty() ? std::string(" without an 'id'") : " with id '" + id + "'") +
           " that no derived index set names (`from_faq`) is not supported: its members form the "
           "index set, so declare one {\"kind\": \"derived\", \"from_faq\": <its id>}");
}

DerivedSet Expander::materialize(const std::string& set) {
  const std::string id = st_.doc.doc["index_sets"][set].value("from_faq", std::string());
  const Producer p = find_producer(id);
  if (p.node == expr::kNoNode)
    throw Error("derived_index_set_unknown_producer", st_.doc.file, set_pointer(set),
                "the derived index set '" + set + "' is produced by the node with id '" + id +
                    "' (from_faq), but no aggregate or intersect_polygon of the document has that id");
  locate(p.file, p.pointer);
  DerivedSet out;
  out.producer = id;
  ++runtime_probe_;
  try {
    if (pool_.node(p.node).op == Op::IntersectPolygon) {
      out.ring = intersection_ring(p.node);
      out.size = static_cast<std::int64_t>(out.ring.size());
    } else {
      distinct_members(p.node, set, out);
    }
    --runtime_probe_;
  } catch (const RuntimeIndex& why) {
    --runtime_probe_;
    // A parameter without a value in the document may be data supplied later: the document
    // is not wrong, esi just cannot build the set from it. A state is never constant (the
    // relational engine does not run on the hot path, RFC §6.1).
    if (why.parameter)
      fail("unsupported_array_feature",
           "the derived index set '" + set + "' (from_faq '" + id + "') is computed from the parameter " +
               why.name + ", which has no constant value in the document; a derived set is "
               "materialized once, when the model is built, so esi needs its data there (a default, "
               "or an equation of constants); data supplied only at run time is not supported for it");
    fail("derived_index_set_not_static",
         "the derived index set '" + set + "' (from_faq '" + id + "') is computed from " + why.name +
             ", which changes while the model runs (a state, or a value computed from one); a "
             "derived set is materialized once, before the run, so everything its producer reads "
             "must be constant");
  } catch (...) {
    --runtime_probe_;
    throw;
  }
  return out;
}

void Expander::distinct_members(NodeId e, const std::string& set, DerivedSet& out) {
  const json& attrs = this->attrs(e);
  if (!(attrs.contains("distinct") && attrs["distinct"] == true))
    fail("unsupported_array_feature",
         "the derived index set '" + set + "' names an aggregate that is not `distinct: true`; only "
         "distinct aggregates (and intersect_polygon rings) produce index sets");
  const std::vector<NodeId> kids = children_of(e);
  auto child = [&](const char* field) {
    auto x = attrs.find(field);
    return x != attrs.end() && x->is_object() && x->contains("$child")
               ? kids[(*x)["$child"].get<std::size_t>()]
               : expr::kNoNode;
  };
  const NodeId key = child("key"), filter = child("filter");
  if (key == expr::kNoNode)
    fail("invalid_aggregate", "the distinct aggregate that produces index set '" + set +
                                  "' has no 'key' (the skolem term that names each member)");
  const json ranges = attrs.value("ranges", json::object());
  std::vector<std::pair<expr::StrId, Range>> over;
  std::vector<std::pair<expr::StrId, std::string>> drawn_from;
  for (auto it = ranges.begin(); it != ranges.end(); ++it) {
    const expr::StrId id = pool_.intern("$" + it.key());
    over.emplace_back(id, range_of(*it, it.key()));
    if (!over.back().second.from.empty()) drawn_from.emplace_back(id, over.back().second.from);
  }
  const json join = attrs.value("join", json::array());
  std::map<std::pair<std::string, std::vector<double>>,
           std::vector<std::vector<std::pair<expr::StrId, std::int64_t>>>> members;
  parents_first(over);
  for (const auto& [id, r] : over) env_.emplace_back(id, Ix{r.start, -1});
  each_combination(over, 0, [&] {
    memo_.clear();
    const bool admitted = filter == expr::kNoNode || static_value(filter).v != 0.0;
    bool joined = true;
    if (admitted && !join.empty()) {
      const std::optional<NodeId> c = join_condition(join, drawn_from);
      if (c && *c != expr::kNoNode)
        throw RuntimeIndex{"a join key read only while the model runs"};
      joined = c.has_value();
    }
    if (admitted && joined) {
      std::vector<std::pair<expr::StrId, std::int64_t>> binding;
      for (std::size_t i = 0; i < over.size(); ++i) binding.emplace_back(over[i].first, env_[i].second.v);
      members[static_key(key)].push_back(std::move(binding));
    }
  });
  env_.clear();
  for (auto& [k, list] : members) out.contributions.push_back(std::move(list));
  out.size = static_cast<std::int64_t>(out.contributions.size());
}

std::pair<std::string, std::vector<double>> Expander::static_key(NodeId key) {
  if (pool_.node(key).op != Op::Skolem) return {std::string(), {static_value(key).v}};
  std::pair<std::string, std::vector<double>> out{attrs(key).value("label", std::string()), {}};
  for (NodeId a : args_of(key)) {
    const SVal v = static_value(a);
    if (relative_ && v.axis >= 0) throw NotRelative{"a skolem key of a cell position"};
    out.second.push_back(v.v);
  }
  return out;
}

double Expander::skolem_id(const std::pair<std::string, std::vector<double>>& key) {
  auto it = st_.skolem_ids.find(key);
  if (it == st_.skolem_ids.end())
    it = st_.skolem_ids.emplace(key, static_cast<double>(st_.skolem_ids.size() + 1)).first;
  return it->second;
}

NodeId Expander::skolem_value(NodeId e) {
  ++runtime_probe_;
  try {
    const double id = skolem_id(static_key(e));
    --runtime_probe_;
    return pool_.number(id, true);
  } catch (const RuntimeIndex& why) {
    --runtime_probe_;
    if (!deriving_.empty()) throw;
    fail("unsupported_array_feature",
         "a 'skolem' key of " + why.name +
             (why.parameter ? ", a parameter with no value in the document (data a caller may supply, "
                              "e.g. with --inputs),"
                            : ", a value known only while the model runs,") +
             " cannot be minted: keys are minted once, when the model is built (RFC semiring-faq "
             "§5.7), so their arguments must be constants then");
  } catch (...) {
    --runtime_probe_;
    throw;
  }
}

NodeId Expander::rank_value(NodeId e) {
  const std::vector<NodeId> args = args_of(e);
  const std::string set = args.size() == 1 ? name_of(args[0]).substr(1) : std::string();
  for (auto it = drawn_env_.rbegin(); it != drawn_env_.rend(); ++it) {
    if (it->second != set) continue;
    const auto v = bound(it->first);
    if (!v) break;
    if (v->axis >= 0 && relative_)
      return pool_.make(Op::Sub, std::vector<NodeId>{pool_.symbol(relative_name("$index", {*v})),
                                                     pool_.number(1.0, true)});
    return pool_.number(static_cast<double>(v->v - 1), true);
  }
  fail("unsupported_array_feature",
       "'rank(" + set + ")' is used where no index of an enclosing aggregate draws from '" + set +
           "' (give one a range {\"from\": \"" + set + "\"}; rank is that member's dense id)");
}

NodeId Expander::distinct_cell(NodeId e, const Frame& f) {
  const json& attrs = this->attrs(e);
  const DerivedSet& set = set_produced_by(attrs.value("id", std::string()), "distinct aggregate");
  const json out = attrs.value("output_idx", json::array());
  if (out.size() != 1 || f.pos.size() != 1)
    fail("array_shape_mismatch", "a distinct aggregate has one output index, the member of the set it "
                                 "produces, and defines an array over that set alone");
  if (relative_ && f.pos[0].axis >= 0) throw NotRelative{"the members of a derived index set"};
  const std::int64_t m = f.pos[0].v;
  if (m < 1 || m > set.size)
    fail("array_shape_mismatch", "member " + std::to_string(m) + " of a derived index set with " +
                                     std::to_string(set.size) + " members");
  const std::string reduce = reduction_of(attrs);
  const std::vector<NodeId> kids = children_of(e);
  NodeId body = expr::kNoNode;
  if (auto x = attrs.find("expr"); x != attrs.end() && x->is_object() && x->contains("$child"))
    body = kids[(*x)["$child"].get<std::size_t>()];
  if (body == expr::kNoNode) fail("invalid_aggregate", "an aggregate needs an 'expr'");
  std::vector<NodeId> terms;
  const std::size_t mark = env_.size();
  if (out[0].is_string()) env_.emplace_back(pool_.intern("$" + out[0].get<std::string>()), Ix{m, -1});
  for (const auto& binding : set.contributions[static_cast<std::size_t>(m - 1)]) {
    const std::size_t inner = env_.size();
    for (const auto& [sym, v] : binding) env_.emplace_back(sym, Ix{v, -1});
    NodeId term = in_context([&] { return eval(body, Frame{}); });
    if (pool_.node(term).op == Op::True) term = pool_.number(1.0, true);
    terms.push_back(term);
    env_.resize(inner);
  }
  env_.resize(mark);
  return reduced(terms, reduce);
}

}  // namespace esi::esm::detail::arrays
