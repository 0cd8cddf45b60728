// What the structural-check suites share: run check_structure on an inline document, look for
// a finding by code (and pointer), and print every finding when an expectation fails.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "esi/esm/structural.hpp"

namespace esi::testing {

inline std::vector<esi::Diagnostic> check(const nlohmann::json& doc) {
  return esi::esm::check_structure(doc, "t.esm");
}

inline std::string dump(const std::vector<esi::Diagnostic>& ds) {
  std::string s;
  for (const auto& d : ds) s += "\n  " + esi::format_diagnostic(d);
  return s;
}

inline bool has(const std::vector<esi::Diagnostic>& ds, const std::string& code,
                const std::string& ptr) {
  return std::any_of(ds.begin(), ds.end(),
                     [&](const esi::Diagnostic& d) { return d.code == code && d.pointer == ptr; });
}

inline bool has_code(const std::vector<esi::Diagnostic>& ds, const std::string& code) {
  return std::any_of(ds.begin(), ds.end(), [&](const esi::Diagnostic& d) { return d.code == code; });
}

}  // namespace esi::testing

#define EXPECT_CLEAN(doc)                                  \
  do {                                                     \
    const auto ds_ = esi::testing::check(doc);             \
    EXPECT_TRUE(ds_.empty()) << esi::testing::dump(ds_);   \
  } while (0)

#define EXPECT_FINDING(doc, code, ptr)                                         \
  do {                                                                         \
    const auto ds_ = esi::testing::check(doc);                                 \
    EXPECT_TRUE(esi::testing::has(ds_, code, ptr))                             \
        << "want " << code << " at " << ptr << ", got:" << esi::testing::dump(ds_); \
  } while (0)
