// The §9.7.3 registration-time checks on each component's template registry, at validate time:
// body references must form an acyclic DAG (`apply_expression_template_recursive_body`), no
// chain may nest deeper than MAX_TEMPLATE_EXPANSION_DEPTH = 32
// (`template_body_expansion_too_deep`), and — an engine limit, not a spec rule — no template
// may expand to more than kMaxExpandedNodes nodes (`template_expansion_too_large`), so a body
// that doubles at each level is refused with a located error instead of exhausting memory when
// `simulate` expands it.
#include <algorithm>

#include "esm/checks/structural_detail.hpp"

namespace esi::esm::structural_detail {

namespace {

constexpr std::size_t kMaxTemplateDepth = 32;          // §9.7.3, as localize.cpp enforces it
constexpr std::uint64_t kMaxExpandedNodes = 1u << 22;  // ~4 M nodes: far past any real stencil
constexpr std::uint64_t kSaturated = std::uint64_t{1} << 62;

std::uint64_t sat_add(std::uint64_t a, std::uint64_t b) {
  return std::min(kSaturated, a + b);
}

/// The names of the templates a template body applies, in body order, without duplicates.
std::vector<std::string> body_references(const json& def) {
  std::vector<std::string> out;
  const json* body = get_field(def, "body");
  if (!body) return out;
  visit_nodes(*body, [&](const json& n) {
    if (get_str(n, "op") == "apply_expression_template") {
      std::string name = get_str(n, "name");
      if (!name.empty() && std::find(out.begin(), out.end(), name) == out.end())
        out.push_back(name);
    }
    return true;
  });
  return out;
}

class TemplateGraph {
 public:
  TemplateGraph(Context& ctx, const json& registry, std::string pointer, std::string owner)
      : ctx_(ctx), reg_(registry), pointer_(std::move(pointer)), owner_(std::move(owner)) {
    for (const auto& [name, def] : registry.items())
      if (def.is_object() && !def.contains("match")) refs_[name] = body_references(def);
  }

  void check() {
    for (const auto& [name, r] : refs_) {
      std::vector<std::string> path;
      depth_of(name, path);
    }
    for (const auto& [name, r] : refs_) size_of(name);
  }

 private:
  Context& ctx_;
  const json& reg_;
  std::string pointer_, owner_;
  std::map<std::string, std::vector<std::string>> refs_;
  std::map<std::string, std::size_t> depth_;  // templates on the longest chain from here
  std::set<std::string> on_cycle_;
  std::map<std::string, std::uint64_t> size_;

  std::string body_pointer(const std::string& name) const {
    return pointer_join(pointer_join(pointer_, name), "body");
  }

  /// Length (in templates) of the longest reference chain starting at `name`; reports cycles.
  std::size_t depth_of(const std::string& name, std::vector<std::string>& path) {
    if (auto d = depth_.find(name); d != depth_.end()) return d->second;
    if (!refs_.count(name)) return 0;  // unknown or match rule: reported elsewhere / not a ref
    if (auto at = std::find(path.begin(), path.end(), name); at != path.end()) {
      std::vector<std::string> cycle(at, path.end());
      if (!on_cycle_.count(name)) {
        for (const auto& c : cycle) on_cycle_.insert(c);
        std::string chain;
        for (const auto& c : cycle) chain += "'" + c + "' -> ";
        ctx_.report(
            "apply_expression_template_recursive_body", body_pointer(name),
            cycle.size() == 1
                ? "Template '" + name + "' in " + owner_ + " applies itself in its own body."
                : "Templates in " + owner_ + " apply each other in a cycle: " + chain + "'" + name +
                      "'.");
      }
      return 0;
    }
    path.push_back(name);
    std::size_t deepest = 0;
    for (const auto& r : refs_[name]) deepest = std::max(deepest, depth_of(r, path));
    path.pop_back();
    const std::size_t d = deepest + 1;
    if (d > kMaxTemplateDepth && deepest <= kMaxTemplateDepth)
      ctx_.report("template_body_expansion_too_deep", body_pointer(name),
                  "Template '" + name + "' in " + owner_ + " starts a chain of " +
                      std::to_string(d) + " nested template applications; at most " +
                      std::to_string(kMaxTemplateDepth) + " are allowed.");
    depth_[name] = d;
    return d;
  }

  /// Nodes of `e` once every template it applies is expanded (params counted as one node).
  std::uint64_t expanded_nodes(const json& e, int depth) {
    if (depth > 2000) return kSaturated;
    if (!e.is_object()) return 1;
    std::uint64_t n = 1;
    if (get_str(e, "op") == "apply_expression_template") {
      const std::string name = get_str(e, "name");
      if (refs_.count(name)) n = size_of(name);
      if (const json* b = get_field(e, "bindings"); b && b->is_object())
        for (const auto& [k, v] : b->items()) n = sat_add(n, expanded_nodes(v, depth + 1));
      return n;
    }
    for (const char* c : {"expr", "filter", "key", "lower", "upper"})
      if (const json* ch = get_field(e, c)) n = sat_add(n, expanded_nodes(*ch, depth + 1));
    for (const char* c : {"args", "values"})
      if (const json* ch = get_field(e, c); ch && ch->is_array())
        for (const auto& a : *ch) n = sat_add(n, expanded_nodes(a, depth + 1));
    if (const json* ch = get_field(e, "axes"); ch && ch->is_object())
      for (const auto& [k, v] : ch->items()) n = sat_add(n, expanded_nodes(v, depth + 1));
    return n;
  }

  std::uint64_t size_of(const std::string& name) {
    if (auto s = size_.find(name); s != size_.end()) return s->second;
    if (on_cycle_.count(name) || depth_[name] > kMaxTemplateDepth) return size_[name] = 1;
    size_[name] = 1;  // provisional, in case of an unreported cycle
    const json* body = get_field(reg_[name], "body");
    const std::uint64_t n = body ? expanded_nodes(*body, 0) : 1;
    bool parts_fit = true;
    for (const auto& r : refs_[name])
      if (refs_.count(r) && size_[r] > kMaxExpandedNodes) parts_fit = false;
    if (n > kMaxExpandedNodes && parts_fit)
      ctx_.report("template_expansion_too_large", body_pointer(name),
                  "Template '" + name + "' in " + owner_ + " expands to " +
                      (n >= kSaturated ? std::string("an astronomically large number of")
                                       : "about " + std::to_string(n)) +
                      " expression nodes through its nested template applications; the limit "
                      "is " +
                      std::to_string(kMaxExpandedNodes) + ".");
    return size_[name] = n;
  }
};

}  // namespace

void check_templates(Context& ctx) {
  for (Component* c : ctx.all_components())
    if (const json* reg = c->field("expression_templates"); reg && reg->is_object())
      TemplateGraph(ctx, *reg, pointer_join(c->pointer, "expression_templates"),
                    std::string(c->kind == CompKind::ReactionSystem ? "reaction system" : "model") +
                        " '" + c->dotted + "'")
          .check();
  if (const json* reg = get_field(ctx.doc, "expression_templates"); reg && reg->is_object())
    TemplateGraph(ctx, *reg, "/expression_templates", "this template library").check();
}

}  // namespace esi::esm::structural_detail
