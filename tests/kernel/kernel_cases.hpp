// Shared helpers for kernel tests: systems from inline documents, seeded states, ulp distance,
// and a one-call wrapper that runs a program over column-major-by-lane arrays.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "esi/esm/flatten.hpp"
#include "esi/kernel/program.hpp"
#include "support/temp_dir.hpp"

namespace esi::testing {

inline esm::System system_from(const std::string& body) {
  TempDir dir;
  const auto file = dir.write(
      "m.esm", R"({"esm": "1.0.0", "metadata": {"name": "t", "authors": ["t"]}, )" + body + "}");
  return esm::flatten(esm::load_resolved(file));
}

/// Distance in units in the last place between two doubles (0 when bitwise equal, huge when
/// one is NaN and the other is not; two NaNs count as equal).
inline std::uint64_t ulp_distance(double a, double b) {
  if (std::isnan(a) && std::isnan(b)) return 0;
  if (std::isnan(a) || std::isnan(b)) return UINT64_MAX;
  std::int64_t ia, ib;
  std::memcpy(&ia, &a, 8);
  std::memcpy(&ib, &b, 8);
  if (ia < 0) ia = INT64_MIN - ia;  // map to a monotone integer line
  if (ib < 0) ib = INT64_MIN - ib;
  return ia > ib ? static_cast<std::uint64_t>(ia) - static_cast<std::uint64_t>(ib)
                 : static_cast<std::uint64_t>(ib) - static_cast<std::uint64_t>(ia);
}

/// Defaults (1.0 when absent) scaled by factors drawn from [0.5, 2].
template <class Variables>  // std::vector<esm::FlatVariable> or esm::StateList
std::vector<double> perturbed(const Variables& vars, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> f(0.5, 2.0);
  std::vector<double> out;
  for (const auto& v : vars) out.push_back(v.default_value.value_or(1.0) * f(rng));
  return out;
}

/// Every .esm under `corpus` except the format's invalid fixtures, sorted (the same order on
/// every machine).
inline std::vector<std::filesystem::path> corpus_documents(const std::filesystem::path& corpus) {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(corpus))
    if (e.path().extension() == ".esm" &&
        e.path().string().find("EarthSciAST-tests/invalid") == std::string::npos)
      files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

template <class Variables>  // std::vector<esm::FlatVariable> or esm::StateList
std::vector<double> defaults(const Variables& vars) {
  std::vector<double> out;
  for (const auto& v : vars) out.push_back(v.default_value.value_or(1.0));
  return out;
}

/// Runs a Whole-target program over `lanes` instances; u_soa[s * lanes + l], du likewise.
template <class T>
std::vector<T> run_whole(const kernel::Program& prog, kernel::Workspace& ws,
                         const std::vector<T>& u_soa, std::size_t lanes, std::vector<double> t,
                         std::span<const kernel::ForcingField<T>> forcing = {}) {
  std::vector<T> du(prog.output_count() * lanes, T(-12345));
  kernel::RunArgs<T> a;
  a.u = {u_soa.data(), prog.state_count(), lanes, lanes};
  a.t = t;
  a.forcing = forcing;
  a.du = {du.data(), prog.output_count(), lanes, lanes};
  kernel::run(prog, ws, a);
  return du;
}

// ---- building documents in JSON ----

using nlohmann::json;

inline json op(const std::string& o, std::vector<json> args) { return {{"op", o}, {"args", args}}; }
inline json fn(const std::string& name, std::vector<json> args) {
  return {{"op", "fn"}, {"name", name}, {"args", args}};
}
inline json cst(json v) { return {{"op", "const"}, {"args", json::array()}, {"value", v}}; }
inline json ddt(const std::string& x) { return {{"op", "D"}, {"args", json::array({x})}, {"wrt", "t"}}; }
inline json eq(json lhs, json rhs) { return {{"lhs", lhs}, {"rhs", rhs}}; }

inline json sum(std::vector<json> terms) { return op("+", std::move(terms)); }

/// A system from a whole document object (without the esm/metadata header).
inline esm::System system_from_json(const json& doc) {
  const std::string s = doc.dump();
  return system_from(s.substr(1, s.size() - 2));
}

/// A model exercising every scalar operator and closed function the tape supports.
inline std::string all_ops_model() {
  json vars = {{"x", {{"type", "unknown"}, {"default", 0.7}}},
               {"y", {{"type", "unknown"}, {"default", 0.4}}},
               {"z", {{"type", "unknown"}, {"default", 1.3}}},
               {"w", {{"type", "unknown"}, {"default", 2.0}}},
               {"k", {{"type", "parameter"}, {"default", 2.5}}},
               {"T", {{"type", "parameter"}, {"default", 290.0}}},
               {"F", {{"type", "parameter"}, {"default", 1.5}}},
               {"tutc", {{"type", "parameter"}, {"default", 1.7e9}}},
               {"a", {{"type", "unknown"}}}, {"b", {{"type", "unknown"}}}, {"c", {{"type", "unknown"}}}};
  json eqs = json::array();
  eqs.push_back(eq("a", op("*", {"k", op("exp", {op("/", {op("neg", {"T"}), 300})})})));
  eqs.push_back(eq("b", op("-", {sum({op("*", {"x", "y"}), op("sin", {"z"})}), op("cos", {op("*", {"a", "z"})})})));
  eqs.push_back(eq("c", sum({op("ifelse", {op(">", {"x", "y"}), op("sqrt", {"x"}), op("log", {"y"})}),
                             op("min", {"x", "y", "z"}), op("max", {"x", 0.5})})));
  eqs.push_back(eq(ddt("x"), sum({op("*", {op("neg", {"a"}), "x"}), op("*", {"b", "F"})})));
  eqs.push_back(eq(ddt("y"),
      sum({fn("interp.linear", {cst({1, 3, 2, 5}), cst({0, 0.5, 1, 2}), "y"}),
           fn("interp.bilinear", {cst({{1, 2, 3}, {4, 5, 7}}), cst({0, 1}), cst({0, 1, 2}), "x", "z"}),
           fn("interp.searchsorted", {"z", cst({0.5, 1, 1, 1.5, 2})}),
           fn("datetime.hour", {"t"}), op("*", {fn("datetime.julian_day", {"tutc"}), 1e-6}),
           fn("datetime.day_of_year", {"t"})})));
  eqs.push_back(eq(ddt("z"),
      sum({op("*", {"c", op("tanh", {"z"})}), op("atan2", {"x", "y"}), op("floor", {op("*", {"x", 3})}),
           op("ceil", {"y"}), op("sign", {op("-", {"x", "y"})}),
           op("and", {op(">", {"x", "y"}), op(">", {"z", 1})}), op("or", {op("<", {"x", "y"}), op("<", {"z", 1})}),
           op("not", {op(">", {"x", "y"})}), op(">=", {"x", "y"}), op("<=", {"x", "y"}), op("==", {"x", "x"}),
           op("!=", {"x", "y"}), op("log10", {"z"}), op("sinh", {op("/", {"x", 10})}),
           op("cosh", {op("/", {"y", 10})}), op("asinh", {"z"}), op("acosh", {sum({1, "z"})}),
           op("atanh", {op("/", {"z", sum({1, "z"})})}), op("asin", {op("/", {"x", sum({1, "x"})})}),
           op("acos", {op("/", {"y", sum({1, "y"})})}), op("atan", {"x"}), op("tan", {op("/", {"x", 10})}),
           op("abs", {op("-", {"x", "y"})}), op("exp", {op("neg", {"z"})})})));
  eqs.push_back(eq(ddt("w"), op("-", {op("/", {op("^", {"x", "y"}), sum({1, "z"})}), op("-", {"y"})})));
  json doc = {{"models", {{"M", {{"variables", vars}, {"equations", eqs}}}}}};
  const std::string s = doc.dump();
  return s.substr(1, s.size() - 2);  // the body without braces
}

}  // namespace esi::testing
