// Metaparameter expressions folded with exact 64-bit arithmetic (metaparams.hpp).
#include "esm/load/metaparams.hpp"

#include <limits>

#include "esi/core/error.hpp"

namespace esi::esm::detail {

using nlohmann::json;

std::int64_t fold_metaparameter(const json& e, const std::map<std::string, std::int64_t>& env,
                                const std::string& file, const std::string& pointer) {
  auto type_error = [&](const std::string& why) -> std::int64_t {
    throw Error("metaparameter_type_error", file, pointer, why);
  };
  if (e.is_number_integer() || e.is_number_unsigned()) return e.get<std::int64_t>();
  if (e.is_number_float()) {
    const double d = e.get<double>();
    if (d == static_cast<double>(static_cast<std::int64_t>(d))) return static_cast<std::int64_t>(d);
    return type_error("a metaparameter value must be an integer, got " + e.dump());
  }
  if (e.is_string()) {
    auto it = env.find(e.get<std::string>());
    if (it == env.end())
      throw Error("metaparameter_unbound", file, pointer,
                  "metaparameter '" + e.get<std::string>() +
                      "' has no value: bind it at the import or subsystem edge, or give it a "
                      "default");
    return it->second;
  }
  if (!e.is_object() || !e.contains("op") || !e.contains("args") || !e["args"].is_array())
    return type_error("not a metaparameter expression: " + e.dump());
  const std::string op = e["args"].is_array() && e["op"].is_string() ? e["op"].get<std::string>() : "";
  std::vector<std::int64_t> v;
  for (std::size_t i = 0; i < e["args"].size(); ++i)
    v.push_back(fold_metaparameter(e["args"][i], env, file, pointer_join(pointer_join(pointer, "args"), i)));
  if (v.empty()) return type_error("metaparameter operator '" + op + "' has no operands");
  std::int64_t r = v[0];
  auto overflow = [&]() -> std::int64_t { return type_error("metaparameter arithmetic overflows 64 bits"); };
  if (op == "-" && v.size() == 1) {
    if (r == std::numeric_limits<std::int64_t>::min()) return overflow();
    return -r;
  }
  for (std::size_t i = 1; i < v.size(); ++i) {
    std::int64_t out = 0;
    if (op == "+") {
      if (__builtin_add_overflow(r, v[i], &out)) return overflow();
    } else if (op == "-") {
      if (__builtin_sub_overflow(r, v[i], &out)) return overflow();
    } else if (op == "*") {
      if (__builtin_mul_overflow(r, v[i], &out)) return overflow();
    } else if (op == "/") {
      if (v[i] == 0 || r % v[i] != 0)
        return type_error("metaparameter division " + std::to_string(r) + "/" +
                          std::to_string(v[i]) + " is not exact");
      out = r / v[i];
    } else {
      return type_error("operator '" + op + "' is not allowed in a metaparameter expression "
                        "(only + - * /)");
    }
    r = out;
  }
  return r;
}

namespace {

bool structural_key(const std::string& k) { return k == "size" || k == "ranges" || k == "regions"; }

// Keys whose string values are never metaparameter references.
bool literal_key(const std::string& k) {
  return k == "description" || k == "units" || k == "name" || k == "ref" || k == "op" ||
         k == "type" || k == "kind" || k == "wrt" || k == "dim" || k == "from" || k == "prefix" ||
         k == "manifold" || k == "reduce" || k == "semiring" || k == "output_idx" ||
         k == "params" || k == "citation" || k == "doi" || k == "url" || k == "notes" ||
         k == "id" || k == "reference" || k == "variable" || k == "shape";
}

void subst(json& node, const std::map<std::string, json>& env, bool in_expr) {
  if (node.is_string()) {
    if (!in_expr) return;
    auto it = env.find(node.get<std::string>());
    if (it != env.end()) node = it->second;
    return;
  }
  if (node.is_array()) {
    for (auto& x : node) subst(x, env, in_expr);
    return;
  }
  if (!node.is_object()) return;
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string& k = it.key();
    if (literal_key(k)) continue;
    subst(*it, env, true);
  }
  (void)structural_key;
}

}  // namespace

void substitute_metaparameters(json& node, const std::map<std::string, json>& env) {
  if (env.empty()) return;
  // Object keys are never substituted; values are, except under keys naming literals.
  if (node.is_object()) {
    for (auto it = node.begin(); it != node.end(); ++it) {
      if (literal_key(it.key()) || it.key() == "metaparameters") continue;
      subst(*it, env, true);
    }
  } else {
    subst(node, env, true);
  }
}

}  // namespace esi::esm::detail
