// Document-level dimensional analysis (spec §4.8.3, §4.8.4, §7.4).
//
// Every inline model (recursing into inline `subsystems`) and reaction system is walked;
// components still given as `{"ref": ...}` are skipped. Each expression gets a KNOWN dimension,
// UNKNOWN (undeterminable, §4.8.4: the enclosing check is skipped, never coerced to
// dimensionless) or LITERAL (a number, or arithmetic over numbers only). The checker is
// deliberately conservative: a finding is only ever a clash between two KNOWN dimensions.
//
// Expression rules:
//   symbol    declared `units` of the variable / species / parameter, resolved locally, then as
//             a scoped path (§4.9.2) from the current system and from the document root; the
//             undeclared independent variable (domain.independent_variable, default `t`) is
//             time (§4.9.1); anything else (undeclared, unparseable units, `_var`) is UNKNOWN.
//   literal   neutral in + - min max ifelse-branches comparisons (it adopts the needed units);
//             in * and / it may be a conversion factor with implicit units, so the product is
//             UNKNOWN (`1.8e-12 * exp(-1370/T) * M`, §7.1).
//   + - min max, ifelse branches, comparisons, atan2   non-literal operands commensurate; the
//             result is KNOWN only when every non-literal operand is.
//   * /       multiply / divide when every factor is KNOWN.
//   ^         a KNOWN exponent must be dimensionless; a literal exponent equal to p/q (q <= 1000)
//             raises the base exactly; a symbolic one is UNKNOWN unless the base is
//             dimensionless.
//   sqrt      halves exponents.   abs Pre   preserve.   and or not, comparisons   dimensionless.
//   D         wrt the independent variable: [x]/[t] when the independent variable is declared
//             with units, else UNKNOWN; a spatial D is open-tier (§4.2): UNKNOWN.
//   sin cos tan, ln log log10 exp sinh cosh tanh asinh acosh atanh   argument dimensionless
//             (or an angle); result dimensionless.   asin acos atan   result rad.
//   fn        UNKNOWN, arguments still checked. Every other op (sign, floor, index, aggregate,
//             makearray, apply_expression_template, table_lookup, broadcast, integral,
//             grad/div/laplacian, user ops, ...) is UNKNOWN and not descended into: such ops may
//             bind names of their own.
//   The angle axis is soft in comparisons: rad^k is set aside, which §4.8.1 admits (a binding
//   may type rad as dimensionless), so Omega[rad/s] * R[m] matches a declared `m/s`.
//
// Equation / reaction rules (one finding at most per equation or reaction):
//   `x ~ rhs`    (bare LHS symbol) inner violations of rhs, then declared units of x against
//                rhs, then `x ~ c * y` with literal c and x, y of one dimension but different
//                scales (temperature excluded: offsets are not modelled): c must be the
//                conversion factor within 1e-6. Reported at the declaration of x when it is
//                local (`/models/M/variables/x`), else at the equation.
//   `D(u) ~ rhs` sides only, at `/…/equations/i` (see check_equation).
//   other shapes (implicit constraints, `ic`), initialization_equations: not checked.
//   reaction     see check_reaction (§7.4), at `/reaction_systems/S/reactions/i`.
//   declarations every `units` of variables / species / parameters must parse (§4.8.2), else
//                `unit_parse_error` at the declaration.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "esi/esm/units.hpp"

namespace esi::esm {
namespace {

using json = nlohmann::json;

enum class Kind { Known, Literal, Unknown };
struct Q {
  Kind kind = Kind::Unknown;
  Dimension dim;
};
Q known(const Dimension& d) {
  return Q{Kind::Known, d};
}
Q literal() {
  return Q{Kind::Literal, {}};
}
Q unknown() {
  return Q{Kind::Unknown, {}};
}

constexpr std::size_t kTimeAxis = 2;
constexpr std::size_t kAngleAxis = 7;
const Dimension kAngle = axis_dimension(kAngleAxis);
const Dimension kTemperature = axis_dimension(4);

// Comparisons treat the angle axis as soft: a binding that types rad as dimensionless is
// admissible (§4.8.1, steradian paragraph), and arc length R*theta or angular speed
// Omega*R must not be reported against a declared `m` or `m/s`.
Dimension without_angle(Dimension d) {
  d.num[kAngleAxis] = 0;
  d.den[kAngleAxis] = 1;
  return d;
}
bool same(const Dimension& a, const Dimension& b) {
  return without_angle(a) == without_angle(b);
}
bool is_dimensionless(const Dimension& d) {
  return without_angle(d).dimensionless();
}
// True when d is a pure (rational) power of time, including time^0.
bool is_time_power(const Dimension& d) {
  Dimension t = without_angle(d);
  t.num[kTimeAxis] = 0;
  t.den[kTimeAxis] = 1;
  return t.dimensionless();
}

// Best exact rational p/q (q <= 1000) for a literal exponent or stoichiometry.
bool to_rational(double v, std::int64_t& p, std::int64_t& q) {
  if (!std::isfinite(v) || std::fabs(v) > 1e6) return false;
  for (q = 1; q <= 1000; ++q) {
    const double pv = std::round(v * static_cast<double>(q));
    if (std::fabs(pv / static_cast<double>(q) - v) <= 1e-12 * std::max(1.0, std::fabs(v))) {
      p = static_cast<std::int64_t>(pv);
      return true;
    }
  }
  return false;
}

// Value of an expression built only from numbers and + - * / (at most 32 deep), else nullopt.
std::optional<double> literal_value(const json& e, int depth = 0) {
  if (e.is_number()) return e.get<double>();
  if (depth > 32 || !e.is_object() || !e.contains("op") || !e.contains("args") ||
      !e["args"].is_array())
    return std::nullopt;
  const std::string op = e["op"].is_string() ? e["op"].get<std::string>() : "";
  const json& a = e["args"];
  std::vector<double> v;
  for (const auto& x : a) {
    auto xv = literal_value(x, depth + 1);
    if (!xv) return std::nullopt;
    v.push_back(*xv);
  }
  if (v.empty()) return std::nullopt;
  if (op == "-" && v.size() == 1) return -v[0];
  if (op == "-" && v.size() == 2) return v[0] - v[1];
  if (op == "/" && v.size() == 2) return v[0] / v[1];
  double r = op == "*" ? 1.0 : 0.0;
  if (op != "+" && op != "*") return std::nullopt;
  for (double x : v) r = op == "*" ? r * x : r + x;
  return r;
}

bool is_ref(const json& sys) {
  return !sys.is_object() || sys.contains("ref");
}

class Checker {
 public:
  Checker(const json& doc, const std::string& file) : doc_(doc), file_(file) {
    if (doc.is_object() && doc.contains("domain") && doc["domain"].is_object()) {
      const json& d = doc["domain"];
      if (d.contains("independent_variable") && d["independent_variable"].is_string())
        indep_ = d["independent_variable"].get<std::string>();
    }
  }

  std::vector<Diagnostic> run() {
    if (!doc_.is_object()) return {};
    for (const char* group : {"models", "reaction_systems"}) {
      if (!doc_.contains(group) || !doc_[group].is_object()) continue;
      for (const auto& [name, sys] : doc_[group].items())
        walk_system(sys, pointer_join(pointer_join("", group), name));
    }
    return std::move(out_);
  }

 private:
  void report(const std::string& code, const std::string& ptr, const std::string& msg) {
    out_.push_back(Diagnostic{code, file_, ptr, msg, Layer::Structural});
  }

  const std::optional<Unit>& unit_of(const std::string& text) {
    auto it = cache_.find(text);
    if (it == cache_.end()) it = cache_.emplace(text, parse_unit(text)).first;
    return it->second;
  }

  // ---- name resolution ----------------------------------------------------------------
  static const json* local_decl(const json& sys, const std::string& name) {
    for (const char* group : {"variables", "species", "parameters"}) {
      if (!sys.contains(group) || !sys[group].is_object()) continue;
      auto it = sys[group].find(name);
      if (it != sys[group].end() && it->is_object()) return &*it;
    }
    return nullptr;
  }
  static std::string local_decl_pointer(const json& sys, const std::string& sys_ptr,
                                        const std::string& name) {
    for (const char* group : {"variables", "species", "parameters"}) {
      if (sys.contains(group) && sys[group].is_object() && sys[group].contains(name))
        return pointer_join(pointer_join(sys_ptr, group), name);
    }
    return "";
  }
  static const json* walk_path(const json* sys, const std::vector<std::string>& segs) {
    for (std::size_t i = 0; sys && i + 1 < segs.size(); ++i) {
      if (!sys->contains("subsystems") || !(*sys)["subsystems"].is_object()) return nullptr;
      auto it = (*sys)["subsystems"].find(segs[i]);
      if (it == (*sys)["subsystems"].end() || is_ref(*it)) return nullptr;
      sys = &*it;
    }
    return sys ? local_decl(*sys, segs.back()) : nullptr;
  }
  const json* resolve(const std::string& name) const {
    if (const json* d = local_decl(*sys_, name)) return d;
    if (name.find('.') == std::string::npos) return nullptr;
    std::vector<std::string> segs;
    for (std::size_t b = 0;;) {
      const std::size_t e = name.find('.', b);
      segs.push_back(name.substr(b, e == std::string::npos ? std::string::npos : e - b));
      if (e == std::string::npos) break;
      b = e + 1;
    }
    if (const json* d = walk_path(sys_, segs)) return d;
    for (const char* group : {"models", "reaction_systems"}) {
      if (!doc_.contains(group) || !doc_[group].is_object()) continue;
      auto it = doc_[group].find(segs[0]);
      if (it == doc_[group].end() || is_ref(*it)) continue;
      const std::vector<std::string> rest(segs.begin() + 1, segs.end());
      if (const json* d = walk_path(&*it, rest)) return d;
    }
    return nullptr;
  }
  Q symbol(const std::string& name) {
    if (const json* d = resolve(name)) {
      if (!d->contains("units") || !(*d)["units"].is_string()) return unknown();
      const auto& u = unit_of((*d)["units"].get<std::string>());
      return u ? known(u->dim) : unknown();
    }
    if (name == indep_) return known(axis_dimension(kTimeAxis));  // §4.9.1
    return unknown();
  }

  // ---- expression evaluation ----------------------------------------------------------
  Q fail(const std::string& msg) {
    if (err_.empty()) err_ = msg;
    return unknown();
  }

  // Operands args[from..] must share a dimension; literal operands impose no constraint. The
  // result is KNOWN only when every non-literal operand is known.
  Q commensurate(const json& args, std::size_t from, const std::string& op) {
    std::optional<Dimension> dim;
    bool any_unknown = false, any_constrained = false;
    for (std::size_t i = from; i < args.size(); ++i) {
      const Q q = eval(args[i]);
      if (q.kind == Kind::Literal) continue;
      any_constrained = true;
      if (q.kind == Kind::Unknown) {
        any_unknown = true;
        continue;
      }
      if (dim && !same(*dim, q.dim))
        return fail("the operands of '" + op + "' are not commensurate: " + to_string(*dim) +
                    " vs " + to_string(q.dim));
      if (!dim) dim = q.dim;
    }
    if (!any_constrained) return args.size() > from ? literal() : unknown();
    return any_unknown ? unknown() : known(*dim);
  }

  // Transcendental-style argument rule: a KNOWN argument must be dimensionless.
  Q require_dimensionless(const json& args, const std::string& op, const Dimension& result) {
    if (args.size() != 1) return unknown();
    const Q q = eval(args[0]);
    if (q.kind == Kind::Known && !is_dimensionless(q.dim))
      return fail("the argument of '" + op + "' must be dimensionless, got " + to_string(q.dim));
    return known(result);
  }

  Q eval(const json& e) {
    if (depth_ > 2000) return unknown();  // pathological nesting: undeterminable
    ++depth_;
    const Q q = eval_node(e);
    --depth_;
    return q;
  }

  Q eval_node(const json& e) {
    if (e.is_number() || literal_value(e)) return literal();
    if (e.is_string()) return symbol(e.get<std::string>());
    if (!e.is_object() || !e.contains("op") || !e["op"].is_string()) return unknown();
    const std::string op = e["op"].get<std::string>();
    static const json kNoArgs = json::array();
    const json& args = e.contains("args") && e["args"].is_array() ? e["args"] : kNoArgs;
    const std::size_t n = args.size();

    if (op == "+" || op == "-" || op == "min" || op == "max") return commensurate(args, 0, op);
    if (op == "*" || op == "/") {
      // A literal factor may carry implicit units (a conversion factor), so it makes the
      // product undeterminable, exactly as an unknown factor does.
      if (n == 0 || (op == "/" && n != 2)) return unknown();
      Dimension acc;
      bool determinate = true;
      for (std::size_t i = 0; i < n; ++i) {
        const Q q = eval(args[i]);
        if (q.kind != Kind::Known) {
          determinate = false;
          continue;
        }
        acc = (op == "/" && i == 1) ? divide(acc, q.dim) : multiply(acc, q.dim);
      }
      return determinate ? known(acc) : unknown();
    }
    if (op == "^" || op == "**") {
      if (n != 2) return unknown();
      const Q base = eval(args[0]);
      if (auto v = literal_value(args[1])) {
        std::int64_t p = 0, q = 1;
        if (base.kind != Kind::Known) return unknown();
        if (to_rational(*v, p, q)) return known(power(base.dim, p, q));
        return is_dimensionless(base.dim) ? base : unknown();
      }
      const Q ex = eval(args[1]);
      if (ex.kind == Kind::Known && !is_dimensionless(ex.dim))
        return fail("an exponent must be dimensionless, got " + to_string(ex.dim) +
                    (base.kind == Kind::Known ? " (base " + to_string(base.dim) + ")" : ""));
      if (base.kind == Kind::Known && is_dimensionless(base.dim)) return base;
      return unknown();  // symbolic exponent on a dimensional base (§4.8.4)
    }
    if (op == "sqrt") {
      if (n != 1) return unknown();
      const Q q = eval(args[0]);
      return q.kind == Kind::Known ? known(power(q.dim, 1, 2)) : unknown();
    }
    if (op == "abs" || op == "Pre") return n == 1 ? eval(args[0]) : unknown();
    if (op == "D") {
      if (n < 1 || !is_time_derivative(e)) return unknown();  // spatial D: open tier (§4.2)
      const Q q = eval(args[0]);
      const Q t = declared_time();
      if (q.kind != Kind::Known || t.kind != Kind::Known) return unknown();
      return known(divide(q.dim, t.dim));
    }
    if (op == "ifelse") {
      if (n != 3) return unknown();
      eval(args[0]);
      return commensurate(args, 1, op);
    }
    if (op == ">" || op == "<" || op == ">=" || op == "<=" || op == "==" || op == "!=") {
      commensurate(args, 0, op);
      return err_.empty() ? known(Dimension{}) : unknown();
    }
    if (op == "and" || op == "or" || op == "not") {
      for (const auto& a : args) eval(a);
      return known(Dimension{});
    }
    if (op == "sin" || op == "cos" || op == "tan") {
      // An angle or a pure number; with the angle axis soft these coincide.
      return require_dimensionless(args, op, Dimension{});
    }
    if (op == "asin" || op == "acos" || op == "atan")
      return require_dimensionless(args, op, kAngle);
    if (op == "atan2") {
      if (n != 2) return unknown();
      commensurate(args, 0, op);
      return err_.empty() ? known(kAngle) : unknown();
    }
    if (op == "ln" || op == "log" || op == "log10" || op == "exp" || op == "sinh" || op == "cosh" ||
        op == "tanh" || op == "asinh" || op == "acosh" || op == "atanh")
      return require_dimensionless(args, op, Dimension{});
    if (op == "fn") {
      for (const auto& a : args) eval(a);
      return unknown();
    }
    return unknown();
  }

  bool is_time_derivative(const json& d) const {
    return !d.contains("wrt") || (d["wrt"].is_string() && d["wrt"] == indep_);
  }
  // The independent variable's dimension when it is DECLARED with units; otherwise unknown.
  Q declared_time() {
    if (const json* d = resolve(indep_)) {
      if (d->contains("units") && (*d)["units"].is_string()) {
        const auto& u = unit_of((*d)["units"].get<std::string>());
        if (u) return known(u->dim);
      }
    }
    return unknown();
  }

  // ---- checks -------------------------------------------------------------------------
  void check_declarations(const json& sys, const std::string& ptr) {
    for (const char* group : {"variables", "species", "parameters"}) {
      if (!sys.contains(group) || !sys[group].is_object()) continue;
      for (const auto& [name, decl] : sys[group].items()) {
        if (!decl.is_object() || !decl.contains("units") || !decl["units"].is_string()) continue;
        const std::string text = decl["units"].get<std::string>();
        std::string why;
        if (!parse_unit(text, &why))
          report("unit_parse_error", pointer_join(pointer_join(ptr, group), name), why);
      }
    }
  }

  void check_conversion_factor(const json& lhs, const json& rhs, const std::string& where) {
    if (!lhs.is_string() || !rhs.is_object() || rhs.value("op", json()) != "*" ||
        !rhs.contains("args"))
      return;
    const json& a = rhs["args"];
    if (!a.is_array() || a.size() != 2) return;
    const json* lit = a[0].is_number() ? &a[0] : a[1].is_number() ? &a[1] : nullptr;
    const json* var = a[0].is_string() ? &a[0] : a[1].is_string() ? &a[1] : nullptr;
    if (!lit || !var) return;
    const json* dl = resolve(lhs.get<std::string>());
    const json* dv = resolve(var->get<std::string>());
    if (!dl || !dv || !dl->contains("units") || !dv->contains("units") ||
        !(*dl)["units"].is_string() || !(*dv)["units"].is_string())
      return;
    const auto& ul = unit_of((*dl)["units"].get<std::string>());
    const auto& uv = unit_of((*dv)["units"].get<std::string>());
    if (!ul || !uv || ul->dim != uv->dim || ul->dim == kTemperature) return;
    const double factor = uv->scale / ul->scale;
    const double c = lit->get<double>();
    if (std::fabs(factor - 1.0) <= 1e-9 || std::fabs(c - factor) <= 1e-6 * std::fabs(factor))
      return;
    report("unit_inconsistency", where,
           "the factor " + number(c) + " converting '" + (*dv)["units"].get<std::string>() +
               "' to '" + (*dl)["units"].get<std::string>() + "' should be " + number(factor) +
               " (spec §4.8.4)");
  }

  static std::string number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.10g", v);
    return buf;
  }

  // One finding at most per equation. Only two equation shapes are checked:
  //  * `x ~ rhs` (x a bare symbol: an observed / defining equation): every inner violation of
  //    the rhs, then the declared units of x against the rhs dimension, then a literal
  //    conversion factor;
  //  * `D(u, t) ~ rhs`: the two sides only — inner violations are not reported, since rate
  //    laws are routinely written with implicit-unit literals. When the independent variable
  //    is declared the comparison is strict; otherwise no time unit is asserted and the sides
  //    are inconsistent only when [u]/[rhs] is not a power of time (§4.8.4 "cannot be
  //    reconciled by any time unit"), so `D(x) ~ -x` with x dimensionless passes.
  // Implicit constraints (`H*H*SO4 ~ Ksp`) and `ic(u) ~ field` are not checked.
  void check_equation(const json& eq, const std::string& sys_ptr, const std::string& eq_ptr) {
    if (!eq.is_object() || !eq.contains("lhs") || !eq.contains("rhs")) return;
    const json& lhs = eq["lhs"];
    const json& rhs = eq["rhs"];
    err_.clear();
    if (lhs.is_string()) {
      std::string where = local_decl_pointer(*sys_, sys_ptr, lhs.get<std::string>());
      if (where.empty()) where = eq_ptr;
      const Q l = symbol(lhs.get<std::string>());
      const Q r = eval(rhs);
      if (!err_.empty()) {
        report("unit_inconsistency", where, err_ + " (spec §4.8.3)");
      } else if (l.kind == Kind::Known && r.kind == Kind::Known && !same(l.dim, r.dim)) {
        report("unit_inconsistency", where,
               "'" + lhs.get<std::string>() + "' is declared with dimension " + to_string(l.dim) +
                   " but its defining expression has dimension " + to_string(r.dim) +
                   " (spec §4.8.4)");
      } else {
        check_conversion_factor(lhs, rhs, where);
      }
      return;
    }
    if (!lhs.is_object() || lhs.value("op", json()) != "D" || !is_time_derivative(lhs) ||
        !lhs.contains("args") || !lhs["args"].is_array() || lhs["args"].size() != 1)
      return;
    const Q u = eval(lhs["args"][0]);
    const Q r = eval(rhs);
    err_.clear();  // inner findings of a rate law are out of scope (see above)
    if (u.kind != Kind::Known || r.kind != Kind::Known) return;
    const Q t = declared_time();
    if (t.kind == Kind::Known) {
      const Dimension l = divide(u.dim, t.dim);
      if (!same(l, r.dim))
        report("unit_inconsistency", eq_ptr,
               "left-hand side has dimension " + to_string(l) + " but right-hand side has " +
                   "dimension " + to_string(r.dim) + " (spec §4.8.4)");
    } else if (!is_time_power(divide(u.dim, r.dim))) {
      report("unit_inconsistency", eq_ptr,
             "the time derivative of a quantity of dimension " + to_string(u.dim) +
                 " cannot equal a right-hand side of dimension " + to_string(r.dim) +
                 " under any time unit (spec §4.8.4)");
    }
  }

  // §7.4 rate check, deliberately narrow: only a rate that is a bare symbol with declared
  // units (compound rates routinely carry implicit-unit constants), only when every substrate
  // shares one KNOWN, non-dimensionless dimension (mixing-ratio mechanisms fold number-density
  // factors into their rate constants), and never for a source reaction (no substrates).
  void check_reaction(const json& rx, const std::string& ptr) {
    if (!rx.is_object() || !rx.contains("rate") || !rx["rate"].is_string()) return;
    if (!rx.contains("substrates") || !rx["substrates"].is_array() || rx["substrates"].empty())
      return;
    const Q rate = symbol(rx["rate"].get<std::string>());
    if (rate.kind != Kind::Known) return;
    std::optional<Dimension> conc;
    double order = 0;
    for (const auto& entry : rx["substrates"]) {
      if (!entry.is_object() || !entry.contains("species") || !entry["species"].is_string()) return;
      const Q q = symbol(entry["species"].get<std::string>());
      if (q.kind != Kind::Known || (conc && !same(*conc, q.dim))) return;
      conc = q.dim;
      const json s = entry.value("stoichiometry", json(1));
      if (!s.is_number()) return;
      order += s.get<double>();
    }
    if (!conc || is_dimensionless(*conc)) return;
    std::int64_t p = 0, q = 1;
    if (!to_rational(1.0 - order, p, q)) return;
    const Dimension expected = divide(power(*conc, p, q), axis_dimension(kTimeAxis));
    if (!same(rate.dim, expected))
      report("unit_inconsistency", ptr,
             "the rate '" + rx["rate"].get<std::string>() + "' has dimension " +
                 to_string(rate.dim) + " but a reaction of total order " + number(order) +
                 " over species of dimension " + to_string(*conc) + " needs " +
                 to_string(expected) + " (spec §7.4)");
  }

  void walk_system(const json& sys, const std::string& ptr) {
    if (is_ref(sys)) return;
    check_declarations(sys, ptr);
    sys_ = &sys;
    // `initialization_equations` hold only at t0 and are not checked.
    for (const char* key : {"equations", "constraint_equations"}) {
      if (!sys.contains(key) || !sys[key].is_array()) continue;
      const std::string base = pointer_join(ptr, key);
      for (std::size_t i = 0; i < sys[key].size(); ++i)
        check_equation(sys[key][i], ptr, pointer_join(base, i));
    }
    if (sys.contains("reactions") && sys["reactions"].is_array()) {
      const std::string base = pointer_join(ptr, "reactions");
      for (std::size_t i = 0; i < sys["reactions"].size(); ++i)
        check_reaction(sys["reactions"][i], pointer_join(base, i));
    }
    if (sys.contains("subsystems") && sys["subsystems"].is_object()) {
      for (const auto& [name, sub] : sys["subsystems"].items())
        walk_system(sub, pointer_join(pointer_join(ptr, "subsystems"), name));
    }
  }

  const json& doc_;
  std::string file_;
  std::string indep_ = "t";
  std::vector<Diagnostic> out_;
  std::unordered_map<std::string, std::optional<Unit>> cache_;
  const json* sys_ = nullptr;
  std::string err_;
  int depth_ = 0;
};

}  // namespace

std::vector<Diagnostic> check_units(const nlohmann::json& document, const std::string& file) {
  return Checker(document, file).run();
}

}  // namespace esi::esm
