// The array tests' fixture: a document written to a temporary folder, loaded and flattened,
// with the oracle's right-hand side and observeds at states given by name.
#pragma once

#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "esi/core/error.hpp"
#include "esi/esm/flatten.hpp"
#include "esi/kernel/oracle.hpp"
#include "support/temp_dir.hpp"

namespace esi::testing {

/// A one-model document "M" with these index sets, variables and equations (JSON text), and
/// `extra` members of the model (e.g. "\"discrete_events\": [...]").
inline std::string array_doc(const std::string& index_sets, const std::string& variables,
                             const std::string& equations, const std::string& extra = "") {
  return R"({"esm": "1.0.0", "metadata": {"name": "t"}, "index_sets": )" + index_sets +
         R"(, "models": {"M": {"variables": )" + variables + R"(, "equations": )" + equations +
         (extra.empty() ? "" : ", " + extra) + "}}}";
}

struct FlatDoc {
  TempDir dir;
  esm::ResolvedDocument doc;
  esm::System sys;
  explicit FlatDoc(const std::string& text, const esm::FlattenOptions& fo = {}) {
    doc = esm::load_resolved(dir.write("m.esm", text));
    sys = esm::flatten(doc, fo);
  }
  /// Parameters at their defaults (NaN where there is none).
  std::vector<double> params() const {
    std::vector<double> p;
    for (const auto& v : sys.parameters) p.push_back(v.default_value.value_or(NAN));
    return p;
  }
  /// du for states given by name (every state must be named).
  std::map<std::string, double> rhs(const std::map<std::string, double>& u_by_name) const {
    std::vector<double> u;
    for (const auto& v : sys.states) u.push_back(u_by_name.at(v.name));
    std::vector<double> du(u.size()), p = params();
    kernel::oracle_rhs(sys, u.data(), p.data(), 0.0, du.data());
    std::map<std::string, double> out;
    for (std::size_t i = 0; i < du.size(); ++i) out[sys.states[i].name] = du[i];
    return out;
  }
  /// Every observed at t = 0, parameters at their defaults, the states named in `u_by_name` at
  /// those values and the others at `unnamed`.
  kernel::Env observed(const std::map<std::string, double>& u_by_name = {},
                       double unnamed = 0.0) const {
    std::vector<double> u;
    for (const auto& v : sys.states)
      u.push_back(u_by_name.count(v.name) ? u_by_name.at(v.name) : unnamed);
    const std::vector<double> p = params();
    return kernel::oracle_env(sys, u.data(), p.data(), 0.0);
  }
};

/// The error code and JSON pointer loading and flattening `text` stops with; ("ok", "") when
/// it does not.
inline std::pair<std::string, std::string> flatten_refusal(const std::string& text, const esm::FlattenOptions& fo = {}) {
  try {
    FlatDoc f(text, fo);
  } catch (const Error& e) {
    return {e.code(), e.diagnostic().pointer};
  }
  return {"ok", ""};
}

}  // namespace esi::testing
