// Index ranges of aggregates (§4.3.1): interval, `from` and ragged index sets, the order
// contracted indices are iterated in, and the index symbols an expression uses.
#include <algorithm>
#include <cmath>

#include "esm/arrays/expander.hpp"

namespace esi::esm::detail::arrays {

void parents_first(std::vector<std::pair<expr::StrId, Range>>& over) {
  std::vector<std::pair<expr::StrId, Range>> out, waiting;
  auto placed = [&](expr::StrId p) {
    for (const auto& [id, r] : out)
      if (id == p) return true;
    // not one of these indices: bound outside (an output index), or nowhere (reported then)
    for (const auto& [id, r] : over)
      if (id == p) return false;
    return true;
  };
  auto ready_now = [&](const Range& r) { return std::all_of(r.of.begin(), r.of.end(), placed); };
  for (auto& e : over) {
    if (e.second.ragged() && !ready_now(e.second)) {
      waiting.push_back(std::move(e));
      continue;
    }
    out.push_back(std::move(e));
    for (bool moved = true; moved;) {
      moved = false;
      for (auto it = waiting.begin(); it != waiting.end(); ++it)
        if (ready_now(it->second)) {
          out.push_back(std::move(*it));
          waiting.erase(it);
          moved = true;
          break;
        }
    }
  }
  for (auto& e : waiting) out.push_back(std::move(e));  // a cycle: ragged_members reports it
  over = std::move(out);
}

bool Expander::contains(const Range& r, Ix v) {
  if (v.axis < 0 || !relative_) return r.contains(v.v);
  if (r.step == 1) return test(v, Op::Ge, r.start) && test(v, Op::Le, r.stop);
  if (r.step == -1) return test(v, Op::Le, r.start) && test(v, Op::Ge, r.stop);
  throw NotRelative{"an output index with a strided range"};
}

Range Expander::range_of(const json& r, const std::string& sym) {
  Range out;
  if (r.is_object() && r.contains("from") && r["from"].is_string()) {
    out.from = r["from"].get<std::string>();
    if (const json* set = ragged_set(out.from)) {
      const json parents = set->value("of", json::array());
      const json of = r.value("of", json::array());
      if (!of.is_array() || of.size() != parents.size() || of.empty())
        fail("invalid_range", "index '" + sym + "' ranges over the ragged index set '" + out.from + "' of " +
                                  parents.dump() + ", so its range needs \"of\" naming " +
                                  std::to_string(parents.size()) +
                                  " enclosing index(es) whose members it iterates");
      for (const auto& p : of) {
        if (!p.is_string()) fail("invalid_range", "the \"of\" of index '" + sym + "' must name indices");
        out.of.push_back(pool_.intern("$" + p.get<std::string>()));
      }
      return out;
    }
    if (r.contains("of"))
      fail("invalid_range", "index '" + sym + "' has \"of\" but ranges over '" + out.from +
                                "', which is not a ragged index set");
    auto size = st_.doc.index_set_sizes.find(out.from);
    if (size == st_.doc.index_set_sizes.end() && is_derived(out.from)) {
      out.stop = derived_size(out.from);
      return out;
    }
    if (size == st_.doc.index_set_sizes.end())
      fail("unsupported_array_feature", "index '" + sym + "' ranges over '" + out.from +
                                            "', an index set without a size (only interval "
                                            "index sets become cells so far)");
    out.stop = size->second;
    return out;
  }
  if (r.is_array() && (r.size() == 2 || r.size() == 3)) {
    out.start = json_int(r[0], "a range bound");
    out.stop = json_int(r[r.size() - 1], "a range bound");
    if (r.size() == 3) out.step = json_int(r[1], "a range step");
    if (out.step == 0) fail("invalid_range", "index '" + sym + "' has a range with step 0");
    return out;
  }
  fail("unsupported_array_feature", "index '" + sym + "' has the range " + r.dump() +
                                        ", a form not supported yet");
}

const json* Expander::ragged_set(const std::string& name) const {
  auto sets = st_.doc.doc.find("index_sets");  // (not value(): a pointer into it is kept)
  if (sets == st_.doc.doc.end() || !sets->is_object()) return nullptr;
  auto it = sets->find(name);
  if (it == sets->end() || !it->is_object() || it->value("kind", std::string()) != "ragged") return nullptr;
  return &*it;
}

std::string Expander::ragged_factor(const std::string& set, const char* role) {
  const json& decl = *ragged_set(set);
  const std::string name = decl.value(role, std::string());
  const std::string where = "the ragged index set '" + set + "' names '" + name + "' as its " + role;
  if (st_.arrays.count(name)) return name;
  std::vector<std::string> hits;
  for (const auto& [flat, shape] : st_.arrays)
    if (flat.size() > name.size() + 1 && flat.ends_with("." + name)) hits.push_back(flat);
  if (hits.size() == 1) return hits[0];
  if (hits.empty())
    throw Error("undefined_variable", st_.doc.file, pointer_join(pointer_join("/index_sets", set), role),
                where + ", but no model declares an array of that name");
  throw Error("ambiguous_reference", st_.doc.file, pointer_join(pointer_join("/index_sets", set), role),
              where + ", which several models declare (" + hits[0] + ", " + hits[1] + ")");
}

std::int64_t Expander::ragged_int(const std::string& set, const std::string& array, const std::vector<std::int64_t>& cell) {
  const ArrayShape& a = st_.arrays.at(array);
  if (a.extents.size() != cell.size())
    fail("invalid_ragged_set", "the ragged index set '" + set + "' reads '" + array + "' with " +
                                   std::to_string(cell.size()) + " indices, but it has " +
                                   std::to_string(a.extents.size()) + " axes");
  for (std::size_t d = 0; d < cell.size(); ++d)
    if (cell[d] < 1 || cell[d] > a.extents[d])
      fail("invalid_ragged_set", "the ragged index set '" + set + "' reads " + cell_name(array, cell) +
                                     ", outside '" + array + "' (" + std::to_string(a.extents[d]) +
                                     " along '" + a.axes[d] + "')");
  if (const ArrayShape* shape = array_of(pool_.symbol(array))) ready(*shape);
  double v = 0;
  ++runtime_probe_;
  try {
    v = static_constant(pool_.symbol(cell_name(array, cell)));
    --runtime_probe_;
  } catch (const RuntimeIndex&) {
    --runtime_probe_;
    fail("unsupported_array_feature",
         "the ragged index set '" + set + "' reads " + cell_name(array, cell) +
             ", which has no constant value in the document; its members are enumerated when the "
             "model is built, so its offsets and values must be known then");
  } catch (...) {
    --runtime_probe_;
    throw;
  }
  if (v != std::floor(v) || std::abs(v) > 9.0e15)
    fail("invalid_ragged_set", "the ragged index set '" + set + "' reads " + cell_name(array, cell) + " = " +
                                   std::to_string(v) + ", which is not an integer");
  return static_cast<std::int64_t>(v);
}

std::vector<std::int64_t> Expander::ragged_members(const Range& r, expr::StrId sym) {
  std::vector<std::int64_t> parent;
  for (expr::StrId p : r.of) {
    const auto ix = bound(p);
    if (!ix)
      fail("array_index_unbound", "index '" + std::string(pool_.str(sym)).substr(1) + "' iterates the members of '" +
                                      r.from + "' of index '" + std::string(pool_.str(p)).substr(1) +
                                      "', which no output index or range of the aggregate binds");
    if (relative_ && ix->axis >= 0) throw NotRelative{"the members of a ragged index set"};
    parent.push_back(ix->v);
  }
  const std::string offsets = ragged_factor(r.from, "offsets"), values = ragged_factor(r.from, "values");
  const std::int64_t n = ragged_int(r.from, offsets, parent);
  if (n < 0)
    fail("invalid_ragged_set", "the ragged index set '" + r.from + "' has " + std::to_string(n) +
                                   " members at " + cell_name(offsets, parent));
  std::vector<std::int64_t> out;
  std::vector<std::int64_t> cell = parent;
  cell.push_back(0);
  for (std::int64_t k = 1; k <= n; ++k) {
    cell.back() = k;
    out.push_back(ragged_int(r.from, values, cell));
  }
  return out;
}

Range Expander::inferred_range(NodeId body, expr::StrId sym) {
  // Every array the index positions: they must agree on its extent (spec §4.3.1, "inferred
  // from the operand shapes"); A[i, j] v[j] with v shorter than A's rows is a shape error.
  std::optional<Range> found;
  std::string found_in;
  walk(pool_, body, [&](NodeId id) {
    const expr::Node& n = pool_.node(id);
    if (n.op != Op::Index) return true;
    const auto args = pool_.args(id);
    if (const ArrayShape* a = array_of(args[0]))
      for (std::size_t i = 1; i < args.size() && i - 1 < a->extents.size(); ++i) {
        if (pool_.node(args[i]).op != Op::Symbol || pool_.node(args[i]).name != sym) continue;
        ready(*a);
        const Range here{1, 1, a->extents[i - 1], a->axes[i - 1]};
        if (found && found->stop != here.stop)
          fail("array_shape_mismatch", "contracted index '" + std::string(pool_.str(sym)).substr(1) + "' runs over '" +
                                           found->from + "' (" + std::to_string(found->stop) + ") in '" + found_in +
                                           "' but over '" + here.from + "' (" + std::to_string(here.stop) + ") in '" +
                                           name_of(args[0]) + "'; give it a range or make the operands agree");
        if (!found) {
          found = here;
          found_in = name_of(args[0]);
        }
      }
    return true;
  });
  if (found) return *found;
  fail("array_index_unbound", "contracted index '" + std::string(pool_.str(sym)).substr(1) +
                                  "' has no range and indexes no array it could take one from");
}

const std::vector<expr::StrId>& Expander::symbols_of(NodeId body) {
  auto cached = symbols_cache_.find(body);
  if (cached != symbols_cache_.end()) return cached->second;
  std::vector<expr::StrId> out;
  auto add = [&](expr::StrId s) {
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  };
  walk(pool_, body, [&](NodeId id) {
    const expr::Node& n = pool_.node(id);
    if (n.op == Op::Symbol && pool_.str(n.name).starts_with("$")) add(n.name);
    if (n.op == Op::Aggregate || n.op == Op::Argmin || n.op == Op::Argmax) {
      // A nested reduction binds its own indices: only the others are free here.
      const json& a = attrs(id);
      std::set<expr::StrId> own;
      for (const auto& o : a.value("output_idx", json::array()))
        if (o.is_string()) own.insert(pool_.intern("$" + o.get<std::string>()));
      if (auto r = a.find("ranges"); r != a.end() && r->is_object())
        for (auto it = r->begin(); it != r->end(); ++it) own.insert(pool_.intern("$" + it.key()));
      for (NodeId k : children_of(id))
        for (expr::StrId sym : symbols_of(k))
          if (!own.count(sym)) add(sym);
      return false;
    }
    return true;
  });
  return symbols_cache_.emplace(body, std::move(out)).first->second;
}

void Expander::symbols_in_order(NodeId body, std::vector<expr::StrId>& out) {
  for (expr::StrId s : symbols_of(body))
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
}

}  // namespace esi::esm::detail::arrays
