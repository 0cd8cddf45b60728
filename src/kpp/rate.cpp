// KPP rate expressions -> ESM expressions.
//
// Grammar (Fortran precedence, which KPP's rate strings follow):
//   sum     := product (('+' | '-') product)*
//   product := unary (('*' | '/') unary)*
//   unary   := ('+' | '-') unary | power
//   power   := primary (('**' | '^') unary)?          right-associative, -a**2 = -(a**2)
//   primary := number | name | name '(' sum (',' sum)* ')' | '(' sum ')'
// Chains become n-ary nodes where that is exact (a - b + c = +(a, -(b), c): x + (-y) == x - y
// in IEEE arithmetic; a * b * c is a left fold either way), so a long sum does not nest deep.
//
// KPP's rate functions are expanded inline, with the temperature, air density and CFACTOR as
// the reaction system's parameters. Sources (KineticPreProcessor/KPP and WRF-Chem's KPP):
//   KPP 2.x util/UserRateLaws.f90: ARR(a0,b0,c0) = a0 exp(-b0/T) (T/300)^c0;
//     ARR2(a0,b0) = a0 exp(+b0/T) ("B0 has a changed sign when compared to ARR");
//     EP2, EP3, FALL (below); k_3rd(temp,cair,k0_300K,n,kinf_300K,m,fc); k_arr(k_298,tdep,temp).
//   KPP 3.x util/UserRateLaws.f90: ARR_abc = ARR, ARR_ab(a0,b0) = a0 exp(-b0/T),
//     ARR_ac(a0,c0) = a0 (T/300)^c0, k3rd_jpl(cair,k0,n,kinf,m,fc), k3rd_iupac(cair,...),
//     k_3rd_iupac(temp,cair,...) (MECCA form).
//   WRF-Chem chem/KPP/kpp/kpp-2.1/util/WRF_conform/WRFUserRateLaws.f90:
//     ARR2(a0,b0,temp) = a0 exp(-b0/temp) (three arguments: note the sign differs from KPP's
//     two-argument ARR2), TROE(k0_300K,n,kinf_300K,m,temp,cair) with Fc = 0.6,
//     ARR(a0,b0,c0,temp) (four arguments, the temperature passed explicitly).
//   GEOS-Chem KPP/fullchem rateLawUtilFuncs.F90 (K300_OVER_TEMP = 300/TEMP):
//     GCARR_ab(a0,b0) = a0 (300/T)^b0, GCARR_ac(a0,c0) = a0 exp(c0/T),
//     GCARR_abc(a0,b0,c0) = a0 exp(c0/T) (300/T)^b0.
// KPP 2.x passes the literal arguments as single precision (REAL); esi keeps them double, as
// KPP 3.x's _dp overloads do.
#include <cmath>
#include <functional>
#include <map>

#include "kpp/kpp_internal.hpp"

namespace esi::kpp::detail {
namespace {

using json = nlohmann::json;

/// Nesting of parentheses, unary signs and powers a rate may have; real rates nest < 10.
constexpr int kMaxNesting = 64;
/// Deepest translated expression (JSON objects + arrays); the document reader allows 512.
constexpr int kMaxExpressionDepth = 200;

json op(const char* name, std::vector<json> args) {
  return json{{"op", name}, {"args", std::move(args)}};
}
bool is_zero(const json& e) { return e.is_number() && e.get<double>() == 0.0; }
json neg(json x) {
  if (x.is_number()) return json(-x.get<double>());
  return op("-", {std::move(x)});
}
json mul(std::vector<json> f) { return op("*", std::move(f)); }
json divide(json a, json b) { return op("/", {std::move(a), std::move(b)}); }
json add(std::vector<json> t) { return op("+", std::move(t)); }
json power(json a, json b) { return op("^", {std::move(a), std::move(b)}); }
json exp_of(json x) { return op("exp", {std::move(x)}); }
json log10_of(json x) { return op("log10", {std::move(x)}); }

/// exp(-b/T): left out when b is literally 0 (exp(-0/T) is exactly 1).
void push_arrhenius(std::vector<json>& factors, const json& b, const json& temp, bool negate = true) {
  if (is_zero(b)) return;
  factors.push_back(exp_of(divide(negate ? neg(b) : b, temp)));
}
/// (T/300)^c: left out when c is literally 0 (x^0 is exactly 1).
void push_t300(std::vector<json>& factors, const json& c, const json& temp) {
  if (is_zero(c)) return;
  factors.push_back(power(divide(temp, json(300.0)), c));
}
json product_or_single(std::vector<json> f) {
  if (f.size() == 1) return std::move(f.front());
  return mul(std::move(f));
}

/// a exp(-b/T) (T/300)^c
json arrhenius(const json& a, const json& b, const json& c, const json& temp) {
  std::vector<json> f{a};
  push_arrhenius(f, b, temp);
  push_t300(f, c, temp);
  return product_or_single(std::move(f));
}

/// Lindemann-Hinshelwood with the Troe broadening, JPL form (KPP's k_3rd, WRF's TROE):
///   k0T = k0 (z)^n cair, kinfT = kinf (z)^m, r = k0T/kinfT, z = t_ref/temp,
///   k = k0T/(1+r) * fc^(1/(1 + (log10(r)/nu)^2)), nu = 1 unless the IUPAC form.
json falloff(const json& temp, const json& cair, const json& k0, const json& n, const json& kinf,
             const json& m, const json& fc, bool iupac, double t_ref) {
  const json z = divide(json(t_ref), temp);
  const json k0T = mul({k0, power(z, n), cair});
  const json kinfT = mul({kinf, power(z, m)});
  const json ratio = divide(k0T, kinfT);
  json lg = log10_of(ratio);
  if (iupac) {
    // nu = 0.75 - 1.27 log10(fc)
    const json nu = op("-", {json(0.75), mul({json(1.27), log10_of(fc)})});
    lg = divide(lg, nu);
  }
  const json broadening =
      power(fc, divide(json(1.0), add({json(1.0), power(lg, json(2.0))})));
  return mul({divide(k0T, add({json(1.0), ratio})), broadening});
}

class RateParser {
 public:
  RateParser(const Source& src, const std::vector<Token>& toks, std::size_t first,
             std::size_t last, const RateNames* names)
      : src_(src), toks_(toks), i_(first), last_(last), names_(names) {}

  json parse_all() {
    if (i_ >= last_) fail_here("kpp_parse_error", "the rate is empty");
    json e = sum();
    if (i_ < last_)
      fail_at(toks_[i_].pos, "kpp_parse_error",
              "unexpected '" + toks_[i_].text + "' in the rate expression");
    return e;
  }

 private:
  const Source& src_;
  const std::vector<Token>& toks_;
  std::size_t i_, last_;
  const RateNames* names_;  ///< null: a constant expression (no names allowed)
  int nesting_ = 0;

  [[noreturn]] void fail_at(std::size_t pos, const std::string& code, const std::string& msg) {
    src_.fail(pos, code, msg);
  }
  [[noreturn]] void fail_here(const std::string& code, const std::string& msg) {
    const std::size_t pos = i_ < last_ ? toks_[i_].pos
                            : last_ > 0 && last_ <= toks_.size() ? toks_[last_ - 1].pos
                                                                 : 0;
    fail_at(pos, code, msg);
  }
  bool at_punct(const char* p) const {
    return i_ < last_ && toks_[i_].kind == Tok::Punct && toks_[i_].text == p;
  }
  void expect(const char* p, const char* what) {
    if (!at_punct(p)) fail_here("kpp_parse_error", std::string("expected ") + what + " in the rate");
    ++i_;
  }
  struct Guard {
    RateParser& p;
    explicit Guard(RateParser& parser) : p(parser) {
      if (++p.nesting_ > kMaxNesting)
        p.fail_here("kpp_parse_error", "the rate nests deeper than " +
                                           std::to_string(kMaxNesting) + " levels");
    }
    ~Guard() { --p.nesting_; }
  };

  json sum() {
    std::vector<json> terms{product()};
    bool any_minus = false;
    while (at_punct("+") || at_punct("-")) {
      const bool minus = toks_[i_].text == "-";
      ++i_;
      json t = product();
      if (minus) {
        any_minus = true;
        t = neg(std::move(t));
      }
      terms.push_back(std::move(t));
    }
    if (terms.size() == 1) return std::move(terms.front());
    // a - b as a binary minus reads better than +(a, -(b)); same value.
    if (terms.size() == 2 && any_minus && !terms[1].is_number()) {
      json b = terms[1]["args"][0];
      return op("-", {std::move(terms[0]), std::move(b)});
    }
    return add(std::move(terms));
  }

  json product() {
    json acc = unary();
    bool acc_is_chain = false;  // acc is a '*' node this loop built (so appending is exact)
    int wraps = 0;              // each '/' (and '*' after it) nests acc one level deeper
    while (at_punct("*") || at_punct("/")) {
      const bool times = toks_[i_].text == "*";
      ++i_;
      json rhs = unary();
      if (times && acc_is_chain) {
        acc["args"].push_back(std::move(rhs));
        continue;
      }
      if (++wraps > kMaxNesting)
        fail_here("kpp_parse_error", "the rate alternates '*' and '/' more than " +
                                         std::to_string(kMaxNesting) + " times");
      if (times) {
        acc = mul({std::move(acc), std::move(rhs)});
        acc_is_chain = true;
      } else {
        acc = divide(std::move(acc), std::move(rhs));
        acc_is_chain = false;
      }
    }
    return acc;
  }

  json unary() {
    Guard g(*this);
    if (at_punct("+")) {
      ++i_;
      return unary();
    }
    if (at_punct("-")) {
      ++i_;
      return neg(unary());
    }
    return pow_expr();
  }

  json pow_expr() {
    json base = primary();
    if (at_punct("**") || at_punct("^")) {
      ++i_;
      Guard g(*this);
      json exponent = unary();
      return power(std::move(base), std::move(exponent));
    }
    return base;
  }

  json primary() {
    if (i_ >= last_) fail_here("kpp_parse_error", "the rate ends where a value was expected");
    const Token& t = toks_[i_];
    if (t.kind == Tok::Number) {
      ++i_;
      return json(t.number);
    }
    if (at_punct("(")) {
      Guard g(*this);
      ++i_;
      json e = sum();
      expect(")", "')'");
      return e;
    }
    if (t.kind == Tok::Ident) {
      ++i_;
      if (at_punct("(")) {
        Guard g(*this);
        ++i_;
        std::vector<json> args;
        if (!at_punct(")")) {
          args.push_back(sum());
          while (at_punct(",")) {
            ++i_;
            args.push_back(sum());
          }
        }
        expect(")", "')' closing the argument list");
        return call(t, std::move(args));
      }
      return symbol(t);
    }
    fail_at(t.pos, "kpp_parse_error", "unexpected '" + t.text + "' in the rate expression");
  }

  json symbol(const Token& t) {
    if (!names_)
      fail_at(t.pos, "kpp_parse_error",
              "'" + t.text + "' in an initial value: #INITVALUES takes numbers and arithmetic only");
    if (names_->extra.count(t.text)) {
      names_->used_extra.insert(t.text);
      return json(t.text);
    }
    const std::string u = upper(t.text);
    if (u == "TEMP") return temperature();
    if (u == "CFACTOR") return cfactor();
    if (u == "M" || u == "C_M" || u == "CAIR") return air();
    fail_at(t.pos, "kpp_unsupported_rate",
            "'" + t.text + "' is not a name esi can translate: a rate may use numbers, TEMP, "
            "CFACTOR, M (C_M, CAIR) and KPP's standard rate functions; a name defined by "
            "#INLINE code or the driver can be given a value with --param " + t.text + "=VALUE");
  }

  json temperature() {
    if (!names_) return json("TEMP");
    names_->used_temperature = true;
    return json(names_->temperature);
  }
  json cfactor() {
    if (!names_) return json("CFACTOR");
    names_->used_cfactor = true;
    return json(names_->cfactor);
  }
  json air() {
    if (!names_) return json("M");
    names_->used_air_density = true;
    return json(names_->air_density);
  }

  void arity(const Token& t, const std::vector<json>& args, std::size_t n, const char* params) {
    if (args.size() != n)
      fail_at(t.pos, "kpp_unsupported_rate",
              t.text + " takes " + std::to_string(n) + " argument" + (n == 1 ? "" : "s") + " (" +
                  params + "), got " + std::to_string(args.size()));
  }

  json call(const Token& t, std::vector<json> a) {
    const std::string f = upper(t.text);
    // Fortran intrinsics.
    if (f == "EXP" || f == "SQRT" || f == "ABS" || f == "LOG10" || f == "ALOG10" ||
        f == "LOG" || f == "ALOG") {
      arity(t, a, 1, "x");
      const char* name = f == "EXP" ? "exp" : f == "SQRT" ? "sqrt" : f == "ABS" ? "abs"
                         : (f == "LOG10" || f == "ALOG10") ? "log10" : "log";
      return op(name, std::move(a));
    }
    if (f == "MIN" || f == "MAX") {
      if (a.size() < 2)
        fail_at(t.pos, "kpp_unsupported_rate", t.text + " takes at least 2 arguments");
      return op(f == "MIN" ? "min" : "max", std::move(a));
    }
    if (f == "DBLE" || f == "REAL" || f == "FLOAT") {  // precision casts: the value itself
      arity(t, a, 1, "x");
      return std::move(a[0]);
    }
    // KPP's standard rate laws (sources in the file comment).
    if (f == "ARR" || f == "ARR_ABC") {
      if (f == "ARR" && a.size() == 4) return arrhenius(a[0], a[1], a[2], a[3]);  // WRF form
      arity(t, a, 3, "a0, b0, c0");
      return arrhenius(a[0], a[1], a[2], temperature());
    }
    if (f == "ARR2") {
      if (a.size() == 3) return arrhenius(a[0], a[1], json(0.0), a[2]);  // WRF: exp(-b0/temp)
      arity(t, a, 2, "a0, b0");
      std::vector<json> fs{a[0]};
      push_arrhenius(fs, a[1], temperature(), /*negate=*/false);  // KPP: exp(+b0/T)
      return product_or_single(std::move(fs));
    }
    if (f == "ARR_AB") {
      arity(t, a, 2, "a0, b0");
      return arrhenius(a[0], a[1], json(0.0), temperature());
    }
    if (f == "ARR_AC") {
      arity(t, a, 2, "a0, c0");
      return arrhenius(a[0], json(0.0), a[1], temperature());
    }
    if (f == "GCARR_AB" || f == "GCARR_AC" || f == "GCARR_ABC") {
      const bool has_b = f != "GCARR_AC", has_c = f != "GCARR_AB";
      arity(t, a, f == "GCARR_ABC" ? 3 : 2, f == "GCARR_AB" ? "a0, b0" : f == "GCARR_AC" ? "a0, c0" : "a0, b0, c0");
      const json T = temperature();
      std::vector<json> fs{a[0]};
      if (has_c) push_arrhenius(fs, a[has_b ? 2 : 1], T, /*negate=*/false);
      if (has_b && !is_zero(a[1])) fs.push_back(power(divide(json(300.0), T), a[1]));
      return product_or_single(std::move(fs));
    }
    if (f == "EP2") {
      // k0 = a0 exp(-c0/T); k2 = a2 exp(-c2/T); k3 = a3 exp(-c3/T) CFACTOR 1e6;
      // k = k0 + k3 / (1 + k3/k2)
      arity(t, a, 6, "a0, c0, a2, c2, a3, c3");
      const json T = temperature();
      const json k0 = arrhenius(a[0], a[1], json(0.0), T);
      const json k2 = arrhenius(a[2], a[3], json(0.0), T);
      const json k3 = mul({arrhenius(a[4], a[5], json(0.0), T), cfactor(), json(1.0e6)});
      return add({k0, divide(k3, add({json(1.0), divide(k3, k2)}))});
    }
    if (f == "EP3") {
      // k = a1 exp(-c1/T) + a2 exp(-c2/T) (1e6 CFACTOR)
      arity(t, a, 4, "a1, c1, a2, c2");
      const json T = temperature();
      return add({arrhenius(a[0], a[1], json(0.0), T),
                  mul({arrhenius(a[2], a[3], json(0.0), T), mul({json(1.0e6), cfactor()})})});
    }
    if (f == "FALL") {
      // k0 = a0 exp(-b0/T)(T/300)^c0 CFACTOR 1e6; k1 = a1 exp(-b1/T)(T/300)^c1; r = k0/k1;
      // k = k0/(1+r) cf^(1/(1+log10(r)^2))
      arity(t, a, 7, "a0, b0, c0, a1, b1, c1, cf");
      const json T = temperature();
      const json k0 = mul({arrhenius(a[0], a[1], a[2], T), cfactor(), json(1.0e6)});
      const json k1 = arrhenius(a[3], a[4], a[5], T);
      const json r = divide(k0, k1);
      const json broadening = power(
          a[6], divide(json(1.0), add({json(1.0), power(log10_of(r), json(2.0))})));
      return mul({divide(k0, add({json(1.0), r})), broadening});
    }
    if (f == "TROE") {
      arity(t, a, 6, "k0_300K, n, kinf_300K, m, temp, cair");
      return falloff(a[4], a[5], a[0], a[1], a[2], a[3], json(0.6), false, 300.0);
    }
    if (f == "K_3RD" || f == "K_3RD_IUPAC") {
      arity(t, a, 7, "temp, cair, k0_300K, n, kinf_300K, m, fc");
      return falloff(a[0], a[1], a[2], a[3], a[4], a[5], a[6], f == "K_3RD_IUPAC", 300.0);
    }
    if (f == "K3RD_JPL" || f == "K3RD_IUPAC") {
      arity(t, a, 6, "cair, k0_300K, n, kinf_300K, m, fc");
      return falloff(temperature(), a[0], a[1], a[2], a[3], a[4], a[5], f == "K3RD_IUPAC",
                     300.0);
    }
    if (f == "K_ARR") {
      // k_298 exp(tdep (1/temp - 3.3540e-3)), 3.3540e-3 = 1/298.15 as KPP rounds it
      arity(t, a, 3, "k_298, tdep, temp");
      return mul({a[0], exp_of(mul({a[1], op("-", {divide(json(1.0), a[2]), json(3.3540e-3)})}))});
    }
    fail_at(t.pos, "kpp_unsupported_rate",
            "the function '" + t.text + "' is not one esi can translate (known: ARR, ARR2, "
            "ARR_ab, ARR_ac, ARR_abc, GCARR_ab, GCARR_ac, GCARR_abc, EP2, EP3, FALL, TROE, k_3rd, k_3rd_iupac, k3rd_jpl, "
            "k3rd_iupac, k_arr, EXP, LOG, LOG10, SQRT, ABS, MIN, MAX); a rate law defined in "
            "#INLINE code has to be written out in the equation");
  }
};

int depth_of(const json& e) {
  if (e.is_object()) {
    int d = 0;
    for (const auto& [k, v] : e.items()) d = std::max(d, depth_of(v));
    return d + 1;
  }
  if (e.is_array()) {
    int d = 0;
    for (const auto& v : e) d = std::max(d, depth_of(v));
    return d + 1;
  }
  return 0;
}

double evaluate(const Source& src, std::size_t pos, const json& e) {
  if (e.is_number()) return e.get<double>();
  if (!e.is_object())
    src.fail(pos, "kpp_parse_error",
             "an initial value must be a constant (numbers and arithmetic)");
  const std::string o = e["op"];
  std::vector<double> v;
  for (const auto& a : e["args"]) v.push_back(evaluate(src, pos, a));
  if (o == "+") { double s = 0; for (double x : v) s += x; return s; }
  if (o == "*") { double s = 1; for (double x : v) s *= x; return s; }
  if (o == "-") return v.size() == 1 ? -v[0] : v[0] - v[1];
  if (o == "/") return v[0] / v[1];
  if (o == "^") return std::pow(v[0], v[1]);
  if (o == "exp") return std::exp(v[0]);
  if (o == "log") return std::log(v[0]);
  if (o == "log10") return std::log10(v[0]);
  if (o == "sqrt") return std::sqrt(v[0]);
  if (o == "abs") return std::fabs(v[0]);
  if (o == "min" || o == "max") {
    double r = v[0];
    for (double x : v) r = o == "min" ? std::min(r, x) : std::max(r, x);
    return r;
  }
  src.fail(pos, "kpp_parse_error", "an initial value must be a constant (numbers and arithmetic)");
}

}  // namespace

json translate_rate(const Source& src, const std::vector<Token>& tokens, std::size_t first,
                    std::size_t last, const RateNames& names) {
  RateParser p(src, tokens, first, last, &names);
  json e = p.parse_all();
  if (depth_of(e) > kMaxExpressionDepth)
    src.fail(tokens[first].pos, "kpp_unsupported_rate",
             "the rate expression nests too deep once KPP's rate functions are expanded");
  return e;
}

double constant_value(const Source& src, const std::vector<Token>& tokens, std::size_t first,
                      std::size_t last) {
  RateParser p(src, tokens, first, last, nullptr);
  const json e = p.parse_all();
  const std::size_t pos = first < tokens.size() ? tokens[first].pos : 0;
  const double v = evaluate(src, pos, e);
  if (!std::isfinite(v)) src.fail(pos, "kpp_parse_error", "the initial value is not finite");
  return v;
}

}  // namespace esi::kpp::detail
