#include "esi/core/error.hpp"

#include <cstdio>
#include <cstdlib>

namespace esi {

namespace {

/// Appends `text` with its control characters spelled \uXXXX (a name read from a document may
/// hold a NUL, which would end the line early for a C string and reach the terminal raw);
/// newlines and tabs stay when `keep_layout`.
void append_printable(std::string& out, std::string_view text, bool keep_layout) {
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 || u == 0x7f) && !(keep_layout && (c == '\n' || c == '\t'))) {
      static constexpr char kHex[] = "0123456789ABCDEF";
      out += "\\u00";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    } else {
      out += c;
    }
  }
}

}  // namespace

std::string format_diagnostic(const Diagnostic& d, std::string_view severity) {
  std::string out;
  out.reserve(d.file.size() + d.pointer.size() + d.code.size() + d.message.size() + 24);
  append_printable(out, d.file.empty() ? std::string_view("<input>") : std::string_view(d.file),
                   false);
  out += ':';
  append_printable(out, d.pointer.empty() ? std::string_view("/") : std::string_view(d.pointer),
                   false);
  out += ": ";
  out += severity;
  out += '[';
  out += d.code;
  out += "]: ";
  append_printable(out, d.message, true);
  return out;
}

Error::Error(Diagnostic d) : std::runtime_error(format_diagnostic(d)), diag_(std::move(d)) {}

Error::Error(std::string code, std::string file, std::string pointer, std::string message,
             Layer layer)
    : Error(Diagnostic{std::move(code), std::move(file), std::move(pointer), std::move(message),
                       layer}) {}

std::string pointer_join(std::string_view base, std::string_view token) {
  std::string out(base);
  out += '/';
  for (char c : token) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

std::string pointer_join(std::string_view base, std::size_t index) {
  std::string out(base);
  out += '/';
  out += std::to_string(index);
  return out;
}

void assertion_failed(const char* expr, const char* file, int line) {
  std::fprintf(stderr, "esi internal error: assertion '%s' failed at %s:%d\n", expr, file, line);
  std::abort();
}

}  // namespace esi
