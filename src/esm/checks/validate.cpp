// The checking pipeline behind every command: parse, schema, resolve, structure, units. Each
// layer runs only when the previous one passed, as in the format's conformance suite (a
// schema-invalid file never reaches the structural checks). `validate_file` adds a trial
// flatten, so `esi validate` reports what `simulate` would refuse; only a missing capability
// of this engine (`unsupported_*`) leaves a document valid.
#include <algorithm>
#include <map>
#include <set>

#include "esi/core/json.hpp"
#include "esi/esm/flatten.hpp"
#include "esi/esm/distribution.hpp"
#include "esi/esm/wiener.hpp"
#include "esi/esm/load.hpp"
#include "esi/esm/schema.hpp"
#include "esi/esm/structural.hpp"
#include "esi/esm/units.hpp"

namespace esi::esm {
namespace {

using nlohmann::json;

std::string head_segment(const std::string& s) { return s.substr(0, s.find('.')); }

/// A coupling library (§10.9) is checked on its own terms: its edges name roles, not
/// components, so the ordinary coupling checks run only after a `coupling_import` binds it.
std::vector<Diagnostic> check_coupling_library(const json& doc, const std::string& file) {
  std::vector<Diagnostic> out;
  const json roles = doc.value("coupling_roles", json::object());
  std::set<std::string> used;
  const json edges = doc.value("coupling", json::array());
  for (std::size_t i = 0; i < edges.size(); ++i) {
    const std::string ptr = pointer_join("/coupling", i);
    std::vector<std::pair<std::string, std::string>> refs;  // (reference, pointer)
    const json& e = edges[i];
    for (const char* k : {"from", "to"})
      if (e.contains(k) && e[k].is_string()) refs.emplace_back(e[k].get<std::string>(), pointer_join(ptr, k));
    if (e.contains("systems") && e["systems"].is_array())
      for (std::size_t j = 0; j < e["systems"].size(); ++j)
        if (e["systems"][j].is_string())
          refs.emplace_back(e["systems"][j].get<std::string>(), pointer_join(pointer_join(ptr, "systems"), j));
    if (e.value("type", std::string()) == "coupling_import")
      out.push_back({"coupling_library_nested_import", file, ptr,
                     "a coupling library must not contain a coupling_import", Layer::Structural});
    for (const auto& [ref, p] : refs) {
      const std::string role = head_segment(ref);
      if (!roles.contains(role))
        out.push_back({"coupling_edge_unknown_role", file, p,
                       "'" + ref + "' does not start with a declared role (" + roles.dump() + ")",
                       Layer::Structural});
      used.insert(role);
    }
    if (e.contains("connector") && e["connector"].is_object())
      for (const auto& q : e["connector"].value("equations", json::array()))
        for (const char* k : {"from", "to"})
          if (q.contains(k) && q[k].is_string()) used.insert(head_segment(q[k].get<std::string>()));
  }
  for (auto it = roles.begin(); it != roles.end(); ++it)
    if (!used.count(it.key()))
      out.push_back({"coupling_role_unused", file, pointer_join("/coupling_roles", it.key()),
                     "role '" + it.key() + "' is not used by any edge of the library",
                     Layer::Structural});
  return out;
}

}  // namespace

CheckedDocument load_checked(const std::filesystem::path& file, const LoadOptions& options) {
  CheckedDocument out;
  ValidationReport& report = out.report;
  report.file = file.string();
  // The resolver works on canonical paths; findings in the top-level file name it as given.
  std::error_code ec;
  const std::string canonical = std::filesystem::weakly_canonical(file, ec).string();
  auto fail = [&](const Error& e) {
    report.errors.push_back(e.diagnostic());
    std::string& where = report.errors.back().file;
    if (where.empty() || where == canonical) where = report.file;
  };
  nlohmann::json raw;
  try {
    raw = read_json_file(file);
  } catch (const Error& e) {
    fail(e);
    return out;
  }
  if (options.schema) {
    try {
      if (const JsonSchema* schema = esm_schema()) {
        // A oneOf/anyOf failure reads as the complaints of the branch the node came closest
        // to; the other branches' findings (ajv reports them all) are kept but marked.
        for (auto& f : schema->validate(raw))
          report.errors.push_back(Diagnostic{f.keyword, report.file, f.instance_path,
                                             f.message, Layer::Schema, f.alternative});
        if (!report.errors.empty()) return out;
      }
    } catch (const Error& e) {
      fail(e);
      return out;
    }
  }
  ResolvedDocument doc;
  try {
    doc = load_resolved(file, std::move(raw), options);
  } catch (const Error& e) {
    fail(e);
    return out;
  }
  if (doc.doc.contains("coupling_roles")) {
    for (auto& d : check_coupling_library(doc.doc, report.file)) report.errors.push_back(std::move(d));
  } else {
    for (auto& d : check_structure(doc.doc, report.file)) report.errors.push_back(std::move(d));
    for (auto& d : check_units(doc.doc, report.file)) report.errors.push_back(std::move(d));
  }
  if (report.errors.empty()) out.doc = std::move(doc);
  return out;
}

std::vector<Diagnostic> ValidationReport::shown() const {
  std::vector<Diagnostic> out;
  for (const Diagnostic& d : errors)
    if (!d.alternative) out.push_back(d);
  return out;
}

/// True when some variable has a distribution or a Wiener update (any object in the document
/// with such a key: a false hit only costs the trial flatten its per-region form).
bool declares_random_parameters(const json& node) {
  if (node.is_object()) {
    if (node.contains("distribution")) return true;
    if (const auto u = node.find("update"); u != node.end() && u->is_object() && u->value("kind", "") == "wiener")
      return true;
  }
  if (node.is_structured())
    for (const auto& child : node)
      if (declares_random_parameters(child)) return true;
  return false;
}

/// Findings that leave a document valid: a capability esi lacks (`unsupported_*`), and a
/// rewrite target no rule lowers, which is how a discretization-agnostic component is written
/// (spec §6.6.6: it runs once a test or a composing document imports a rule for it).
bool is_unsupported_code(const std::string& code) {
  return code.rfind("unsupported_", 0) == 0 || code == "unlowered_operator";
}

/// True when a component enclosing `pointer` has a test or analysis that injects templates
/// (spec §9.7.10 form (4)): a template it calls may come from that run's imports only, like the
/// rewrite rules of a discretization-agnostic component (§6.6.6).
bool injected_by_a_run(const json& doc, const std::string& pointer) {
  for (std::size_t end = pointer.find('/', 1);; end = pointer.find('/', end + 1)) {
    try {
      const json& node = doc.at(json::json_pointer(pointer.substr(0, end)));
      for (const char* runs : {"tests", "analyses"})
        if (node.is_object() && node.contains(runs) && node[runs].is_array())
          for (const json& run : node[runs])
            if (run.is_object() && run.contains("expression_template_imports")) return true;
    } catch (const std::exception&) {
      return false;  // not a pointer into the document
    }
    if (end == std::string::npos) break;
  }
  return false;
}

ValidationReport validate_file(const std::filesystem::path& file, const LoadOptions& options) {
  CheckedDocument checked = load_checked(file, options);
  // Without the schema the other layers still run, but a verdict must not claim a check that
  // did not happen.
  if (options.schema && !locate_esm_schema())
    checked.report.notes.push_back(
        {"schema_not_found", checked.report.file, "", schema_not_found_message(), Layer::Schema});
  if (!checked.doc || checked.doc->library_only) return std::move(checked.report);
  // The trial flatten: what simulate and check would refuse (missing initial values, unknown
  // couplings, ...) is a finding here too. Arrays as per-region programs, as `esi simulate`
  // and `esi run` flatten them: one equation per cell costs minutes and gigabytes on a real
  // grid (transport_3d at 72x46x72: 4 minutes, against 0.07 s). Where the per-region form
  // cannot be formed, flatten falls back to cells itself. A model with random parameters
  // (white noise, distributions) is tried in cells, as before: its checks read the parameters'
  // cells, and the stochastic drivers run cells.
  try {
    FlattenOptions trial;
    trial.grid = !declares_random_parameters(checked.doc->doc);
    const System system = flatten(*checked.doc, trial);
    check_wiener_use(system);  // what the SDE driver would refuse
    check_distributions(system, checked.doc->doc);  // and the distributions it would read
    std::error_code ec;
    const std::string canonical = std::filesystem::weakly_canonical(file, ec).string();
    auto shown_file = [&](const std::string& f) {
      return f.empty() || f == canonical ? checked.report.file : f;
    };
    // Valid (a test or the caller may supply it), but `esi simulate` cannot start without it.
    std::set<std::string> arrays_noted;  // one note per array, not one per cell
    for (const auto& g : system.grid)  // per-region initial values (ic equations of arrays)
      if (g.kind == System::GridEquation::Kind::Initial) arrays_noted.insert(g.targets.begin(), g.targets.end());
    const auto note_missing = [&](const FlatVariable& v, const std::string& name) {
      if (!v.default_value && v.initial == expr::kNoNode && (v.array.empty() || arrays_noted.insert(v.array).second))
        checked.report.notes.push_back(
            {"missing_initial_value", shown_file(v.file), v.pointer,
             (v.array.empty() ? "state '" + name + "' has"
                              : "array state '" + v.array + "' (" + name + " and others) has") +
                 " no initial value; 'esi simulate' needs one (a default, an ic equation, or "
                 "--set " + (v.array.empty() ? name : v.array) + "=VALUE)",
             Layer::Structural});
    };
    // In state order, without making the cells of per-region state arrays.
    std::map<std::size_t, const FlatVariable*> runs;
    system.states.for_each_lazy_run(
        [&](std::size_t first, std::size_t, const FlatVariable& cell) { runs.emplace(first, &cell); });
    auto run = runs.begin();
    system.states.for_each_stored([&](std::size_t i, const FlatVariable& v) {
      for (; run != runs.end() && run->first < i; ++run) note_missing(*run->second, system.states.name(run->first));
      note_missing(v, v.name);
    });
    for (; run != runs.end(); ++run) note_missing(*run->second, system.states.name(run->first));
  } catch (const Error& e) {
    Diagnostic d = e.diagnostic();
    if (d.file.empty()) d.file = checked.report.file;
    const bool for_a_test = d.code == "apply_expression_template_unknown_template" &&
                            injected_by_a_run(checked.doc->doc, d.pointer);
    if (for_a_test)
      d.message += " (the component's own tests or analyses import templates: their runs resolve it)";
    (is_unsupported_code(d.code) || for_a_test ? checked.report.notes : checked.report.errors).push_back(std::move(d));
  }
  return std::move(checked.report);
}

}  // namespace esi::esm
