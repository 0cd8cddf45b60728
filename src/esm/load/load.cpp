// Reference resolution (spec §4.7 subsystem refs, §9.7 template imports and metaparameters,
// §10.9-10.10 coupling imports). Produces one self-contained JSON document.
#include "esi/esm/load.hpp"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

#include "esi/core/json.hpp"
#include "esm/load/json_walk.hpp"
#include "esm/load/metaparams.hpp"

namespace esi::esm {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using detail::fold_metaparameter;

constexpr int kMaxRefDepth = 64;

/// Expands `${VAR}` from the environment; unset variables stay literal (spec §4.7).
std::string expand_env(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    if (s.compare(i, 2, "${") == 0) {
      const auto end = s.find('}', i + 2);
      if (end != std::string::npos) {
        const std::string var = s.substr(i + 2, end - i - 2);
        if (const char* v = std::getenv(var.c_str())) {
          out += v;
          i = end + 1;
          continue;
        }
      }
    }
    out += s[i++];
  }
  return out;
}

bool is_url(const std::string& s) { return s.rfind("http://", 0) == 0 || s.rfind("https://", 0) == 0; }

/// One template library, instantiated at one import edge.
struct Library {
  std::vector<std::pair<std::string, json>> templates;  // effective declaration order
  json index_sets = json::object();
  json open_metaparameters = json::object();  // declarations re-exported upward
};

void add_template(std::vector<std::pair<std::string, json>>& into, const std::string& name,
                  const json& def, const std::string& file, const std::string& pointer) {
  for (auto& [n, d] : into) {
    if (n != name) continue;
    if (d == def) return;  // diamond import: deep-equal definitions dedupe
    throw Error("template_import_name_conflict", file, pointer,
                "template '" + name + "' reaches this scope twice with different definitions");
  }
  into.emplace_back(name, def);
}

void merge_object(json& into, const json& from, const char* code, const char* what,
                  const std::string& file, const std::string& pointer) {
  if (!from.is_object()) return;
  for (auto it = from.begin(); it != from.end(); ++it) {
    auto existing = into.find(it.key());
    if (existing == into.end()) {
      into[it.key()] = it.value();
    } else if (*existing != it.value()) {
      throw Error(code, file, pointer,
                  std::string(what) + " '" + it.key() +
                      "' is declared twice with different definitions");
    }
  }
}

/// Newest format version this engine implements (the schema it validates against is 1.0.0).
constexpr int kNewestMajor = 1, kNewestMinor = 0;

bool parse_semver(const std::string& v, int& major, int& minor, int& patch) {
  char tail = 0;
  return std::sscanf(v.c_str(), "%d.%d.%d%c", &major, &minor, &patch, &tail) == 3 && major >= 0 &&
         minor >= 0 && patch >= 0;
}

/// Whether `j` holds key `key` at any depth, or (with `op`) a node whose `op` is `op`.
bool mentions(const json& j, const char* key, const char* op, int depth = 0) {
  if (depth > 256) return false;
  if (j.is_object()) {
    if (key && j.contains(key)) return true;
    if (op) {
      auto o = j.find("op");
      if (o != j.end() && o->is_string() && *o == op) return true;
    }
    for (const auto& [k, v] : j.items())
      if (mentions(v, key, op, depth + 1)) return true;
  } else if (j.is_array()) {
    for (const auto& v : j)
      if (mentions(v, key, op, depth + 1)) return true;
  }
  return false;
}

/// The declared `esm` version (§2) must be one this engine implements, and the template
/// constructs must not predate their version gates (§9.6.5).
void check_esm_version(const json& doc, const std::string& file) {
  auto it = doc.find("esm");
  if (it == doc.end() || !it->is_string()) return;  // the schema layer reports the shape
  const std::string v = it->get<std::string>();
  int major = 0, minor = 0, patch = 0;
  const std::string newest = std::to_string(kNewestMajor) + "." + std::to_string(kNewestMinor) + ".x";
  if (!parse_semver(v, major, minor, patch))
    throw Error("unsupported_esm_version", file, "/esm",
                "the format version '" + v + "' is not a version number MAJOR.MINOR.PATCH");
  if (major > kNewestMajor || (major == kNewestMajor && minor > kNewestMinor))
    throw Error("unsupported_esm_version", file, "/esm",
                "the document declares format version " + v + ", newer than this engine "
                "implements (up to " + newest + ")");
  const auto before = [&](int ma, int mi) { return major < ma || (major == ma && minor < mi); };
  if (before(0, 8)) {
    for (const char* key : {"expression_template_imports", "metaparameters"})
      if (mentions(doc, key, nullptr))
        throw Error("template_import_version_too_old", file, "/esm",
                    "'" + std::string(key) + "' arrived in esm 0.8.0, but the document declares " + v);
    if (doc.contains("expression_templates"))
      throw Error("template_import_version_too_old", file, "/esm",
                  "a top-level 'expression_templates' library arrived in esm 0.8.0, but the "
                  "document declares " + v);
  }
  if (before(0, 4) && (mentions(doc, "expression_templates", nullptr) ||
                       mentions(doc, nullptr, "apply_expression_template")))
    throw Error("apply_expression_template_version_too_old", file, "/esm",
                "expression templates arrived in esm 0.4.0, but the document declares " + v);
}

/// The most subsystem mounts one document may make (each `ref` counted per place it lands).
constexpr std::size_t kMaxMounts = 10000;

struct Resolver {
  const LoadOptions& options;
  ResolvedDocument& out;
  std::vector<fs::path> stack;  // files being resolved, for cycle detection
  // Each referenced file is read and parsed once, and each template library resolved once (an
  // import's bindings, `only` and renames apply to a copy): a file that many others reference
  // (a diamond of imports, depth d) costs one read, not 2^d.
  std::map<fs::path, json> parsed;
  std::map<fs::path, Library> libraries;
  std::size_t mounts = 0;  // component files mounted so far (each mount counts)

  fs::path locate(const std::string& ref, const fs::path& base_dir, const char* code,
                  const std::string& file, const std::string& pointer) {
    const std::string expanded = expand_env(ref);
    if (is_url(expanded))
      throw Error(code, file, pointer,
                  "remote reference '" + ref + "' is not supported: download the file and "
                  "refer to it by path");
    fs::path p(expanded);
    if (p.is_relative()) p = base_dir / p;
    std::error_code ec;
    if (!fs::is_regular_file(p, ec))
      throw Error(code, file, pointer, "referenced file '" + ref + "' not found (looked at " +
                                           p.lexically_normal().string() + ")");
    return fs::weakly_canonical(p, ec);
  }

  json read(const fs::path& p, const char* code, const std::string& file,
            const std::string& pointer) {
    if (auto it = parsed.find(p); it != parsed.end()) return it->second;
    try {
      return parsed.emplace(p, read_json_file(p)).first->second;
    } catch (const Error& e) {
      throw Error(code, file, pointer,
                  "referenced file '" + p.string() + "' could not be read: " +
                      e.diagnostic().message);
    }
  }

  struct StackGuard {
    std::vector<fs::path>& s;
    StackGuard(std::vector<fs::path>& st, fs::path p) : s(st) { s.push_back(std::move(p)); }
    ~StackGuard() { s.pop_back(); }
  };

  bool on_stack(const fs::path& p) const {
    for (const auto& q : stack)
      if (q == p) return true;
    return false;
  }

  /// Refuses to enter `path` again while it is being resolved, or past kMaxRefDepth.
  void check_not_cyclic(const fs::path& path, const char* code, const std::string& what,
                        const std::string& file, const std::string& pointer) const {
    if (on_stack(path))
      throw Error(code, file, pointer, what + " form a cycle through '" + path.string() + "'");
    if (stack.size() > kMaxRefDepth) throw Error(code, file, pointer, what + " nest too deeply");
  }

  // ---- template libraries (§9.7) ----

  Library load_library(const fs::path& path, const std::string& file, const std::string& pointer) {
    check_not_cyclic(path, "template_import_cycle", "template imports", file, pointer);
    // Resolved before: its whole import graph was walked then (a cycle through it would have
    // been found), so the result stands wherever it is imported again.
    if (auto it = libraries.find(path); it != libraries.end()) return it->second;
    StackGuard guard(stack, path);
    json doc = read(path, "template_import_unresolved", file, pointer);
    const std::string lib_file = path.string();
    if (!doc.is_object())
      throw Error("template_import_not_library", file, pointer, "'" + lib_file + "' is not an ESM document");
    check_esm_version(doc, lib_file);
    if (doc.contains("coupling_roles"))
      throw Error("template_import_is_coupling_library", file, pointer,
                  "'" + lib_file + "' is a coupling library, not a template library");
    if (doc.contains("models") || doc.contains("reaction_systems"))
      throw Error("template_import_not_library", file, pointer,
                  "'" + lib_file + "' holds components; a template import must name a "
                  "template-library file (only expression_templates, index_sets, metaparameters)");
    Library lib;
    if (auto it = doc.find("expression_template_imports"); it != doc.end() && it->is_array()) {
      for (std::size_t i = 0; i < it->size(); ++i) {
        Library sub = instantiate_import((*it)[i], path.parent_path(), lib_file,
                                         pointer_join("/expression_template_imports", i));
        for (auto& [n, d] : sub.templates) add_template(lib.templates, n, d, lib_file, "/expression_template_imports");
        merge_object(lib.index_sets, sub.index_sets, "template_import_index_set_conflict",
                     "index set", lib_file, "/index_sets");
        merge_object(lib.open_metaparameters, sub.open_metaparameters,
                     "template_import_name_conflict", "metaparameter", lib_file, "/metaparameters");
      }
    }
    if (auto it = doc.find("expression_templates"); it != doc.end() && it->is_object())
      for (auto t = it->begin(); t != it->end(); ++t)
        add_template(lib.templates, t.key(), t.value(), lib_file, pointer_join("/expression_templates", t.key()));
    merge_object(lib.index_sets, doc.value("index_sets", json::object()),
                 "template_import_index_set_conflict", "index set", lib_file, "/index_sets");
    merge_object(lib.open_metaparameters, doc.value("metaparameters", json::object()),
                 "template_import_name_conflict", "metaparameter", lib_file, "/metaparameters");
    return libraries.emplace(path, std::move(lib)).first->second;
  }

  void apply_to_library(Library& lib, const std::function<void(json&)>& f) {
    for (auto& [n, d] : lib.templates) {
      if (d.contains("body")) f(d["body"]);
      if (d.contains("match")) f(d["match"]);
    }
    for (auto& is : lib.index_sets) f(is);
  }

  Library instantiate_import(const json& imp, const fs::path& base_dir, const std::string& file,
                             const std::string& pointer) {
    if (!imp.is_object() || !imp.contains("ref") || !imp["ref"].is_string())
      throw Error("template_import_unresolved", file, pointer, "a template import needs a string 'ref'");
    const fs::path path = locate(imp["ref"].get<std::string>(), base_dir,
                                 "template_import_unresolved", file, pointer_join(pointer, "ref"));
    Library lib = load_library(path, file, pointer);

    // (2) bindings close metaparameters of the imported library.
    if (auto b = imp.find("bindings"); b != imp.end() && b->is_object()) {
      std::map<std::string, json> env;
      for (auto it = b->begin(); it != b->end(); ++it) {
        if (!lib.open_metaparameters.contains(it.key()))
          throw Error("template_import_unknown_name", file, pointer_join(pointer_join(pointer, "bindings"), it.key()),
                      "the imported library declares no open metaparameter '" + it.key() + "'");
        if (it->is_number_float() && it->get<double>() != static_cast<double>(static_cast<std::int64_t>(it->get<double>())))
          throw Error("metaparameter_type_error", file, pointer_join(pointer_join(pointer, "bindings"), it.key()),
                      "metaparameter '" + it.key() + "' must be bound to an integer");
        env[it.key()] = it.value();
        lib.open_metaparameters.erase(it.key());
      }
      for (auto& [n, d] : lib.templates) {
        std::set<std::string> params;
        for (const auto& p : d.value("params", json::array()))
          if (p.is_string()) params.insert(p.get<std::string>());
        auto f = [&](const std::string& s) -> json {
          if (params.count(s)) return nullptr;
          auto e = env.find(s);
          return e == env.end() ? json(nullptr) : e->second;
        };
        if (d.contains("body")) detail::rewrite_expression_names(d["body"], f);
        if (d.contains("match")) detail::rewrite_expression_names(d["match"], f);
        detail::substitute_metaparameters(d, {});
        for (const char* site : {"body", "match"})
          if (d.contains(site)) substitute_structural(d[site], env);
      }
      for (auto& is : lib.index_sets) substitute_structural(is, env);
    }
    // (3) only
    if (auto o = imp.find("only"); o != imp.end() && o->is_array()) {
      std::vector<std::pair<std::string, json>> kept;
      for (const auto& name : *o) {
        bool found = false;
        for (auto& t : lib.templates)
          if (t.first == name) {
            kept.push_back(t);
            found = true;
          }
        if (!found)
          throw Error("template_import_unknown_name", file, pointer_join(pointer, "only"),
                      "'only' names template " + name.dump() + " which the library does not declare");
      }
      lib.templates = std::move(kept);
    }
    // (4) prefix / rename / rebind
    apply_renames(lib, imp, file, pointer);
    return lib;
  }

  /// Inside a `size`, `ranges` or `regions` value every string may be a metaparameter (the
  /// bounds are metaparameter expressions, §9.7.6), at any depth.
  static void substitute_bounds(json& node, const std::map<std::string, json>& env) {
    if (node.is_string()) {
      auto it = env.find(node.get<std::string>());
      if (it != env.end()) node = it->second;
    } else if (node.is_array() || node.is_object()) {
      for (auto it = node.begin(); it != node.end(); ++it)
        if (!(node.is_object() && (it.key() == "op" || it.key() == "from"))) substitute_bounds(*it, env);
    }
  }

  static void substitute_structural(json& node, const std::map<std::string, json>& env) {
    if (node.is_string()) {
      auto it = env.find(node.get<std::string>());
      if (it != env.end()) node = it->second;
      return;
    }
    if (node.is_array()) {
      for (auto& x : node) substitute_structural(x, env);
      return;
    }
    if (!node.is_object()) return;
    for (auto it = node.begin(); it != node.end(); ++it) {
      const std::string& k = it.key();
      if (k == "size" || k == "ranges" || k == "regions") substitute_bounds(*it, env);
      else if (it->is_object() || it->is_array()) {
        if (k != "args" && k != "expr" && k != "filter" && k != "values" && k != "bindings")
          continue;
        substitute_structural(*it, env);
      }
    }
  }

  /// §9.7.7: `prefix` and every rename / rebind target is a dotted identifier — segments
  /// `[A-Za-z_][A-Za-z0-9_]*` joined by single dots — and the maps map names to strings.
  static bool is_dotted_identifier(const std::string& s) {
    if (s.empty()) return false;
    bool segment_start = true;
    for (char ch : s) {
      const bool alpha = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || ch == '_';
      const bool digit = ch >= '0' && ch <= '9';
      if (ch == '.') {
        if (segment_start) return false;
        segment_start = true;
      } else if (segment_start ? alpha : (alpha || digit)) {
        segment_start = false;
      } else {
        return false;
      }
    }
    return !segment_start;
  }

  static void check_rename_fields(const json& imp, const std::string& file, const std::string& pointer) {
    if (auto p = imp.find("prefix"); p != imp.end())
      if (!p->is_string() || !is_dotted_identifier(p->get<std::string>()))
        throw Error("template_import_rename_invalid", file, pointer_join(pointer, "prefix"),
                    "the import prefix " + p->dump() + " is not a dotted identifier (letters, "
                    "digits and '_', not starting with a digit, joined by single dots)");
    for (const char* field : {"rename", "rebind"}) {
      auto m = imp.find(field);
      if (m == imp.end()) continue;
      const std::string mp = pointer_join(pointer, field);
      if (!m->is_object())
        throw Error("template_import_rename_invalid", file, mp,
                    std::string("'") + field + "' must map names to new names");
      for (auto it = m->begin(); it != m->end(); ++it)
        if (!it->is_string() || !is_dotted_identifier(it->get<std::string>()))
          throw Error("template_import_rename_invalid", file, pointer_join(mp, it.key()),
                      std::string("'") + field + "' maps '" + it.key() + "' to " + it->dump() +
                          ", which is not a dotted identifier (letters, digits and '_', not "
                          "starting with a digit, joined by single dots)");
    }
  }

  /// §9.7.7: a `rebind` key must occur free in the surviving imported declarations; a declared
  /// name is renamed, not rebound.
  static void check_rebind_keys(const Library& lib, const json& rebind,
                                const std::map<std::string, std::string>& tmpl,
                                const std::map<std::string, std::string>& sets,
                                const std::map<std::string, std::string>& metas,
                                const std::string& file, const std::string& pointer) {
    if (rebind.empty()) return;
    std::set<std::string> free;
    for (const auto& [n, d] : lib.templates) {
      std::set<std::string> names, params;
      for (const auto& p : d.value("params", json::array()))
        if (p.is_string()) params.insert(p.get<std::string>());
      for (const char* site : {"body", "match"})
        if (d.contains(site)) detail::collect_expression_names(d[site], names);
      for (const auto& x : names)
        if (!params.count(x)) free.insert(x);
    }
    for (const auto& is : lib.index_sets)
      for (const char* factor : {"offsets", "values"})
        if (is.is_object() && is.contains(factor) && is[factor].is_string())
          free.insert(is[factor].get<std::string>());
    for (auto it = rebind.begin(); it != rebind.end(); ++it) {
      const std::string& key = it.key();
      if (tmpl.count(key) || sets.count(key) || metas.count(key))
        throw Error("template_import_rebind_unknown_name", file, pointer_join(pointer, key),
                    "'rebind' names '" + key + "', which the library declares; use 'rename' "
                    "for declared names");
      if (!free.count(key))
        throw Error("template_import_rebind_unknown_name", file, pointer_join(pointer, key),
                    "'rebind' names '" + key + "', which occurs free in none of the imported "
                    "templates or index sets");
    }
  }

  void apply_renames(Library& lib, const json& imp, const std::string& file,
                     const std::string& pointer) {
    check_rename_fields(imp, file, pointer);
    const std::string prefix = imp.value("prefix", std::string());
    const json rename = imp.value("rename", json::object());
    const json rebind = imp.value("rebind", json::object());
    if (prefix.empty() && rename.empty() && rebind.empty()) return;

    std::map<std::string, std::string> tmpl, sets, metas;
    auto target = [&](const std::string& n) {
      if (rename.contains(n) && rename[n].is_string()) return rename[n].get<std::string>();
      return prefix.empty() ? n : prefix + "." + n;
    };
    for (auto& t : lib.templates) tmpl[t.first] = target(t.first);
    for (auto it = lib.index_sets.begin(); it != lib.index_sets.end(); ++it) sets[it.key()] = target(it.key());
    for (auto it = lib.open_metaparameters.begin(); it != lib.open_metaparameters.end(); ++it)
      metas[it.key()] = target(it.key());
    for (auto it = rename.begin(); it != rename.end(); ++it)
      if (!tmpl.count(it.key()) && !sets.count(it.key()) && !metas.count(it.key()))
        throw Error("template_import_rename_unknown_name", file, pointer_join(pointer_join(pointer, "rename"), it.key()),
                    "'rename' names '" + it.key() + "', which this import edge does not export");
    for (const auto* ns : {&tmpl, &sets, &metas}) {
      std::set<std::string> seen;
      for (const auto& [from, to] : *ns)
        if (!seen.insert(to).second)
          throw Error("template_import_rename_collision", file, pointer,
                      "renaming maps two names onto '" + to + "'");
    }
    check_rebind_keys(lib, rebind, tmpl, sets, metas, file, pointer_join(pointer, "rebind"));
    std::map<std::string, std::string> free_names(metas);
    for (auto it = rebind.begin(); it != rebind.end(); ++it)
      if (it->is_string()) free_names[it.key()] = it->get<std::string>();

    std::vector<std::pair<std::string, json>> renamed;
    for (auto& [n, d] : lib.templates) {
      std::set<std::string> params;
      for (const auto& p : d.value("params", json::array()))
        if (p.is_string()) params.insert(p.get<std::string>());
      auto f = [&](const std::string& s) -> json {
        if (params.count(s)) return nullptr;
        auto r = free_names.find(s);
        return r == free_names.end() ? json(nullptr) : json(r->second);
      };
      for (const char* site : {"body", "match"})
        if (d.contains(site)) {
          detail::rewrite_expression_names(d[site], f);
          detail::rename_axis_fields(d[site], sets);
          detail::rename_template_refs(d[site], tmpl);
        }
      if (auto w = d.find("where"); w != d.end() && w->is_object())
        for (auto& c : *w)
          if (c.is_object() && c.contains("shape") && c["shape"].is_array())
            for (auto& s : c["shape"])
              if (s.is_string() && sets.count(s.get<std::string>())) s = sets[s.get<std::string>()];
      renamed.emplace_back(tmpl[n], std::move(d));
    }
    lib.templates = std::move(renamed);
    json new_sets = json::object();
    for (auto it = lib.index_sets.begin(); it != lib.index_sets.end(); ++it) {
      json v = it.value();
      detail::rename_axis_fields(v, sets);
      substitute_structural(v, [&] {
        std::map<std::string, json> m;
        for (auto& [a, b] : metas) m[a] = b;
        return m;
      }());
      new_sets[sets[it.key()]] = std::move(v);
    }
    lib.index_sets = std::move(new_sets);
    json new_metas = json::object();
    for (auto it = lib.open_metaparameters.begin(); it != lib.open_metaparameters.end(); ++it)
      new_metas[metas[it.key()]] = it.value();
    lib.open_metaparameters = std::move(new_metas);
  }

  // ---- components ----

  /// Resolves a component's template imports into its own `expression_templates`.
  void resolve_component_imports(json& comp, const fs::path& dir, const std::string& file,
                                 const std::string& pointer, json& doc_index_sets,
                                 json& doc_metaparameters) {
    auto it = comp.find("expression_template_imports");
    if (it == comp.end() || !it->is_array()) return;
    std::vector<std::pair<std::string, json>> merged;
    for (std::size_t i = 0; i < it->size(); ++i) {
      const std::string ip = pointer_join(pointer_join(pointer, "expression_template_imports"), i);
      Library lib = instantiate_import((*it)[i], dir, file, ip);
      for (auto& [n, d] : lib.templates) add_template(merged, n, d, file, ip);
      merge_object(doc_index_sets, lib.index_sets, "template_import_index_set_conflict",
                   "index set", file, ip);
      merge_object(doc_metaparameters, lib.open_metaparameters, "template_import_name_conflict",
                   "metaparameter", file, ip);
    }
    if (auto local = comp.find("expression_templates"); local != comp.end() && local->is_object())
      for (auto t = local->begin(); t != local->end(); ++t)
        add_template(merged, t.key(), t.value(), file, pointer_join(pointer_join(pointer, "expression_templates"), t.key()));
    json templates = json::object();
    json order = json::array();
    for (auto& [n, d] : merged) {
      templates[n] = d;
      order.push_back(n);
    }
    comp["expression_templates"] = std::move(templates);
    comp["$template_order"] = std::move(order);  // effective declaration order (§9.7.4)
    comp.erase("expression_template_imports");
  }

  void for_each_inline_component(json& doc, const std::string& base,
                                 const std::function<void(json&, const std::string&)>& f) {
    for (const char* section : {"models", "reaction_systems"}) {
      auto it = doc.find(section);
      if (it == doc.end() || !it->is_object()) continue;
      for (auto c = it->begin(); c != it->end(); ++c)
        visit_component(c.value(), pointer_join(pointer_join(base, section), c.key()), f);
    }
  }

  void visit_component(json& comp, const std::string& pointer,
                       const std::function<void(json&, const std::string&)>& f) {
    if (!comp.is_object() || comp.contains("ref")) return;
    f(comp, pointer);
    if (auto s = comp.find("subsystems"); s != comp.end() && s->is_object())
      for (auto c = s->begin(); c != s->end(); ++c)
        visit_component(c.value(), pointer_join(pointer_join(pointer, "subsystems"), c.key()), f);
  }

  /// "/models/A/subsystems/B" -> "A.B" (the name a modeller knows the component by).
  static std::string dotted_component_name(const std::string& pointer) {
    std::string out;
    std::size_t i = 0;
    int segment = 0;
    while (i < pointer.size()) {
      const std::size_t next = pointer.find('/', i + 1);
      const std::string part = pointer.substr(i + 1, next == std::string::npos ? std::string::npos : next - i - 1);
      if (segment++ % 2 == 1) out += (out.empty() ? "" : ".") + part;
      i = next == std::string::npos ? pointer.size() : next;
    }
    return out;
  }

  /// §9.7.6: a metaparameter name must not collide with a variable, parameter, species or
  /// index-set name visible in the document (there is no shadowing: substitution would silently
  /// replace the variable by the integer).
  void check_metaparameter_names(json& doc, const json& metaparameters, const json& index_sets,
                                 const std::string& file) {
    if (!metaparameters.is_object() || metaparameters.empty()) return;
    const auto conflict = [&](const std::string& name, const std::string& pointer,
                              const std::string& what) {
      throw Error("metaparameter_name_conflict", file, pointer,
                  "'" + name + "' is both a metaparameter and " + what +
                      "; rename one of them (metaparameters are substituted by name, so the two "
                      "cannot coexist)");
    };
    if (index_sets.is_object())
      for (auto it = index_sets.begin(); it != index_sets.end(); ++it)
        if (metaparameters.contains(it.key()))
          conflict(it.key(), pointer_join("/index_sets", it.key()), "an index set");
    for_each_inline_component(doc, "", [&](json& comp, const std::string& ptr) {
      for (const char* section : {"variables", "species", "parameters"}) {
        auto vars = comp.find(section);
        if (vars == comp.end() || !vars->is_object()) continue;
        for (auto v = vars->begin(); v != vars->end(); ++v)
          if (metaparameters.contains(v.key()))
            conflict(v.key(), pointer_join(pointer_join(ptr, section), v.key()),
                     std::string("a ") + (std::string(section) == "species" ? "species" : "variable") +
                         " of '" + dotted_component_name(ptr) + "'");
      }
    });
  }

  /// Processes one document: template imports, metaparameters, index sets, then refs.
  /// `edge_env` holds metaparameter values bound at the subsystem edge that mounted it.
  void process(json& doc, const fs::path& path, const std::map<std::string, std::int64_t>& edge_env,
               bool root, const std::string& mount_pointer) {
    const std::string file = path.string();
    const fs::path dir = path.parent_path();
    check_esm_version(doc, file);
    json index_sets = doc.value("index_sets", json::object());
    json metaparameters = doc.value("metaparameters", json::object());

    for_each_inline_component(doc, "", [&](json& comp, const std::string& ptr) {
      resolve_component_imports(comp, dir, file, ptr, index_sets, metaparameters);
    });
    check_metaparameter_names(doc, metaparameters, index_sets, file);

    // Close metaparameters: edge bindings, then the loader API (root only), then defaults.
    std::map<std::string, std::int64_t> env;
    for (auto it = metaparameters.begin(); it != metaparameters.end(); ++it) {
      const std::string& name = it.key();
      const std::string mp = pointer_join("/metaparameters", name);
      if (auto e = edge_env.find(name); e != edge_env.end()) {
        env[name] = e->second;
      } else if (auto a = options.metaparameters.find(name); root && a != options.metaparameters.end()) {
        env[name] = a->second;
      } else if (it->is_object() && it->contains("default")) {
        env[name] = fold_metaparameter((*it)["default"], env, file, pointer_join(mp, "default"));
      } else {
        throw Error("metaparameter_unbound", file, mp,
                    "metaparameter '" + name + "' has no value: bind it at the edge that "
                    "imports this file, or give it a default");
      }
    }
    for (const auto& [name, v] : edge_env)
      if (!metaparameters.contains(name))
        throw Error("template_import_unknown_name", file, mount_pointer,
                    "the mounted document declares no metaparameter '" + name + "'");
    if (root)
      for (const auto& [name, v] : options.metaparameters)
        if (!metaparameters.contains(name))
          throw Error("template_import_unknown_name", file, "/metaparameters",
                      "the document declares no metaparameter '" + name + "'");
    if (!env.empty()) {
      std::map<std::string, json> jenv;
      for (auto& [k, v] : env) jenv[k] = v;
      for (const char* section : {"models", "reaction_systems", "expression_templates"})
        if (doc.contains(section)) detail::substitute_metaparameters(doc[section], jenv);
      substitute_structural(index_sets, jenv);
    }
    // Fold index-set sizes into the document registry.
    for (auto it = index_sets.begin(); it != index_sets.end(); ++it) {
      if (!it->is_object()) continue;
      // A categorical set has as many positions as members (its index symbols run 1..n).
      const bool categorical = !it->contains("size") && it->contains("members") && (*it)["members"].is_array();
      if (!it->contains("size") && !categorical) continue;
      const std::int64_t size =
          categorical ? static_cast<std::int64_t>((*it)["members"].size())
                      : fold_metaparameter((*it)["size"], env, file,
                                           pointer_join(pointer_join("/index_sets", it.key()), "size"));
      auto prev = out.index_set_sizes.find(it.key());
      if (prev != out.index_set_sizes.end() && prev->second != size)
        throw Error("subsystem_index_set_conflict", file, pointer_join("/index_sets", it.key()),
                    "index set '" + it.key() + "' has size " + std::to_string(size) +
                        " here but " + std::to_string(prev->second) + " elsewhere");
      out.index_set_sizes[it.key()] = size;
    }
    if (!index_sets.empty()) doc["index_sets"] = index_sets;

    // Component refs, recursively.
    for (const char* section : {"models", "reaction_systems"}) {
      auto it = doc.find(section);
      if (it == doc.end() || !it->is_object()) continue;
      for (auto c = it->begin(); c != it->end(); ++c)
        // A mounted file holds one component, which lands at the mount point itself.
        resolve_refs(c.value(), section, dir, file, pointer_join(pointer_join("", section), c.key()),
                     root ? pointer_join(pointer_join("", section), c.key()) : mount_pointer, env);
    }
  }

  void resolve_refs(json& comp, const std::string& section, const fs::path& dir,
                    const std::string& file, const std::string& pointer,
                    const std::string& global_pointer, const std::map<std::string, std::int64_t>& env) {
    if (!comp.is_object()) return;
    if (comp.contains("ref")) {
      mount(comp, section, dir, file, pointer, global_pointer, env);
      return;
    }
    if (auto s = comp.find("subsystems"); s != comp.end() && s->is_object())
      for (auto c = s->begin(); c != s->end(); ++c)
        resolve_refs(c.value(), "subsystems", dir, file, pointer_join(pointer_join(pointer, "subsystems"), c.key()),
                     global_pointer + pointer_join("/subsystems", c.key()), env);
  }

  void mount(json& comp, const std::string& section, const fs::path& dir, const std::string& file,
             const std::string& pointer, const std::string& global_pointer,
             const std::map<std::string, std::int64_t>& env) {
    if (!comp["ref"].is_string())
      throw Error("unresolved_subsystem_ref", file, pointer, "'ref' must be a file path");
    const std::string ref = comp["ref"].get<std::string>();
    const fs::path path = locate(ref, dir, "unresolved_subsystem_ref", file, pointer);
    check_not_cyclic(path, "subsystem_ref_cycle", "subsystem references", file, pointer);
    // Every mount is its own component instance: files that mount the next one twice, 24 deep,
    // would make 2^24 of them. Refused long before memory runs out.
    if (++mounts > kMaxMounts)
      throw Error("too_many_components", file, pointer,
                  "the document mounts more than " + std::to_string(kMaxMounts) +
                      " component files (each subsystem 'ref' counts once per place it is "
                      "mounted, its own subsystems included): is a file mounted twice at "
                      "every level?");
    StackGuard guard(stack, path);
    json sub = read(path, "unresolved_subsystem_ref", file, pointer);
    if (!sub.is_object())
      throw Error("unresolved_subsystem_ref", file, pointer, "'" + ref + "' is not an ESM document");
    if (sub.contains("coupling_roles"))
      throw Error("subsystem_ref_is_coupling_library", file, pointer,
                  "'" + ref + "' is a coupling library, not a component file");
    const std::size_t n_models = sub.value("models", json::object()).size();
    const std::size_t n_rs = sub.value("reaction_systems", json::object()).size();
    if (n_models + n_rs == 0) {
      if (sub.contains("expression_templates"))
        throw Error("subsystem_ref_is_template_library", file, pointer,
                    "'" + ref + "' is a template library; mount components, import templates");
      throw Error("unresolved_subsystem_ref", file, pointer,
                  "'" + ref + "' holds no model or reaction system" +
                      std::string(sub.contains("data_loaders")
                                      ? " (it still uses the pre-1.0 'data_loaders' block, "
                                        "which esm 1.0 replaced by data_sources)"
                                      : ""));
    }
    if (n_models + n_rs > 1)
      throw Error("ambiguous_subsystem_ref", file, pointer,
                  "'" + ref + "' holds " + std::to_string(n_models + n_rs) +
                      " components; a referenced file must hold exactly one");
    // Subsystem-edge metaparameter bindings fold in the mounting document's environment.
    std::map<std::string, std::int64_t> edge_env;
    if (auto b = comp.find("bindings"); b != comp.end() && b->is_object())
      for (auto it = b->begin(); it != b->end(); ++it)
        edge_env[it.key()] = fold_metaparameter(it.value(), env, file, pointer_join(pointer_join(pointer, "bindings"), it.key()));
    // Edge-injected template imports append to the mounted component's own (§9.7.10).
    json injected = comp.value("expression_template_imports", json::array());
    const std::string key = n_models ? "models" : "reaction_systems";
    if (section != "subsystems" && section != key)
      throw Error("ref_kind_mismatch", file, pointer,
                  "'" + ref + "' holds a " + (n_models ? std::string("model") : std::string("reaction system")) +
                      " but is mounted under '" + section + "'");
    if (!injected.empty()) {
      json& c = sub[key].begin().value();
      json imports = c.value("expression_template_imports", json::array());
      for (auto& i : injected) {
        // Injected refs are relative to the mounting file: make them absolute.
        if (i.is_object() && i.contains("ref") && i["ref"].is_string()) {
          fs::path p(expand_env(i["ref"].get<std::string>()));
          if (p.is_relative() && !is_url(p.string())) i["ref"] = (dir / p).lexically_normal().string();
        }
        imports.push_back(i);
      }
      c["expression_template_imports"] = imports;
    }
    process(sub, path, edge_env, false, global_pointer);
    // Index sets of the mounted file already merged into out.index_set_sizes by process().
    json component = sub[key].begin().value();
    comp = std::move(component);
    out.component_files[global_pointer] = path.string();
    mounted_index_sets.push_back(sub.value("index_sets", json::object()));
    // Data sources are a document registry too (§8): a mounted file's bindings must resolve.
    merge_object(mounted_data_sources, sub.value("data_sources", json::object()),
                 "data_source_conflict", "data source", file, pointer);
  }

  std::vector<json> mounted_index_sets;
  json mounted_data_sources = json::object();

  // ---- coupling imports (§10.10) ----

  bool resolves_to_component(const json& doc, const std::string& dotted) {
    std::vector<std::string> seg;
    std::size_t start = 0;
    for (std::size_t i = 0; i <= dotted.size(); ++i)
      if (i == dotted.size() || dotted[i] == '.') {
        seg.push_back(dotted.substr(start, i - start));
        start = i + 1;
      }
    const json* node = nullptr;
    for (const char* section : {"models", "reaction_systems"})
      if (doc.contains(section) && doc[section].is_object() && doc[section].contains(seg[0]))
        node = &doc[section][seg[0]];
    for (std::size_t i = 1; node && i < seg.size(); ++i) {
      if (!node->contains("subsystems") || !(*node)["subsystems"].contains(seg[i])) return false;
      node = &(*node)["subsystems"][seg[i]];
    }
    return node != nullptr;
  }

  void expand_coupling_imports(json& doc, const fs::path& dir, const std::string& file) {
    auto it = doc.find("coupling");
    if (it == doc.end() || !it->is_array()) return;
    json expanded = json::array();
    for (std::size_t i = 0; i < it->size(); ++i) {
      json& entry = (*it)[i];
      const std::string ep = pointer_join("/coupling", i);
      if (!entry.is_object() || entry.value("type", std::string()) != "coupling_import") {
        expanded.push_back(entry);
        continue;
      }
      const fs::path path = locate(entry.value("ref", std::string()), dir,
                                   "coupling_import_unresolved", file, pointer_join(ep, "ref"));
      json lib = read(path, "coupling_import_unresolved", file, ep);
      if (!lib.is_object() || !lib.contains("coupling_roles"))
        throw Error("coupling_import_not_library", file, ep,
                    "'" + path.string() + "' is not a coupling library (no coupling_roles)");
      for (const char* bad : {"models", "reaction_systems", "data_sources", "domain", "index_sets",
                              "metaparameters", "expression_templates"})
        if (lib.contains(bad))
          throw Error("coupling_library_illegal_payload", file, ep,
                      "coupling library '" + path.string() + "' must not declare '" + bad + "'");
      const json& roles = lib["coupling_roles"];
      const json bind = entry.value("bind", json::object());
      for (auto r = roles.begin(); r != roles.end(); ++r)
        if (!bind.contains(r.key()))
          throw Error("coupling_import_role_unbound", file, pointer_join(ep, "bind"),
                      "role '" + r.key() + "' of the coupling library is not bound");
      std::map<std::string, std::string> role_to;
      for (auto b = bind.begin(); b != bind.end(); ++b) {
        if (!roles.contains(b.key()))
          throw Error("coupling_import_unknown_role", file, pointer_join(pointer_join(ep, "bind"), b.key()),
                      "the coupling library declares no role '" + b.key() + "'");
        if (!b->is_string() || !resolves_to_component(doc, b->get<std::string>()))
          throw Error("coupling_import_bind_not_a_component", file, pointer_join(pointer_join(ep, "bind"), b.key()),
                      "role '" + b.key() + "' is bound to " + b->dump() + ", which is not a model or reaction system");
        role_to[b.key()] = b->get<std::string>();
      }
      auto rebase = [&](const std::string& s) -> std::string {
        const auto dot = s.find('.');
        const std::string head = s.substr(0, dot);
        auto r = role_to.find(head);
        if (r == role_to.end()) return s;
        return dot == std::string::npos ? r->second : r->second + s.substr(dot);
      };
      for (auto edge : lib.value("coupling", json::array())) {
        if (edge.value("type", std::string()) == "coupling_import")
          throw Error("coupling_library_nested_import", file, ep,
                      "coupling library '" + path.string() + "' contains a coupling_import");
        rebase_edge(edge, rebase);
        expanded.push_back(std::move(edge));
      }
    }
    doc["coupling"] = std::move(expanded);
  }

  static void rebase_edge(json& edge, const std::function<std::string(const std::string&)>& rebase) {
    for (const char* k : {"from", "to"})
      if (edge.contains(k) && edge[k].is_string()) edge[k] = rebase(edge[k].get<std::string>());
    if (edge.contains("systems") && edge["systems"].is_array())
      for (auto& s : edge["systems"])
        if (s.is_string()) s = rebase(s.get<std::string>());
    auto names = [&](const std::string& s) -> json {
      const std::string r = rebase(s);
      return r == s ? json(nullptr) : json(r);
    };
    if (edge.contains("transform") && edge["transform"].is_object())
      detail::rewrite_expression_names(edge["transform"], names);
    if (edge.contains("connector") && edge["connector"].contains("equations"))
      for (auto& eq : edge["connector"]["equations"]) {
        for (const char* k : {"from", "to"})
          if (eq.contains(k) && eq[k].is_string()) eq[k] = rebase(eq[k].get<std::string>());
        if (eq.contains("expression")) detail::rewrite_expression_names(eq["expression"], names);
      }
    if (edge.contains("translate") && edge["translate"].is_object()) {
      json t = json::object();
      for (auto it = edge["translate"].begin(); it != edge["translate"].end(); ++it) {
        json v = it.value();
        if (v.is_string()) v = rebase(v.get<std::string>());
        else if (v.is_object() && v.contains("var") && v["var"].is_string())
          v["var"] = rebase(v["var"].get<std::string>());
        t[rebase(it.key())] = v;
      }
      edge["translate"] = t;
    }
  }
};

}  // namespace

namespace {
ResolvedDocument load_unchecked(const std::filesystem::path& file, nlohmann::json raw,
                                const LoadOptions& options);

ResolvedDocument load_guarded(const std::filesystem::path& file, nlohmann::json raw,
                              const LoadOptions& options) {
  try {
    return load_unchecked(file, std::move(raw), options);
  } catch (const nlohmann::json::exception&) {
    // Only a schema-invalid document gets here (a field of the wrong JSON type); the library's
    // own text would mean nothing to a modeller.
    throw Error("invalid_document", file.string(), "",
                "the document does not have the shape the format requires (run 'esi validate' "
                "for located errors)");
  }
}
}  // namespace

ResolvedDocument load_resolved(const std::filesystem::path& file, const LoadOptions& options) {
  return load_guarded(file, read_json_file(file), options);
}

ResolvedDocument load_resolved(const std::filesystem::path& file, nlohmann::json raw,
                               const LoadOptions& options) {
  return load_guarded(file, std::move(raw), options);
}

namespace {
ResolvedDocument load_unchecked(const std::filesystem::path& file, nlohmann::json raw,
                                const LoadOptions& options) {
  ResolvedDocument out;
  out.file = file.string();
  out.raw = std::move(raw);
  if (!out.raw.is_object())
    throw Error("invalid_document", out.file, "", "an ESM document must be a JSON object");
  out.doc = out.raw;
  Resolver r{options, out, {}};
  std::error_code ec;
  const fs::path canonical = fs::weakly_canonical(file, ec);
  // A template library named on its own gets the resolver its importers would run: its import
  // graph is walked (cycles, missing files, name conflicts), not just its own JSON checked.
  const bool has_components = out.raw.contains("models") || out.raw.contains("reaction_systems");
  if (!has_components && out.raw.contains("expression_template_imports"))
    (void)r.load_library(canonical.empty() ? file : canonical, out.file, "");
  Resolver::StackGuard guard(r.stack, canonical);
  r.process(out.doc, canonical.empty() ? file : canonical, {}, true, "");
  // process() already merged the mounted documents' index sets into index_set_sizes; keep
  // their declarations in the merged registry too.
  json sets = out.doc.value("index_sets", json::object());
  for (const auto& s : r.mounted_index_sets)
    for (auto it = s.begin(); it != s.end(); ++it)
      if (!sets.contains(it.key())) sets[it.key()] = it.value();
  if (!sets.empty()) out.doc["index_sets"] = sets;
  if (!r.mounted_data_sources.empty()) {
    json sources = out.doc.value("data_sources", json::object());
    merge_object(sources, r.mounted_data_sources, "data_source_conflict", "data source", out.file,
                 "/data_sources");
    out.doc["data_sources"] = std::move(sources);
  }
  r.expand_coupling_imports(out.doc, canonical.parent_path(), out.file);
  out.library_only = !out.doc.contains("models") && !out.doc.contains("reaction_systems");
  for (const char* section : {"models", "reaction_systems"})
    if (auto it = out.doc.find(section); it != out.doc.end() && it->is_object())
      for (auto c = it->begin(); c != it->end(); ++c) {
        const std::string p = pointer_join(pointer_join("", section), c.key());
        if (!out.component_files.count(p)) out.component_files[p] = out.file;
      }
  return out;
}

}  // namespace

}  // namespace esi::esm
