// A test's or an analysis' own discretization (§6.6.6, §6.7.2, §9.7.10): the document loaded
// again with the run's imports added to its component's.
#include "check/inject_imports.hpp"

#include <algorithm>
#include <vector>

#include "esi/core/error.hpp"

namespace esi::check::detail {

using nlohmann::json;

esm::ResolvedDocument inject_template_imports(const esm::ResolvedDocument& doc,
                                              const std::string& component, const json& imports,
                                              const std::string& file, const std::string& pointer,
                                              const std::string& owner) {
  json raw = doc.raw;
  json* comp = nullptr;
  std::string comp_pointer;
  std::size_t start = 0;
  for (bool first = true; start <= component.size(); first = false) {
    const std::size_t dot = std::min(component.find('.', start), component.size());
    const std::string part = component.substr(start, dot - start);
    json* parent = first ? &raw : comp;
    comp = nullptr;
    for (const char* section : first ? std::vector<const char*>{"models", "reaction_systems"}
                                     : std::vector<const char*>{"subsystems"})
      if (parent->contains(section) && (*parent)[section].contains(part)) {
        comp = &(*parent)[section][part];
        comp_pointer = pointer_join(pointer_join(comp_pointer, section), part);
      }
    if (!comp || !comp->is_object() || comp->contains("ref"))
      throw Error("unsupported_" + owner + "_feature", file, pointer,
                  "a " + owner +
                      " that injects a discretization is supported for components written in "
                      "the document itself, not mounted from another file");
    start = dot + 1;
  }
  if (!imports.is_array())
    throw Error("invalid_" + owner, file, pointer, "expression_template_imports must be an array");
  json& own = (*comp)["expression_template_imports"];
  if (!own.is_array()) own = json::array();
  const std::size_t own_count = own.size();
  for (const auto& imp : imports) own.push_back(imp);
  try {
    return esm::load_resolved(doc.file, std::move(raw));
  } catch (const Error& e) {
    // A finding in one of the injected imports is reported where the test or analysis wrote
    // it, not at the component's import list it was appended to for the build.
    Diagnostic d = e.diagnostic();
    const std::string list = pointer_join(comp_pointer, "expression_template_imports") + "/";
    if (d.pointer.compare(0, list.size(), list) == 0) {
      const std::size_t end = std::min(d.pointer.find('/', list.size()), d.pointer.size());
      const std::string index = d.pointer.substr(list.size(), end - list.size());
      if (!index.empty() &&
          std::all_of(index.begin(), index.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
          std::stoul(index) >= own_count) {
        d.pointer = pointer_join(pointer, std::stoul(index) - own_count) + d.pointer.substr(end);
        d.file = file;
      }
    }
    throw Error(d);
  }
}

std::optional<std::string> read_before_run(const esm::System& sys, expr::NodeId root,
                                           const std::unordered_set<std::string>& unknowns) {
  std::vector<expr::NodeId> stack{root};
  while (!stack.empty()) {
    const expr::NodeId id = stack.back();
    stack.pop_back();
    const expr::Node& n = sys.pool.node(id);
    if (n.op == expr::Op::Symbol) {
      std::string name(sys.pool.str(n.name));
      if (name == "t" || unknowns.count(name)) return name;
    }
    for (expr::NodeId k : sys.pool.children(id)) stack.push_back(k);
  }
  return std::nullopt;
}

}  // namespace esi::check::detail
