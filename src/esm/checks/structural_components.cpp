// Per-component integrity that `simulate` / `esi check` would otherwise discover late:
// unique reaction ids within a reaction system (§7.3) and unique test ids within a component's
// `tests` (§6.6.2), at least one assertion per test (§6.6.2: "must contain at least one" — a
// test with none would pass vacuously), `ic` equations never on parameters (§4.2: "args[0] is the
// ODE state", §11.4), and observed unknowns that are not defined in terms of each other (an
// algebraic loop cannot be eliminated, §6.3.1 "eliminable").
#include <algorithm>

#include "esm/checks/structural_detail.hpp"

namespace esi::esm::structural_detail {

namespace {

const char* kind_word(const Component& c) {
  return c.kind == CompKind::ReactionSystem ? "reaction system" : "model";
}

void check_reaction_ids(Context& ctx, const Component& c) {
  const json* rs = c.field("reactions");
  if (!rs || !rs->is_array()) return;
  std::map<std::string, std::size_t> first;
  for (std::size_t i = 0; i < rs->size(); ++i) {
    const std::string id = get_str((*rs)[i], "id");
    if (id.empty()) continue;
    auto [it, fresh] = first.emplace(id, i);
    if (!fresh)
      ctx.report("duplicate_reaction_id",
                 pointer_join(pointer_join(pointer_join(c.pointer, "reactions"), i), "id"),
                 "Reactions " + std::to_string(it->second) + " and " + std::to_string(i) +
                     " of reaction system '" + c.dotted + "' both have the id '" + id +
                     "'; reaction ids must be unique within their reaction system.");
  }
}

void check_tests(Context& ctx, const Component& c) {
  const json* tests = c.field("tests");
  if (!tests || !tests->is_array()) return;
  std::map<std::string, std::size_t> first;
  for (std::size_t i = 0; i < tests->size(); ++i) {
    const json& t = (*tests)[i];
    const std::string tp = pointer_join(pointer_join(c.pointer, "tests"), i);
    const std::string id = get_str(t, "id");
    if (!id.empty()) {
      auto [it, fresh] = first.emplace(id, i);
      if (!fresh)
        ctx.report("duplicate_test_id", pointer_join(tp, "id"),
                   "Tests " + std::to_string(it->second) + " and " + std::to_string(i) + " of " +
                       kind_word(c) + " '" + c.dotted + "' both have the id '" + id +
                       "'; test ids must be unique within a component's tests.");
    }
    if (!t.is_object()) continue;
    const json* a = get_field(t, "assertions");
    if (!a || !a->is_array() || a->empty())
      ctx.report("test_without_assertions", a ? pointer_join(tp, "assertions") : tp,
                 "Test '" + (id.empty() ? std::to_string(i) : id) + "' of " + kind_word(c) + " '" +
                     c.dotted +
                     "' has no assertions; a test must check at least one "
                     "value, or it would pass without testing anything.");
  }
}

/// Whether the `ic` target `name` (bare or scoped, §11.4.1) may carry an initial condition:
/// unknowns and species may (whether an unknown ends up an ODE state can depend on coupling,
/// which flattening decides), parameters never. Unresolvable names are left to the reference
/// checks.
bool ic_target_admissible(Context& ctx, const Component& c, const std::string& name) {
  SymKind kind = SymKind::Unknown;
  if (ctx.resolve(name, &c, &kind) != Resolution::Found) return true;
  return kind != SymKind::Parameter && kind != SymKind::ReactionParameter;
}

void check_ic_targets(Context& ctx, const Component& c) {
  const json* eqs = c.field("equations");
  if (!eqs || !eqs->is_array()) return;
  for (std::size_t i = 0; i < eqs->size(); ++i) {
    const json* lhs = get_field((*eqs)[i], "lhs");
    if (!lhs) continue;
    bool derivative = false, is_ic = false;
    const std::string target = lhs_target(*lhs, ctx.time_var, derivative, is_ic);
    if (!is_ic || target.empty()) continue;
    if (!ic_target_admissible(ctx, c, target))
      ctx.report("ic_of_non_state", pointer_join(pointer_join(c.pointer, "equations"), i),
                 "The initial condition ic(" + target + ") in model '" + c.dotted + "' sets '" +
                     target +
                     "', which is a parameter; an initial condition applies to an ODE "
                     "state only (a parameter's value is its default, or its update block, §5.4).");
  }
}

/// Cycles among the bare-variable-LHS equations of one model (§6.3.1 observed unknowns).
void check_observed_loops(Context& ctx, const Component& c) {
  const json* eqs = c.field("equations");
  if (!eqs || !eqs->is_array()) return;
  std::map<std::string, std::size_t> defining;  // observed -> its (first) equation
  for (std::size_t i = 0; i < eqs->size(); ++i) {
    const json* lhs = get_field((*eqs)[i], "lhs");
    if (lhs && lhs->is_string() && c.symbols.count(lhs->get<std::string>()) &&
        c.symbols.at(lhs->get<std::string>()) == SymKind::Unknown)
      defining.emplace(lhs->get<std::string>(), i);
  }
  std::map<std::string, std::vector<std::string>> reads;
  for (const auto& [y, i] : defining) {
    const json* rhs = get_field((*eqs)[i], "rhs");
    if (!rhs) continue;
    std::set<std::string> seen;
    std::vector<std::string>& read_by_y = reads[y];  // (clang 14 cannot capture a binding)
    for_each_free_symbol(
        *rhs,
        [&](const std::string& s) {
          if (defining.count(s) && seen.insert(s).second) read_by_y.push_back(s);
        },
        {}, c.field("expression_templates"));
  }
  // Depth-first search; each cycle reported once, at the equation of its first member.
  std::map<std::string, int> state;  // 0 new, 1 on the stack, 2 done
  std::vector<std::string> stack;
  std::function<void(const std::string&)> dfs = [&](const std::string& y) {
    state[y] = 1;
    stack.push_back(y);
    for (const auto& z : reads[y]) {
      if (state[z] == 1) {
        auto at = std::find(stack.begin(), stack.end(), z);
        std::vector<std::string> cycle(at, stack.end());
        const std::string first = *std::min_element(
            cycle.begin(), cycle.end(),
            [&](const std::string& a, const std::string& b) { return defining[a] < defining[b]; });
        ctx.report("algebraic_loop",
                   pointer_join(pointer_join(c.pointer, "equations"), defining[first]),
                   cycle.size() == 1
                       ? "Observed '" + z + "' of model '" + c.dotted +
                             "' is defined in terms of itself; an algebraic loop cannot be "
                             "evaluated."
                       : "Observed quantities of model '" + c.dotted +
                             "' are defined in terms of each other in a cycle (" +
                             quote_list(cycle) + "); an algebraic loop cannot be evaluated.");
      } else if (state[z] == 0) {
        dfs(z);
      }
    }
    stack.pop_back();
    state[y] = 2;
  };
  for (const auto& [y, i] : defining)
    if (state[y] == 0) dfs(y);
}

}  // namespace

namespace {

/// Declared names go into CSV headers, NetCDF variable names and messages as they are: a
/// control character in one (U+0000-U+001F, U+007F; a NUL ends a C string early) is refused.
void check_declared_names(Context& ctx, const Component& c) {
  const auto check = [&](const std::string& name, const std::string& pointer, const std::string& what) {
    if (std::none_of(name.begin(), name.end(), [](char ch) {
          return static_cast<unsigned char>(ch) < 0x20 || static_cast<unsigned char>(ch) == 0x7f;
        }))
      return;
    ctx.report("invalid_name", pointer,
               "The " + what + " name '" + name + "' holds a control character; names are written " +
                   "into CSV headers and NetCDF files as they are, so they may hold printable characters only.");
  };
  check(c.name, c.pointer, "component");
  for (const char* section : {"variables", "species", "parameters"})
    if (const json* f = c.field(section); f && f->is_object())
      for (auto it = f->begin(); it != f->end(); ++it)
        check(it.key(), pointer_join(pointer_join(c.pointer, section), it.key()),
              std::string(section[0] == 's' ? "species" : section[0] == 'p' ? "parameter" : "variable"));
}

}  // namespace

void check_components(Context& ctx) {
  for (Component* c : ctx.all_components()) {
    check_declared_names(ctx, *c);
    if (c->is_stub()) continue;
    check_tests(ctx, *c);
    if (c->kind == CompKind::ReactionSystem) check_reaction_ids(ctx, *c);
    if (c->kind == CompKind::Model) {
      check_ic_targets(ctx, *c);
      check_observed_loops(ctx, *c);
    }
  }
}

}  // namespace esi::esm::structural_detail
