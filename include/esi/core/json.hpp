// JSON reading and canonical writing.
//
// Documents are read with nlohmann-json's (iterative) SAX parser into its DOM. Parse failures
// become esi::Error with code `json_parse_error` naming the file, the line, column and byte, and
// the pointer of the value being read (in the message: the diagnostic's pointer is the root,
// spelled "$" as the format's conformance suite writes it). Also refused, each with its own code: a key repeated in
// one object (`duplicate_key`), nesting deeper than kMaxJsonDepth (`nesting_too_deep`), a NUL
// byte or trailing bytes after the document (`json_parse_error`), anything but a regular file
// (`not_a_regular_file`: directories, FIFOs, devices) and files over kMaxJsonFileBytes
// (`file_too_large`). Canonical JSON (sorted keys, shortest
// round-trip numbers, no insignificant whitespace) is what every golden and plan.json uses,
// so equal inputs give byte-identical artifacts.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace esi {

/// Deepest nesting of objects and arrays a document may have. Real documents nest about 40
/// deep; every layer after parsing walks JSON recursively, so this bounds their stack use.
inline constexpr std::size_t kMaxJsonDepth = 512;
/// Largest file read (the largest real document is about 3 MiB).
inline constexpr std::uintmax_t kMaxJsonFileBytes = std::uintmax_t{64} << 20;
/// Where a `json_parse_error` points: the document's root in JSONPath ("$"), as the format's
/// conformance fixtures write it (no JSON pointer exists for text that did not parse).
inline constexpr const char* kParseErrorPointer = "$";

/// Reads and parses `path`; throws esi::Error (`file_not_found`, `file_not_readable`,
/// `not_a_regular_file`, `file_too_large`, `json_parse_error`, `duplicate_key`,
/// `nesting_too_deep`).
nlohmann::json read_json_file(const std::filesystem::path& path);

/// Parses `text` as JSON; `file` is only used in the error message.
nlohmann::json parse_json_text(std::string_view text, const std::string& file);

/// Canonical serialization: keys sorted by code point, numbers in shortest round-trip form.
std::string canonical_json(const nlohmann::json& value);

/// The node at `pointer` or nullptr if it does not exist.
const nlohmann::json* json_at(const nlohmann::json& root, const std::string& pointer);

}  // namespace esi
