// Internal to the dimensional check (units_check.cpp: expressions, equations, declarations,
// systems; units_check_links.cpp: reactions, events, coupling). The rules are documented at the
// top of units_check.cpp.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "esi/esm/units.hpp"

namespace esi::esm::units_detail {

using json = nlohmann::json;

/// KNOWN dimension, LITERAL (a number, or arithmetic over numbers only) or UNKNOWN
/// (undeterminable: the enclosing check is skipped, §4.8.4).
enum class Kind { Known, Literal, Unknown };
struct Q {
  Kind kind = Kind::Unknown;
  Dimension dim;
};
inline Q known(const Dimension& d) {
  return Q{Kind::Known, d};
}
inline Q literal() {
  return Q{Kind::Literal, {}};
}
inline Q unknown() {
  return Q{Kind::Unknown, {}};
}

inline constexpr std::size_t kTimeAxis = 2;
inline constexpr std::size_t kAngleAxis = 7;
inline const Dimension kAngle = axis_dimension(kAngleAxis);
inline const Dimension kTemperature = axis_dimension(4);

/// Dimension comparisons with the angle axis soft (see units_check.cpp).
bool same(const Dimension& a, const Dimension& b);
bool is_dimensionless(const Dimension& d);
/// True when d is a pure (rational) power of time, including time^0.
bool is_time_power(const Dimension& d);
/// Best exact rational p/q (q <= 1000) for a literal exponent or stoichiometry.
bool to_rational(double v, std::int64_t& p, std::int64_t& q);
/// Value of an expression built only from numbers and + - * / (at most 32 deep), else nullopt.
std::optional<double> literal_value(const json& e, int depth = 0);
/// A component still given as {"ref": ...} (or not an object): skipped.
bool is_ref(const json& sys);

/// A violation found while evaluating an expression: the pointer of the offending node.
struct InnerFinding {
  std::string pointer;
  std::string message;
};

class Checker {
 public:
  Checker(const json& doc, const std::string& file) : doc_(doc), file_(file) {
    if (doc.is_object() && doc.contains("domain") && doc["domain"].is_object()) {
      const json& d = doc["domain"];
      if (d.contains("independent_variable") && d["independent_variable"].is_string())
        indep_ = d["independent_variable"].get<std::string>();
    }
  }

  std::vector<Diagnostic> run();

 private:
  static inline const json kNoSystem = json::object();

  void report(const std::string& code, const std::string& ptr, const std::string& msg);
  const std::optional<Unit>& unit_of(const std::string& text);

  // ---- name resolution ----------------------------------------------------------------
  static const json* local_decl(const json& sys, const std::string& name);
  static std::string local_decl_pointer(const json& sys, const std::string& sys_ptr,
                                        const std::string& name);
  static std::vector<std::string> split_path(const std::string& name);
  static const json* descend(const json* sys, const std::vector<std::string>& segs, std::size_t n);
  static const json* walk_path(const json* sys, const std::vector<std::string>& segs);
  const json* find_system(const std::string& path) const;
  const json* resolve(const std::string& name) const;
  const Unit* declared_unit(const json* d);
  Q symbol(const std::string& name);
  std::string described(const std::string& name);

  // ---- expression evaluation ----------------------------------------------------------
  std::string node_pointer() const;
  Q fail(const std::string& msg);
  Q evaluate(const json& e, const std::string& ptr);
  Q arg(const json& args, std::size_t i);
  Q commensurate(const json& args, std::size_t from, const std::string& op);
  Q require_dimensionless(const json& args, const std::string& op, const Dimension& result);
  Q eval(const json& e);
  Q eval_node(const json& e);
  bool is_time_derivative(const json& d) const;
  Q declared_time();
  std::optional<std::string> tendency_mismatch(const Dimension& state, const Dimension& rate);
  void report_inner();

  // ---- declarations -------------------------------------------------------------------
  void check_declarations(const json& sys, const std::string& ptr);
  void check_default_units(const json& decl, const std::optional<Unit>& declared,
                           const std::string& decl_ptr);
  void check_conversion_factor(const json& lhs, const json& rhs, const std::string& where);
  static std::string number(double v);

  // ---- equations ----------------------------------------------------------------------
  void check_equation(const json& eq, const std::string& sys_ptr, const std::string& eq_ptr);

  // ---- reactions (§7.4) ---------------------------------------------------------------
  struct Participant {
    std::string species;
    double stoichiometry = 1;
  };
  static std::optional<std::vector<Participant>> participants(const json& rx, const char* key);
  void check_reaction(const json& rx, const std::string& sys_ptr, const std::string& ptr);

  // ---- events (§5) -------------------------------------------------------------------
  void check_affects(const json& list, const std::string& ptr);
  void check_event(const json& ev, const std::string& ptr);

  // ---- coupling (§10) -----------------------------------------------------------------
  void collect_states(const json& sys, const std::string& prefix,
                      std::map<std::string, const json*>& out);
  void check_compose(const json& entry, const std::string& ptr);
  void check_connector(const json& entry, const std::string& ptr);
  void check_variable_map(const json& entry, const std::string& ptr);
  void check_coupling(const json& entry, const std::string& ptr);

  // ---- systems ------------------------------------------------------------------------
  void walk_system(const json& sys, const std::string& ptr);

  const json& doc_;
  std::string file_;
  std::string indep_ = "t";
  std::vector<Diagnostic> out_;
  std::unordered_map<std::string, std::optional<Unit>> cache_;
  const json* sys_ = &kNoSystem;
  std::string base_;
  std::vector<std::size_t> path_;
  std::vector<InnerFinding> inner_;
  std::set<std::string> reported_species_;
  int depth_ = 0;
};

}  // namespace esi::esm::units_detail
