// Tests of the JSON Schema engine (src/esm/checks/schema.cpp): keyword semantics on small inline
// schemas, then the ESM schema against the corpus (conformance fixtures and real documents).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "esi/core/error.hpp"
#include "esi/core/json.hpp"
#include "esi/esm/load.hpp"
#include "esi/esm/schema.hpp"

namespace fs = std::filesystem;
using esi::esm::JsonSchema;
using esi::esm::SchemaFinding;
using nlohmann::json;

namespace {

std::vector<SchemaFinding> run(const json& schema, const json& instance) {
  return JsonSchema::compile(schema).validate(instance);
}

std::string describe(const std::vector<SchemaFinding>& findings) {
  std::ostringstream out;
  for (const auto& f : findings) {
    out << "\n  " << f.keyword << " at '" << f.instance_path << "' (" << f.schema_path
        << "): " << f.message;
  }
  return out.str();
}

std::size_t count_of(const std::vector<SchemaFinding>& findings, const std::string& keyword,
                     const std::string& path) {
  return static_cast<std::size_t>(std::count_if(
      findings.begin(), findings.end(),
      [&](const auto& f) { return f.keyword == keyword && f.instance_path == path; }));
}

bool has(const std::vector<SchemaFinding>& findings, const std::string& keyword,
         const std::string& path) {
  return count_of(findings, keyword, path) > 0;
}

const SchemaFinding* find_finding(const std::vector<SchemaFinding>& findings,
                                  const std::string& keyword, const std::string& path) {
  for (const auto& f : findings) {
    if (f.keyword == keyword && f.instance_path == path) return &f;
  }
  return nullptr;
}

void expect_schema_invalid(const json& schema, const std::string& why) {
  try {
    (void)JsonSchema::compile(schema);
    ADD_FAILURE() << "compiled a malformed schema: " << why << "\n" << schema.dump();
  } catch (const esi::Error& e) {
    EXPECT_EQ(e.code(), "schema_invalid") << why;
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Keyword semantics

TEST(JsonSchemaKeywords, TypeIncludingIntegerVersusNumber) {
  const json s = {{"type", "integer"}};
  EXPECT_TRUE(run(s, 3).empty());
  EXPECT_TRUE(run(s, json::parse("3.0")).empty()) << "a zero fraction is an integer";
  EXPECT_TRUE(run(s, -7).empty());
  const auto f = run(s, 3.5);
  ASSERT_EQ(f.size(), 1u) << describe(f);
  EXPECT_EQ(f[0].keyword, "type");
  EXPECT_EQ(f[0].instance_path, "");
  EXPECT_EQ(f[0].schema_path, "#/type");
  EXPECT_EQ(f[0].message, "must be integer");

  EXPECT_TRUE(run({{"type", "number"}}, 3).empty()) << "every integer is a number";
  EXPECT_TRUE(run({{"type", "number"}}, 3.5).empty());
  EXPECT_TRUE(has(run({{"type", "number"}}, true), "type", ""));
  EXPECT_TRUE(has(run({{"type", "number"}}, "3"), "type", ""));
  EXPECT_TRUE(has(run({{"type", "boolean"}}, 0), "type", ""));
  EXPECT_TRUE(has(run({{"type", "object"}}, json::array()), "type", ""));
  EXPECT_TRUE(has(run({{"type", "array"}}, json::object()), "type", ""));
  EXPECT_TRUE(run({{"type", "null"}}, nullptr).empty());

  const json multi = {{"type", {"string", "null"}}};
  EXPECT_TRUE(run(multi, "x").empty());
  EXPECT_TRUE(run(multi, nullptr).empty());
  const auto g = run(multi, 1);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].message, "must be string,null");
}

TEST(JsonSchemaKeywords, RequiredReportsTheObjectOncePerMissingProperty) {
  const json s = {{"type", "object"}, {"properties", {{"inner", {{"required", {"a", "b", "c"}}}}}}};
  EXPECT_TRUE(run(s, {{"inner", {{"a", 1}, {"b", 2}, {"c", 3}}}}).empty());
  const auto f = run(s, {{"inner", {{"b", 2}}}});
  ASSERT_EQ(f.size(), 2u) << describe(f);
  EXPECT_EQ(count_of(f, "required", "/inner"), 2u);
  EXPECT_EQ(f[0].message, "must have required property 'a'");
  EXPECT_EQ(f[1].message, "must have required property 'c'");
  EXPECT_EQ(f[0].schema_path, "#/properties/inner/required");
  // Type-specific keywords do not apply to other types.
  EXPECT_TRUE(run({{"required", {"a"}}}, 5).empty());
}

TEST(JsonSchemaKeywords, AdditionalPropertiesFalseOneFindingPerExtraAtTheObject) {
  const json s = {{"properties", {{"a", {{"type", "number"}}}}}, {"additionalProperties", false}};
  EXPECT_TRUE(run(s, {{"a", 1}}).empty());
  const auto f = run(s, {{"a", 1}, {"x", 1}, {"y", 2}});
  ASSERT_EQ(f.size(), 2u) << describe(f);
  EXPECT_EQ(count_of(f, "additionalProperties", ""), 2u);
  EXPECT_EQ(f[0].message, "must NOT have additional properties ('x')");
  EXPECT_EQ(f[0].schema_path, "#/additionalProperties");
  // A declared property still validates against its own schema.
  EXPECT_TRUE(has(run(s, {{"a", "no"}}), "type", "/a"));
}

TEST(JsonSchemaKeywords, AdditionalPropertiesSchemaAndPatternProperties) {
  const json s = {{"properties", {{"id", {{"type", "string"}}}}},
                  {"patternProperties", {{"^n_", {{"type", "number"}}}}},
                  {"additionalProperties", {{"type", "boolean"}}}};
  EXPECT_TRUE(run(s, {{"id", "a"}, {"n_1", 2}, {"flag", true}}).empty());
  const auto f = run(s, {{"id", "a"}, {"n_1", "two"}, {"flag", 3}});
  ASSERT_EQ(f.size(), 2u) << describe(f);
  EXPECT_TRUE(has(f, "type", "/n_1"));
  EXPECT_TRUE(has(f, "type", "/flag"));
  EXPECT_EQ(find_finding(f, "type", "/flag")->schema_path, "#/additionalProperties/type");
}

TEST(JsonSchemaKeywords, ItemsPrefixItemsAndArraySizes) {
  const json s = {{"type", "array"},
                  {"prefixItems", {{{"type", "string"}}}},
                  {"items", {{"type", "number"}}},
                  {"minItems", 2},
                  {"maxItems", 3}};
  EXPECT_TRUE(run(s, {"a", 1, 2}).empty());
  const auto f = run(s, {"a", "b", 2});
  ASSERT_EQ(f.size(), 1u) << describe(f);
  EXPECT_TRUE(has(f, "type", "/1"));
  EXPECT_EQ(f[0].schema_path, "#/items/type");
  const auto few = run(s, {"a"});
  ASSERT_EQ(few.size(), 1u);
  EXPECT_EQ(few[0].keyword, "minItems");
  EXPECT_EQ(few[0].message, "must NOT have fewer than 2 items");
  const auto many = run(s, {"a", 1, 2, 3});
  ASSERT_EQ(many.size(), 1u);
  EXPECT_EQ(many[0].message, "must NOT have more than 3 items");
  EXPECT_TRUE(has(run(s, {1, 2}), "type", "/0"));
}

TEST(JsonSchemaKeywords, ConstAndEnumUseDeepEquality) {
  const json s = {{"const", {{"k", {1, 2}}}}};
  EXPECT_TRUE(run(s, {{"k", {1, 2}}}).empty());
  EXPECT_TRUE(run(s, {{"k", {1.0, 2}}}).empty()) << "1.0 equals 1 in JSON Schema";
  const auto f = run(s, {{"k", {2, 1}}});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].keyword, "const");
  EXPECT_EQ(f[0].message, "must be equal to constant");

  const json e = {{"properties", {{"kind", {{"enum", {"grid", "points", nullptr}}}}}}};
  EXPECT_TRUE(run(e, {{"kind", "points"}}).empty());
  EXPECT_TRUE(run(e, {{"kind", nullptr}}).empty());
  const auto g = run(e, {{"kind", "Grid"}});
  ASSERT_EQ(g.size(), 1u);
  EXPECT_TRUE(has(g, "enum", "/kind"));
  EXPECT_EQ(g[0].message, "must be equal to one of the allowed values");
}

TEST(JsonSchemaKeywords, StringLengthCountsCodePointsAndPatternIsASearch) {
  const json s = {{"type", "string"}, {"minLength", 2}, {"maxLength", 3}};
  EXPECT_TRUE(run(s, "\xC3\xA9\xC3\xA9").empty()) << "two code points, four bytes";
  EXPECT_TRUE(has(run(s, "\xC3\xA9"), "minLength", ""));
  EXPECT_TRUE(has(run(s, "abcd"), "maxLength", ""));
  EXPECT_EQ(run(s, "a")[0].message, "must NOT have fewer than 2 characters");

  const json p = {{"pattern", "\\d{4}"}};
  EXPECT_TRUE(run(p, "year 2024!").empty()) << "patterns are not implicitly anchored";
  EXPECT_TRUE(run(p, 12).empty()) << "pattern applies to strings only";
  const auto f = run(p, "year");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].keyword, "pattern");
  EXPECT_EQ(f[0].message, "must match pattern \"\\d{4}\"");
  const json doi = {{"pattern", "^10\\.\\d{4,9}/\\S+$"}};
  EXPECT_TRUE(run(doi, "10.1029/2005JD006338").empty());
  EXPECT_TRUE(has(run(doi, "doi:10.1029/x"), "pattern", ""));
}

TEST(JsonSchemaKeywords, NumericBounds) {
  const json s = {{"exclusiveMinimum", 0}, {"maximum", 10}};
  EXPECT_TRUE(run(s, 0.5).empty());
  EXPECT_TRUE(run(s, 10).empty());
  const auto f = run(s, 0);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].keyword, "exclusiveMinimum");
  EXPECT_EQ(f[0].message, "must be > 0");
  EXPECT_EQ(run(s, 10.5)[0].message, "must be <= 10");
  const json m = {{"minimum", 0.5}, {"exclusiveMaximum", 2}};
  EXPECT_TRUE(run(m, 0.5).empty());
  EXPECT_EQ(run(m, 0.25)[0].message, "must be >= 0.5");
  EXPECT_TRUE(has(run(m, 2), "exclusiveMaximum", ""));
  EXPECT_TRUE(run(m, "not a number").empty());
}

TEST(JsonSchemaKeywords, OneOfMeansExactlyOne) {
  const json s = {{"oneOf", {{{"type", "integer"}}, {{"minimum", 5}}}}};
  EXPECT_TRUE(run(s, 2).empty()) << "only the first branch matches";
  EXPECT_TRUE(run(s, 7.5).empty()) << "only the second branch matches";
  const auto both = run(s, 7);
  ASSERT_EQ(both.size(), 1u) << "two matches: just the oneOf finding" << describe(both);
  EXPECT_EQ(both[0].keyword, "oneOf");
  EXPECT_EQ(both[0].schema_path, "#/oneOf");
  EXPECT_EQ(both[0].message, "must match exactly one schema in oneOf");
  const auto none = run(s, 2.5);
  EXPECT_TRUE(has(none, "oneOf", "")) << describe(none);
  EXPECT_TRUE(has(none, "type", "")) << "like ajv, the failing branches' errors are kept";
  EXPECT_TRUE(has(none, "minimum", ""));
  EXPECT_EQ(none.back().keyword, "oneOf");
}

TEST(JsonSchemaKeywords, DiscriminatedOneOfReportsNestedPaths) {
  const json s = {
      {"type", "array"},
      {"items",
       {{"oneOf",
         {{{"type", "object"},
           {"required", {"type", "interval"}},
           {"properties", {{"type", {{"const", "periodic"}}}, {"interval", {{"type", "number"}}}}}},
          {{"type", "object"},
           {"required", {"type", "times"}},
           {"properties", {{"type", {{"const", "preset"}}}, {"times", {{"minItems", 1}}}}}}}}}}};
  EXPECT_TRUE(
      run(s, json::parse(R"([{"type":"periodic","interval":2},{"type":"preset","times":[1]}])"))
          .empty());
  const auto f =
      run(s, json::parse(R"([{"type":"periodic","interval":2},{"type":"preset","times":[]}])"));
  EXPECT_TRUE(has(f, "oneOf", "/1")) << describe(f);
  EXPECT_TRUE(has(f, "minItems", "/1/times"));
  EXPECT_TRUE(has(f, "const", "/1/type"));
  EXPECT_FALSE(has(f, "oneOf", "/0"));
}

TEST(JsonSchemaKeywords, AnyOfAllOfNot) {
  const json any = {{"anyOf", {{{"required", {"a"}}}, {{"required", {"b"}}}}}};
  EXPECT_TRUE(run(any, {{"a", 1}, {"b", 2}}).empty()) << "anyOf allows several matches";
  const auto f = run(any, {{"c", 1}});
  EXPECT_TRUE(has(f, "anyOf", "")) << describe(f);
  EXPECT_EQ(count_of(f, "required", ""), 2u);
  EXPECT_EQ(find_finding(f, "anyOf", "")->message, "must match a schema in anyOf");

  const json all = {{"allOf", {{{"type", "number"}}, {{"minimum", 3}}}}};
  EXPECT_TRUE(run(all, 4).empty());
  const auto g = run(all, 1);
  ASSERT_EQ(g.size(), 1u) << describe(g);
  EXPECT_EQ(g[0].keyword, "minimum");
  EXPECT_EQ(g[0].schema_path, "#/allOf/1/minimum");

  const json no = {{"properties", {{"u", {{"items", {{"not", {{"required", {"kind"}}}}}}}}}}};
  EXPECT_TRUE(run(no, {{"u", {json::object()}}}).empty());
  const auto h = run(no, {{"u", {json::object(), {{"kind", "wiener"}}}}});
  ASSERT_EQ(h.size(), 1u) << describe(h);
  EXPECT_TRUE(has(h, "not", "/u/1"));
  EXPECT_EQ(h[0].message, "must NOT be valid");
}

TEST(JsonSchemaKeywords, IfThenElse) {
  const json s = {
      {"if", {{"properties", {{"type", {{"const", "parameter"}}}}}, {"required", {"type"}}}},
      {"then", {{"required", {"default"}}}},
      {"else", {{"not", {{"required", {"default"}}}}}}};
  EXPECT_TRUE(run(s, {{"type", "parameter"}, {"default", 1}}).empty());
  EXPECT_TRUE(run(s, {{"type", "unknown"}}).empty());
  const auto then = run(s, {{"type", "parameter"}});
  EXPECT_TRUE(has(then, "required", "")) << describe(then);
  ASSERT_TRUE(has(then, "if", ""));
  EXPECT_EQ(find_finding(then, "if", "")->message, "must match \"then\" schema");
  EXPECT_EQ(find_finding(then, "if", "")->schema_path, "#/if");
  const auto els = run(s, {{"type", "unknown"}, {"default", 1}});
  EXPECT_TRUE(has(els, "not", "")) << describe(els);
  EXPECT_EQ(find_finding(els, "if", "")->message, "must match \"else\" schema");
  // "if" alone constrains nothing.
  EXPECT_TRUE(run({{"if", {{"type", "string"}}}}, 1).empty());
}

TEST(JsonSchemaKeywords, RecursiveRefsResolveToTheTarget) {
  const json s = json::parse(R"({
    "$ref": "#/$defs/Expr",
    "$defs": {
      "Expr": {"oneOf": [{"type": "number"}, {"type": "string"}, {"$ref": "#/$defs/Node"}]},
      "Node": {"type": "object", "required": ["op", "args"], "additionalProperties": false,
               "properties": {"op": {"type": "string", "minLength": 1},
                              "args": {"type": "array", "items": {"$ref": "#/$defs/Expr"}}}}
    }})");
  const JsonSchema schema = JsonSchema::compile(s);
  EXPECT_TRUE(schema
                  .validate(json::parse(
                      R"({"op":"+","args":[1,{"op":"*","args":["x",{"op":"-","args":[2]}]}]})"))
                  .empty());
  const auto f = schema.validate(
      json::parse(R"({"op":"+","args":[1,{"op":"*","args":["x",{"op":"","args":[true]}]}]})"));
  EXPECT_TRUE(has(f, "minLength", "/args/1/args/1/op")) << describe(f);
  EXPECT_TRUE(has(f, "type", "/args/1/args/1/args/0"));
  EXPECT_EQ(find_finding(f, "minLength", "/args/1/args/1/op")->schema_path,
            "#/$defs/Node/properties/op/minLength");
  EXPECT_TRUE(has(f, "oneOf", "/args/1"));
  EXPECT_TRUE(has(f, "oneOf", ""));
}

TEST(JsonSchemaKeywords, RefsIntoNestedPointersEscapesAndTheRootId) {
  const json s = json::parse(R"({
    "$id": "https://example.org/s.json",
    "properties": {
      "a": {"$ref": "#/$defs/Holder/properties/inner"},
      "b": {"$ref": "#/$defs/a~1b"},
      "c": {"$ref": "#/$defs/per%25cent"},
      "d": {"$ref": "https://example.org/s.json#/$defs/a~1b"},
      "self": {"$ref": "#"}
    },
    "$defs": {
      "Holder": {"properties": {"inner": {"type": "integer"}}},
      "a/b": {"type": "string"},
      "per%cent": {"type": "boolean"}
    }})");
  const JsonSchema schema = JsonSchema::compile(s);
  EXPECT_TRUE(schema.validate({{"a", 1}, {"b", "x"}, {"c", true}, {"d", "y"}, {"self", {{"a", 2}}}})
                  .empty());
  const auto f =
      schema.validate({{"a", 1.5}, {"b", 1}, {"c", 0}, {"d", 2}, {"self", {{"a", "x"}}}});
  EXPECT_TRUE(has(f, "type", "/a")) << describe(f);
  EXPECT_TRUE(has(f, "type", "/b"));
  EXPECT_TRUE(has(f, "type", "/c"));
  EXPECT_TRUE(has(f, "type", "/d"));
  EXPECT_TRUE(has(f, "type", "/self/a"));
  EXPECT_EQ(find_finding(f, "type", "/a")->schema_path, "#/$defs/Holder/properties/inner/type");
  EXPECT_EQ(find_finding(f, "type", "/b")->schema_path, "#/$defs/a~1b/type");
}

TEST(JsonSchemaKeywords, RefWithSiblingKeywordsAppliesBoth) {
  const json s =
      json::parse(R"({"$defs": {"S": {"type": "string"}}, "$ref": "#/$defs/S", "minLength": 3})");
  EXPECT_TRUE(run(s, "abc").empty());
  EXPECT_TRUE(has(run(s, "ab"), "minLength", ""));
  EXPECT_TRUE(has(run(s, 5), "type", ""));
}

TEST(JsonSchemaKeywords, ContainsMinPropertiesUniqueItems) {
  const json c = {{"contains", {{"type", "object"}, {"required", {"kind"}}}}};
  EXPECT_TRUE(run(c, {1, {{"kind", "x"}}}).empty());
  EXPECT_TRUE(run(c, json::object()).empty());
  const auto f = run(c, {1, {{"other", 1}}});
  ASSERT_EQ(f.size(), 1u) << describe(f);
  EXPECT_EQ(f[0].keyword, "contains");
  EXPECT_EQ(f[0].message, "must contain at least 1 valid item(s)");

  const json mp = {{"properties", {{"map", {{"minProperties", 1}}}}}};
  EXPECT_TRUE(run(mp, {{"map", {{"a", 1}}}}).empty());
  const auto g = run(mp, {{"map", json::object()}});
  ASSERT_EQ(g.size(), 1u);
  EXPECT_TRUE(has(g, "minProperties", "/map"));
  EXPECT_EQ(g[0].message, "must NOT have fewer than 1 properties");

  const json u = {{"uniqueItems", true}};
  EXPECT_TRUE(run(u, {1, "1", json::array({1}), {{"a", 1}}, {{"a", 2}}}).empty());
  const auto h = run(u, {"a", 1, "b", 1.0});
  ASSERT_EQ(h.size(), 1u) << describe(h);
  EXPECT_EQ(h[0].keyword, "uniqueItems");
  EXPECT_EQ(h[0].message, "must NOT have duplicate items (items ## 3 and 1 are identical)");
  EXPECT_TRUE(has(run(u, {{{"a", {1, 2}}}, {{"a", {1, 2}}}}), "uniqueItems", ""));
  EXPECT_TRUE(run({{"uniqueItems", false}}, {1, 1}).empty());
}

TEST(JsonSchemaKeywords, InstancePathTokensAreEscaped) {
  const json s = {{"additionalProperties", {{"additionalProperties", {{"type", "number"}}}}}};
  const auto f = run(s, {{"a/b", {{"m~n", "x"}}}});
  ASSERT_EQ(f.size(), 1u) << describe(f);
  EXPECT_EQ(f[0].instance_path, "/a~1b/m~0n");
}

TEST(JsonSchemaKeywords, BooleanSchemasFormatAndUnknownKeywords) {
  const json s = {{"properties", {{"never", false}, {"any", true}}}};
  EXPECT_TRUE(run(s, {{"any", {1, 2}}}).empty());
  const auto f = run(s, {{"never", 1}});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].keyword, "false schema");
  EXPECT_EQ(f[0].instance_path, "/never");
  EXPECT_TRUE(run(true, 1).empty());
  EXPECT_TRUE(has(run(false, 1), "false schema", ""));

  const json annotated = {{"type", "string"},
                          {"format", "date-time"},
                          {"description", "d"},
                          {"$comment", "c"},
                          {"default", "x"},
                          {"title", "t"},
                          {"x-vendor", {{"type", "number"}}}};
  EXPECT_TRUE(run(annotated, "not a date").empty()) << "format is an annotation";
}

TEST(JsonSchemaKeywords, MalformedSchemasThrowSchemaInvalid) {
  expect_schema_invalid(5, "a schema must be an object or boolean");
  expect_schema_invalid({{"type", "float"}}, "unknown type name");
  expect_schema_invalid({{"$ref", "#/$defs/Missing"}}, "dangling $ref");
  expect_schema_invalid({{"$ref", "other.json#/x"}}, "external $ref");
  expect_schema_invalid({{"pattern", "(unclosed"}}, "bad regex");
  expect_schema_invalid({{"required", "a"}}, "required must be an array");
  expect_schema_invalid({{"minItems", -1}}, "negative count");
  expect_schema_invalid({{"minimum", "0"}}, "non-numeric limit");
  expect_schema_invalid({{"oneOf", json::array()}}, "empty oneOf");
  expect_schema_invalid({{"properties", {{"a", "string"}}}}, "property schema is a string");
  expect_schema_invalid({{"enum", 1}}, "enum must be an array");
}

TEST(JsonSchemaKeywords, ValidateIsThreadSafe) {
  const JsonSchema schema = JsonSchema::compile(json::parse(R"({
    "type": "array", "items": {"$ref": "#/$defs/P"},
    "$defs": {"P": {"type": "object", "required": ["name"], "additionalProperties": false,
                    "properties": {"name": {"pattern": "^[a-z]+$"}, "kids": {"$ref": "#"}}}}})"));
  json doc = json::array();
  for (int i = 0; i < 200; ++i) {
    doc.push_back({{"name", i % 7 == 0 ? "Bad" : "ok"}, {"kids", {{{"name", "x"}, {"extra", i}}}}});
  }
  const auto reference = schema.validate(doc);
  ASSERT_EQ(reference.size(), 200u + 29u);
  std::vector<std::size_t> sizes(4);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < sizes.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < 20; ++k) {
        const auto f = schema.validate(doc);
        sizes[t] =
            f.size() == reference.size() && f.back().instance_path == reference.back().instance_path
                ? f.size()
                : 0;
        if (!sizes[t]) return;
      }
    });
  }
  for (auto& th : threads) th.join();
  for (std::size_t n : sizes) EXPECT_EQ(n, reference.size());
}

// ---------------------------------------------------------------------------------------------
// Locating the ESM schema

namespace {

/// Sets an environment variable for the lifetime of the object, then restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

fs::path corpus_dir() {
  if (const char* env = std::getenv("ESI_CORPUS"); env && *env) return env;
  return ESI_DEFAULT_CORPUS;
}

}  // namespace

TEST(EsmSchemaLocate, EnvironmentOverridesTheBuildDefault) {
  const fs::path tmp = fs::temp_directory_path() / "esi_test_schema_override.json";
  { std::ofstream(tmp) << R"({"type": "object"})"; }
  {
    ScopedEnv env("ESI_SCHEMA", tmp.string());
    const auto located = esi::esm::locate_esm_schema();
    ASSERT_TRUE(located.has_value());
    EXPECT_EQ(*located, tmp);
  }
  {
    ScopedEnv env("ESI_SCHEMA", (fs::temp_directory_path() / "esi_no_such_schema.json").string());
    const auto located = esi::esm::locate_esm_schema();
    if (fs::is_regular_file(ESI_DEFAULT_SCHEMA)) {
      ASSERT_TRUE(located.has_value()) << "a missing ESI_SCHEMA falls back to the build default";
      EXPECT_EQ(*located, fs::path(ESI_DEFAULT_SCHEMA));
    } else {
      EXPECT_FALSE(located.has_value());
    }
  }
  fs::remove(tmp);
}

namespace {

const JsonSchema* esm_schema_or_skip() {
  return esi::esm::esm_schema();
}

#define ESI_REQUIRE_ESM_SCHEMA(var)                                                   \
  const JsonSchema* var = esm_schema_or_skip();                                       \
  if (!var)                                                                           \
  GTEST_SKIP() << "ESM schema not found: set ESI_SCHEMA to esm-schema.json (default " \
               << ESI_DEFAULT_SCHEMA << ")"

#define ESI_REQUIRE_CORPUS(sub)                                                               \
  if (!fs::is_directory(corpus_dir() / (sub)))                                                \
  GTEST_SKIP() << "corpus folder " << (corpus_dir() / (sub)) << " not found: set ESI_CORPUS " \
               << "to the corpus root"

std::vector<fs::path> esm_files_under(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file() && e.path().extension() == ".esm") out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST(EsmSchemaLocate, AMissingSchemaIsSaidNotSkippedSilently) {
  // The message names where esi looked and what to set.
  const fs::path missing = fs::temp_directory_path() / "esi_no_such_schema.json";
  {
    ScopedEnv env("ESI_SCHEMA", missing.string());
    const std::string m = esi::esm::schema_not_found_message();
    EXPECT_NE(m.find(missing.string()), std::string::npos) << m;
    EXPECT_NE(m.find("set ESI_SCHEMA"), std::string::npos) << m;
    EXPECT_NE(m.find(ESI_DEFAULT_SCHEMA), std::string::npos) << m;
  }
  // validate_file notes the skipped layer exactly when the schema cannot be found (on a
  // machine with the build's default schema: never; without it: on every file).
  const fs::path doc = fs::temp_directory_path() / "esi_schema_note_decay.esm";
  std::ofstream(doc) << R"({"esm": "1.0.0", "metadata": {"name": "decay"}, "models": {"M": {)"
                     << R"("variables": {"x": {"type": "unknown", "default": 2.0, "units": "1"},)"
                     << R"("k": {"type": "parameter", "default": 0.5, "units": "1/s"}},)"
                     << R"("equations": [{"lhs": {"op": "D", "args": ["x"], "wrt": "t"},)"
                     << R"("rhs": {"op": "*", "args": [{"op": "-", "args": ["k"]}, "x"]}}]}}})";
  const auto report = esi::esm::validate_file(doc);
  const bool noted =
      std::any_of(report.notes.begin(), report.notes.end(),
                  [](const esi::Diagnostic& d) { return d.code == "schema_not_found"; });
  EXPECT_EQ(noted, !esi::esm::locate_esm_schema().has_value());
  EXPECT_TRUE(report.valid()) << (report.errors.empty() ? "" : report.errors[0].message);
  fs::remove(doc);
}

TEST(EsmSchema, CompilesOnceAndIsShared) {
  ESI_REQUIRE_ESM_SCHEMA(schema);
  EXPECT_EQ(schema, esi::esm::esm_schema());
}

// ---------------------------------------------------------------------------------------------
// The ESM schema against the conformance fixtures

TEST(EsmSchemaConformance, InvalidFixturesYieldEveryExpectedFinding) {
  ESI_REQUIRE_ESM_SCHEMA(schema);
  ESI_REQUIRE_CORPUS("EarthSciAST-tests/invalid");
  const fs::path dir = corpus_dir() / "EarthSciAST-tests/invalid";
  const json expected = esi::read_json_file(dir / "expected_errors.json");
  int checked = 0;
  std::string failures;
  for (const auto& [name, entry] : expected.items()) {
    const json errors = entry.value("schema_errors", json::array());
    if (!fs::is_regular_file(dir / name) || errors.empty()) continue;
    std::map<std::pair<std::string, std::string>, std::size_t> want;
    for (const json& e : errors) {
      if (e.value("keyword", "") == "json_parse_error") continue;  // the parser's job
      ++want[{e.at("keyword").get<std::string>(), e.at("path").get<std::string>()}];
    }
    if (want.empty()) continue;
    ++checked;
    const auto got = schema->validate(esi::read_json_file(dir / name));
    for (const auto& [key, n] : want) {
      if (count_of(got, key.first, key.second) < n) {
        failures += "\n" + name + ": expected " + std::to_string(n) + "x " + key.first + " at '" +
                    key.second + "', got:" + describe(got);
      }
    }
  }
  EXPECT_TRUE(failures.empty()) << failures;
  EXPECT_GT(checked, 20) << "too few fixtures with schema_errors were found";
  std::cout << "[ schema ] " << checked << " invalid fixtures checked\n";
}

TEST(EsmSchemaConformance, FixturesWithoutSchemaErrorsPassTheSchema) {
  // is_valid / resolver_only fixtures, and fixtures whose errors are all structural, must clear
  // the schema layer (the structural checks only run on schema-valid documents).
  ESI_REQUIRE_ESM_SCHEMA(schema);
  ESI_REQUIRE_CORPUS("EarthSciAST-tests/invalid");
  const fs::path dir = corpus_dir() / "EarthSciAST-tests/invalid";
  const json expected = esi::read_json_file(dir / "expected_errors.json");
  int checked = 0;
  for (const auto& [name, entry] : expected.items()) {
    if (!fs::is_regular_file(dir / name)) continue;
    if (!entry.value("schema_errors", json::array()).empty() || entry.contains("parse_error"))
      continue;
    ++checked;
    const auto got = schema->validate(esi::read_json_file(dir / name));
    EXPECT_TRUE(got.empty()) << name << " should be schema-valid:" << describe(got);
  }
  EXPECT_GT(checked, 20);
}

// ---------------------------------------------------------------------------------------------
// The ESM schema against real documents

namespace {

/// Corpus documents that are genuinely schema-invalid (checked against an independent draft
/// 2020-12 validator too), each with a finding that shows why. Besides these, every
/// `*_loader.esm` that still carries the top-level `data_loaders` block the v1.0.0 schema
/// removed is invalid (additionalProperties at the root).
struct KnownInvalid {
  const char* file;      ///< relative to EarthSciModels/components
  const char* path;      ///< instance path of the telling finding
  const char* evidence;  ///< substring of that finding's message
};

// `coupletype` is not a Model property in the schema; `regrid` (Model.regrid) was removed in
// v0.8.0; tropospheric_budget's analysis uses `initial_state: {type: "constant"}`, which is not
// one of the InitialState forms.
const KnownInvalid kKnownInvalid[] = {
    {"aerosol/mie/visibility.esm", "/models/Visibility", "'coupletype'"},
    {"aerosol/nucleation/water_properties.esm", "/models/WaterProperties", "'coupletype'"},
    {"earthsci_data/ceds.esm", "/models/CEDS", "'regrid'"},
    {"earthsci_data/edgar_v81_monthly.esm", "/models/EDGARv81MonthlyEmis", "'regrid'"},
    {"earthsci_data/ncep_ncar.esm", "/models/NCEPNCARReanalysis", "'regrid'"},
    {"earthsci_data/openaq.esm", "/models/OpenAQ", "'regrid'"},
    {"earthsci_data/wrf.esm", "/models/WRF", "'regrid'"},
    {"environmental_transport/gaussian/pgb.esm", "/models/GaussianPGB", "'coupletype'"},
    {"environmental_transport/plume_rise/sofiev_2012.esm", "/models/Sofiev2012PlumeRise",
     "'coupletype'"},
    {"environmental_transport/puff.esm", "/models/Puff", "'coupletype'"},
    {"gaschem/lifetime/tropospheric_budget.esm",
     "/models/TroposphericBudget/analyses/1/initial_state", "exactly one schema"},
};

bool has_message(const std::vector<SchemaFinding>& findings, const std::string& path,
                 const std::string& evidence) {
  return std::any_of(findings.begin(), findings.end(), [&](const SchemaFinding& f) {
    return f.instance_path == path && f.message.find(evidence) != std::string::npos;
  });
}

}  // namespace

TEST(EsmSchemaCorpus, ValidDocumentsHaveNoFindings) {
  ESI_REQUIRE_ESM_SCHEMA(schema);
  ESI_REQUIRE_CORPUS("EarthSciAST-tests/valid");
  const auto files = esm_files_under(corpus_dir() / "EarthSciAST-tests/valid");
  ASSERT_FALSE(files.empty());
  for (const fs::path& f : files) {
    const auto got = schema->validate(esi::read_json_file(f));
    EXPECT_TRUE(got.empty()) << f << describe(got);
  }
  std::cout << "[ schema ] " << files.size() << " valid fixtures checked\n";
}

TEST(EsmSchemaCorpus, ComponentDocumentsValidateExceptTheKnownInvalid) {
  ESI_REQUIRE_ESM_SCHEMA(schema);
  ESI_REQUIRE_CORPUS("EarthSciModels/components");
  const fs::path root = corpus_dir() / "EarthSciModels/components";
  std::map<std::string, const KnownInvalid*> known;
  for (const auto& k : kKnownInvalid) known[k.file] = &k;
  int valid = 0, loaders = 0, listed = 0;
  const auto files = esm_files_under(root);
  for (const fs::path& f : files) {
    const std::string rel = fs::relative(f, root).generic_string();
    const json doc = esi::read_json_file(f);
    const auto got = schema->validate(doc);
    if (rel.ends_with("_loader.esm") && doc.contains("data_loaders")) {
      ++loaders;
      EXPECT_TRUE(has_message(got, "", "'data_loaders'")) << rel << describe(got);
    } else if (auto k = known.find(rel); k != known.end()) {
      ++listed;
      EXPECT_TRUE(has_message(got, k->second->path, k->second->evidence))
          << rel << " is listed as invalid for " << k->second->evidence << ":" << describe(got);
    } else {
      valid += got.empty();
      EXPECT_TRUE(got.empty()) << rel << describe(got);
    }
  }
  EXPECT_EQ(listed, static_cast<int>(std::size(kKnownInvalid))) << "a listed file went missing";
  std::cout << "[ schema ] " << files.size() << " component documents: " << valid << " valid, "
            << loaders << " legacy data_loaders files, " << listed << " other known-invalid\n";
}
