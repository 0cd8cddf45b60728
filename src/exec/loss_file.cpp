// The loss file's reader (esi/exec/loss_file.hpp says the format).
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "esi/exec/loss_file.hpp"

#include "esi/core/error.hpp"
#include "esi/core/json.hpp"
#include "esi/core/text.hpp"

namespace esi::exec {
namespace {

[[noreturn]] void invalid(const std::string& file, const std::string& pointer,
                          const std::string& message) {
  throw Error("invalid_loss_file", file, pointer, message);
}

double number_at(const nlohmann::json& j, const std::string& file, const std::string& pointer) {
  if (!j.is_number() || !std::isfinite(j.get<double>()))
    invalid(file, pointer, "expected a finite number, got " + j.dump());
  return j.get<double>();
}

/// One misfit term per variable named in the CSV, rows in file order.
std::vector<LossTerm> read_observations(const std::filesystem::path& csv, double weight,
                                        const std::string& file, const std::string& pointer) {
  std::ifstream in(csv);
  if (!in) invalid(file, pointer, "cannot read the observations file " + csv.string());
  std::map<std::string, LossTerm> by_name;
  std::vector<std::string> order, fields;
  std::size_t line_number = 0;
  bool first = true;
  for (std::string line; std::getline(in, line);) {
    ++line_number;
    const std::string t = trim(line);
    if (t.empty() || t[0] == '#') continue;
    const std::string where = csv.string() + " line " + std::to_string(line_number);
    if (!split_csv(line, fields) || fields.size() != 4)
      invalid(file, pointer, where + ": expected four fields time,name,value,sigma in '" + t + "'");
    for (auto& f : fields) f = trim(f);
    const bool header = first && fields[0] == "time";
    first = false;
    if (header) continue;
    double time = 0, value = 0, sigma = 0;
    if (!parse_finite(fields[0], time) || !parse_finite(fields[2], value) ||
        !parse_finite(fields[3], sigma))
      invalid(file, pointer,
              where + ": time, value and sigma must be finite numbers in '" + t + "'");
    auto [it, added] = by_name.try_emplace(fields[1]);
    LossTerm& term = it->second;
    if (added) {
      order.push_back(fields[1]);
      term.kind = LossTerm::Kind::Misfit;
      term.variable = fields[1];
      term.weight = weight;
      term.file = file;
      term.pointer = pointer;
    }
    term.times.push_back(time);
    term.values.push_back(value);
    term.sigmas.push_back(sigma);
  }
  if (order.empty())
    invalid(file, pointer, "the observations file " + csv.string() + " holds no rows");
  std::vector<LossTerm> out;
  for (const std::string& name : order) out.push_back(by_name[name]);
  return out;
}

std::pair<double, double> interval_at(const nlohmann::json& j, const std::string& file,
                                      const std::string& pointer) {
  if (!j.is_array() || j.size() != 2) invalid(file, pointer, "expected an interval [begin, end]");
  return {number_at(j[0], file, pointer + "/0"), number_at(j[1], file, pointer + "/1")};
}

}  // namespace

std::vector<LossTerm> read_loss_file(const std::string& path) {
  return loss_terms(read_json_file(path), path, std::filesystem::path(path).parent_path());
}

std::vector<LossTerm> loss_terms(const nlohmann::json& doc, const std::string& path,
                                 const std::filesystem::path& folder) {
  if (!doc.is_object() || !doc.contains("terms") || !doc["terms"].is_array() ||
      doc["terms"].empty())
    invalid(path, "", "a loss file is an object {\"terms\": [...]} with at least one term");
  std::vector<LossTerm> out;
  const auto& terms = doc["terms"];
  for (std::size_t k = 0; k < terms.size(); ++k) {
    const std::string pointer = pointer_join("/terms", k);
    const nlohmann::json& j = terms[k];
    if (!j.is_object()) invalid(path, pointer, "a term is an object");
    for (const auto& [key, value] : j.items())
      if (key != "variable" && key != "at" && key != "integral" && key != "mean" &&
          key != "observations" && key != "weight")
        invalid(path, pointer_join(pointer, key),
                "unknown key '" + key +
                    "' (a term has variable with at, integral or mean; or observations; and an "
                    "optional weight)");
    const double weight =
        j.contains("weight") ? number_at(j["weight"], path, pointer + "/weight") : 1.0;
    if (j.contains("observations")) {
      if (!j["observations"].is_string())
        invalid(path, pointer + "/observations", "expected the path of a CSV file");
      const std::filesystem::path csv = folder / j["observations"].get<std::string>();
      for (LossTerm& t : read_observations(csv, weight, path, pointer + "/observations"))
        out.push_back(std::move(t));
      continue;
    }
    if (!j.contains("variable") || !j["variable"].is_string())
      invalid(path, pointer, "a term names its variable (a state or state array) in \"variable\"");
    LossTerm t;
    t.variable = j["variable"].get<std::string>();
    t.weight = weight;
    t.file = path;
    t.pointer = pointer;
    const int kinds = int(j.contains("at")) + int(j.contains("integral")) + int(j.contains("mean"));
    if (kinds != 1)
      invalid(path, pointer, "a term has exactly one of \"at\", \"integral\" and \"mean\"");
    if (j.contains("at")) {
      const auto& at = j["at"];
      if (!at.is_array() || at.empty()) invalid(path, pointer + "/at", "expected a list of times");
      for (std::size_t i = 0; i < at.size(); ++i)
        t.times.push_back(number_at(at[i], path, pointer_join(pointer + "/at", i)));
    } else {
      const bool mean = j.contains("mean");
      t.kind = mean ? LossTerm::Kind::Mean : LossTerm::Kind::Integral;
      std::tie(t.begin, t.end) = interval_at(j[mean ? "mean" : "integral"], path,
                                             pointer + (mean ? "/mean" : "/integral"));
    }
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace esi::exec
