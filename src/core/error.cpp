#include "esi/core/error.hpp"

#include <cstdio>
#include <cstdlib>

namespace esi {

std::string format_diagnostic(const Diagnostic& d, std::string_view severity) {
  std::string out;
  out.reserve(d.file.size() + d.pointer.size() + d.code.size() + d.message.size() + 24);
  out += d.file.empty() ? std::string("<input>") : d.file;
  out += ':';
  out += d.pointer.empty() ? std::string("/") : d.pointer;
  out += ": ";
  out += severity;
  out += '[';
  out += d.code;
  out += "]: ";
  out += d.message;
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
