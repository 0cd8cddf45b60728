// Unit registry and unit-string parser (spec §4.8.1, §4.8.2).
//
// The registry is the flat table of §4.8.1: a symbol resolves only if it is a key, exactly as
// spelled; there is no SI-prefix mechanism (prefixed units are their own entries). Counts are
// dimensionless, `C` is the coulomb, `rad` is an axis and `sr` is rad^2, `degC`/`degF` carry
// the kelvin dimension without their offset, the Dobson unit is 2.6867e20 m^-2.
//
// The parser normalises Unicode first (superscripts, middot / dot operator, micro, degree
// signs, ohm), then reads the §4.8.2 grammar with `*`, `/` and juxtaposition at one
// precedence level, left to right; exponents are integers, decimals or `(p/q)`, kept exact.
#include "esi/esm/units.hpp"

#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <unordered_map>

namespace esi::esm {

const std::array<std::string_view, kDimensionAxes> kAxisNames = {"m", "kg", "s",  "mol",
                                                                 "K", "A",  "cd", "rad"};

bool Dimension::dimensionless() const {
  for (auto n : num)
    if (n != 0) return false;
  return true;
}

namespace {

// Reduces p/q to lowest terms with q > 0; false when it does not fit an int32.
bool reduce(std::int64_t p, std::int64_t q, std::int32_t& out_p, std::int32_t& out_q) {
  if (q == 0) return false;
  if (q < 0) p = -p, q = -q;
  const std::int64_t g = std::gcd(p < 0 ? -p : p, q);
  if (g > 1) p /= g, q /= g;
  if (p == 0) q = 1;
  if (p > INT32_MAX || p < INT32_MIN || q > INT32_MAX) return false;
  out_p = static_cast<std::int32_t>(p);
  out_q = static_cast<std::int32_t>(q);
  return true;
}

}  // namespace

Dimension axis_dimension(std::size_t axis) {
  Dimension d;
  if (axis < kDimensionAxes) d.num[axis] = 1;
  return d;
}

Dimension multiply(const Dimension& a, const Dimension& b) {
  Dimension r;
  for (std::size_t i = 0; i < kDimensionAxes; ++i) {
    const std::int64_t p = std::int64_t{a.num[i]} * b.den[i] + std::int64_t{b.num[i]} * a.den[i];
    const std::int64_t q = std::int64_t{a.den[i]} * b.den[i];
    if (!reduce(p, q, r.num[i], r.den[i])) r.num[i] = 0, r.den[i] = 1;
  }
  return r;
}

Dimension divide(const Dimension& a, const Dimension& b) {
  return multiply(a, power(b, -1, 1));
}

Dimension power(const Dimension& a, std::int64_t p, std::int64_t q) {
  Dimension r;
  for (std::size_t i = 0; i < kDimensionAxes; ++i) {
    if (!reduce(std::int64_t{a.num[i]} * p, std::int64_t{a.den[i]} * q, r.num[i], r.den[i]))
      r.num[i] = 0, r.den[i] = 1;
  }
  return r;
}

std::string to_string(const Dimension& d) {
  std::string out;
  for (std::size_t i = 0; i < kDimensionAxes; ++i) {
    if (d.num[i] == 0) continue;
    if (!out.empty()) out += ' ';
    out += kAxisNames[i];
    if (d.den[i] != 1)
      out += "^(" + std::to_string(d.num[i]) + "/" + std::to_string(d.den[i]) + ")";
    else if (d.num[i] != 1)
      out += "^" + std::to_string(d.num[i]);
  }
  return out.empty() ? "1" : out;
}

namespace {

// Exponent vector over (m, kg, s, mol, K, A, cd, rad).
Unit U(double scale, int m, int kg, int s, int mol = 0, int K = 0, int A = 0, int cd = 0,
       int rad = 0) {
  Unit u;
  u.scale = scale;
  u.dim.num = {m, kg, s, mol, K, A, cd, rad};
  return u;
}

// The §4.8.1 table. Keys are exact spellings.
const std::unordered_map<std::string, Unit>& registry() {
  static const std::unordered_map<std::string, Unit> table = [] {
    std::unordered_map<std::string, Unit> t;
    const double pi = 3.14159265358979323846;
    const double lbf = 4.4482216152605;  // N, exact by definition
    const double inch = 0.0254;          // m, exact
    const double mmHg = 133.322387415;   // Pa (conventional)
    // SI base
    t["m"] = U(1, 1, 0, 0);
    t["kg"] = U(1, 0, 1, 0);
    t["s"] = U(1, 0, 0, 1);
    t["mol"] = U(1, 0, 0, 0, 1);
    t["K"] = U(1, 0, 0, 0, 0, 1);
    t["A"] = U(1, 0, 0, 0, 0, 0, 1);
    t["cd"] = U(1, 0, 0, 0, 0, 0, 0, 1);
    t["rad"] = U(1, 0, 0, 0, 0, 0, 0, 0, 1);
    // Mass
    t["g"] = U(1e-3, 0, 1, 0);
    t["mg"] = U(1e-6, 0, 1, 0);
    t["ug"] = U(1e-9, 0, 1, 0);
    t["short_ton"] = U(2000 * 0.45359237, 0, 1, 0);
    t["tonne"] = U(1000, 0, 1, 0);
    // Length
    t["dm"] = U(0.1, 1, 0, 0);
    t["cm"] = U(0.01, 1, 0, 0);
    t["mm"] = U(1e-3, 1, 0, 0);
    t["um"] = U(1e-6, 1, 0, 0);
    t["nm"] = U(1e-9, 1, 0, 0);
    t["km"] = U(1e3, 1, 0, 0);
    t["ft"] = U(0.3048, 1, 0, 0);
    // Time (yr = year = Julian year)
    t["ms"] = U(1e-3, 0, 0, 1);
    t["us"] = U(1e-6, 0, 0, 1);
    t["ns"] = U(1e-9, 0, 0, 1);
    t["min"] = U(60, 0, 0, 1);
    t["h"] = U(3600, 0, 0, 1);
    t["hr"] = U(3600, 0, 0, 1);
    t["day"] = U(86400, 0, 0, 1);
    t["yr"] = U(31557600, 0, 0, 1);
    t["year"] = U(31557600, 0, 0, 1);
    // Volume
    t["L"] = U(1e-3, 3, 0, 0);
    t["l"] = U(1e-3, 3, 0, 0);
    t["mL"] = U(1e-6, 3, 0, 0);
    // Amount
    t["kmol"] = U(1e3, 0, 0, 0, 1);
    t["mmol"] = U(1e-3, 0, 0, 0, 1);
    t["umol"] = U(1e-6, 0, 0, 0, 1);
    t["nmol"] = U(1e-9, 0, 0, 0, 1);
    t["M"] = U(1e3, -3, 0, 0, 1);  // mol/L
    // Derived
    t["Hz"] = U(1, 0, 0, -1);
    t["N"] = U(1, 1, 1, -2);
    t["Pa"] = U(1, -1, 1, -2);
    t["J"] = U(1, 2, 1, -2);
    t["kJ"] = U(1e3, 2, 1, -2);
    t["cal"] = U(4.184, 2, 1, -2);  // thermochemical calorie
    t["kcal"] = U(4184, 2, 1, -2);
    t["W"] = U(1, 2, 1, -3);
    t["kW"] = U(1e3, 2, 1, -3);
    t["MW"] = U(1e6, 2, 1, -3);
    // Pressure
    t["atm"] = U(101325, -1, 1, -2);
    t["uatm"] = U(0.101325, -1, 1, -2);
    t["bar"] = U(1e5, -1, 1, -2);
    t["hPa"] = U(100, -1, 1, -2);
    t["kPa"] = U(1e3, -1, 1, -2);
    t["mbar"] = U(100, -1, 1, -2);
    t["Torr"] = U(101325.0 / 760.0, -1, 1, -2);
    t["mmHg"] = U(mmHg, -1, 1, -2);
    t["psi"] = U(lbf / (inch * inch), -1, 1, -2);
    // Energy
    t["erg"] = U(1e-7, 2, 1, -2);
    t["BTU"] = U(1055.05585262, 2, 1, -2);  // International Table BTU
    t["Wh"] = U(3600, 2, 1, -2);
    t["kWh"] = U(3.6e6, 2, 1, -2);
    // Electromagnetic
    t["C"] = U(1, 0, 0, 1, 0, 0, 1);      // coulomb = A s
    t["V"] = U(1, 2, 1, -3, 0, 0, -1);    // W/A
    t["Ohm"] = U(1, 2, 1, -3, 0, 0, -2);  // V/A
    t["F"] = U(1, -2, -1, 4, 0, 0, 2);    // C/V
    t["T"] = U(1, 0, 1, -2, 0, 0, -1);    // tesla = kg s^-2 A^-1
    // Temperature / angle (offsets not modelled)
    t["degC"] = U(1, 0, 0, 0, 0, 1);
    t["degF"] = U(5.0 / 9.0, 0, 0, 0, 0, 1);
    t["deg"] = U(pi / 180.0, 0, 0, 0, 0, 0, 0, 0, 1);
    t["sr"] = U(1, 0, 0, 0, 0, 0, 0, 0, 2);
    // Mixing ratios, fractions, counts (dimensionless)
    t["ppm"] = t["ppmv"] = U(1e-6, 0, 0, 0);
    t["ppb"] = t["ppbv"] = U(1e-9, 0, 0, 0);
    t["ppt"] = t["pptv"] = U(1e-12, 0, 0, 0);
    t["%"] = U(0.01, 0, 0, 0);
    t["psu"] = U(1, 0, 0, 0);
    for (const char* c : {"molec", "molecule", "individuals", "vehicles", "units", "count"})
      t[c] = U(1, 0, 0, 0);
    // Column amount
    t["DU"] = t["Dobson"] = U(2.6867e20, -2, 0, 0);
    // Long-form aliases and dimensionless spellings
    t["meter"] = t["meters"] = t["m"];
    t["hour"] = t["h"];
    t["Celsius"] = t["degC"];
    t["percent"] = t["%"];
    t["degree"] = t["degrees"] = t["deg"];
    t["dimensionless"] = U(1, 0, 0, 0);
    return t;
  }();
  return table;
}

// §4.8.2 Unicode normalisation on UTF-8 bytes.
std::string normalise(std::string_view in) {
  static const char* const kSuperDigit[10] = {"\u2070", "\u00B9", "\u00B2", "\u00B3", "\u2074",
                                              "\u2075", "\u2076", "\u2077", "\u2078", "\u2079"};
  const std::string_view kSuperMinus = "\u207B";
  auto super_digit_at = [&](std::size_t i) -> int {
    for (int d = 0; d < 10; ++d)
      if (in.substr(i).starts_with(kSuperDigit[d])) return d;
    return -1;
  };
  struct Rewrite {
    std::string_view from, to;
  };
  static const Rewrite kRewrites[] = {
      {"\u00B7", "*"},     {"\u22C5", "*"},     {"\u00B5", "u"},   {"\u03BC", "u"},
      {"\u00B0C", "degC"}, {"\u00B0F", "degF"}, {"\u2126", "Ohm"}, {"\u03A9", "Ohm"},
  };
  std::string out;
  std::size_t i = 0;
  while (i < in.size()) {
    // Superscript run: optional minus, then digits -> '^' + ASCII.
    {
      std::size_t j = i;
      std::string run;
      if (in.substr(j).starts_with(kSuperMinus)) run += '-', j += kSuperMinus.size();
      int d;
      bool any = false;
      while (j < in.size() && (d = super_digit_at(j)) >= 0) {
        run += static_cast<char>('0' + d);
        j += std::string_view(kSuperDigit[d]).size();
        any = true;
      }
      if (any) {
        out += '^';
        out += run;
        i = j;
        continue;
      }
    }
    bool rewritten = false;
    for (const auto& r : kRewrites) {
      if (in.substr(i).starts_with(r.from)) {
        out += r.to;
        i += r.from.size();
        rewritten = true;
        break;
      }
    }
    if (!rewritten) out += in[i++];
  }
  return out;
}

bool is_symbol_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '%' || c == '.';
}

class Parser {
 public:
  Parser(std::string_view text, std::string_view original) : s_(text), original_(original) {}

  std::optional<Unit> parse() {
    skip_ws();
    auto u = unit();
    if (!u) return std::nullopt;
    skip_ws();
    if (pos_ != s_.size()) return fail("unexpected '" + std::string(1, s_[pos_]) + "'");
    return u;
  }
  const std::string& error() const { return error_; }

 private:
  std::optional<Unit> fail(const std::string& why) {
    if (error_.empty())
      error_ = "unit string '" + std::string(original_) + "' is not a recognised unit: " + why;
    return std::nullopt;
  }
  void skip_ws() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool at(std::string_view tok) const { return s_.substr(pos_).starts_with(tok); }

  // unit := term (('*' | '/')? term)*   — one precedence level, left to right.
  std::optional<Unit> unit() {
    auto acc = term();
    if (!acc) return std::nullopt;
    for (;;) {
      skip_ws();
      if (pos_ >= s_.size() || s_[pos_] == ')') return acc;
      bool div = false;
      if (at("**")) return fail("'**' must follow a unit");
      if (s_[pos_] == '*') {
        ++pos_;
      } else if (s_[pos_] == '/') {
        div = true;
        ++pos_;
      } else if (!(is_symbol_char(s_[pos_]) || s_[pos_] == '(')) {
        return fail("unexpected '" + std::string(1, s_[pos_]) + "'");
      }
      skip_ws();
      auto rhs = term();
      if (!rhs) return std::nullopt;
      acc->scale = div ? acc->scale / rhs->scale : acc->scale * rhs->scale;
      acc->dim = div ? divide(acc->dim, rhs->dim) : multiply(acc->dim, rhs->dim);
    }
  }

  // term := atom (('^' | '**') exponent)?
  std::optional<Unit> term() {
    auto a = atom();
    if (!a) return std::nullopt;
    skip_ws();
    if (at("**"))
      pos_ += 2;
    else if (at("^"))
      pos_ += 1;
    else
      return a;
    skip_ws();
    std::int64_t p = 0, q = 1;
    if (!exponent(p, q)) return std::nullopt;
    a->dim = power(a->dim, p, q);
    a->scale = std::pow(a->scale, static_cast<double>(p) / static_cast<double>(q));
    return a;
  }

  bool unsigned_integer(std::int64_t& v) {
    const std::size_t start = pos_;
    v = 0;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_])) &&
           pos_ - start < 9)
      v = v * 10 + (s_[pos_++] - '0');
    return pos_ != start &&
           !(pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_])));
  }

  bool signed_integer(std::int64_t& v) {
    skip_ws();
    bool neg = false;
    if (pos_ < s_.size() && (s_[pos_] == '-' || s_[pos_] == '+')) neg = s_[pos_++] == '-';
    if (!unsigned_integer(v)) return false;
    if (neg) v = -v;
    return true;
  }

  // exponent := integer | decimal | '(' integer '/' integer ')'
  bool exponent(std::int64_t& p, std::int64_t& q) {
    if (pos_ < s_.size() && s_[pos_] == '(') {
      ++pos_;
      if (!signed_integer(p)) return fail("malformed exponent"), false;
      q = 1;
      skip_ws();
      if (pos_ < s_.size() && s_[pos_] == '/') {
        ++pos_;
        if (!signed_integer(q) || q == 0) return fail("malformed rational exponent"), false;
      }
      skip_ws();
      if (pos_ >= s_.size() || s_[pos_] != ')') return fail("missing ')' in exponent"), false;
      ++pos_;
      return true;
    }
    bool neg = false;
    if (pos_ < s_.size() && (s_[pos_] == '-' || s_[pos_] == '+')) neg = s_[pos_++] == '-';
    if (!unsigned_integer(p)) return fail("malformed exponent"), false;
    q = 1;
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      const std::size_t start = pos_;
      std::int64_t frac = 0;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_])) &&
             pos_ - start < 6) {
        frac = frac * 10 + (s_[pos_++] - '0');
        q *= 10;
      }
      if (pos_ == start) return fail("malformed decimal exponent"), false;
      if (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_])))
        return fail("decimal exponent has too many digits"), false;
      p = p * q + frac;
    }
    if (neg) p = -p;
    return true;
  }

  // atom := '1' | symbol | '(' unit ')'
  std::optional<Unit> atom() {
    if (pos_ >= s_.size()) return fail("a unit is missing at the end");
    if (s_[pos_] == '(') {
      if (++depth_ > 32) return fail("parentheses nested too deeply");
      ++pos_;
      skip_ws();
      auto u = unit();
      --depth_;
      if (!u) return std::nullopt;
      skip_ws();
      if (pos_ >= s_.size() || s_[pos_] != ')') return fail("missing ')'");
      ++pos_;
      return u;
    }
    const std::size_t start = pos_;
    while (pos_ < s_.size() && is_symbol_char(s_[pos_])) ++pos_;
    const std::string sym(s_.substr(start, pos_ - start));
    if (sym.empty())
      return fail("expected a unit symbol at '" + std::string(s_.substr(start)) + "'");
    const auto& table = registry();
    if (auto it = table.find(sym); it != table.end()) return it->second;
    char* end = nullptr;
    const double v = std::strtod(sym.c_str(), &end);
    if (end && *end == '\0' &&
        (std::isdigit(static_cast<unsigned char>(sym[0])) || sym[0] == '.')) {
      if (v == 1.0) return Unit{};
      return fail("the number " + sym +
                  " is a scaling factor, and a unit string names a unit, not a quantity (only "
                  "the number 1 is allowed; a rational exponent is spelled ^(p/q))");
    }
    return fail("'" + sym +
                "' is not in the unit registry (spec §4.8.1: a flat table with no prefix "
                "mechanism; write exponents with '^', e.g. cm^3)");
  }

  std::string_view s_;
  std::string_view original_;
  std::size_t pos_ = 0;
  int depth_ = 0;
  std::string error_;
};

}  // namespace

std::optional<Unit> parse_unit(std::string_view text, std::string* error) {
  const std::string norm = normalise(text);
  std::size_t first = norm.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return Unit{};  // "" is dimensionless
  Parser parser(norm, text);
  auto u = parser.parse();
  if (!u && error) *error = parser.error();
  if (u) {
    const std::size_t last = norm.find_last_not_of(" \t\r\n");
    const std::string_view lone = std::string_view(norm).substr(first, last - first + 1);
    if (lone == "degC" || lone == "Celsius") u->offset = 273.15;
    if (lone == "degF") u->offset = 459.67 * 5.0 / 9.0;
  }
  return u;
}

}  // namespace esi::esm
