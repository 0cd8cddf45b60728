// Reaction systems to ODEs by mass action (spec §7.4):
//   v_r = k_r * prod_i S_i^{n_i}        dX/dt = sum_r (m_{X,r} - n_{X,r}) * v_r
// Reservoir species (`constant: true`) get no equation and act as parameters. Reactions
// whose net coefficient for X is zero contribute nothing to X.
#include <cmath>

#include "esi/core/error.hpp"
#include "esm/flatten/flatten_internal.hpp"

namespace esi::esm::detail {
namespace {

using expr::NodeId;
using expr::Op;

struct Term {
  std::string species;
  double coefficient;
  bool integer;
};

std::vector<Term> read_terms(const json& list) {
  std::vector<Term> out;
  if (!list.is_array()) return out;
  for (const auto& e : list) {
    if (!e.is_object() || !e.contains("species") || !e["species"].is_string()) continue;
    const json st = e.value("stoichiometry", json(1));
    out.push_back({e["species"].get<std::string>(), st.is_number() ? st.get<double>() : 1.0,
                   !st.is_number_float()});
  }
  return out;
}

/// A string member, or "" when absent or not a string (the schema layer reports the latter).
std::string string_member(const json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

NodeId coefficient_node(expr::Pool& pool, double c) {
  const bool integral = std::floor(c) == c && std::fabs(c) < 1e15;
  return pool.number(c, integral);
}

}  // namespace

void add_reactions(FlattenState& st, std::size_t c) {
  const Component& comp = st.components[c];
  const json& rs = *comp.node;
  expr::Pool& pool = st.sys.pool;
  const json reactions = rs.value("reactions", json::array());
  const json species = rs.value("species", json::object());

  // Per species, the terms in reaction order: (coefficient, rate-law node).
  std::map<std::string, std::vector<std::pair<double, NodeId>>> terms;
  for (std::size_t r = 0; r < reactions.size(); ++r) {
    const json& rx = reactions[r];
    const std::string rp = pointer_join(pointer_join(comp.pointer, "reactions"), r);
    const auto subs = read_terms(rx.value("substrates", json()));
    const auto prods = read_terms(rx.value("products", json()));
    for (const auto* side : {&subs, &prods})
      for (const auto& t : *side)
        if (!species.contains(t.species))
          throw Error("undefined_species", comp.file, rp,
                      "reaction refers to species '" + t.species + "', which '" + comp.path +
                          "' does not declare");
    if (!rx.contains("rate"))
      throw Error("missing_rate", comp.file, rp, "reaction has no 'rate'");
    NodeId law = localize(st, c, rx["rate"], pointer_join(rp, "rate"));
    FlatReaction record{comp.path, string_member(rx, "id"), string_member(rx, "name"), {}, {}, law,
                        comp.file, rp};
    for (const auto& t : subs) record.substrates.emplace_back(t.species, t.coefficient);
    for (const auto& t : prods) record.products.emplace_back(t.species, t.coefficient);
    st.sys.reactions.push_back(std::move(record));
    // A rate written as x / S for a substrate S (GEOS-Chem's R12: k_cld6 / SO2) gets the §7.4
    // product S * ...; we cancel S symbolically so the law is x * ..., the continuous extension
    // at S = 0, where (x / S) * S would be 0/0 = NaN (as the reference runtimes' symbolic
    // simplification does). Elsewhere the two differ by at most rounding.
    std::size_t cancelled = subs.size();  // index of the cancelled substrate term, if any
    if (const expr::Node& n = pool.node(law); n.op == Op::Div && n.arg_count == 2) {
      const auto args = pool.args(law);
      const expr::Node& den = pool.node(args[1]);
      for (std::size_t i = 0; i < subs.size() && cancelled == subs.size(); ++i)
        if (den.op == Op::Symbol && subs[i].coefficient >= 1.0 &&
            pool.str(den.name) == comp.path + "." + subs[i].species) {
          cancelled = i;
          law = args[0];
        }
    }
    std::vector<NodeId> factors{law};
    for (std::size_t i = 0; i < subs.size(); ++i) {
      const Term& s = subs[i];
      const NodeId sym = pool.symbol(comp.path + "." + s.species);
      const double power = s.coefficient - (i == cancelled ? 1.0 : 0.0);
      if (power == 0.0) continue;
      if (power == 1.0) {
        factors.push_back(sym);
      } else {
        const NodeId n = pool.number(power, s.integer);
        const NodeId pw[] = {sym, n};
        factors.push_back(pool.make(Op::Pow, pw));
      }
    }
    const NodeId rate = factors.size() == 1 ? factors[0] : pool.make(Op::Mul, factors);
    std::map<std::string, double> net;
    std::vector<std::string> order;
    for (const auto& s : subs) {
      if (!net.count(s.species)) order.push_back(s.species);
      net[s.species] -= s.coefficient;
    }
    for (const auto& p : prods) {
      if (!net.count(p.species)) order.push_back(p.species);
      net[p.species] += p.coefficient;
    }
    for (const auto& name : order)
      if (net[name] != 0.0) terms[name].emplace_back(net[name], rate);
  }

  for (auto it = species.begin(); it != species.end(); ++it) {
    const bool constant = it->is_object() && it->value("constant", false);
    if (constant) continue;
    const std::string flat = comp.path + "." + it.key();
    std::vector<NodeId> parts;
    for (const auto& [coef, rate] : terms[it.key()]) {
      if (coef == 1.0) {
        parts.push_back(rate);
      } else {
        const NodeId m[] = {coefficient_node(pool, coef), rate};
        parts.push_back(pool.make(Op::Mul, m));
      }
    }
    NodeId rhs;
    if (parts.empty()) rhs = pool.number(0.0, true);
    else if (parts.size() == 1) rhs = parts[0];
    else rhs = pool.make(Op::Add, parts);
    if (!st.tendencies.count(flat)) st.tendency_order.push_back(flat);
    st.tendencies[flat].push_back({rhs, c, comp.file, pointer_join(pointer_join(comp.pointer, "species"), it.key())});
  }
  add_events(st, c);
}

}  // namespace esi::esm::detail
