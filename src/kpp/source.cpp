// Reading KPP files: comments, `#INCLUDE` / `#MODEL`, `#INLINE` blocks, and tokens.
//
// KPP comments are `{ ... }` (they may span lines and do not nest) and, since KPP 2.3, `//` to
// the end of the line. `#INCLUDE name` (any case) is resolved next to the including file;
// KPP's own `atoms` file is not needed (atom compositions are ignored) and is skipped with a
// note when it is not there. `#MODEL name` includes `name.def`. `#INLINE <kind>` blocks hold
// code in the target language (braces and `//` mean something else there), so they are
// skipped verbatim up to `#ENDINLINE`.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>
#include <system_error>

#include "esi/core/text.hpp"
#include "esi/core/json.hpp"
#include "kpp/kpp_internal.hpp"

namespace esi::kpp::detail {
namespace {

namespace fs = std::filesystem;

/// Deepest chain of `#INCLUDE`s; deeper is almost surely a file including itself by another
/// name.
constexpr int kMaxIncludeDepth = 16;

bool is_ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

class Preprocessor {
 public:
  Source src;

  /// `from_file` / `from_line` locate the `#INCLUDE` that asked for `path` (from_file < 0 for
  /// a file named by the caller).
  void read_file(const fs::path& path, const std::string& display, int depth, int from_file,
                 std::uint32_t from_line) {
    const std::string where_file = from_file < 0 ? display : src.files[from_file];
    const std::string where_ptr = from_file < 0 ? "" : "line " + std::to_string(from_line);
    if (depth > kMaxIncludeDepth)
      throw Error("kpp_include_too_deep", where_file, where_ptr,
                  "#INCLUDE nests deeper than " + std::to_string(kMaxIncludeDepth) +
                      " files (does a file include itself?)");
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);
    if (ec || !fs::exists(st))
      throw Error("file_not_found", where_file, where_ptr,
                  from_file < 0 ? "cannot open '" + path.string() + "': no such file"
                                : "the included file '" + path.string() + "' does not exist");
    if (!fs::is_regular_file(st))
      throw Error("not_a_regular_file", where_file, where_ptr,
                  "'" + path.string() + "' is not a regular file");
    const auto size = fs::file_size(path, ec);
    if (ec || size > kMaxJsonFileBytes)
      throw Error("file_too_large", where_file, where_ptr,
                  "'" + path.string() + "' is larger than 64 MiB; a KPP mechanism is text of a "
                  "few hundred kilobytes");
    const fs::path canonical = fs::weakly_canonical(path, ec);
    const std::string key = ec ? path.string() : canonical.string();
    if (!seen_.insert(key).second) {
      // Given twice (e.g. on the command line and by an #INCLUDE): KPP would declare everything
      // twice; reading it once is what the modeller meant.
      src.notes.push_back(Diagnostic{"kpp_file_repeated", where_file, where_ptr,
                                     "'" + display + "' was already read; read once"});
      return;
    }
    std::ifstream in(path, std::ios::binary);
    if (!in)
      throw Error("file_not_readable", where_file, where_ptr, "cannot read '" + path.string() + "'");
    std::stringstream buf;
    buf << in.rdbuf();
    const std::string text = buf.str();

    const auto file_index = static_cast<std::uint32_t>(src.files.size());
    src.files.push_back(display);
    scan(text, file_index, path, depth);
  }

 private:
  std::set<std::string> seen_;

  void emit(char c, std::uint32_t file, std::uint32_t line) {
    if (src.runs.empty() || src.runs.back().at.file != file || src.runs.back().at.line != line)
      src.runs.push_back(Source::Run{src.text.size(), Location{file, line}});
    src.text.push_back(c);
  }

  [[noreturn]] void fail_at(std::uint32_t file, std::uint32_t line, const std::string& code,
                            const std::string& message) {
    throw Error(code, src.files[file], "line " + std::to_string(line), message);
  }

  void scan(const std::string& text, std::uint32_t file, const fs::path& path, int depth) {
    std::uint32_t line = 1;
    std::size_t i = 0;
    const std::size_t n = text.size();
    while (i < n) {
      const char c = text[i];
      if (c == '\0')
        fail_at(file, line, "kpp_parse_error", "the file holds a NUL byte: not a KPP text file");
      if (c == '\n') {
        emit('\n', file, line);
        ++line;
        ++i;
        continue;
      }
      if (c == '{') {
        const std::uint32_t open_line = line;
        std::size_t j = i + 1;
        while (j < n && text[j] != '}') {
          if (text[j] == '\n') ++line;
          ++j;
        }
        if (j >= n)
          fail_at(file, open_line, "kpp_parse_error",
                  "the comment opened by '{' here is never closed by '}'");
        emit(' ', file, open_line);
        i = j + 1;
        continue;
      }
      if (c == '}')
        fail_at(file, line, "kpp_parse_error", "'}' without a '{' opening a comment");
      if (c == '/' && i + 1 < n && text[i + 1] == '/') {
        while (i < n && text[i] != '\n') ++i;
        continue;
      }
      if (c == '#') {
        std::size_t w = i + 1;
        while (w < n && (text[w] == ' ' || text[w] == '\t')) ++w;  // KPP reads "# INCLUDE" too
        std::size_t j = w;
        while (j < n && is_ident_char(text[j])) ++j;
        const std::string word = upper(text.substr(w, j - w));
        if (word == "INCLUDE" || word == "MODEL") {
          std::size_t e = j;
          while (e < n && text[e] != '\n') ++e;
          std::string name = trim(std::string_view(text).substr(j, e - j));
          if (name.empty())
            fail_at(file, line, "kpp_parse_error", "#" + word + " names no file");
          if (word == "MODEL") name += ".def";
          const fs::path target = path.parent_path() / name;
          std::error_code ec;
          if (word == "INCLUDE" && fs::path(name).filename() == "atoms" && !fs::exists(target, ec)) {
            // KPP's atom table: only atom compositions use it, and they are ignored.
            src.notes.push_back(Diagnostic{"kpp_include_skipped", src.files[file],
                                           "line " + std::to_string(line),
                                           "KPP's 'atoms' file is not needed (atom compositions "
                                           "are ignored) and was skipped"});
          } else {
            const fs::path shown = fs::path(src.files[file]).parent_path() / name;
            read_file(target, shown.string(), depth + 1, static_cast<int>(file), line);
          }
          i = e;
          continue;
        }
        if (word == "INLINE") {
          std::size_t e = j;
          while (e < n && text[e] != '\n') ++e;
          const std::string kind = trim(std::string_view(text).substr(j, e - j));
          const std::uint32_t open_line = line;
          const std::string upper_text = upper(text);  // small files: simplicity over speed
          const std::size_t end = upper_text.find("#ENDINLINE", j);
          if (end == std::string::npos)
            fail_at(file, open_line, "kpp_parse_error", "#INLINE without a closing #ENDINLINE");
          line += static_cast<std::uint32_t>(std::count(text.begin() + static_cast<long>(i),
                                                        text.begin() + static_cast<long>(end), '\n'));
          src.notes.push_back(Diagnostic{
              "kpp_inline_skipped", src.files[file], "line " + std::to_string(open_line),
              "#INLINE " + (kind.empty() ? std::string("block") : kind) +
                  " holds code in KPP's target language; esi skipped it (a rate that needs a "
                  "name it defines is refused where it is used)"});
          i = end + std::string("#ENDINLINE").size();
          continue;
        }
        // Any other directive is kept (upper-cased) for the section splitter.
        emit('#', file, line);
        for (char w : word) emit(w, file, line);
        i = j;
        continue;
      }
      emit(c, file, line);
      ++i;
    }
    emit('\n', file, line);  // a section never runs into the next file's text
  }
};

}  // namespace

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

Location Source::location(std::size_t i) const {
  // The last run starting at or before i.
  auto it = std::upper_bound(runs.begin(), runs.end(), i,
                             [](std::size_t pos, const Run& r) { return pos < r.offset; });
  return it == runs.begin() ? Location{} : std::prev(it)->at;
}

std::string Source::file_of(std::size_t i) const {
  if (runs.empty()) return files.empty() ? std::string() : files.front();
  return files[location(i).file];
}

std::string Source::pointer_of(std::size_t i) const {
  if (runs.empty()) return "";
  return "line " + std::to_string(location(i).line);
}

void Source::fail(std::size_t i, const std::string& code, const std::string& message) const {
  throw Error(code, file_of(i), pointer_of(i), message);
}

void Source::note(std::size_t i, const std::string& code, const std::string& message) {
  notes.push_back(Diagnostic{code, file_of(i), pointer_of(i), message});
}

Source preprocess(const std::vector<std::filesystem::path>& files) {
  Preprocessor p;
  for (const auto& f : files) p.read_file(f, f.string(), 0, -1, 0);
  return std::move(p.src);
}

std::vector<Token> tokenize(const Source& src, std::size_t begin, std::size_t end) {
  std::vector<Token> out;
  const std::string& t = src.text;
  std::size_t i = begin;
  while (i < end) {
    const char c = t[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    Token tok;
    tok.pos = i;
    if (std::isdigit(static_cast<unsigned char>(c)) ||
        (c == '.' && i + 1 < end && std::isdigit(static_cast<unsigned char>(t[i + 1])))) {
      // Fortran and C spellings: 1, 2., .5, 1.0d-12, 1.E-11, 1e5, 1.0_dp, 1.0E+00_dp.
      std::size_t j = i;
      std::string digits;
      while (j < end && std::isdigit(static_cast<unsigned char>(t[j]))) digits += t[j++];
      if (j < end && t[j] == '.') {
        digits += t[j++];
        while (j < end && std::isdigit(static_cast<unsigned char>(t[j]))) digits += t[j++];
      }
      if (j < end && (t[j] == 'e' || t[j] == 'E' || t[j] == 'd' || t[j] == 'D')) {
        std::size_t k = j + 1;
        if (k < end && (t[k] == '+' || t[k] == '-')) ++k;
        // Only an exponent when digits follow: "2DMS" is the coefficient 2 of species DMS.
        if (k < end && std::isdigit(static_cast<unsigned char>(t[k]))) {
          digits += 'e';
          digits.append(t, j + 1, k - j - 1);
          j = k;
          while (j < end && std::isdigit(static_cast<unsigned char>(t[j]))) digits += t[j++];
        }
      }
      if (j + 1 < end && t[j] == '_' && is_ident_start(t[j + 1])) {  // Fortran kind: _dp
        ++j;
        while (j < end && is_ident_char(t[j])) ++j;
      }
      double value = 0;
      const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
      if (ec != std::errc() || ptr != digits.data() + digits.size() || !std::isfinite(value))
        src.fail(i, "kpp_parse_error",
                 "'" + t.substr(i, j - i) + "' is not a finite number");
      tok.kind = Tok::Number;
      tok.number = value;
      tok.text = t.substr(i, j - i);
      i = j;
    } else if (is_ident_start(c)) {
      std::size_t j = i;
      while (j < end && is_ident_char(t[j])) ++j;
      tok.kind = Tok::Ident;
      tok.text = t.substr(i, j - i);
      i = j;
    } else if (c == '*' && i + 1 < end && t[i + 1] == '*') {
      tok.kind = Tok::Punct;
      tok.text = "**";
      i += 2;
    } else if (std::string_view("+-*/^(),=:<>").find(c) != std::string_view::npos) {
      tok.kind = Tok::Punct;
      tok.text = std::string(1, c);
      ++i;
    } else {
      const bool printable = std::isprint(static_cast<unsigned char>(c));
      src.fail(i, "kpp_parse_error",
               printable ? "unexpected character '" + std::string(1, c) + "'"
                         : "unexpected byte " + std::to_string(static_cast<unsigned char>(c)) +
                               " (KPP files are ASCII text)");
    }
    out.push_back(std::move(tok));
  }
  return out;
}

}  // namespace esi::kpp::detail
