// validate_file's trial flatten of a gridded document: arrays as per-region programs (as
// `esi simulate` and `esi run` flatten them), with the findings the per-cell form gave.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "esi/esm/load.hpp"
#include "support/decay_diffusion.hpp"
#include "support/temp_dir.hpp"

namespace {

using esi::testing::TempDir;

/// The shared decay-diffusion grid (support/decay_diffusion.hpp) plus a scalar state s, with
/// u's and s's initial values as asked: a default, ic equations (u's an array right-hand side,
/// a per-region initial program), or nothing.
std::string grid_document(bool u_default, bool s_default, bool ic) {
  auto d = nlohmann::json::parse(esi::testing::decay_diffusion_model("0.1"));
  auto& m = d["models"]["M"];
  if (!u_default) m["variables"]["u"].erase("default");
  m["variables"]["s"] = {{"type", "unknown"}};
  if (s_default) m["variables"]["s"]["default"] = 2.0;
  m["equations"].push_back(nlohmann::json::parse(
      R"({"lhs": {"op": "D", "args": ["s"], "wrt": "t"}, "rhs": {"op": "*", "args": [{"op": "-", "args": ["K"]}, "s"]}})"));
  if (ic) {
    m["equations"].push_back(nlohmann::json::parse(R"({"lhs": {"op": "ic", "args": ["u"]},
      "rhs": {"op": "aggregate", "output_idx": ["i"], "args": [], "ranges": {"i": [1, 6]},
              "expr": {"op": "*", "args": ["i", 0.5]}}})"));
    m["equations"].push_back(
        nlohmann::json::parse(R"({"lhs": {"op": "ic", "args": ["s"]}, "rhs": 3})"));
  }
  return d.dump();
}

std::vector<std::string> notes(const TempDir& dir, const std::string& text, const std::string& code) {
  const auto report = esi::esm::validate_file(dir.write("g.esm", text));
  EXPECT_TRUE(report.errors.empty()) << (report.errors.empty() ? "" : report.errors[0].message);
  std::vector<std::string> out;
  for (const auto& n : report.notes)
    if (n.code == code) out.push_back(n.message);
  return out;
}

TEST(ValidateArrays, AnArrayStateWithoutInitialValueIsNotedOnceByItsFirstCell) {
  TempDir dir;
  const auto missing = notes(dir, grid_document(false, false, false), "missing_initial_value");
  ASSERT_EQ(missing.size(), 2u);
  // State order: scalar states come before per-region state arrays.
  EXPECT_NE(missing[0].find("state 'M.s' has no initial value"), std::string::npos) << missing[0];
  EXPECT_NE(missing[1].find("array state 'M.u' (M.u[1] and others) has no initial value"),
            std::string::npos)
      << missing[1];
  EXPECT_NE(missing[1].find("--set M.u=VALUE"), std::string::npos) << missing[1];
}

TEST(ValidateArrays, DefaultsAndIcEquationsOfArraysCountAsInitialValues) {
  TempDir dir;
  EXPECT_TRUE(notes(dir, grid_document(true, true, false), "missing_initial_value").empty());
  const auto with_ic = notes(dir, grid_document(false, false, true), "missing_initial_value");
  EXPECT_TRUE(with_ic.empty()) << with_ic[0];
}

}  // namespace
