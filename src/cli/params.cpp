// Reading `--params FILE` (see params.hpp).
#include "cli/params.hpp"

#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "esi/core/text.hpp"
#include "esi/core/error.hpp"
#include "esi/core/json.hpp"

namespace esi::cli {
namespace {

constexpr std::uintmax_t kMaxParamsBytes = 64u << 20;  // the same bound as JSON files

[[noreturn]] void invalid(const std::string& file, const std::string& pointer, const std::string& message) {
  throw Error("invalid_params", file, pointer, message);
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::vector<Override> from_json(const std::string& path, const nlohmann::json& j) {
  if (!j.is_object())
    invalid(path, "", "a --params JSON file holds one object: {\"name\": number, ...}");
  std::vector<Override> out;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string pointer = pointer_join("", it.key());
    if (it.key().empty()) invalid(path, pointer, "an empty name");
    if (!it->is_number() || !std::isfinite(it->get<double>()))
      invalid(path, pointer, "'" + it.key() + "': the value must be a finite number, got " + it->dump() +
                                 (it->is_array() ? " (for an array cell by cell use --inputs)" : ""));
    out.push_back({it.key(), it->get<double>(), "--params entry '" + it.key() + "'", path, pointer});
  }
  return out;
}

std::vector<Override> from_csv(const std::string& path, const std::string& text) {
  std::vector<Override> out;
  std::set<std::string> seen;
  std::istringstream in(text);
  std::vector<std::string> fields;
  std::size_t line_number = 0;
  bool first_record = true;
  for (std::string line; std::getline(in, line);) {
    ++line_number;
    const std::string where = "line " + std::to_string(line_number);
    const std::string t = trim(line);
    if (t.empty() || t[0] == '#') continue;
    if (!split_csv(line, fields)) invalid(path, "", where + ": unbalanced quotes in '" + t + "'");
    for (auto& f : fields) f = trim(f);
    const bool header = first_record && fields.size() == 2 && fields[0] == "name" && fields[1] == "value";
    first_record = false;
    if (header) continue;
    if (fields.size() != 2)
      invalid(path, "", where + ": expected two fields name,value, got " + std::to_string(fields.size()) + " in '" +
                            t + "' (quote a name holding a comma: \"C.x[2,1]\",0.5)");
    if (fields[0].empty()) invalid(path, "", where + ": an empty name");
    double value = 0;
    const std::string& v = fields[1];
    if (!parse_finite(v, value))
      invalid(path, "", where + ": '" + fields[0] + "': '" + v + "' is not a finite number");
    if (!seen.insert(fields[0]).second) invalid(path, "", where + ": '" + fields[0] + "' is given twice");
    out.push_back({fields[0], value, "--params " + where + " ('" + fields[0] + "')", path, ""});
  }
  return out;
}

}  // namespace

namespace {

/// The first non-blank character of the file ("" for none): `{` or `[` means JSON.
std::string first_character(const std::string& path) {
  std::ifstream probe(path, std::ios::binary);
  char c;
  while (probe.get(c))
    if (c != ' ' && c != '\t' && c != '\r' && c != '\n') return std::string(1, c);
  return {};
}

bool is_json(const std::string& path) {
  const std::string head = first_character(path);
  return ends_with(path, ".json") || head == "{" || head == "[";
}

/// A CSV file's text, with the same checks on the path as a JSON file gets (exists, regular,
/// bounded).
std::string read_csv_text(const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(status)) throw Error("file_not_found", path, "", "--params: no such file");
  if (!std::filesystem::is_regular_file(status))
    throw Error("not_a_regular_file", path, "", "--params: not a regular file");
  if (std::filesystem::file_size(path, ec) > kMaxParamsBytes)
    throw Error("file_too_large", path, "", "--params: the file is larger than 64 MiB");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("file_not_readable", path, "", "--params: the file cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::vector<Override> read_params_file(const std::string& path) {
  if (is_json(path)) return from_json(path, read_json_file(path));
  return from_csv(path, read_csv_text(path));
}

exec::SweepTable read_sweep_table(const std::string& path) {
  exec::SweepTable t;
  t.file = path;
  if (is_json(path)) {
    const nlohmann::json j = read_json_file(path);
    if (!j.is_object() || j.empty())
      invalid(path, "", "a --sweep table in JSON is one object of columns: {\"name\": [v1, v2, ...], ...}");
    std::size_t members = 0;
    std::vector<const nlohmann::json*> columns;
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string pointer = pointer_join("", it.key());
      if (!it->is_array() || it->empty()) invalid(path, pointer, "'" + it.key() + "': a column is a non-empty array of numbers");
      if (columns.empty()) members = it->size();
      if (it->size() != members)
        invalid(path, pointer, "'" + it.key() + "' has " + std::to_string(it->size()) + " values, the first column " +
                                   std::to_string(members) + "; every column needs one value per member");
      for (std::size_t m = 0; m < it->size(); ++m)
        if (!(*it)[m].is_number() || !std::isfinite((*it)[m].get<double>()))
          invalid(path, pointer + "/" + std::to_string(m), "'" + it.key() + "': every value must be a finite number");
      t.names.push_back(it.key());
      columns.push_back(&*it);
    }
    for (std::size_t m = 0; m < members; ++m)
      for (const nlohmann::json* c : columns) t.values.push_back((*c)[m].get<double>());
    return t;
  }
  std::istringstream in(read_csv_text(path));
  std::vector<std::string> fields;
  std::size_t line_number = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_number;
    const std::string where = "line " + std::to_string(line_number);
    const std::string text = trim(line);
    if (text.empty() || text[0] == '#') continue;
    if (!split_csv(line, fields)) invalid(path, "", where + ": unbalanced quotes in '" + text + "'");
    for (auto& f : fields) f = trim(f);
    if (t.names.empty()) {
      std::set<std::string> seen;
      for (const std::string& f : fields) {
        if (f.empty()) invalid(path, "", where + ": the header names every column; one name is empty");
        if (!seen.insert(f).second) invalid(path, "", where + ": '" + f + "' names two columns");
      }
      t.names = fields;
      continue;
    }
    if (fields.size() != t.names.size())
      invalid(path, "", where + ": " + std::to_string(fields.size()) + " values for " + std::to_string(t.names.size()) +
                            " columns");
    for (std::size_t k = 0; k < fields.size(); ++k) {
      double value = 0;
      if (!parse_finite(fields[k], value))
        invalid(path, "", where + ": '" + t.names[k] + "': '" + fields[k] + "' is not a finite number");
      t.values.push_back(value);
    }
  }
  if (t.names.empty() || t.values.empty())
    invalid(path, "", "a --sweep table needs a header of names and at least one row of values");
  return t;
}

}  // namespace esi::cli
