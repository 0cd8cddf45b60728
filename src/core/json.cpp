#include "esi/core/json.hpp"

#include <fstream>
#include <sstream>

#include "esi/core/error.hpp"

namespace esi {

nlohmann::json read_json_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error("file_not_found", path.string(), "",
                "cannot open the file (does it exist and is it readable?)", Layer::Parse);
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return parse_json_text(buffer.str(), path.string());
}

nlohmann::json parse_json_text(std::string_view text, const std::string& file) {
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    throw Error("json_parse_error", file, "",
                "the file is not valid JSON (byte " + std::to_string(e.byte) +
                    "): " + std::string(e.what()),
                Layer::Parse);
  } catch (const nlohmann::json::exception& e) {
    // e.g. out_of_range.406: a number literal beyond binary64 (found by the fuzzer).
    throw Error("json_parse_error", file, "", "the file cannot be read as JSON: " + std::string(e.what()),
                Layer::Parse);
  }
}

std::string canonical_json(const nlohmann::json& value) {
  // nlohmann's object_t is a std::map (keys sorted bytewise, which is UTF-8 code point order)
  // and its double printer emits the shortest round-trip form.
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

const nlohmann::json* json_at(const nlohmann::json& root, const std::string& pointer) {
  try {
    const nlohmann::json::json_pointer p(pointer);
    if (!root.contains(p)) return nullptr;
    return &root.at(p);
  } catch (const nlohmann::json::exception&) {
    return nullptr;
  }
}

}  // namespace esi
