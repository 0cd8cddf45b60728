// The validation pipeline behind `esi validate`: parse, schema, resolve, structure, units.
// (Flattening is `esi inspect`'s job: a valid document need not be simulatable.) Each layer runs only when the previous one passed, as in the format's
// conformance suite (a schema-invalid file never reaches the structural checks).
#include "esi/core/json.hpp"
#include "esi/esm/load.hpp"
#include "esi/esm/schema.hpp"
#include "esi/esm/structural.hpp"
#include "esi/esm/units.hpp"

namespace esi::esm {

ValidationReport validate_file(const std::filesystem::path& file, const LoadOptions& options) {
  ValidationReport report;
  report.file = file.string();
  auto fail = [&](const Error& e) { report.errors.push_back(e.diagnostic()); };
  nlohmann::json raw;
  try {
    raw = read_json_file(file);
  } catch (const Error& e) {
    fail(e);
    return report;
  }
  if (options.schema) {
    try {
      if (const JsonSchema* schema = esm_schema()) {
        for (auto& f : schema->validate(raw))
          report.errors.push_back(Diagnostic{f.keyword, report.file, f.instance_path,
                                             f.message, Layer::Schema});
        if (!report.errors.empty()) return report;
      }
    } catch (const Error& e) {
      fail(e);
      return report;
    }
  }
  ResolvedDocument doc;
  try {
    doc = load_resolved(file, options);
  } catch (const Error& e) {
    fail(e);
    return report;
  }
  for (auto& d : check_structure(doc.doc, report.file)) report.errors.push_back(std::move(d));
  for (auto& d : check_units(doc.doc, report.file)) report.errors.push_back(std::move(d));
  return report;
}

}  // namespace esi::esm
