// JSON reading and canonical writing.
//
// Documents are read with nlohmann-json. Parse failures become esi::Error with code
// `json_parse_error` naming the file and byte offset. Canonical JSON (sorted keys, shortest
// round-trip numbers, no insignificant whitespace) is what every golden and plan.json uses,
// so equal inputs give byte-identical artifacts.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace esi {

/// Reads and parses `path`; throws esi::Error (`file_not_found`, `json_parse_error`).
nlohmann::json read_json_file(const std::filesystem::path& path);

/// Parses `text` as JSON; `file` is only used in the error message.
nlohmann::json parse_json_text(std::string_view text, const std::string& file);

/// Canonical serialization: keys sorted by code point, numbers in shortest round-trip form.
std::string canonical_json(const nlohmann::json& value);

/// The node at `pointer` or nullptr if it does not exist.
const nlohmann::json* json_at(const nlohmann::json& root, const std::string& pointer);

}  // namespace esi
