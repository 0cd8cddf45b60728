// Loading a document: parse, resolve references, and keep track of where every piece came from.
//
// `load_resolved` reads an `.esm` file and resolves, in this order (spec §4.7, §9.7, §10.9):
//   1. component `ref`s (top-level models / reaction systems and `subsystems`, recursively,
//      relative to the referencing file, `${VAR}` expanded, cycles reported);
//   2. `expression_template_imports` of every component (library files, `bindings` closing
//      their metaparameters, `only`, `prefix` renaming), merged into the component's own
//      `expression_templates`;
//   3. `coupling_import` entries (coupling-library roles bound, edges spliced in place);
//   4. the index-set registry (merged from mounted files, sizes folded from metaparameters).
// The result is one JSON document with everything inline, plus a map from each inlined
// component's pointer to the file it came from, so diagnostics name the right file.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "esi/core/error.hpp"

namespace esi::esm {

struct LoadOptions {
  /// Metaparameter bindings from the caller (the "loader API" site of spec §9.7.6).
  std::map<std::string, std::int64_t> metaparameters;
  /// Run the JSON-Schema layer on every file read (when the schema can be located).
  bool schema = true;
};

struct ResolvedDocument {
  std::string file;    ///< the top-level file as given
  nlohmann::json raw;  ///< the top-level file as parsed
  nlohmann::json doc;  ///< refs resolved, templates imported, coupling imports expanded
  /// Pointer of each inlined component in `doc` -> the file its definition came from.
  std::map<std::string, std::string> component_files;
  /// Folded sizes of every index set in the merged registry.
  std::map<std::string, std::int64_t> index_set_sizes;
  /// True when the file is a template-library, coupling-library or data-source catalog: it
  /// validates but holds no component to flatten.
  bool library_only = false;
};

/// Loads and resolves. Throws esi::Error on the first error that prevents resolution
/// (unreadable file, bad JSON, unresolvable ref, import cycle, ...).
ResolvedDocument load_resolved(const std::filesystem::path& file, const LoadOptions& options = {});
/// The same for a top-level document already parsed from `file` (referenced files are still
/// read relative to it).
ResolvedDocument load_resolved(const std::filesystem::path& file, nlohmann::json raw,
                               const LoadOptions& options = {});

/// Every finding for one file: JSON parse, schema layer, reference resolution, structural and
/// unit checks, and (for component documents) a trial flatten. Never throws for bad input.
struct ValidationReport {
  std::string file;
  /// Every finding. Schema findings marked `alternative` come from oneOf/anyOf branches the
  /// node was not closest to: they invalidate the document like the others, but people read
  /// `shown()` only.
  std::vector<Diagnostic> errors;
  /// What keeps esi from running a valid document as it stands: a capability esi lacks yet
  /// (`unsupported_*` from the trial flatten) or a state without an initial value
  /// (`missing_initial_value`; a test or `--set` may supply it).
  std::vector<Diagnostic> notes;
  bool valid() const { return errors.empty(); }
  /// The findings a person should read (errors less `alternative` ones).
  std::vector<Diagnostic> shown() const;
};
ValidationReport validate_file(const std::filesystem::path& file, const LoadOptions& options = {});

/// The one checking pipeline every command runs before it uses a document: parse, schema,
/// resolve, structure, units (each layer only when the previous one passed). A document is
/// either refused with every finding (`doc` empty) or handed over whole (`report` empty).
/// `validate_file` is this plus a trial flatten. Never throws for bad input.
struct CheckedDocument {
  ValidationReport report;
  std::optional<ResolvedDocument> doc;  ///< set exactly when report.valid()
};
CheckedDocument load_checked(const std::filesystem::path& file, const LoadOptions& options = {});

/// True for codes that mark a capability this engine does not have yet (`unsupported_*`):
/// the document is valid, the engine just cannot run it.
bool is_unsupported_code(const std::string& code);

}  // namespace esi::esm
