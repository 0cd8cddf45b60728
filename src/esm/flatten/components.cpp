// Collecting the components of a resolved document and their local names.
#include "esm/flatten/flatten_internal.hpp"

#include "esi/core/error.hpp"

namespace esi::esm::detail {
namespace {

std::string file_for(const ResolvedDocument& doc, const std::string& pointer) {
  // The longest mounted prefix of `pointer` names the file the component came from.
  std::string best = doc.file;
  std::size_t best_len = 0;
  for (const auto& [p, f] : doc.component_files)
    if (pointer.compare(0, p.size(), p) == 0 && p.size() >= best_len &&
        (pointer.size() == p.size() || pointer[p.size()] == '/')) {
      best = f;
      best_len = p.size();
    }
  return best;
}

void add_component(FlattenState& st, const json& node, const std::string& path,
                   const std::string& pointer, bool reaction_system) {
  if (!node.is_object()) return;
  Component c;
  c.path = path;
  c.pointer = pointer;
  c.file = file_for(st.doc, pointer);
  c.reaction_system = reaction_system;
  c.node = &node;
  if (reaction_system) {
    for (const char* k : {"species", "parameters"})
      if (auto it = node.find(k); it != node.end() && it->is_object())
        for (auto v = it->begin(); v != it->end(); ++v) c.locals.insert(v.key());
  } else if (auto it = node.find("variables"); it != node.end() && it->is_object()) {
    for (auto v = it->begin(); v != it->end(); ++v) c.locals.insert(v.key());
  }
  const json* subs = nullptr;
  if (auto it = node.find("subsystems"); it != node.end() && it->is_object()) subs = &*it;
  if (subs)
    for (auto s = subs->begin(); s != subs->end(); ++s) c.subsystems.insert(s.key());
  st.component_index[path] = st.components.size();
  st.components.push_back(std::move(c));
  if (!subs) return;
  for (auto s = subs->begin(); s != subs->end(); ++s) {
    const json& child = s.value();
    // A subsystem is a reaction system when it carries reactions or species.
    const bool rs = child.is_object() && (child.contains("reactions") || child.contains("species"));
    add_component(st, child, path + "." + s.key(),
                  pointer_join(pointer_join(pointer, "subsystems"), s.key()), rs);
  }
}

}  // namespace

void collect_components(FlattenState& st, const std::string& only) {
  const json& doc = st.doc.doc;
  for (const char* section : {"models", "reaction_systems"}) {
    auto it = doc.find(section);
    if (it == doc.end() || !it->is_object()) continue;
    for (auto c = it->begin(); c != it->end(); ++c)
      add_component(st, c.value(), c.key(), pointer_join(pointer_join("", section), c.key()),
                    std::string(section) == "reaction_systems");
  }
  if (only.empty()) return;
  // Keep `only` and its subsystems.
  if (!st.component_index.count(only)) {
    std::string known;
    for (const auto& c : st.components) known += (known.empty() ? "" : ", ") + c.path;
    throw Error("unknown_component", st.doc.file, "",
                "the document has no component '" + only + "' (it has: " + known + ")");
  }
  std::vector<Component> kept;
  for (auto& c : st.components)
    if (c.path == only || c.path.compare(0, only.size() + 1, only + ".") == 0)
      kept.push_back(std::move(c));
  st.components = std::move(kept);
  st.component_index.clear();
  for (std::size_t i = 0; i < st.components.size(); ++i)
    st.component_index[st.components[i].path] = i;
}

}  // namespace esi::esm::detail
