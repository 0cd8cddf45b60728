// Shared by the KPP import tests: write a mechanism's files into a scratch folder, import it,
// write the document next to them and load it through the checks every command runs.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "esi/core/error.hpp"
#include "esi/esm/flatten.hpp"
#include "esi/esm/load.hpp"
#include "esi/kernel/oracle.hpp"
#include "esi/kpp/import.hpp"
#include "support/temp_dir.hpp"

namespace esi::testing {

struct ImportedMechanism {
  TempDir dir;
  kpp::ImportResult result;
  std::filesystem::path esm;
  esm::ResolvedDocument doc;
  esm::System system;

  /// `files` maps names to contents; `order` names the files given to the importer.
  ImportedMechanism(const std::map<std::string, std::string>& files,
                    const std::vector<std::string>& order, const kpp::ImportOptions& options = {},
                    const esm::FlattenOptions& flatten_options = {}) {
    std::vector<std::filesystem::path> paths;
    for (const auto& [name, text] : files) dir.write(name, text);
    for (const std::string& name : order) paths.push_back(dir.path() / name);
    result = kpp::import_kpp(paths, options);
    esm = dir.write("imported.esm", result.document.dump(2));
    esm::CheckedDocument checked = esm::load_checked(esm);
    for (const Diagnostic& d : checked.report.errors) ADD_FAILURE() << format_diagnostic(d);
    if (!checked.doc) throw std::runtime_error("the imported document was refused");
    doc = std::move(*checked.doc);
    system = esm::flatten(doc, flatten_options);
  }

  /// The reaction system's JSON.
  const nlohmann::json& reaction_system() const {
    return result.document["reaction_systems"].begin().value();
  }

  /// Parameter values: the defaults, with `overrides` by local name ("T").
  std::vector<double> parameters(const std::map<std::string, double>& overrides = {}) const {
    std::vector<double> p;
    for (const auto& v : system.parameters) {
      const std::string local = v.name.substr(v.name.rfind('.') + 1);
      auto it = overrides.find(local);
      p.push_back(it != overrides.end() ? it->second : v.default_value.value_or(NAN));
    }
    return p;
  }

  /// Right-hand side by the kernel's oracle, keyed by local state name.
  std::map<std::string, double> rhs(const std::map<std::string, double>& state,
                                    const std::map<std::string, double>& overrides = {}) const {
    std::vector<double> u;
    for (const auto& v : system.states) {
      const std::string local = v.name.substr(v.name.rfind('.') + 1);
      auto it = state.find(local);
      u.push_back(it != state.end() ? it->second : 0.0);
    }
    const std::vector<double> p = parameters(overrides);
    std::vector<double> du(u.size());
    kernel::oracle_rhs(system, u.data(), p.data(), 0.0, du.data());
    std::map<std::string, double> out;
    for (std::size_t i = 0; i < du.size(); ++i) {
      const std::string& n = system.states[i].name;
      out[n.substr(n.rfind('.') + 1)] = du[i];
    }
    return out;
  }
};

/// The error import_kpp throws for these files (a failure when it does not throw).
inline Diagnostic import_error(const std::map<std::string, std::string>& files,
                               const std::vector<std::string>& order,
                               const kpp::ImportOptions& options = {}) {
  TempDir dir;
  std::vector<std::filesystem::path> paths;
  for (const auto& [name, text] : files) dir.write(name, text);
  for (const std::string& name : order) paths.push_back(dir.path() / name);
  try {
    kpp::import_kpp(paths, options);
  } catch (const Error& e) {
    Diagnostic d = e.diagnostic();
    d.file = std::filesystem::path(d.file).filename().string();  // the scratch folder varies
    return d;
  }
  ADD_FAILURE() << "import_kpp accepted the input";
  return {};
}

}  // namespace esi::testing
