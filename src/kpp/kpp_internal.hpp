// Private pieces of the KPP importer: the preprocessed source (comments stripped, includes
// expanded, every character located), its tokens, and the rate-expression translator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "esi/core/error.hpp"

namespace esi::kpp::detail {

struct Location {
  std::uint32_t file = 0;  ///< index into Source::files
  std::uint32_t line = 1;
};

/// All input files as one text with comments replaced by a blank, `#INCLUDE` / `#MODEL`
/// expanded in place and `#INLINE ... #ENDINLINE` removed. `text[i]` is at location(i): one
/// run per stretch of text from one line (memory by lines, not by characters).
struct Source {
  struct Run {
    std::size_t offset = 0;  ///< first index into text of the run
    Location at;
  };
  std::string text;
  std::vector<Run> runs;

  Location location(std::size_t i) const;
  std::vector<std::string> files;  ///< display names (paths as given or as included)
  std::vector<Diagnostic> notes;

  std::string file_of(std::size_t i) const;
  std::string pointer_of(std::size_t i) const;  ///< "line N"
  [[noreturn]] void fail(std::size_t i, const std::string& code, const std::string& message) const;
  void note(std::size_t i, const std::string& code, const std::string& message);
};

/// Reads the files in order (a file already read, e.g. also `#INCLUDE`d, is read once).
Source preprocess(const std::vector<std::filesystem::path>& files);

enum class Tok { Number, Ident, Punct, End };

struct Token {
  Tok kind = Tok::End;
  std::string text;   ///< identifier, punctuation ("**" is one token), or the number's spelling
  double number = 0;
  std::size_t pos = 0;  ///< index into Source::text
};

/// Splits text[begin, end) into tokens; a malformed number or stray character is a
/// `kpp_parse_error` at its position.
std::vector<Token> tokenize(const Source& src, std::size_t begin, std::size_t end);

/// What the identifiers of a rate stand for.
struct RateNames {
  std::string temperature = "T";
  std::string air_density = "M";
  std::string cfactor = "CFACTOR";
  std::set<std::string> extra;  ///< caller-declared parameters, by exact name
  /// Filled while translating: which of the above a rate read.
  mutable bool used_temperature = false, used_air_density = false, used_cfactor = false;
  mutable std::set<std::string> used_extra;
};

/// Translates tokens[first, last) (a KPP rate expression) into an ESM expression. Throws
/// `kpp_parse_error` (malformed) or `kpp_unsupported_rate` (unknown function or symbol).
nlohmann::json translate_rate(const Source& src, const std::vector<Token>& tokens,
                              std::size_t first, std::size_t last, const RateNames& names);

/// Value of a constant expression (an `#INITVALUES` right-hand side): numbers and arithmetic
/// only; anything else is `kpp_parse_error`.
double constant_value(const Source& src, const std::vector<Token>& tokens, std::size_t first,
                      std::size_t last);

/// ASCII upper case (KPP keywords and Fortran names are case-insensitive).
std::string upper(std::string s);

}  // namespace esi::kpp::detail
