// A JSON Schema (draft 2020-12) validator for the keywords the ESM schema uses.
//
// Debian's schema libraries stop at draft 7, so this is our own small engine. It reports
// findings the way ajv does with allErrors (keyword + instance path), which is the form the
// format's conformance suite (EarthSciAST-tests/invalid/expected_errors.json) pins. The ESM
// schema itself is not vendored: it is read at run time from ESI_SCHEMA or the build's default.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace esi::esm {

struct SchemaFinding {
  std::string keyword;        ///< "required", "additionalProperties", "type", "oneOf", ...
  std::string instance_path;  ///< JSON pointer of the offending instance node ("" = root)
  std::string schema_path;    ///< JSON pointer into the schema, e.g. "#/$defs/Model/required"
  std::string message;        ///< e.g. "must have required property 'name'"
  /// Found in a oneOf/anyOf branch other than the one the instance came closest to (or the
  /// combinator's own summary finding when that branch has findings). ajv reports these too;
  /// a person should read only the others.
  bool alternative = false;
};

class JsonSchema {
 public:
  /// Compiles a schema document (resolves "$ref": "#/..." and "$defs"). Throws esi::Error
  /// (`schema_invalid`) when the schema itself is malformed.
  static JsonSchema compile(nlohmann::json schema);

  /// Every finding for `instance`; empty means valid. Thread-safe (the schema is immutable).
  std::vector<SchemaFinding> validate(const nlohmann::json& instance) const;

  JsonSchema(JsonSchema&&) noexcept;
  JsonSchema& operator=(JsonSchema&&) noexcept;
  ~JsonSchema();

 private:
  struct Impl;
  explicit JsonSchema(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// Where esm-schema.json is: $ESI_SCHEMA if set, else the path configured at build time.
/// nullopt when neither exists.
std::optional<std::filesystem::path> locate_esm_schema();
/// Why locate_esm_schema() found nothing, for a person: where it looked and how to fix it.
std::string schema_not_found_message();

/// The ESM schema, compiled once on first use (immutable afterwards); nullptr when it cannot
/// be found. Throws esi::Error when it exists but cannot be read.
const JsonSchema* esm_schema();

}  // namespace esi::esm
