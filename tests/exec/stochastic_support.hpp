// Shared by the stochastic-run tests: their documents under tests/exec/stochastic/, a loaded and
// flattened document that runs ensembles, and the column / output-time lookups of a result.
#pragma once

#include <algorithm>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "esi/esm/flatten.hpp"
#include "esi/esm/load.hpp"
#include "esi/exec/stochastic.hpp"

namespace esi::testing {

inline std::filesystem::path stochastic_doc(const std::string& name) {
  return std::filesystem::path(ESI_SOURCE_DIR) / "tests/exec/stochastic" / name;
}

struct LoadedEnsemble {
  esm::ResolvedDocument doc;
  esm::System system;
  explicit LoadedEnsemble(const std::filesystem::path& file) {
    doc = esm::load_resolved(file);
    system = esm::flatten(doc);
  }
  exec::EnsembleResult run(exec::StochasticOptions o) {
    o.document = &doc;
    return exec::simulate_ensemble(system, o);
  }
};

/// The column of output `name` (a failed expectation when there is none).
inline std::size_t column(const exec::EnsembleResult& r, const std::string& name) {
  const auto it = std::find(r.names.begin(), r.names.end(), name);
  EXPECT_NE(it, r.names.end()) << name;
  return static_cast<std::size_t>(it - r.names.begin());
}

/// The output row at time t (a failed expectation when there is none).
inline std::size_t time_index(const exec::EnsembleResult& r, double t) {
  const auto k = static_cast<std::size_t>(std::find(r.times.begin(), r.times.end(), t) - r.times.begin());
  EXPECT_LT(k, r.times.size()) << t;
  return k;
}

}  // namespace esi::testing
