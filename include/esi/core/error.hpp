// Errors and diagnostics shared by every module.
//
// A Diagnostic names what went wrong (a stable snake_case code, or a JSON-Schema keyword for
// schema-layer findings), where (the file and the RFC 6901 JSON pointer of the offending node)
// and why (one sentence a modeller understands). Load, validation and compile stages throw
// esi::Error carrying one Diagnostic, or collect many into a Diagnostics list; numerical code
// never throws (see the method module's outcomes).
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace esi {

/// Which validation layer produced a finding: JSON parsing and the JSON Schema (`keyword` codes
/// such as `required`), or the structural / semantic checks (`undefined_variable`, ...).
enum class Layer { Parse, Schema, Structural };

struct Diagnostic {
  std::string code;     ///< stable code, e.g. "undefined_variable", or a schema keyword
  std::string file;     ///< file the offending node lives in ("" when not file-backed)
  std::string pointer;  ///< RFC 6901 JSON pointer into `file`; "" is the document root
  std::string message;  ///< one sentence for a modeller
  Layer layer = Layer::Structural;
  /// A schema finding from a oneOf/anyOf branch other than the one the node came closest to.
  /// Kept for tools that compare with ajv (which reports every branch); not shown to people.
  bool alternative = false;
};

/// "file:/pointer: error[code]: message" — the one-line form the CLI prints; `severity` is
/// "error" or "note".
std::string format_diagnostic(const Diagnostic& d, std::string_view severity = "error");

/// A user-facing error: bad input, unsupported feature. Our own bugs use ESI_ASSERT instead.
class Error : public std::runtime_error {
 public:
  explicit Error(Diagnostic d);
  Error(std::string code, std::string file, std::string pointer, std::string message,
        Layer layer = Layer::Structural);
  const Diagnostic& diagnostic() const noexcept { return diag_; }
  const std::string& code() const noexcept { return diag_.code; }

 private:
  Diagnostic diag_;
};

/// Appends one reference token to a JSON pointer, escaping '~' and '/' (RFC 6901 §3).
std::string pointer_join(std::string_view base, std::string_view token);
std::string pointer_join(std::string_view base, std::size_t index);

/// Internal invariant violation (a bug in esi, never a property of the input).
[[noreturn]] void assertion_failed(const char* expr, const char* file, int line);

}  // namespace esi

#define ESI_ASSERT(cond) \
  ((cond) ? static_cast<void>(0) : ::esi::assertion_failed(#cond, __FILE__, __LINE__))
