// libFuzzer target for the document front end: validate_file on arbitrary bytes and, when the
// document is reported valid, load_resolved + flatten + describe.
//
// Contract under test: bad input yields diagnostics or esi::Error, never a crash, a sanitizer
// report, a hang, or another exception type (those escape and libFuzzer reports them).
// load_resolved takes a path, so each input is written to one per-process temp file.
//
// With ESI_FUZZ_STRICT=1 in the environment two softer contract breaches abort too:
// validate_file throwing esi::Error (it promises never to throw for bad input), and a document
// that validate_file accepts but load_resolved / flatten then refuse (other than with an
// unsupported_* code: a documented limit of esi, not a defect).
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "esi/core/error.hpp"
#include "esi/esm/flatten.hpp"
#include "esi/esm/load.hpp"
#include "fuzz_support.hpp"

namespace {

struct Scratch {
  std::string path;
  bool strict = false;
  Scratch() {
    path = esi::fuzz::scratch_path("loader");
    const char* s = std::getenv("ESI_FUZZ_STRICT");
    strict = s != nullptr && std::string(s) == "1";
  }
  ~Scratch() { std::remove(path.c_str()); }
};

Scratch& scratch() {
  static Scratch s;
  return s;
}

[[noreturn]] void breach(const char* what, const esi::Error& e) {
  std::fprintf(stderr, "esi fuzz: %s: %s\n", what, e.what());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Scratch& s = scratch();
  esi::fuzz::write_input(s.path, data, size);

  esi::esm::ValidationReport report;
  try {
    report = esi::esm::validate_file(s.path);
  } catch (const esi::Error& e) {
    if (s.strict) breach("validate_file threw instead of reporting", e);
    return 0;
  }
  if (!report.valid()) return 0;

  try {
    const esi::esm::ResolvedDocument doc = esi::esm::load_resolved(s.path);
    if (!doc.library_only) {
      const esi::esm::System system = esi::esm::flatten(doc);
      const nlohmann::json summary = esi::esm::describe(system);
      if (summary.is_null()) std::abort();
    }
  } catch (const esi::Error& e) {
    // unsupported_* codes are esi's own known limits (array flattening), not contract breaches.
    if (s.strict && e.code().rfind("unsupported_", 0) != 0) {
      breach("a document validate_file accepted was refused", e);
    }
  }
  return 0;
}
