// Reductions at one cell: `aggregate` (§4.3.1) over its output and contracted indices under a
// semiring, and the index-returning `argmin` / `argmax` (§4.2).
#include <algorithm>
#include <limits>

#include "esm/arrays/expander.hpp"

namespace esi::esm::detail::arrays {

std::string Expander::reduction_of(const json& attrs) {
  const std::string semiring = attrs.value("semiring", std::string("sum_product"));
  std::string reduce = attrs.value("reduce", std::string("+"));
  if (semiring == "max_product" || semiring == "max_sum") reduce = "max";
  else if (semiring == "min_product" || semiring == "min_sum") reduce = "min";
  else if (semiring == "bool_and_or") reduce = "or";  // (∨, false; ∧, true)
  else if (semiring != "sum_product")
    fail("unsupported_array_feature", "the '" + semiring + "' semiring is not supported yet");
  if (reduce != "+" && reduce != "*" && reduce != "max" && reduce != "min" &&
      !(reduce == "or" && semiring == "bool_and_or"))
    fail("invalid_reduce", "reduce '" + reduce + "' is not one of +, *, max, min");
  return reduce;
}

NodeId Expander::identity_of(const std::string& reduce) {
  return pool_.number(reduce == "+" || reduce == "or" ? 0.0 : reduce == "*" ? 1.0
                      : reduce == "max" ? -std::numeric_limits<double>::infinity()
                                        : std::numeric_limits<double>::infinity(),
                      reduce == "+" || reduce == "*" || reduce == "or");
}

NodeId Expander::reduced(std::vector<NodeId>& terms, const std::string& reduce) {
  if (terms.empty()) return identity_of(reduce);
  if (terms.size() == 1 && reduce == "or")
    return pool_.make(Op::Ne, std::vector<NodeId>{terms[0], pool_.number(0.0, true)});
  if (terms.size() == 1) return terms[0];
  const Op op = reduce == "+" ? Op::Add : reduce == "*" ? Op::Mul : reduce == "max" ? Op::Max
                : reduce == "min" ? Op::Min : Op::Or;
  return pool_.make(op, terms);
}

NodeId Expander::aggregate_cell(NodeId e, const Frame& f) {
  const json& attrs = this->attrs(e);
  if (attrs.contains("distinct") && attrs["distinct"] == true) return distinct_cell(e, f);
  for (const char* k : {"distinct", "key", "of"})
    if (attrs.contains(k))
      fail("unsupported_array_feature",
           std::string("an aggregate with '") + k + "' is not supported yet when arrays become cells");
  const std::string reduce = reduction_of(attrs);

  const std::vector<NodeId> kids = children_of(e);
  const expr::Node& n = pool_.node(e);
  NodeId body = expr::kNoNode, filter = expr::kNoNode;
  if (auto x = attrs.find("expr"); x != attrs.end() && x->is_object() && x->contains("$child"))
    body = kids[(*x)["$child"].get<std::size_t>()];
  if (auto x = attrs.find("filter"); x != attrs.end() && x->is_object() && x->contains("$child"))
    filter = kids[(*x)["$child"].get<std::size_t>()];
  (void)n;
  if (body == expr::kNoNode) fail("invalid_aggregate", "an aggregate needs an 'expr'");

  const json out = attrs.value("output_idx", json::array());
  const json ranges = attrs.value("ranges", json::object());
  if (out.size() != f.pos.size())
    fail("array_shape_mismatch",
         "an aggregate with " + std::to_string(out.size()) + " output indices gives a value over " +
             std::to_string(out.size()) + " axes where " + std::to_string(f.pos.size()) +
             (f.pos.size() == 1 ? " is" : " are") + " expected");

  const std::size_t mark = env_.size();
  Frame body_frame;  // named axes for bare arrays in the body: the `from` ranges
  std::vector<expr::StrId> bound_here;
  std::vector<std::pair<expr::StrId, std::string>> drawn_from;  // index -> its index set
  for (std::size_t k = 0; k < out.size(); ++k) {
    if (!out[k].is_string()) {
      if (test(f.pos[k], Op::Ne, 1))
        fail("array_shape_mismatch", "a singleton output axis is read at " + std::to_string(f.pos[k].v));
      continue;
    }
    const std::string sym = out[k].get<std::string>();
    const expr::StrId id = pool_.intern("$" + sym);
    if (auto r = ranges.find(sym); r != ranges.end()) {
      const Range range = range_of(*r, sym);
      if (range.ragged())
        fail("unsupported_array_feature", "the output index '" + sym + "' ranges over the ragged index set '" +
                                              range.from + "'; an array over a ragged set is not supported "
                                              "yet (a ragged set may be contracted over)");
      if (!contains(range, f.pos[k]))
        fail("array_region_uncovered",
             "the aggregate defines '" + sym + "' over " + r->dump() + " but is asked for " +
                 sym + " = " + std::to_string(f.pos[k].v));
      if (!range.from.empty()) {
        body_frame.axes.push_back(range.from);
        body_frame.pos.push_back(f.pos[k]);
      }
    } else if (!f.axes.empty()) {
      body_frame.axes.push_back(f.axes[k]);
      body_frame.pos.push_back(f.pos[k]);
    }
    env_.emplace_back(id, f.pos[k]);
    bound_here.push_back(id);
    if (auto r = ranges.find(sym); r != ranges.end() && r->is_object() && r->contains("from"))
      drawn_from.emplace_back(id, (*r)["from"].get<std::string>());
    else if (!f.axes.empty())
      drawn_from.emplace_back(id, f.axes[k]);
  }
  // Contracted indices: those the body or filter use that nothing binds yet.
  std::vector<expr::StrId> order;
  symbols_in_order(body, order);
  if (filter != expr::kNoNode) symbols_in_order(filter, order);
  // A repeated output index (["g", "g"]): §4.3.1 defines result[O] with each index taking
  // each value of its range, which names only the diagonal, and gives the repetition no
  // other meaning. Each axis is read here on its own, against the index's range (so a body
  // that does not read the index, a constant fill, is the same on every cell); a body that
  // reads it at a cell where the axes disagree would see one of two values, and is refused.
  for (std::size_t k = 0; k < out.size(); ++k)
    for (std::size_t j = 0; j < k; ++j) {
      if (!out[k].is_string() || out[j] != out[k]) continue;
      const expr::StrId id = pool_.intern("$" + out[k].get<std::string>());
      if (std::find(order.begin(), order.end(), id) == order.end()) continue;
      if (test(SVal{static_cast<double>(f.pos[j].v), f.pos[j].axis}, Op::Ne,
               SVal{static_cast<double>(f.pos[k].v), f.pos[k].axis}))
        fail("array_shape_mismatch",
             "the output index '" + out[k].get<std::string>() + "' appears on output axes " +
                 std::to_string(j + 1) + " and " + std::to_string(k + 1) +
                 " and the body reads it, but this cell has it at " + std::to_string(f.pos[j].v) +
                 " on one and " + std::to_string(f.pos[k].v) +
                 " on the other: a repeated output index names the diagonal only (spec "
                 "§4.3.1); give each axis its own index");
    }
  for (auto it = ranges.begin(); it != ranges.end(); ++it) {
    const expr::StrId id = pool_.intern("$" + it.key());
    if (std::find(order.begin(), order.end(), id) == order.end()) order.push_back(id);
  }
  std::vector<std::pair<expr::StrId, Range>> contracted;
  for (expr::StrId id : order) {
    if (std::find(bound_here.begin(), bound_here.end(), id) != bound_here.end()) continue;
    const std::string sym = std::string(pool_.str(id)).substr(1);
    if (auto r = ranges.find(sym); r != ranges.end()) contracted.emplace_back(id, range_of(*r, sym));
    else if (!bound(id)) contracted.emplace_back(id, inferred_range(body, id));
  }
  parents_first(contracted);
  for (const auto& [id, range] : contracted)
    if (!range.from.empty()) drawn_from.emplace_back(id, range.from);
  const json join = attrs.value("join", json::array());
  const NodeId identity = identity_of(reduce);
  // rank(S) in the body reads the position of the index drawing from S.
  const std::size_t drawn_mark = drawn_env_.size();
  drawn_env_.insert(drawn_env_.end(), drawn_from.begin(), drawn_from.end());

  std::vector<NodeId> terms;
  for (const auto& [id, r] : contracted) env_.emplace_back(id, Ix{r.start, -1});
  const std::size_t first = env_.size() - contracted.size();
  // Every combination of the contracted indices, the first one outermost (ascending order:
  // the normative accumulation order of §4.3.1).
  each_combination(contracted, first, [&] {
    const bool admitted =
        filter == expr::kNoNode || test(static_value(filter), Op::Ne, SVal{0.0, -1});
    std::optional<NodeId> joined = join.empty() ? std::optional<NodeId>(expr::kNoNode)
                                                 : join_condition(join, drawn_from);
    if (admitted && joined) {
      NodeId term = in_context([&] { return eval(body, body_frame); });
      // A key known only while the model runs gates its term: an unmatched combination
      // contributes the additive identity (spec §4.3.1 join).
      if (*joined != expr::kNoNode) term = pool_.make(Op::IfElse, std::vector<NodeId>{*joined, term, identity});
      terms.push_back(term);
    }
  });
  env_.resize(mark);
  drawn_env_.resize(drawn_mark);
  return reduced(terms, reduce);
}

// ---- argmin / argmax (§4.2: index-returning reductions) ----

NodeId Expander::argmin_cell(NodeId e, bool max) {
  const json& attrs = this->attrs(e);
  const char* op = max ? "argmax" : "argmin";
  for (const char* k : {"distinct", "key"})
    if (attrs.contains(k))
      fail("unsupported_array_feature",
           std::string("an '") + op + "' with '" + k + "' is not supported yet when arrays become cells");
  const std::vector<NodeId> kids = children_of(e);
  NodeId body = expr::kNoNode, filter = expr::kNoNode;
  if (auto x = attrs.find("expr"); x != attrs.end() && x->is_object() && x->contains("$child"))
    body = kids[(*x)["$child"].get<std::size_t>()];
  if (auto x = attrs.find("filter"); x != attrs.end() && x->is_object() && x->contains("$child"))
    filter = kids[(*x)["$child"].get<std::size_t>()];
  if (body == expr::kNoNode) fail("invalid_aggregate", std::string("an '") + op + "' needs an 'expr'");
  const json ranges = attrs.value("ranges", json::object());
  const std::string arg = attrs.value("arg", std::string());
  if (arg.empty() || !ranges.is_object() || !ranges.contains(arg))
    fail("invalid_aggregate", std::string("an '") + op + "' needs an 'arg' naming one of its 'ranges' indices");
  std::vector<std::pair<expr::StrId, Range>> over;
  for (auto it = ranges.begin(); it != ranges.end(); ++it) {
    over.emplace_back(pool_.intern("$" + it.key()), range_of(*it, it.key()));
    if (over.back().second.ragged())
      fail("unsupported_array_feature", std::string("an '") + op + "' over the ragged index set '" +
                                            over.back().second.from + "' is not supported yet");
  }
  const expr::StrId arg_id = pool_.intern("$" + arg);
  // A join prunes the candidates (the bin-skolem broad phase): its keys must be known when
  // the model is built, the enclosing aggregates' indices and these ranges place them.
  const json join = attrs.value("join", json::array());
  std::vector<std::pair<expr::StrId, std::string>> drawn_from = drawn_env_;
  for (const auto& [id, r] : over)
    if (!r.from.empty()) drawn_from.emplace_back(id, r.from);
  auto joined = [&]() {
    if (join.empty()) return true;
    ++runtime_probe_;
    ++static_keys_;
    try {
      const std::optional<NodeId> c = join_condition(join, drawn_from);
      --runtime_probe_;
      --static_keys_;
      if (c && *c != expr::kNoNode) throw RuntimeIndex{"a join key"};
      return c.has_value();
    } catch (const RuntimeIndex& why) {
      --runtime_probe_;
      --static_keys_;
      fail("unsupported_array_feature",
           std::string("an '") + op + "' whose join reads " + why.name +
               ", known only while the model runs, is not supported yet (its join keys must be "
               "known when the model is built)");
    }
  };

  const std::size_t mark = env_.size();
  for (const auto& [id, r] : over) env_.emplace_back(id, Ix{r.start, -1});
  std::vector<std::int64_t> value;
  for (const auto& [id, r] : over) value.push_back(r.start);
  auto in_range = [&](std::size_t i) {
    const Range& r = over[i].second;
    return r.step > 0 ? value[i] <= r.stop : value[i] >= r.stop;
  };
  bool empty = false;
  for (std::size_t i = 0; i < over.size(); ++i) empty = empty || !in_range(i);
  NodeId best_value = expr::kNoNode, best_arg = expr::kNoNode;
  const Op better = max ? Op::Gt : Op::Lt;
  while (!empty) {
    const bool admitted =
        (filter == expr::kNoNode || test(static_value(filter), Op::Ne, SVal{0.0, -1})) && joined();
    if (admitted) {
      const NodeId v = in_context([&] { return eval(body, Frame{}); });
      const NodeId g = pool_.number(static_cast<double>(bound(arg_id)->v), true);
      if (best_value == expr::kNoNode) {
        best_value = v;
        best_arg = g;
      } else if (pool_.node(v).op == Op::Number && pool_.node(best_value).op == Op::Number) {
        const double a = pool_.node(v).number, b = pool_.node(best_value).number;
        if (max ? a > b : a < b) {
          best_value = v;
          best_arg = g;
        }
      } else {
        const NodeId c = pool_.make(better, std::vector<NodeId>{v, best_value});
        best_arg = pool_.make(Op::IfElse, std::vector<NodeId>{c, g, best_arg});
        best_value = pool_.make(Op::IfElse, std::vector<NodeId>{c, v, best_value});
      }
    }
    std::size_t d = over.size();
    bool done = true;
    while (d-- > 0) {
      value[d] += over[d].second.step;
      if (in_range(d)) {
        env_[mark + d].second = Ix{value[d], -1};
        done = false;
        break;
      }
      value[d] = over[d].second.start;
      env_[mark + d].second = Ix{value[d], -1};
    }
    if (done) break;
  }
  env_.resize(mark);
  if (best_arg == expr::kNoNode)
    fail("argmin_empty_candidates",
         std::string("the '") + op + "' has no candidate (its ranges or filter admit none), so no index witnesses the optimum");
  return best_arg;
}

}  // namespace esi::esm::detail::arrays
