// Our own JSON Schema (draft 2020-12) validator, sized for the ESM schema.
//
// Why it exists: the JSON Schema libraries Debian packages for C++ stop at draft 7, and the ESM
// schema is draft 2020-12 ("$defs", "prefixItems", "$ref" next to sibling keywords). It is also
// the layer the format's conformance suite pins in ajv's terms (keyword + instance path, one
// finding per failing keyword with allErrors), so we mimic ajv's reporting here.
//
// How it works: JsonSchema::compile turns the schema document into a tree of Nodes once (every
// "$ref" resolved to a Node pointer, every "pattern" compiled to a std::regex), so validate()
// does no JSON-pointer lookups and is a plain const walk (thread-safe). The walk runs in one of
// two modes: collecting (a findings sink is given; every keyword is checked, like ajv's
// allErrors) or probing (no sink; the first failure ends the node). oneOf/anyOf/not/if probe
// their branches first and only re-run the failing branches in collecting mode when the whole
// combinator fails, so a valid document never builds a message and a failing one reports the
// nested branch errors the way ajv does. Instance paths live on the C++ stack as a linked list
// of segments and become strings only when a finding is recorded.
//
// Supported: type, enum, const, required, properties, patternProperties, additionalProperties,
// minProperties/maxProperties, items, prefixItems, contains, minItems/maxItems, uniqueItems,
// minLength/maxLength, pattern, minimum/maximum/exclusiveMinimum/exclusiveMaximum, allOf, anyOf,
// oneOf, not, if/then/else, $ref ("#..." JSON pointers, optionally prefixed by the root $id),
// $defs/definitions, boolean schemas. "format" is an annotation (no finding, as in ajv without
// ajv-formats); other keywords are ignored. For "contains" only the contains finding is kept
// (ajv also keeps each item's errors).
#include "esi/esm/schema.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <optional>
#include <regex>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <tuple>
#include <utility>

#include "esi/core/error.hpp"
#include "esi/core/json.hpp"

namespace esi::esm {
namespace {

using nlohmann::json;

// ---------------------------------------------------------------------------------------------
// The compiled tree

enum TypeBit : unsigned {
  kNull = 1u << 0,
  kBoolean = 1u << 1,
  kObject = 1u << 2,
  kArray = 1u << 3,
  kNumber = 1u << 4,
  kInteger = 1u << 5,
  kString = 1u << 6,
};

constexpr std::pair<std::string_view, unsigned> kTypeNames[] = {
    {"null", kNull},     {"boolean", kBoolean}, {"object", kObject}, {"array", kArray},
    {"number", kNumber}, {"integer", kInteger}, {"string", kString},
};

struct Limit {
  double value = 0;
  std::string text;  ///< how the limit is written in messages ("0", "0.5")
};

struct Pattern {
  std::string source;
  std::regex re;
};

struct Node {
  std::string path;         ///< "#/$defs/Model": the prefix of every schemaPath it reports
  bool reject_all = false;  ///< the boolean schema `false`

  unsigned types = 0;                 ///< TypeBit mask; 0 = any type
  std::string type_names;             ///< "string,null", for the message
  const json* const_value = nullptr;  ///< points into the Impl's schema document
  const json* enum_values = nullptr;

  std::vector<std::string> required;
  std::unordered_map<std::string, const Node*> properties;
  std::vector<std::pair<std::string, const Node*>> discriminators;  ///< const/enum properties
  std::vector<std::pair<Pattern, const Node*>> pattern_properties;
  bool additional_forbidden = false;  ///< additionalProperties: false
  const Node* additional = nullptr;   ///< additionalProperties: {schema}
  std::optional<std::size_t> min_properties, max_properties;

  std::vector<const Node*> prefix_items;
  const Node* items = nullptr;
  const Node* contains = nullptr;
  std::optional<std::size_t> min_items, max_items;
  bool unique_items = false;

  std::optional<std::size_t> min_length, max_length;
  std::optional<Pattern> pattern;

  std::optional<Limit> minimum, maximum, exclusive_minimum, exclusive_maximum;

  std::vector<const Node*> all_of, any_of, one_of;
  const Node* not_schema = nullptr;
  const Node* if_schema = nullptr;
  const Node* then_schema = nullptr;
  const Node* else_schema = nullptr;

  const Node* ref = nullptr;
  std::string ref_text;  ///< the "$ref" string until it is resolved
};

[[noreturn]] void invalid_schema(const std::string& pointer, const std::string& message) {
  throw Error("schema_invalid", "", pointer, message, Layer::Schema);
}

std::string escape_token(std::string_view token) {
  return pointer_join("", token).substr(1);
}

std::string limit_text(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15) {
    return std::to_string(static_cast<long long>(v));
  }
  return json(v).dump();
}

// ---------------------------------------------------------------------------------------------
// Compiling

class Compiler {
 public:
  Compiler(const json& root, std::deque<Node>& nodes) : root_(root), nodes_(nodes) {
    if (root.is_object()) {
      auto id = root.find("$id");
      if (id != root.end() && id->is_string()) root_id_ = id->get<std::string>();
    }
  }

  /// Compiles the schema at JSON pointer `ptr` ("" = the root), once per pointer.
  Node* compile(const json& s, const std::string& ptr) {
    if (auto it = by_pointer_.find(ptr); it != by_pointer_.end()) return it->second;
    Node& n = nodes_.emplace_back();
    n.path = "#" + ptr;
    by_pointer_.emplace(ptr, &n);
    if (s.is_boolean()) {
      n.reject_all = !s.get<bool>();
      return &n;
    }
    if (!s.is_object()) invalid_schema(ptr, "a schema must be an object or a boolean");

    for (const char* defs : {"$defs", "definitions"}) {
      if (const json* d = member(s, defs)) {
        if (!d->is_object()) invalid_schema(ptr + "/" + defs, "must be an object of schemas");
        for (const auto& [name, sub] : d->items()) sub_schema(sub, ptr + "/" + defs, name);
      }
    }
    compile_generic(n, s, ptr);
    compile_object(n, s, ptr);
    compile_array(n, s, ptr);
    compile_scalar(n, s, ptr);
    compile_applicators(n, s, ptr);
    return &n;
  }

  /// Points every "$ref" at its node; compiles targets that are not yet nodes.
  void resolve_refs() {
    for (std::size_t i = 0; i < pending_.size(); ++i) {  // compiling may append more
      Node* n = pending_[i];
      std::string ref = n->ref_text;
      if (!root_id_.empty() && ref.rfind(root_id_, 0) == 0) ref.erase(0, root_id_.size());
      const std::string where = n->path.substr(1) + "/$ref";
      if (ref.empty() || ref[0] != '#') {
        invalid_schema(where, "unsupported $ref '" + n->ref_text + "' (only '#...' pointers)");
      }
      const std::string ptr = percent_decode(ref.substr(1), where);
      if (auto it = by_pointer_.find(ptr); it != by_pointer_.end()) {
        n->ref = it->second;
        continue;
      }
      const json* target = json_at(root_, ptr);
      if (!target) invalid_schema(where, "$ref '" + n->ref_text + "' does not resolve");
      n->ref = compile(*target, ptr);
    }
  }

 private:
  static const json* member(const json& s, const char* key) {
    auto it = s.find(key);
    return it == s.end() ? nullptr : &*it;
  }

  Node* sub_schema(const json& s, const std::string& ptr, std::string_view token) {
    return compile(s, ptr + "/" + escape_token(token));
  }

  std::vector<const Node*> schema_list(const json& s, const std::string& ptr, const char* kw) {
    std::vector<const Node*> out;
    const json* list = member(s, kw);
    if (!list) return out;
    if (!list->is_array() || list->empty()) {
      invalid_schema(ptr + "/" + kw, "must be a non-empty array of schemas");
    }
    for (std::size_t i = 0; i < list->size(); ++i) {
      out.push_back(sub_schema((*list)[i], ptr + "/" + kw, std::to_string(i)));
    }
    return out;
  }

  const Node* optional_schema(const json& s, const std::string& ptr, const char* kw) {
    const json* sub = member(s, kw);
    return sub ? sub_schema(*sub, ptr, kw) : nullptr;
  }

  static std::optional<std::size_t> count(const json& s, const std::string& ptr, const char* kw) {
    const json* v = member(s, kw);
    if (!v) return std::nullopt;
    if (v->is_number() && v->get<double>() >= 0 &&
        v->get<double>() == std::floor(v->get<double>())) {
      return static_cast<std::size_t>(v->get<double>());
    }
    invalid_schema(ptr + "/" + kw, "must be a non-negative integer");
  }

  static std::optional<Limit> limit(const json& s, const std::string& ptr, const char* kw) {
    const json* v = member(s, kw);
    if (!v) return std::nullopt;
    if (!v->is_number()) invalid_schema(ptr + "/" + kw, "must be a number");
    return Limit{v->get<double>(), limit_text(v->get<double>())};
  }

  static Pattern regex(const json& v, const std::string& ptr) {
    if (!v.is_string()) invalid_schema(ptr, "a pattern must be a string");
    try {
      return Pattern{v.get<std::string>(),
                     std::regex(v.get<std::string>(), std::regex::ECMAScript)};
    } catch (const std::regex_error& e) {
      invalid_schema(ptr, "invalid regular expression: " + std::string(e.what()));
    }
  }

  static std::string percent_decode(const std::string& s, const std::string& where) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i] != '%') {
        out += s[i];
        continue;
      }
      if (i + 2 >= s.size() || !std::isxdigit(static_cast<unsigned char>(s[i + 1])) ||
          !std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
        invalid_schema(where, "bad percent-encoding in $ref");
      }
      out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    }
    return out;
  }

  void compile_generic(Node& n, const json& s, const std::string& ptr) {
    if (const json* t = member(s, "type")) {
      const json list = t->is_array() ? *t : json::array({*t});
      for (const json& name : list) {
        unsigned bit = 0;
        for (const auto& [tn, b] : kTypeNames) {
          if (name.is_string() && name.get_ref<const std::string&>() == tn) bit = b;
        }
        if (bit == 0) invalid_schema(ptr + "/type", "unknown type " + name.dump());
        n.types |= bit;
        if (!n.type_names.empty()) n.type_names += ',';
        n.type_names += name.get<std::string>();
      }
    }
    n.const_value = member(s, "const");
    if ((n.enum_values = member(s, "enum")) && !n.enum_values->is_array()) {
      invalid_schema(ptr + "/enum", "must be an array");
    }
    if (const json* r = member(s, "$ref")) {
      if (!r->is_string()) invalid_schema(ptr + "/$ref", "must be a string");
      n.ref_text = r->get<std::string>();
      pending_.push_back(&n);
    }
  }

  void compile_object(Node& n, const json& s, const std::string& ptr) {
    if (const json* req = member(s, "required")) {
      if (!req->is_array()) invalid_schema(ptr + "/required", "must be an array of strings");
      for (const json& name : *req) {
        if (!name.is_string()) invalid_schema(ptr + "/required", "must be an array of strings");
        n.required.push_back(name.get<std::string>());
      }
    }
    if (const json* props = member(s, "properties")) {
      if (!props->is_object()) invalid_schema(ptr + "/properties", "must be an object");
      for (const auto& [name, sub] : props->items()) {
        const Node* child = sub_schema(sub, ptr + "/properties", name);
        n.properties.emplace(name, child);
        if (sub.is_object() && (sub.contains("const") || sub.contains("enum"))) {
          n.discriminators.emplace_back(name, child);
        }
      }
    }
    if (const json* pp = member(s, "patternProperties")) {
      if (!pp->is_object()) invalid_schema(ptr + "/patternProperties", "must be an object");
      for (const auto& [re, sub] : pp->items()) {
        const std::string at = ptr + "/patternProperties/" + escape_token(re);
        n.pattern_properties.emplace_back(regex(json(re), at), compile(sub, at));
      }
    }
    if (const json* ap = member(s, "additionalProperties")) {
      if (ap->is_boolean()) {
        n.additional_forbidden = !ap->get<bool>();
      } else {
        n.additional = sub_schema(*ap, ptr, "additionalProperties");
      }
    }
    n.min_properties = count(s, ptr, "minProperties");
    n.max_properties = count(s, ptr, "maxProperties");
  }

  void compile_array(Node& n, const json& s, const std::string& ptr) {
    if (const json* prefix = member(s, "prefixItems")) {
      if (!prefix->is_array()) invalid_schema(ptr + "/prefixItems", "must be an array");
      n.prefix_items = schema_list(s, ptr, "prefixItems");
    }
    if (const json* items = member(s, "items")) {
      if (items->is_array()) invalid_schema(ptr + "/items", "draft 2020-12 uses prefixItems");
      n.items = sub_schema(*items, ptr, "items");
    }
    n.contains = optional_schema(s, ptr, "contains");
    n.min_items = count(s, ptr, "minItems");
    n.max_items = count(s, ptr, "maxItems");
    if (const json* u = member(s, "uniqueItems"))
      n.unique_items = u->is_boolean() && u->get<bool>();
  }

  void compile_scalar(Node& n, const json& s, const std::string& ptr) {
    n.min_length = count(s, ptr, "minLength");
    n.max_length = count(s, ptr, "maxLength");
    if (const json* p = member(s, "pattern")) n.pattern = regex(*p, ptr + "/pattern");
    n.minimum = limit(s, ptr, "minimum");
    n.maximum = limit(s, ptr, "maximum");
    n.exclusive_minimum = limit(s, ptr, "exclusiveMinimum");
    n.exclusive_maximum = limit(s, ptr, "exclusiveMaximum");
  }

  void compile_applicators(Node& n, const json& s, const std::string& ptr) {
    n.all_of = schema_list(s, ptr, "allOf");
    n.any_of = schema_list(s, ptr, "anyOf");
    n.one_of = schema_list(s, ptr, "oneOf");
    n.not_schema = optional_schema(s, ptr, "not");
    n.if_schema = optional_schema(s, ptr, "if");
    n.then_schema = optional_schema(s, ptr, "then");
    n.else_schema = optional_schema(s, ptr, "else");
  }

  const json& root_;
  std::deque<Node>& nodes_;
  std::string root_id_;
  std::unordered_map<std::string, Node*> by_pointer_;
  std::vector<Node*> pending_;
};

// ---------------------------------------------------------------------------------------------
// Validating

/// One step of the instance path, kept on the stack: an object key or an array index.
struct PathSeg {
  const PathSeg* parent;
  const std::string* key;  ///< nullptr for an array index
  std::size_t index;
};

std::string render(const PathSeg* at) {
  std::vector<const PathSeg*> chain;
  for (; at; at = at->parent) chain.push_back(at);
  std::string out;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    out = (*it)->key ? pointer_join(out, *(*it)->key) : pointer_join(out, (*it)->index);
  }
  return out;
}

unsigned type_bits(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return kNull;
    case json::value_t::boolean:
      return kBoolean;
    case json::value_t::object:
      return kObject;
    case json::value_t::array:
      return kArray;
    case json::value_t::string:
      return kString;
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return kNumber | kInteger;
    case json::value_t::number_float: {
      const double d = v.get<double>();
      return std::isfinite(d) && d == std::floor(d) ? kNumber | kInteger : kNumber;
    }
    default:
      return 0;
  }
}

std::size_t code_points(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

using Findings = std::vector<SchemaFinding>;

void report(Findings& out, const Node& n, const char* keyword, const PathSeg* at,
            std::string message) {
  out.push_back(SchemaFinding{keyword, render(at), n.path + "/" + keyword, std::move(message)});
}

// Records a failing keyword of node `n`; without a sink (probing) the node fails at once.
#define ESI_SCHEMA_FAIL(keyword, message)  \
  do {                                     \
    ok = false;                            \
    if (!out) return false;                \
    report(*out, n, keyword, at, message); \
  } while (false)

// A subschema that failed: its own findings are already recorded.
#define ESI_SCHEMA_SUB(call)  \
  do {                        \
    if (!(call)) {            \
      ok = false;             \
      if (!out) return false; \
    }                         \
  } while (false)

bool check(const Node& n, const json& v, const PathSeg* at, Findings* out);
bool report_branches(const std::vector<const Node*>& branches, const std::vector<bool>& passed,
                     const json& v, const PathSeg* at, Findings& out);

bool check_object(const Node& n, const json& v, const PathSeg* at, Findings* out) {
  bool ok = true;
  for (const std::string& name : n.required) {
    if (!v.contains(name))
      ESI_SCHEMA_FAIL("required", "must have required property '" + name + "'");
  }
  if (n.min_properties && v.size() < *n.min_properties) {
    ESI_SCHEMA_FAIL("minProperties", "must NOT have fewer than " +
                                         std::to_string(*n.min_properties) + " properties");
  }
  if (n.max_properties && v.size() > *n.max_properties) {
    ESI_SCHEMA_FAIL("maxProperties",
                    "must NOT have more than " + std::to_string(*n.max_properties) + " properties");
  }
  // When probing, discriminators ("kind": {"const": ...}) go first, so a oneOf branch for
  // another variant fails before its large subtrees are walked.
  if (!out) {
    for (const auto& [name, sub] : n.discriminators) {
      auto it = v.find(name);
      if (it != v.end() && !check(*sub, *it, nullptr, nullptr)) return false;
    }
  }
  for (auto it = v.begin(); it != v.end(); ++it) {
    const PathSeg seg{at, &it.key(), 0};
    bool matched = false;
    if (auto p = n.properties.find(it.key()); p != n.properties.end()) {
      matched = true;
      ESI_SCHEMA_SUB(check(*p->second, *it, &seg, out));
    }
    for (const auto& [pattern, sub] : n.pattern_properties) {
      if (!std::regex_search(it.key(), pattern.re)) continue;
      matched = true;
      ESI_SCHEMA_SUB(check(*sub, *it, &seg, out));
    }
    if (matched) continue;
    if (n.additional_forbidden) {
      // ajv's message; the offending name, which ajv keeps in params, is appended.
      ESI_SCHEMA_FAIL("additionalProperties",
                      "must NOT have additional properties ('" + it.key() + "')");
    } else if (n.additional) {
      ESI_SCHEMA_SUB(check(*n.additional, *it, &seg, out));
    }
  }
  return ok;
}

bool check_array(const Node& n, const json& v, const PathSeg* at, Findings* out) {
  bool ok = true;
  if (n.min_items && v.size() < *n.min_items) {
    ESI_SCHEMA_FAIL("minItems",
                    "must NOT have fewer than " + std::to_string(*n.min_items) + " items");
  }
  if (n.max_items && v.size() > *n.max_items) {
    ESI_SCHEMA_FAIL("maxItems",
                    "must NOT have more than " + std::to_string(*n.max_items) + " items");
  }
  if (n.unique_items) {
    for (std::size_t j = 1; j < v.size(); ++j) {
      for (std::size_t i = 0; i < j; ++i) {
        if (v[i] != v[j]) continue;
        ESI_SCHEMA_FAIL("uniqueItems", "must NOT have duplicate items (items ## " +
                                           std::to_string(j) + " and " + std::to_string(i) +
                                           " are identical)");
        j = v.size();  // one finding per array, like ajv
        break;
      }
    }
  }
  for (std::size_t i = 0; i < v.size(); ++i) {
    const Node* sub = i < n.prefix_items.size() ? n.prefix_items[i] : n.items;
    if (!sub) continue;
    const PathSeg seg{at, nullptr, i};
    ESI_SCHEMA_SUB(check(*sub, v[i], &seg, out));
  }
  if (n.contains) {
    bool found = false;
    for (std::size_t i = 0; i < v.size() && !found; ++i) {
      const PathSeg seg{at, nullptr, i};
      found = check(*n.contains, v[i], &seg, nullptr);
    }
    if (!found) ESI_SCHEMA_FAIL("contains", "must contain at least 1 valid item(s)");
  }
  return ok;
}

bool check_scalar(const Node& n, const json& v, const PathSeg* at, Findings* out) {
  bool ok = true;
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    if (n.min_length || n.max_length) {
      const std::size_t len = code_points(s);
      if (n.min_length && len < *n.min_length) {
        ESI_SCHEMA_FAIL("minLength", "must NOT have fewer than " + std::to_string(*n.min_length) +
                                         " characters");
      }
      if (n.max_length && len > *n.max_length) {
        ESI_SCHEMA_FAIL("maxLength",
                        "must NOT have more than " + std::to_string(*n.max_length) + " characters");
      }
    }
    if (n.pattern && !std::regex_search(s, n.pattern->re)) {
      ESI_SCHEMA_FAIL("pattern", "must match pattern \"" + n.pattern->source + "\"");
    }
  } else if (v.is_number()) {
    const double d = v.get<double>();
    if (n.minimum && !(d >= n.minimum->value))
      ESI_SCHEMA_FAIL("minimum", "must be >= " + n.minimum->text);
    if (n.maximum && !(d <= n.maximum->value))
      ESI_SCHEMA_FAIL("maximum", "must be <= " + n.maximum->text);
    if (n.exclusive_minimum && !(d > n.exclusive_minimum->value)) {
      ESI_SCHEMA_FAIL("exclusiveMinimum", "must be > " + n.exclusive_minimum->text);
    }
    if (n.exclusive_maximum && !(d < n.exclusive_maximum->value)) {
      ESI_SCHEMA_FAIL("exclusiveMaximum", "must be < " + n.exclusive_maximum->text);
    }
  }
  return ok;
}

bool check_applicators(const Node& n, const json& v, const PathSeg* at, Findings* out) {
  bool ok = true;
  if (n.ref) ESI_SCHEMA_SUB(check(*n.ref, v, at, out));
  for (const Node* sub : n.all_of) ESI_SCHEMA_SUB(check(*sub, v, at, out));
  if (n.if_schema && (n.then_schema || n.else_schema)) {
    const bool cond = check(*n.if_schema, v, at, nullptr);
    const Node* branch = cond ? n.then_schema : n.else_schema;
    if (branch && !check(*branch, v, at, out)) {
      ESI_SCHEMA_FAIL("if", cond ? "must match \"then\" schema" : "must match \"else\" schema");
    }
  }
  if (!n.any_of.empty()) {
    bool any = false;
    for (std::size_t i = 0; i < n.any_of.size() && !any; ++i)
      any = check(*n.any_of[i], v, at, nullptr);
    if (!any) {
      const bool summarized = out && report_branches(n.any_of, {}, v, at, *out);
      ESI_SCHEMA_FAIL("anyOf", "must match a schema in anyOf");
      if (summarized) out->back().alternative = true;
    }
  }
  if (!n.one_of.empty()) {
    int passing = 0;
    std::uint64_t passed = 0;  // which of the first 64 branches passed
    for (std::size_t i = 0; i < n.one_of.size() && (passing < 2 || out); ++i) {
      if (!check(*n.one_of[i], v, at, nullptr)) continue;
      ++passing;
      if (i < 64) passed |= std::uint64_t{1} << i;
    }
    if (passing != 1) {
      std::vector<bool> branch_passed(n.one_of.size());
      for (std::size_t i = 0; out && i < n.one_of.size(); ++i)
        branch_passed[i] = i < 64 ? (passed >> i) & 1 : check(*n.one_of[i], v, at, nullptr);
      const bool summarized = out && report_branches(n.one_of, branch_passed, v, at, *out);
      ESI_SCHEMA_FAIL("oneOf", "must match exactly one schema in oneOf");
      if (summarized) out->back().alternative = true;
    }
  }
  if (n.not_schema && check(*n.not_schema, v, at, nullptr))
    ESI_SCHEMA_FAIL("not", "must NOT be valid");
  return ok;
}

std::size_t pointer_depth(const std::string& pointer) {
  return static_cast<std::size_t>(std::count(pointer.begin(), pointer.end(), '/'));
}

/// Like ajv, records the findings of every failing branch of a oneOf/anyOf; unlike ajv, marks
/// all but the branch the instance came closest to as `alternative`, so a person reads one
/// branch's complaints rather than every branch's. Closest: the fewest shape mismatches
/// (type, const, enum, required, additionalProperties) on the instance itself or its direct
/// members (a wrong "op" or "kind", or members the branch does not know, mean the wrong
/// branch; a mistake deep inside means the right one), then the fewest findings, then the first;
/// a branch that does not take the node's JSON type at all loses to every one that does. When some branch passed (a oneOf
/// matching several), every branch finding is alternative. Returns true when the chosen branch
/// has findings of its own (the combinator's summary finding is then alternative too).
bool report_branches(const std::vector<const Node*>& branches, const std::vector<bool>& passed,
                     const json& v, const PathSeg* at, Findings& out) {
  const std::size_t depth = pointer_depth(render(at));
  // Score per branch, compared lexicographically: a JSON type the branch does not take at all,
  // then shape mismatches on the node or its direct members, then the number of findings.
  using Score = std::tuple<bool, std::size_t, std::size_t>;
  std::size_t best = branches.size();
  Score best_score{};
  std::vector<Findings> found(branches.size());
  for (std::size_t i = 0; i < branches.size(); ++i) {
    if (i < passed.size() && passed[i]) continue;
    check(*branches[i], v, at, &found[i]);
    bool wrong_type = false;
    std::size_t shallow = 0;
    for (const SchemaFinding& f : found[i]) {
      const std::size_t d = pointer_depth(f.instance_path);
      wrong_type = wrong_type || (f.keyword == "type" && d == depth);
      const bool mismatch = f.keyword == "type" || f.keyword == "const" || f.keyword == "enum" ||
                            f.keyword == "required" || f.keyword == "additionalProperties";
      if (mismatch && d <= depth + 1) ++shallow;
    }
    const Score score{wrong_type, shallow, found[i].size()};
    if (best == branches.size() || score < best_score) {
      best = i;
      best_score = score;
    }
  }
  const std::size_t best_count = best < branches.size() ? std::get<2>(best_score) : 0;
  // A oneOf that matched several branches: the failing ones say nothing about the problem.
  if (std::find(passed.begin(), passed.end(), true) != passed.end()) best = branches.size();
  for (std::size_t i = 0; i < branches.size(); ++i)
    for (SchemaFinding& f : found[i]) {
      f.alternative = f.alternative || i != best;
      out.push_back(std::move(f));
    }
  return best < branches.size() && best_count > 0;
}

// Cheap keywords first, so that probing fails fast; the applicators last.
bool check(const Node& n, const json& v, const PathSeg* at, Findings* out) {
  bool ok = true;
  if (n.reject_all) ESI_SCHEMA_FAIL("false schema", "boolean schema is false");
  if (n.types && !(type_bits(v) & n.types)) ESI_SCHEMA_FAIL("type", "must be " + n.type_names);
  if (n.const_value && v != *n.const_value) ESI_SCHEMA_FAIL("const", "must be equal to constant");
  if (n.enum_values) {
    bool found = false;
    for (const json& e : *n.enum_values) found = found || e == v;
    if (!found) ESI_SCHEMA_FAIL("enum", "must be equal to one of the allowed values");
  }
  if (v.is_object()) {
    ESI_SCHEMA_SUB(check_object(n, v, at, out));
  } else if (v.is_array()) {
    ESI_SCHEMA_SUB(check_array(n, v, at, out));
  } else {
    ESI_SCHEMA_SUB(check_scalar(n, v, at, out));
  }
  ESI_SCHEMA_SUB(check_applicators(n, v, at, out));
  return ok;
}

#undef ESI_SCHEMA_FAIL
#undef ESI_SCHEMA_SUB

}  // namespace

// ---------------------------------------------------------------------------------------------
// Public API

struct JsonSchema::Impl {
  json document;  ///< the schema text; const/enum nodes point into it
  std::deque<Node> nodes;
  const Node* root = nullptr;
};

JsonSchema::JsonSchema(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
JsonSchema::JsonSchema(JsonSchema&&) noexcept = default;
JsonSchema& JsonSchema::operator=(JsonSchema&&) noexcept = default;
JsonSchema::~JsonSchema() = default;

JsonSchema JsonSchema::compile(nlohmann::json schema) {
  auto impl = std::make_unique<Impl>();
  impl->document = std::move(schema);
  Compiler compiler(impl->document, impl->nodes);
  impl->root = compiler.compile(impl->document, "");
  compiler.resolve_refs();
  return JsonSchema(std::move(impl));
}

std::vector<SchemaFinding> JsonSchema::validate(const nlohmann::json& instance) const {
  ESI_ASSERT(impl_ != nullptr);  // not a moved-from schema
  std::vector<SchemaFinding> findings;
  check(*impl_->root, instance, nullptr, &findings);
  return findings;
}

std::optional<std::filesystem::path> locate_esm_schema() {
  std::error_code ec;
  if (const char* env = std::getenv("ESI_SCHEMA"); env && *env) {
    std::filesystem::path p(env);
    if (std::filesystem::is_regular_file(p, ec)) return p;
  }
#ifdef ESI_INSTALLED_SCHEMA_FROM_BIN
  // The copy `cmake --install` puts beside an installed esi (a moved prefix keeps it).
  if (const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec); !ec) {
    const auto installed = (exe.parent_path() / ESI_INSTALLED_SCHEMA_FROM_BIN).lexically_normal();
    if (std::filesystem::is_regular_file(installed, ec)) return installed;
  }
#endif
#ifdef ESI_DEFAULT_SCHEMA
  std::filesystem::path fallback(ESI_DEFAULT_SCHEMA);
  if (std::filesystem::is_regular_file(fallback, ec)) return fallback;
#endif
  return std::nullopt;
}

std::string schema_not_found_message() {
  std::string where;
  if (const char* env = std::getenv("ESI_SCHEMA"); env && *env)
    where = "ESI_SCHEMA names '" + std::string(env) + "', which is not a file";
  else
    where = "ESI_SCHEMA is not set";
#ifdef ESI_DEFAULT_SCHEMA
  where += ", and the build's default '" ESI_DEFAULT_SCHEMA "' does not exist";
#endif
#ifdef ESI_INSTALLED_SCHEMA_FROM_BIN
  where += ", nor is there an installed copy at <esi's folder>/" ESI_INSTALLED_SCHEMA_FROM_BIN;
#endif
  return "the ESM JSON schema (esm-schema.json) was not found (" + where +
         "), so documents are not checked against it; set ESI_SCHEMA to its path";
}

const JsonSchema* esm_schema() {
  // A throwing initializer leaves the static uninitialized, so a later call tries again.
  static const std::unique_ptr<const JsonSchema> schema =
      []() -> std::unique_ptr<const JsonSchema> {
    const auto path = locate_esm_schema();
    if (!path) return nullptr;
    try {
      return std::make_unique<const JsonSchema>(JsonSchema::compile(read_json_file(*path)));
    } catch (const Error& e) {
      Diagnostic d = e.diagnostic();
      if (d.code != "schema_invalid") d.message = "cannot read the ESM schema: " + d.message;
      d.code = "schema_invalid";
      d.file = path->string();
      d.layer = Layer::Schema;
      throw Error(std::move(d));
    }
  }();
  return schema.get();
}

}  // namespace esi::esm
