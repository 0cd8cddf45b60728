// Document-level dimensional analysis (spec §4.8.3, §4.8.4, §7.4, §10).
//
// Every inline model (recursing into inline `subsystems`), reaction system and coupling entry
// is walked; components still given as `{"ref": ...}` are skipped. Each expression gets a KNOWN
// dimension, UNKNOWN (undeterminable, §4.8.4: the enclosing check is skipped, never coerced to
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
//   Every violation found inside an expression (a sum of unlike terms, a transcendental of a
//   dimensional argument, ...) is an "inner" finding located at the offending node
//   (`…/rhs/args/1`), wherever the expression sits: equation sides, reaction rates, coupling
//   connector expressions and transforms.
//
// Document rules:
//   `x ~ rhs`    (bare LHS symbol) inner findings of rhs, then declared units of x against rhs,
//                then `x ~ c * y` with literal c and x, y of one dimension but different
//                scales (temperature excluded: offsets are not modelled): c must be the
//                conversion factor within 1e-6. Reported at the declaration of x when it is
//                local (`/models/M/variables/x`, as the units_* fixtures pin), else at the
//                equation; an inner finding's message names the offending node.
//   `D(u) ~ rhs` inner findings of rhs at their nodes, then the sides at `/…/equations/i`
//                (see tendency_mismatch for the time unit).
//   other shapes (implicit constraints `H*H*SO4 ~ Ksp`, `ic(u) ~ field`) and
//                initialization_equations: inner findings of both sides, and the two sides
//                against each other when both are KNOWN (`lhs - rhs` must be a valid sum).
//   reaction     inner findings of the rate; the species whose ODEs a reaction feeds must share
//                one dimension (`dX/dt += ν·v` for each, §7.4), else a finding at the odd
//                species; the mass-action rate `k·∏ Sᵢ^nᵢ` must be a tendency of that dimension
//                (§7.4, "rate that does not match its stoichiometric order"), at the reaction.
//   events       inner findings of conditions, triggers and affects; an affect `x ~ rhs` sets
//                x, so rhs must have x's dimension (§5.1), at `/…/affects/j`.
//   coupling     operator_compose: states identified by name, or by a `translate` entry without
//                a factor, must share a dimension (their tendencies are summed). couple: an
//                `additive` (or `replacement`) connector expression is a tendency of its target,
//                a `multiplicative` one is dimensionless. variable_map: param_to_var and
//                factor-less scaling transforms bind the target to the source, an Expression
//                transform binds it to the expression (§10.4). A `factor` may carry implicit
//                units (W/m^2 -> K/s), so it makes the entry undeterminable; `lifting:
//                integral` changes the dimension and is skipped; `identity` is the structural
//                layer's `domain_unit_mismatch`. Findings at `/coupling/i` (at the translate
//                or connector entry for those).
//   declarations every `units` and `default_units` must parse (§4.8.2), else `unit_parse_error`
//                at the string; `default_units` must denote the declared units up to scale: a
//                different dimension, or another temperature origin (K vs degC), is a
//                `unit_inconsistency` at the declaration (schema, ModelVariable.default_units).
//                A numeric `default` carries no units of its own and cannot disagree.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "esm/units/units_check_detail.hpp"

namespace esi::esm {
namespace units_detail {

// Comparisons treat the angle axis as soft: a binding that types rad as dimensionless is
// admissible (§4.8.1, steradian paragraph), and arc length R*theta or angular speed
// Omega*R must not be reported against a declared `m` or `m/s`.
static Dimension without_angle(Dimension d) {
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
bool is_time_power(const Dimension& d) {
  Dimension t = without_angle(d);
  t.num[kTimeAxis] = 0;
  t.den[kTimeAxis] = 1;
  return t.dimensionless();
}

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

std::optional<double> literal_value(const json& e, int depth) {
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

std::vector<Diagnostic> Checker::run() {
  if (!doc_.is_object()) return {};
  for (const char* group : {"models", "reaction_systems"}) {
    if (!doc_.contains(group) || !doc_[group].is_object()) continue;
    for (const auto& [name, sys] : doc_[group].items())
      walk_system(sys, pointer_join(pointer_join("", group), name));
  }
  if (doc_.contains("coupling") && doc_["coupling"].is_array()) {
    sys_ = &kNoSystem;  // coupling references are scoped from the document root
    for (std::size_t i = 0; i < doc_["coupling"].size(); ++i)
      check_coupling(doc_["coupling"][i], pointer_join("/coupling", i));
  }
  return std::move(out_);
}

void Checker::report(const std::string& code, const std::string& ptr, const std::string& msg) {
  out_.push_back(Diagnostic{code, file_, ptr, msg, Layer::Structural});
}

const std::optional<Unit>& Checker::unit_of(const std::string& text) {
  auto it = cache_.find(text);
  if (it == cache_.end()) it = cache_.emplace(text, parse_unit(text)).first;
  return it->second;
}

const json* Checker::local_decl(const json& sys, const std::string& name) {
  for (const char* group : {"variables", "species", "parameters"}) {
    if (!sys.contains(group) || !sys[group].is_object()) continue;
    auto it = sys[group].find(name);
    if (it != sys[group].end() && it->is_object()) return &*it;
  }
  return nullptr;
}

std::string Checker::local_decl_pointer(const json& sys, const std::string& sys_ptr,
                                        const std::string& name) {
  for (const char* group : {"variables", "species", "parameters"}) {
    if (sys.contains(group) && sys[group].is_object() && sys[group].contains(name))
      return pointer_join(pointer_join(sys_ptr, group), name);
  }
  return "";
}

std::vector<std::string> Checker::split_path(const std::string& name) {
  std::vector<std::string> segs;
  for (std::size_t b = 0;;) {
    const std::size_t e = name.find('.', b);
    segs.push_back(name.substr(b, e == std::string::npos ? std::string::npos : e - b));
    if (e == std::string::npos) break;
    b = e + 1;
  }
  return segs;
}

// The inline system reached from `sys` through subsystems segs[0..n).
const json* Checker::descend(const json* sys, const std::vector<std::string>& segs, std::size_t n) {
  for (std::size_t i = 0; sys && i < n; ++i) {
    if (!sys->contains("subsystems") || !(*sys)["subsystems"].is_object()) return nullptr;
    auto it = (*sys)["subsystems"].find(segs[i]);
    if (it == (*sys)["subsystems"].end() || is_ref(*it)) return nullptr;
    sys = &*it;
  }
  return sys;
}

const json* Checker::walk_path(const json* sys, const std::vector<std::string>& segs) {
  if (segs.empty()) return nullptr;
  sys = descend(sys, segs, segs.size() - 1);
  return sys ? local_decl(*sys, segs.back()) : nullptr;
}

// A top-level model or reaction system, or an inline subsystem of one ("A.Sub").
const json* Checker::find_system(const std::string& path) const {
  const std::vector<std::string> segs = split_path(path);
  for (const char* group : {"models", "reaction_systems"}) {
    if (!doc_.contains(group) || !doc_[group].is_object()) continue;
    auto it = doc_[group].find(segs[0]);
    if (it == doc_[group].end() || is_ref(*it)) continue;
    const std::vector<std::string> rest(segs.begin() + 1, segs.end());
    return descend(&*it, rest, rest.size());
  }
  return nullptr;
}

const json* Checker::resolve(const std::string& name) const {
  if (const json* d = local_decl(*sys_, name)) return d;
  if (name.find('.') == std::string::npos) return nullptr;
  const std::vector<std::string> segs = split_path(name);
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

// Declared units of a declaration, when they parse.
const Unit* Checker::declared_unit(const json* d) {
  if (!d || !d->contains("units") || !(*d)["units"].is_string()) return nullptr;
  const auto& u = unit_of((*d)["units"].get<std::string>());
  return u ? &*u : nullptr;
}

Q Checker::symbol(const std::string& name) {
  if (const json* d = resolve(name)) {
    const Unit* u = declared_unit(d);
    return u ? known(u->dim) : unknown();
  }
  if (name == indep_) return known(axis_dimension(kTimeAxis));  // §4.9.1
  return unknown();
}

// "Sys.x (mol/mol)" for messages.
std::string Checker::described(const std::string& name) {
  const json* d = resolve(name);
  if (!d || !d->contains("units") || !(*d)["units"].is_string()) return "'" + name + "'";
  return "'" + name + "' (" + (*d)["units"].get<std::string>() + ")";
}

// `base_` is the pointer of the expression being evaluated and `path_` the argument indices
// from it to the current node, so a finding can name the offending node without building a
// pointer for every node visited.
std::string Checker::node_pointer() const {
  std::string p = base_;
  for (std::size_t i : path_) p = pointer_join(pointer_join(p, "args"), i);
  return p;
}

Q Checker::fail(const std::string& msg) {
  inner_.push_back(InnerFinding{node_pointer(), msg});
  return unknown();
}

// Evaluates a whole expression located at `ptr`; its violations are appended to inner_.
Q Checker::evaluate(const json& e, const std::string& ptr) {
  base_ = ptr;
  path_.clear();
  depth_ = 0;
  return eval(e);
}

Q Checker::arg(const json& args, std::size_t i) {
  path_.push_back(i);
  const Q q = eval(args[i]);
  path_.pop_back();
  return q;
}

// Operands args[from..] must share a dimension; literal operands impose no constraint. The
// result is KNOWN only when every non-literal operand is known. Every operand is evaluated,
// so violations inside later operands are found too.
Q Checker::commensurate(const json& args, std::size_t from, const std::string& op) {
  std::optional<Dimension> dim;
  bool any_unknown = false, any_constrained = false, clash = false;
  for (std::size_t i = from; i < args.size(); ++i) {
    const Q q = arg(args, i);
    if (q.kind == Kind::Literal) continue;
    any_constrained = true;
    if (q.kind == Kind::Unknown) {
      any_unknown = true;
      continue;
    }
    if (dim && !same(*dim, q.dim) && !clash) {
      clash = true;
      fail("the operands of '" + op + "' are not commensurate: " + to_string(*dim) + " vs " +
           to_string(q.dim));
    }
    if (!dim) dim = q.dim;
  }
  if (clash) return unknown();
  if (!any_constrained) return args.size() > from ? literal() : unknown();
  return any_unknown ? unknown() : known(*dim);
}

// Transcendental-style argument rule: a KNOWN argument must be dimensionless.
Q Checker::require_dimensionless(const json& args, const std::string& op, const Dimension& result) {
  if (args.size() != 1) return unknown();
  const Q q = arg(args, 0);
  if (q.kind == Kind::Known && !is_dimensionless(q.dim))
    return fail("the argument of '" + op + "' must be dimensionless, got " + to_string(q.dim));
  return known(result);
}

Q Checker::eval(const json& e) {
  if (depth_ > 2000) return unknown();  // pathological nesting: undeterminable
  ++depth_;
  const Q q = eval_node(e);
  --depth_;
  return q;
}

Q Checker::eval_node(const json& e) {
  if (e.is_number() || literal_value(e)) return literal();
  if (e.is_string()) return symbol(e.get<std::string>());
  if (!e.is_object() || !e.contains("op") || !e["op"].is_string()) return unknown();
  const std::string op = e["op"].get<std::string>();
  static const json kNoArgs = json::array();
  const json& args = e.contains("args") && e["args"].is_array() ? e["args"] : kNoArgs;
  const std::size_t n = args.size();
  const std::size_t findings_before = inner_.size();
  // Result of a boolean-valued node: dimensionless unless something inside clashed.
  auto boolean = [&] { return inner_.size() == findings_before ? known(Dimension{}) : unknown(); };

  if (op == "+" || op == "-" || op == "min" || op == "max") return commensurate(args, 0, op);
  if (op == "*" || op == "/") {
    // A literal factor may carry implicit units (a conversion factor), so it makes the
    // product undeterminable, exactly as an unknown factor does.
    if (n == 0 || (op == "/" && n != 2)) return unknown();
    Dimension acc;
    bool determinate = true;
    for (std::size_t i = 0; i < n; ++i) {
      const Q q = arg(args, i);
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
    const Q base = arg(args, 0);
    if (auto v = literal_value(args[1])) {
      std::int64_t p = 0, q = 1;
      if (base.kind != Kind::Known) return unknown();
      if (to_rational(*v, p, q)) return known(power(base.dim, p, q));
      return is_dimensionless(base.dim) ? base : unknown();
    }
    const Q ex = arg(args, 1);
    if (ex.kind == Kind::Known && !is_dimensionless(ex.dim))
      return fail("an exponent must be dimensionless, got " + to_string(ex.dim) +
                  (base.kind == Kind::Known ? " (base " + to_string(base.dim) + ")" : ""));
    if (base.kind == Kind::Known && is_dimensionless(base.dim)) return base;
    return unknown();  // symbolic exponent on a dimensional base (§4.8.4)
  }
  if (op == "sqrt") {
    if (n != 1) return unknown();
    const Q q = arg(args, 0);
    return q.kind == Kind::Known ? known(power(q.dim, 1, 2)) : unknown();
  }
  if (op == "abs" || op == "Pre") return n == 1 ? arg(args, 0) : unknown();
  if (op == "D") {
    if (n < 1 || !is_time_derivative(e)) return unknown();  // spatial D: open tier (§4.2)
    const Q q = arg(args, 0);
    const Q t = declared_time();
    if (q.kind != Kind::Known || t.kind != Kind::Known) return unknown();
    return known(divide(q.dim, t.dim));
  }
  if (op == "ifelse") {
    if (n != 3) return unknown();
    arg(args, 0);
    return commensurate(args, 1, op);
  }
  if (op == ">" || op == "<" || op == ">=" || op == "<=" || op == "==" || op == "!=") {
    commensurate(args, 0, op);
    return boolean();
  }
  if (op == "and" || op == "or" || op == "not") {
    for (std::size_t i = 0; i < n; ++i) arg(args, i);
    return boolean();
  }
  if (op == "sin" || op == "cos" || op == "tan") {
    // An angle or a pure number; with the angle axis soft these coincide.
    return require_dimensionless(args, op, Dimension{});
  }
  if (op == "asin" || op == "acos" || op == "atan") return require_dimensionless(args, op, kAngle);
  if (op == "atan2") {
    if (n != 2) return unknown();
    commensurate(args, 0, op);
    return inner_.size() == findings_before ? known(kAngle) : unknown();
  }
  if (op == "ln" || op == "log" || op == "log10" || op == "exp" || op == "sinh" || op == "cosh" ||
      op == "tanh" || op == "asinh" || op == "acosh" || op == "atanh")
    return require_dimensionless(args, op, Dimension{});
  if (op == "fn") {
    for (std::size_t i = 0; i < n; ++i) arg(args, i);
    return unknown();
  }
  return unknown();
}

bool Checker::is_time_derivative(const json& d) const {
  return !d.contains("wrt") || (d["wrt"].is_string() && d["wrt"] == indep_);
}

// The independent variable's dimension when it is DECLARED with units; otherwise unknown.
Q Checker::declared_time() {
  const Unit* u = declared_unit(resolve(indep_));
  return u ? known(u->dim) : unknown();
}

// Why a tendency of dimension `rate` cannot be d/dt of a quantity of dimension `state`, or
// nullopt when it can. With the independent variable declared the comparison is strict;
// otherwise no time unit is asserted and the two are inconsistent only when
// [state]/[rate] is not a power of time (§4.8.4 "cannot be reconciled by any time unit"),
// so `D(x) ~ -x` with x dimensionless passes.
std::optional<std::string> Checker::tendency_mismatch(const Dimension& state,
                                                      const Dimension& rate) {
  const Q t = declared_time();
  if (t.kind == Kind::Known) {
    const Dimension expected = divide(state, t.dim);
    if (same(expected, rate)) return std::nullopt;
    return "needs dimension " + to_string(expected) + " but has " + to_string(rate);
  }
  if (is_time_power(divide(state, rate))) return std::nullopt;
  return "has dimension " + to_string(rate) + ", which is not " + to_string(state) +
         " per unit of time under any time unit";
}

// Reports the inner findings gathered since the last call at their own nodes.
void Checker::report_inner() {
  for (auto& f : inner_) report("unit_inconsistency", f.pointer, f.message + " (spec §4.8.3)");
  inner_.clear();
}

void Checker::check_declarations(const json& sys, const std::string& ptr) {
  for (const char* group : {"variables", "species", "parameters"}) {
    if (!sys.contains(group) || !sys[group].is_object()) continue;
    for (const auto& [name, decl] : sys[group].items()) {
      if (!decl.is_object()) continue;
      const std::string decl_ptr = pointer_join(pointer_join(ptr, group), name);
      std::optional<Unit> declared;
      if (decl.contains("units") && decl["units"].is_string()) {
        std::string why;
        declared = parse_unit(decl["units"].get<std::string>(), &why);
        if (!declared) report("unit_parse_error", decl_ptr, why);
      }
      if (decl.contains("default_units") && decl["default_units"].is_string())
        check_default_units(decl, declared, decl_ptr);
    }
  }
}

// ModelVariable.default_units (schema): the units the `default` is written in must be the
// declared units up to a scale. A different dimension is a provable mismatch, and so is a
// different temperature origin (K vs degC), which the schema names; a pure scale (km vs m)
// is a conversion the schema's "if different from the declared units" admits.
void Checker::check_default_units(const json& decl, const std::optional<Unit>& declared,
                                  const std::string& decl_ptr) {
  const std::string text = decl["default_units"].get<std::string>();
  std::string why;
  const auto given = parse_unit(text, &why);
  if (!given) {
    report("unit_parse_error", pointer_join(decl_ptr, "default_units"), why);
    return;
  }
  if (!declared) return;
  const std::string units = decl["units"].get<std::string>();
  if (!same(given->dim, declared->dim))
    report("unit_inconsistency", decl_ptr,
           "the default is given in '" + text + "' (dimension " + to_string(given->dim) +
               ") but the quantity is declared in '" + units + "' (dimension " +
               to_string(declared->dim) + ")");
  else if (given->offset != declared->offset)
    report("unit_inconsistency", decl_ptr,
           "the default is given in '" + text + "' but the quantity is declared in '" + units +
               "': the two temperature scales have different zeros, which a dimensional "
               "conversion cannot bridge (spec §4.8.1)");
}

void Checker::check_conversion_factor(const json& lhs, const json& rhs, const std::string& where) {
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
  const Unit* ul = declared_unit(dl);
  const Unit* uv = declared_unit(dv);
  if (!ul || !uv || ul->dim != uv->dim || ul->dim == kTemperature) return;
  const double factor = uv->scale / ul->scale;
  const double c = lit->get<double>();
  if (std::fabs(factor - 1.0) <= 1e-9 || std::fabs(c - factor) <= 1e-6 * std::fabs(factor)) return;
  report("unit_inconsistency", where,
         "the factor " + number(c) + " converting '" + (*dv)["units"].get<std::string>() +
             "' to '" + (*dl)["units"].get<std::string>() + "' should be " + number(factor) +
             " (spec §4.8.4)");
}

std::string Checker::number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

void Checker::check_equation(const json& eq, const std::string& sys_ptr,
                             const std::string& eq_ptr) {
  if (!eq.is_object() || !eq.contains("lhs") || !eq.contains("rhs")) return;
  const json& lhs = eq["lhs"];
  const json& rhs = eq["rhs"];
  const std::string rhs_ptr = pointer_join(eq_ptr, "rhs");
  inner_.clear();
  if (lhs.is_string()) {
    // `x ~ rhs`: an observed / defining equation, reported at the declaration of x.
    std::string where = local_decl_pointer(*sys_, sys_ptr, lhs.get<std::string>());
    const bool at_declaration = !where.empty();
    if (!at_declaration) where = eq_ptr;
    const Q l = symbol(lhs.get<std::string>());
    const Q r = evaluate(rhs, rhs_ptr);
    if (!inner_.empty()) {
      for (const auto& f : inner_)
        report("unit_inconsistency", at_declaration ? where : f.pointer,
               f.message +
                   (at_declaration ? " in the defining expression of '" + lhs.get<std::string>() +
                                         "' (at " + f.pointer + ")"
                                   : std::string()) +
                   " (spec §4.8.3)");
      inner_.clear();
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
  const std::string lhs_ptr = pointer_join(eq_ptr, "lhs");
  if (lhs.is_object() && lhs.value("op", json()) == "D" && is_time_derivative(lhs) &&
      lhs.contains("args") && lhs["args"].is_array() && lhs["args"].size() == 1) {
    // `D(u) ~ rhs`: every finding inside the rhs at its node, then the two sides.
    const Q u = evaluate(lhs["args"][0], pointer_join(pointer_join(lhs_ptr, "args"), 0));
    const Q r = evaluate(rhs, rhs_ptr);
    const bool clean = inner_.empty();
    report_inner();
    if (!clean || u.kind != Kind::Known || r.kind != Kind::Known) return;
    if (auto why = tendency_mismatch(u.dim, r.dim))
      report("unit_inconsistency", eq_ptr,
             "the right-hand side, a time derivative of a quantity of dimension " +
                 to_string(u.dim) + ", " + *why + " (spec §4.8.4)");
    return;
  }
  // Any other shape (`H*H*SO4 ~ Ksp`, `ic(u) ~ field`): lhs - rhs = 0 is a sum.
  const Q l = evaluate(lhs, lhs_ptr);
  const Q r = evaluate(rhs, rhs_ptr);
  const bool clean = inner_.empty();
  report_inner();
  if (clean && l.kind == Kind::Known && r.kind == Kind::Known && !same(l.dim, r.dim))
    report("unit_inconsistency", eq_ptr,
           "the left-hand side has dimension " + to_string(l.dim) +
               " but the right-hand side has dimension " + to_string(r.dim) + " (spec §4.8.3)");
}

void Checker::walk_system(const json& sys, const std::string& ptr) {
  if (is_ref(sys)) return;
  check_declarations(sys, ptr);
  sys_ = &sys;
  for (const char* key : {"equations", "constraint_equations", "initialization_equations"}) {
    if (!sys.contains(key) || !sys[key].is_array()) continue;
    const std::string base = pointer_join(ptr, key);
    for (std::size_t i = 0; i < sys[key].size(); ++i)
      check_equation(sys[key][i], ptr, pointer_join(base, i));
  }
  if (sys.contains("reactions") && sys["reactions"].is_array()) {
    const std::string base = pointer_join(ptr, "reactions");
    for (std::size_t i = 0; i < sys["reactions"].size(); ++i)
      check_reaction(sys["reactions"][i], ptr, pointer_join(base, i));
  }
  for (const char* key : {"continuous_events", "discrete_events"}) {
    if (!sys.contains(key) || !sys[key].is_array()) continue;
    const std::string base = pointer_join(ptr, key);
    for (std::size_t i = 0; i < sys[key].size(); ++i)
      check_event(sys[key][i], pointer_join(base, i));
  }
  if (sys.contains("subsystems") && sys["subsystems"].is_object()) {
    for (const auto& [name, sub] : sys["subsystems"].items())
      walk_system(sub, pointer_join(pointer_join(ptr, "subsystems"), name));
  }
}

}  // namespace units_detail

std::vector<Diagnostic> check_units(const nlohmann::json& document, const std::string& file) {
  return units_detail::Checker(document, file).run();
}

}  // namespace esi::esm
