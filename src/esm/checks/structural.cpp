// Structural validation entry point: builds the component tree and the document-scoped name
// registries, then runs each family of checks (spec §4.9, §5, §6, §7, §10, §4.3).
#include "esi/esm/structural.hpp"

#include <algorithm>

#include "esm/checks/structural_detail.hpp"

namespace esi::esm {
namespace structural_detail {

const json* Component::field(const char* key) const {
  if (node == nullptr || !node->is_object()) return nullptr;
  auto it = node->find(key);
  return it == node->end() ? nullptr : &*it;
}

void Context::report(const std::string& code, const std::string& pointer,
                     const std::string& message) {
  // One finding per (code, pointer): several bad names under one expression root are listed in
  // the first message rather than repeated.
  if (!reported.emplace(code, pointer).second) return;
  out.push_back(Diagnostic{code, file, pointer, message, Layer::Structural});
}

namespace {

/// Which kind of component a subsystem value is. A `{"ref": ...}` object the loader has not
/// replaced stays an opaque stub (§4.7): its names are unknown, so nothing resolving into it is
/// reported.
CompKind detect_kind(const json& node, CompKind fallback) {
  if (!node.is_object()) return CompKind::Stub;
  const bool has_model = node.contains("variables") || node.contains("equations");
  const bool has_rs = node.contains("species") || node.contains("reactions");
  if (has_model) return CompKind::Model;
  if (has_rs) return CompKind::ReactionSystem;
  if (node.contains("ref")) return CompKind::Stub;
  return fallback;
}

std::unique_ptr<Component> build(const json& node, CompKind fallback, const std::string& name,
                                 const std::string& dotted, const std::string& pointer,
                                 Component* parent, int depth) {
  auto c = std::make_unique<Component>();
  c->node = &node;
  c->kind = detect_kind(node, fallback);
  c->name = name;
  c->dotted = dotted;
  c->pointer = pointer;
  c->parent = parent;
  if (c->kind == CompKind::Model) {
    if (const json* vars = c->field("variables"); vars && vars->is_object())
      for (const auto& [k, v] : vars->items()) {
        const bool param = v.is_object() && get_str(v, "type") == "parameter";
        c->symbols[k] = param ? SymKind::Parameter : SymKind::Unknown;
      }
  } else if (c->kind == CompKind::ReactionSystem) {
    if (const json* sp = c->field("species"); sp && sp->is_object())
      for (const auto& [k, v] : sp->items()) c->symbols[k] = SymKind::Species;
    if (const json* ps = c->field("parameters"); ps && ps->is_object())
      for (const auto& [k, v] : ps->items()) c->symbols.emplace(k, SymKind::ReactionParameter);
  }
  if (depth > 64) return c;  // pathological nesting: stop descending, never overflow
  if (const json* subs = c->field("subsystems"); subs && subs->is_object() && !c->is_stub()) {
    const std::string base = pointer_join(pointer, "subsystems");
    for (const auto& [k, v] : subs->items())
      c->subs[k] =
          build(v, c->kind, k, dotted + "." + k, pointer_join(base, k), c.get(), depth + 1);
  }
  return c;
}

std::vector<std::string_view> split_dots(std::string_view s) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  for (;;) {
    std::size_t dot = s.find('.', start);
    parts.push_back(s.substr(start, dot == std::string_view::npos ? dot : dot - start));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return parts;
}

/// Walks `segs` from `start` through `subsystems` maps (§4.9.2: every segment, any depth).
Component* walk(const std::map<std::string, std::unique_ptr<Component>>& start,
                const std::vector<std::string_view>& segs, bool& opaque) {
  const std::map<std::string, std::unique_ptr<Component>>* level = &start;
  Component* cur = nullptr;
  for (std::string_view seg : segs) {
    if (cur != nullptr && cur->is_stub()) {
      opaque = true;
      return nullptr;
    }
    auto it = level->find(std::string(seg));
    if (it == level->end()) return nullptr;
    cur = it->second.get();
    level = &cur->subs;
  }
  return cur;
}

void collect_components(Component* c, std::vector<Component*>& out) {
  out.push_back(c);
  for (auto& [k, s] : c->subs) collect_components(s.get(), out);
}

bool contains_key(const json& j, const char* key, int depth = 0) {
  if (depth > 256) return false;
  if (j.is_object()) {
    if (j.contains(key)) return true;
    for (const auto& [k, v] : j.items())
      if (contains_key(v, key, depth + 1)) return true;
  } else if (j.is_array()) {
    for (const auto& v : j)
      if (contains_key(v, key, depth + 1)) return true;
  }
  return false;
}

}  // namespace

std::vector<Component*> Context::all_components() const {
  std::vector<Component*> out;
  for (const auto& [k, c] : roots) collect_components(c.get(), out);
  return out;
}

Component* Context::find_system(std::string_view path, const Component* from, bool& opaque) const {
  const auto segs = split_dots(path);
  for (const Component* scope = from; scope != nullptr; scope = scope->parent) {
    bool op = false;
    if (Component* c = walk(scope->subs, segs, op)) return c;
    if (op) {
      opaque = true;
      return nullptr;
    }
  }
  return walk(roots, segs, opaque);
}

Resolution Context::resolve(std::string_view name, const Component* from, SymKind* kind) const {
  const std::string key(name);
  if (from != nullptr) {
    if (from->is_stub()) return Resolution::Opaque;
    auto it = from->symbols.find(key);
    if (it != from->symbols.end()) {
      if (kind) *kind = it->second;
      return Resolution::Found;
    }
  }
  const auto dot = name.rfind('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == name.size())
    return from == nullptr ? Resolution::NoSystem : Resolution::NoVariable;
  bool opaque = false;
  Component* sys = find_system(name.substr(0, dot), from, opaque);
  if (opaque) return Resolution::Opaque;
  if (sys == nullptr) return Resolution::NoSystem;
  if (sys->is_stub()) return Resolution::Opaque;
  auto it = sys->symbols.find(std::string(name.substr(dot + 1)));
  if (it == sys->symbols.end()) return Resolution::NoVariable;
  if (kind) *kind = it->second;
  return Resolution::Found;
}

std::string quote_list(const std::vector<std::string>& names) {
  std::string s;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i) s += ", ";
    s += "'" + names[i] + "'";
  }
  return s;
}

}  // namespace structural_detail

std::vector<Diagnostic> check_structure(const nlohmann::json& document, const std::string& file) {
  using namespace structural_detail;
  std::vector<Diagnostic> out;
  if (!document.is_object()) return out;
  try {
    Context ctx(document, file, out);
    if (auto d = document.find("domain"); d != document.end() && d->is_object()) {
      auto iv = d->find("independent_variable");
      if (iv != d->end() && iv->is_string() && !iv->get<std::string>().empty())
        ctx.time_var = iv->get<std::string>();
    }
    if (auto m = document.find("models"); m != document.end() && m->is_object())
      for (const auto& [k, v] : m->items())
        ctx.roots[k] = build(v, CompKind::Model, k, k, pointer_join("/models", k), nullptr, 0);
    if (auto r = document.find("reaction_systems"); r != document.end() && r->is_object())
      for (const auto& [k, v] : r->items())
        if (!ctx.roots.count(k))
          ctx.roots[k] = build(v, CompKind::ReactionSystem, k, k,
                               pointer_join("/reaction_systems", k), nullptr, 0);

    if (auto is = document.find("index_sets"); is != document.end() && is->is_object())
      for (const auto& [k, v] : is->items()) ctx.index_sets.insert(k);
    ctx.axis_names = ctx.index_sets;
    collect_axis_names(document, ctx.time_var, ctx.axis_names);
    for (const char* reg : {"metaparameters", "coordinates"})
      if (auto m = document.find(reg); m != document.end() && m->is_object())
        for (const auto& [k, v] : m->items()) ctx.doc_level_names.insert(k);
    // §4.9.5: a callback coupling entry's config.callback_variables[j].name is a declaration.
    if (auto cp = document.find("coupling"); cp != document.end() && cp->is_array())
      for (const auto& e : *cp) {
        if (!e.is_object() || get_str(e, "type") != "callback") continue;
        auto cfg = e.find("config");
        if (cfg == e.end() || !cfg->is_object()) continue;
        auto cv = cfg->find("callback_variables");
        if (cv == cfg->end() || !cv->is_array()) continue;
        for (const auto& v : *cv)
          if (v.is_object() && v.contains("name") && v["name"].is_string())
            ctx.doc_level_names.insert(v["name"].get<std::string>());
      }
    bool stub = false;
    for (Component* c : ctx.all_components()) stub = stub || c->is_stub();
    if (auto cp = document.find("coupling"); cp != document.end() && cp->is_array())
      for (const auto& e : *cp)
        stub = stub || (e.is_object() && get_str(e, "type") == "coupling_import");
    ctx.index_sets_may_be_incomplete =
        stub || contains_key(document, "expression_template_imports");

    check_names(ctx);
    check_balance(ctx);
    check_coupling(ctx);
    check_arrays(ctx);
    check_operators(ctx);
    check_templates(ctx);
    check_components(ctx);
  } catch (const std::exception&) {
    // Never throw on weird input: a check that trips over an unexpected shape reports nothing
    // further rather than crashing the validator.
  }
  return out;
}

}  // namespace esi::esm
