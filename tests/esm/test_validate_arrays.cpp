// validate_file's trial flatten of a gridded document: arrays as per-region programs (as
// `esi simulate` and `esi run` flatten them), with the findings the per-cell form gave.
#include <gtest/gtest.h>

#include <string>

#include "esi/esm/load.hpp"
#include "support/temp_dir.hpp"

namespace {

using esi::testing::TempDir;

// u_i' = -k u_i + K (u_{i+1} - 2 u_i + u_{i-1}) on 5 cells; `u` and the scalar `s` get their
// initial values from INIT_U and INIT_S (a default, an ic equation, or nothing).
std::string grid_document(const std::string& u_default, const std::string& s_default,
                          const std::string& extra_equations) {
  return R"({"esm": "1.0.0", "metadata": {"name": "g"},
  "index_sets": {"x": {"kind": "interval", "size": 5}},
  "models": {"G": {
    "variables": {"u": {"type": "unknown", "units": "1", "shape": ["x"])" + u_default + R"(},
                  "s": {"type": "unknown", "units": "1")" + s_default + R"(},
                  "k": {"type": "parameter", "units": "1/s", "default": 0.1},
                  "K": {"type": "parameter", "units": "1/s", "default": 0.01}},
    "equations": [)" + extra_equations + R"({"lhs": {"op": "D", "args": ["s"], "wrt": "t"},
       "rhs": {"op": "*", "args": [{"op": "-", "args": ["k"]}, "s"]}},
      {"lhs": {"op": "D", "args": ["u"], "wrt": "t"},
      "rhs": {"op": "+", "args": [
        {"op": "*", "args": [{"op": "-", "args": ["k"]}, "u"]},
        {"op": "makearray", "args": [], "regions": [[[2, 4]], [[1, 1]], [[5, 5]]],
         "values": [
           {"op": "aggregate", "output_idx": ["i"], "args": ["u"], "ranges": {"i": [2, 4]},
            "expr": {"op": "*", "args": ["K", {"op": "+", "args": [
              {"op": "index", "args": ["u", {"op": "+", "args": ["i", 1]}]},
              {"op": "*", "args": [-2, {"op": "index", "args": ["u", "i"]}]},
              {"op": "index", "args": ["u", {"op": "-", "args": ["i", 1]}]}]}]}},
           {"op": "*", "args": ["K", {"op": "-", "args": [{"op": "index", "args": ["u", 2]}, {"op": "index", "args": ["u", 1]}]}]},
           {"op": "*", "args": ["K", {"op": "-", "args": [{"op": "index", "args": ["u", 4]}, {"op": "index", "args": ["u", 5]}]}]}]}]}}]}}})";
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
  const auto missing = notes(dir, grid_document("", "", ""), "missing_initial_value");
  ASSERT_EQ(missing.size(), 2u);
  // State order: the scalar s (its equation comes first), then the array u.
  EXPECT_NE(missing[0].find("state 'G.s' has no initial value"), std::string::npos) << missing[0];
  EXPECT_NE(missing[1].find("array state 'G.u' (G.u[1] and others) has no initial value"), std::string::npos)
      << missing[1];
  EXPECT_NE(missing[1].find("--set G.u=VALUE"), std::string::npos) << missing[1];
}

TEST(ValidateArrays, DefaultsAndIcEquationsOfArraysCountAsInitialValues) {
  TempDir dir;
  EXPECT_TRUE(notes(dir, grid_document(R"(, "default": 1.0)", R"(, "default": 2.0)", ""), "missing_initial_value").empty());
  // An ic equation with an array right-hand side (a per-region initial program).
  const std::string ic = R"({"lhs": {"op": "ic", "args": ["u"]},
      "rhs": {"op": "aggregate", "output_idx": ["i"], "args": [], "ranges": {"i": [1, 5]}, "expr": {"op": "*", "args": ["i", 0.5]}}},
     {"lhs": {"op": "ic", "args": ["s"]}, "rhs": 3},)";
  const auto with_ic = notes(dir, grid_document("", "", ic), "missing_initial_value");
  EXPECT_TRUE(with_ic.empty()) << with_ic[0];
}

}  // namespace
