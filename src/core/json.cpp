#include "esi/core/json.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <vector>

#include "esi/core/error.hpp"

namespace esi {
namespace {

using nlohmann::json;

/// Builds the DOM from nlohmann's SAX events (the parser itself is iterative), refusing what
/// the stock DOM parser lets through silently: a key repeated in one object (nlohmann keeps the
/// last), nesting deeper than kMaxJsonDepth (every later layer walks JSON recursively), and
/// parse errors reported in nlohmann's own words. Each refusal names the JSON pointer where it
/// happened, tracked as the stack of open containers.
class DomBuilder {
 public:
  explicit DomBuilder(const std::string& file) : file_(file) {}

  json take() { return std::move(root_); }

  bool null() { return put(json(nullptr)); }
  bool boolean(bool v) { return put(json(v)); }
  bool number_integer(json::number_integer_t v) { return put(json(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return put(json(v)); }
  bool number_float(json::number_float_t v, const json::string_t&) { return put(json(v)); }
  bool string(json::string_t& v) { return put(json(std::move(v))); }
  bool binary(json::binary_t&) { return put(json()); }  // never produced by the JSON lexer

  bool start_object(std::size_t) { return open(json::object()); }
  bool start_array(std::size_t) { return open(json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(json::string_t& k) {
    Frame& top = open_.back();
    if (top.node->contains(k)) {
      top.key = k;  // so pointer() ends at the repeated key
      throw Error("duplicate_key", file_, pointer(),
                  "the key '" + k + "' appears twice in this object; JSON readers disagree on "
                  "which one wins, so remove one of them",
                  Layer::Parse);
    }
    top.key = std::move(k);
    return true;
  }

  bool parse_error(std::size_t byte, const std::string& token, const nlohmann::detail::exception& e) {
    // Located at the root as the format's conformance suite writes it ("$", JSONPath's root: no
    // JSON pointer exists yet); the message says where in the text and which value was being read.
    const std::string where = pointer();
    throw Error("json_parse_error", file_, kParseErrorPointer,
                "the file is not valid JSON: " + describe(byte, token, e) +
                    (where.empty() ? std::string() : ", while reading " + where),
                Layer::Parse);
  }

 private:
  struct Frame {
    json* node;
    std::string key;  // the last key read, for objects
  };

  /// Where the next value goes: the root, the end of an array, or the member of the last key.
  json* slot() {
    if (open_.empty()) return &root_;
    Frame& top = open_.back();
    if (top.node->is_array()) {
      top.node->push_back(json());
      return &top.node->back();
    }
    return &(*top.node)[top.key];
  }

  bool put(json&& v) {
    *slot() = std::move(v);
    return true;
  }

  bool open(json&& container) {
    if (open_.size() >= kMaxJsonDepth) {
      throw Error("nesting_too_deep", file_, pointer(),
                  "values are nested more than " + std::to_string(kMaxJsonDepth) +
                      " levels deep here; no ESM document needs that (the deepest real ones "
                      "nest about 40), so the file is refused rather than risk the stack",
                  Layer::Parse);
    }
    json* node = slot();
    *node = std::move(container);
    open_.push_back({node, {}});
    return true;
  }

  bool close() {
    open_.pop_back();
    return true;
  }

  /// The JSON pointer of the innermost value being read.
  std::string pointer() const {
    std::string out;
    for (const Frame& f : open_) {
      if (f.node->is_array()) {
        out = pointer_join(out, f.node->empty() ? 0 : f.node->size() - 1);
      } else if (!f.key.empty() || f.node->contains(f.key)) {
        out = pointer_join(out, f.key);
      }
    }
    return out;
  }

  /// nlohmann's what() is "[json.exception.parse_error.101] parse error at line 3, column 5:
  /// syntax error while parsing ..."; keep the location and the reason, drop the library tag.
  static std::string describe(std::size_t byte, const std::string& token,
                              const nlohmann::detail::exception& e) {
    std::string what = e.what();
    if (const auto tag_end = what.find("] "); what.rfind("[json.exception.", 0) == 0 && tag_end != std::string::npos)
      what = what.substr(tag_end + 2);
    if (what.rfind("parse error ", 0) == 0) what = what.substr(12);
    if (what.rfind("number overflow", 0) == 0 || e.id == 406)
      return "the number '" + token + "' near byte " + std::to_string(byte) +
             " is beyond the range of a double";
    return what + " (byte " + std::to_string(byte) + ")";
  }

  const std::string& file_;
  json root_;
  std::vector<Frame> open_;
};

}  // namespace

nlohmann::json read_json_file(const std::filesystem::path& path) {
  // stat before open: a FIFO would block open() and /dev/zero never ends, so only regular
  // files are read, and only up to a stated size.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    const bool missing = err == ENOENT || err == ENOTDIR;
    throw Error(missing ? "file_not_found" : "file_not_readable", path.string(), "",
                missing ? "no such file (check the path)"
                        : std::string("cannot read the file: ") + std::strerror(err),
                Layer::Parse);
  }
  if (S_ISDIR(st.st_mode)) {
    throw Error("not_a_regular_file", path.string(), "",
                "this is a directory, not an .esm document", Layer::Parse);
  }
  if (!S_ISREG(st.st_mode)) {
    throw Error("not_a_regular_file", path.string(), "",
                "only regular files are read (this is a device, pipe or socket)", Layer::Parse);
  }
  if (static_cast<std::uintmax_t>(st.st_size) > kMaxJsonFileBytes) {
    throw Error("file_too_large", path.string(), "",
                "the file has " + std::to_string(st.st_size) + " bytes; documents larger than " +
                    std::to_string(kMaxJsonFileBytes >> 20) + " MiB are refused",
                Layer::Parse);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error("file_not_readable", path.string(), "",
                "cannot open the file for reading (check its permissions)", Layer::Parse);
  }
  std::string text(static_cast<std::size_t>(st.st_size), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.gcount() != static_cast<std::streamsize>(text.size())) {
    throw Error("file_not_readable", path.string(), "",
                "the file changed or could not be read while loading it", Layer::Parse);
  }
  return parse_json_text(text, path.string());
}

nlohmann::json parse_json_text(std::string_view text, const std::string& file) {
  // nlohmann's lexer takes a NUL byte for the end of input, so "{}\0garbage" would parse;
  // JSON text never contains a raw NUL.
  if (const auto nul = text.find('\0'); nul != std::string_view::npos) {
    throw Error("json_parse_error", file, kParseErrorPointer,
                "the file is not valid JSON: it contains a NUL byte at byte " +
                    std::to_string(nul + 1) + " (is it a binary file?)",
                Layer::Parse);
  }
  DomBuilder builder(file);
  // strict: trailing non-whitespace after the document is an error.
  nlohmann::json::sax_parse(text.begin(), text.end(), &builder, nlohmann::json::input_format_t::json,
                            /*strict=*/true);
  return builder.take();
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
