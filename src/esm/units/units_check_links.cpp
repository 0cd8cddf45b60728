// The dimensional check's cross-quantity rules: reactions (§7.4), events (§5.1) and coupling
// entries (§10). The rules are documented at the top of units_check.cpp.
#include <cmath>

#include "esm/units/units_check_detail.hpp"

namespace esi::esm::units_detail {

namespace {

// Field readers that tolerate schema-invalid input (the schema layer reports it).
bool is_reservoir(const json& decl) {
  return decl.is_object() && decl.contains("constant") && decl["constant"].is_boolean() &&
         decl["constant"].get<bool>();
}
std::string string_field(const json& obj, const char* key, const std::string& fallback) {
  return obj.contains(key) && obj[key].is_string() ? obj[key].get<std::string>() : fallback;
}

}  // namespace

// The {species, stoichiometry} entries of a substrates / products list (null: none), or
// nullopt when an entry is malformed (the structural layer's finding, not ours).
std::optional<std::vector<Checker::Participant>> Checker::participants(const json& rx,
                                                                       const char* key) {
  std::vector<Participant> out;
  if (!rx.contains(key) || rx[key].is_null()) return out;
  if (!rx[key].is_array()) return std::nullopt;
  for (const auto& entry : rx[key]) {
    if (!entry.is_object() || !entry.contains("species") || !entry["species"].is_string())
      return std::nullopt;
    const json s = entry.value("stoichiometry", json(1));
    if (!s.is_number()) return std::nullopt;
    out.push_back({entry["species"].get<std::string>(), s.get<double>()});
  }
  return out;
}

void Checker::check_reaction(const json& rx, const std::string& sys_ptr, const std::string& ptr) {
  if (!rx.is_object()) return;
  const std::string id =
      rx.contains("id") && rx["id"].is_string() ? "'" + rx["id"].get<std::string>() + "'" : ptr;
  Q rate = unknown();
  if (rx.contains("rate")) {
    inner_.clear();
    rate = evaluate(rx["rate"], pointer_join(ptr, "rate"));
    if (!inner_.empty()) rate = unknown();
    report_inner();
  }
  const auto substrates = participants(rx, "substrates");
  const auto products = participants(rx, "products");
  if (!substrates || !products) return;

  // Species whose ODE this reaction feeds: net stoichiometry != 0, not a reservoir.
  std::vector<std::string> order;
  std::unordered_map<std::string, double> net;
  for (const auto& [list, sign] : {std::pair{&*substrates, -1.0}, std::pair{&*products, 1.0}})
    for (const auto& p : *list) {
      if (!net.count(p.species)) order.push_back(p.species);
      net[p.species] += sign * p.stoichiometry;
    }
  std::optional<Dimension> state;
  std::string first;
  bool mixed = false;
  for (const auto& s : order) {
    if (std::fabs(net[s]) <= 1e-12) continue;
    const json* decl = local_decl(*sys_, s);
    if (decl && is_reservoir(*decl)) continue;
    const Q q = symbol(s);
    if (q.kind != Kind::Known) continue;
    if (!state) {
      state = q.dim;
      first = s;
      continue;
    }
    if (same(*state, q.dim)) continue;
    mixed = true;
    const std::string species_ptr = local_decl_pointer(*sys_, sys_ptr, s);
    if (!reported_species_.insert(species_ptr.empty() ? ptr : species_ptr).second) continue;
    report("unit_inconsistency", species_ptr.empty() ? ptr : species_ptr,
           "reaction " + id + " changes " + described(s) + " and " + described(first) +
               " at one rate, so their units must share a dimension (" + to_string(q.dim) + " vs " +
               to_string(*state) + "; spec §7.4)");
  }
  if (mixed || !state || rate.kind != Kind::Known) return;

  // Mass action: v = k · ∏ Sᵢ^nᵢ (§7.4), a tendency of every species it feeds.
  Dimension v = rate.dim;
  double total_order = 0;
  for (const auto& p : *substrates) {
    const Q q = symbol(p.species);
    std::int64_t num = 0, den = 1;
    if (q.kind != Kind::Known || !to_rational(p.stoichiometry, num, den)) return;
    v = multiply(v, power(q.dim, num, den));
    total_order += p.stoichiometry;
  }
  if (auto why = tendency_mismatch(*state, v))
    report("unit_inconsistency", ptr,
           "reaction " + id + " of total order " + number(total_order) + " with rate of " +
               "dimension " + to_string(rate.dim) + ": the mass-action rate k·∏S^n, a " +
               "tendency of " + described(first) + ", " + *why + " (spec §7.4)");
}

// Inner findings of conditions, triggers and affect right-hand sides; an affect `x ~ rhs`
// sets the value of x, so rhs must have x's dimension (§5.1).
void Checker::check_affects(const json& list, const std::string& ptr) {
  if (!list.is_array()) return;
  for (std::size_t j = 0; j < list.size(); ++j) {
    const json& a = list[j];
    const std::string ap = pointer_join(ptr, j);
    if (!a.is_object() || !a.contains("rhs")) continue;
    inner_.clear();
    const Q r = evaluate(a["rhs"], pointer_join(ap, "rhs"));
    const bool clean = inner_.empty();
    report_inner();
    if (!clean || r.kind != Kind::Known || !a.contains("lhs") || !a["lhs"].is_string()) continue;
    const std::string x = a["lhs"].get<std::string>();
    const Q l = symbol(x);
    if (l.kind == Kind::Known && !same(l.dim, r.dim))
      report("unit_inconsistency", ap,
             "the event sets " + described(x) + " to a value of dimension " + to_string(r.dim) +
                 " (spec §5.1, §4.8.3)");
  }
}

void Checker::check_event(const json& ev, const std::string& ptr) {
  if (!ev.is_object()) return;
  inner_.clear();
  if (ev.contains("conditions") && ev["conditions"].is_array())
    for (std::size_t j = 0; j < ev["conditions"].size(); ++j)
      evaluate(ev["conditions"][j], pointer_join(pointer_join(ptr, "conditions"), j));
  if (ev.contains("trigger") && ev["trigger"].is_object() && ev["trigger"].contains("expression"))
    evaluate(ev["trigger"]["expression"], pointer_join(pointer_join(ptr, "trigger"), "expression"));
  report_inner();
  for (const char* key : {"affects", "affect_neg"})
    if (ev.contains(key)) check_affects(ev[key], pointer_join(ptr, key));
}

// ODE states of an inline system, by path relative to it ("x", "Sub.x"): variables under a
// time derivative on an equation LHS, and non-reservoir species.
void Checker::collect_states(const json& sys, const std::string& prefix,
                             std::map<std::string, const json*>& out) {
  if (sys.contains("equations") && sys["equations"].is_array())
    for (const auto& eq : sys["equations"]) {
      if (!eq.is_object() || !eq.contains("lhs")) continue;
      const json& lhs = eq["lhs"];
      if (!lhs.is_object() || lhs.value("op", json()) != "D" || !is_time_derivative(lhs) ||
          !lhs.contains("args") || !lhs["args"].is_array() || lhs["args"].size() != 1 ||
          !lhs["args"][0].is_string())
        continue;
      const std::string x = lhs["args"][0].get<std::string>();
      if (sys.contains("variables") && sys["variables"].is_object() && sys["variables"].contains(x))
        out[prefix + x] = &sys["variables"][x];
    }
  if (sys.contains("species") && sys["species"].is_object())
    for (const auto& [name, decl] : sys["species"].items())
      if (decl.is_object() && !is_reservoir(decl)) out[prefix + name] = &decl;
  if (sys.contains("subsystems") && sys["subsystems"].is_object())
    for (const auto& [name, sub] : sys["subsystems"].items())
      if (!is_ref(sub)) collect_states(sub, prefix + name + ".", out);
}

void Checker::check_compose(const json& entry, const std::string& ptr) {
  if (!entry.contains("systems") || !entry["systems"].is_array()) return;
  const json& systems = entry["systems"];
  if (systems.empty() || !systems[0].is_string()) return;
  const std::string primary = systems[0].get<std::string>();
  const json* a = find_system(primary);
  if (a) {
    std::map<std::string, const json*> a_states;
    collect_states(*a, "", a_states);
    // Same-named states of the later systems are identified with the first's (§10.1).
    for (std::size_t i = 1; i < systems.size(); ++i) {
      if (!systems[i].is_string()) continue;
      const std::string other = systems[i].get<std::string>();
      const json* b = find_system(other);
      if (!b) continue;
      std::map<std::string, const json*> b_states;
      collect_states(*b, "", b_states);
      for (const auto& [x, decl] : b_states) {
        auto twin = a_states.find(x);
        if (twin == a_states.end()) continue;
        const Unit* ua = declared_unit(twin->second);
        const Unit* ub = declared_unit(decl);
        if (!ua || !ub || same(ua->dim, ub->dim)) continue;
        report("unit_inconsistency", ptr,
               "operator_compose identifies '" + other + "." + x + "' (" +
                   (*decl)["units"].get<std::string>() + ") with '" + primary + "." + x + "' (" +
                   (*twin->second)["units"].get<std::string>() +
                   ") and sums their tendencies, but their dimensions differ (" +
                   to_string(ub->dim) + " vs " + to_string(ua->dim) + "; spec §10.1)");
      }
    }
  }
  if (!entry.contains("translate") || !entry["translate"].is_object()) return;
  for (const auto& [into, target] : entry["translate"].items()) {
    std::string from;
    if (target.is_string()) {
      from = target.get<std::string>();
    } else if (target.is_object() && target.contains("var") && target["var"].is_string()) {
      // A factor may be a conversion with implicit units: undeterminable.
      if (target.contains("factor") &&
          !(target["factor"].is_number() && target["factor"].get<double>() == 1.0))
        continue;
      from = target["var"].get<std::string>();
    } else {
      continue;
    }
    const Unit* ui = declared_unit(resolve(into));
    const Unit* uf = declared_unit(resolve(from));
    if (!ui || !uf || same(ui->dim, uf->dim)) continue;
    report("unit_inconsistency", pointer_join(pointer_join(ptr, "translate"), into),
           "translate identifies " + described(from) + " with " + described(into) +
               " without a conversion factor, but their dimensions differ (" + to_string(uf->dim) +
               " vs " + to_string(ui->dim) + "; spec §10.2)");
  }
}

void Checker::check_connector(const json& entry, const std::string& ptr) {
  if (!entry.contains("connector") || !entry["connector"].is_object()) return;
  const json& con = entry["connector"];
  if (!con.contains("equations") || !con["equations"].is_array()) return;
  const std::string base = pointer_join(pointer_join(ptr, "connector"), "equations");
  for (std::size_t j = 0; j < con["equations"].size(); ++j) {
    const json& ce = con["equations"][j];
    const std::string cp = pointer_join(base, j);
    if (!ce.is_object() || !ce.contains("expression")) continue;
    inner_.clear();
    const Q e = evaluate(ce["expression"], pointer_join(cp, "expression"));
    const bool clean = inner_.empty();
    report_inner();
    if (!clean || e.kind != Kind::Known || !ce.contains("to") || !ce["to"].is_string()) continue;
    const std::string to = ce["to"].get<std::string>();
    const Q target = symbol(to);
    if (target.kind != Kind::Known) continue;
    // Absent means additive; a transform of the wrong type matches no branch below.
    const std::string transform =
        ce.contains("transform") ? string_field(ce, "transform", "") : "additive";
    std::optional<std::string> why;
    if (transform == "multiplicative") {
      if (!is_dimensionless(e.dim))
        why = "multiplies the tendency of " + described(to) + ", so it must be dimensionless, " +
              "but has dimension " + to_string(e.dim);
    } else if (transform == "additive") {
      if (auto w = tendency_mismatch(target.dim, e.dim))
        why = "is added to the tendency of " + described(to) + " and " + *w;
    } else if (transform == "replacement") {
      // Read either as the new tendency or as the new value (§10.3): wrong only if neither.
      if (!same(target.dim, e.dim))
        if (auto w = tendency_mismatch(target.dim, e.dim))
          why = "replaces " + described(to) + " or its tendency, but " + *w;
    }
    if (why)
      report("unit_inconsistency", cp,
             "the connector expression " + *why + " (spec §10.3, §4.8.3)");
  }
}

void Checker::check_variable_map(const json& entry, const std::string& ptr) {
  if (!entry.contains("from") || !entry["from"].is_string() || !entry.contains("to") ||
      !entry["to"].is_string())
    return;
  const std::string from = entry["from"].get<std::string>();
  const std::string to = entry["to"].get<std::string>();
  const json transform = entry.value("transform", json("param_to_var"));
  Q value = unknown();
  if (transform.is_object()) {
    inner_.clear();
    value = evaluate(transform, pointer_join(ptr, "transform"));
    if (!inner_.empty()) value = unknown();
    report_inner();
  } else if (transform.is_string()) {
    const std::string kind = transform.get<std::string>();
    const bool scaling =
        kind == "additive" || kind == "multiplicative" || kind == "conversion_factor";
    const bool has_factor = entry.contains("factor") &&
                            !(entry["factor"].is_number() && entry["factor"].get<double>() == 1.0);
    // identity is the structural layer's domain_unit_mismatch (any unit difference).
    if (kind == "param_to_var" || (scaling && !has_factor)) value = symbol(from);
  }
  if (string_field(entry, "lifting", "") == "integral") return;  // adds spatial dimensions
  const Q target = symbol(to);
  if (value.kind != Kind::Known || target.kind != Kind::Known || same(value.dim, target.dim))
    return;
  report("unit_inconsistency", ptr,
         "variable_map binds " + described(to) + " to " +
             (transform.is_object() ? "an expression of dimension " + to_string(value.dim)
                                    : described(from)) +
             ", but their dimensions differ (source " + to_string(value.dim) + ", target " +
             to_string(target.dim) +
             "); a unit conversion needs a conversion_factor "
             "transform with its factor (spec §10.4)");
}

void Checker::check_coupling(const json& entry, const std::string& ptr) {
  if (!entry.is_object() || !entry.contains("type") || !entry["type"].is_string()) return;
  const std::string type = entry["type"].get<std::string>();
  if (type == "operator_compose" || type == "couple") {
    check_compose(entry, ptr);
    check_connector(entry, ptr);
  } else if (type == "variable_map") {
    check_variable_map(entry, ptr);
  } else if (type == "event") {
    check_event(entry, ptr);
  }
}

}  // namespace esi::esm::units_detail
