// Private to check: what the inline-test runner (§6.6.6) and the analyses (§6.7.2) share when a
// test or an analysis runs its component under a discretization of its own, and when they read
// an expression evaluated before the run.
#pragma once

#include <optional>
#include <string>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "esi/esm/load.hpp"
#include "esi/esm/system.hpp"

namespace esi::check::detail {

/// The document built again with `imports` (a §9.7.2 TemplateImport array, authored at
/// (file, pointer)) appended to component `component`'s own expression_template_imports, for
/// one run only (§9.7.10). `owner` is "test" or "analysis": errors are `invalid_<owner>` (not
/// an array) and `unsupported_<owner>_feature` (the component is mounted from another file);
/// the loader's own `template_import_*` errors come through unchanged.
esm::ResolvedDocument inject_template_imports(const esm::ResolvedDocument& doc,
                                              const std::string& component,
                                              const nlohmann::json& imports,
                                              const std::string& file, const std::string& pointer,
                                              const std::string& owner);

/// The first name `root` reads that is not known before the run (`t` or one of `unknowns`),
/// or nothing: a reference or an initial field may read parameters and index symbols only.
std::optional<std::string> read_before_run(const esm::System& sys, expr::NodeId root,
                                           const std::unordered_set<std::string>& unknowns);

}  // namespace esi::check::detail
