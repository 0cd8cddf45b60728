// The stiff reference problems (tests/problems/*.esm) as documents and as compiled kernels:
// every document validates and flattens to the test set's states with its initial values, and
// the compiled RHS and analytic Jacobian equal an independent transcription of the test set's
// Fortran (problems.hpp) at random positive states and at the published initial and final
// states. Integration against the published reference solutions is test_problem_solutions.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <filesystem>
#include <random>
#include <sstream>

#include "esi/core/error.hpp"
#include "esi/esm/flatten.hpp"
#include "esi/esm/load.hpp"
#include "problems/compiled_problem.hpp"
#include "problems/problems.hpp"

namespace fs = std::filesystem;
using esi::problems::CompiledProblem;
using esi::problems::Magnitude;
using esi::problems::Reference;

namespace {

fs::path problems_dir() { return fs::path(ESI_SOURCE_DIR) / "tests/problems"; }

const std::map<std::string, Reference>& references() {
  static const auto refs = esi::problems::load_references(problems_dir());
  return refs;
}

/// Test states for a problem: the published initial value, the published reference solution
/// (both realistic: many terms cancel there) and five random states with every component in
/// [0.1, 1] (away from zero, so no term vanishes).
std::vector<std::vector<double>> sample_states(const Reference& r) {
  std::vector<std::vector<double>> out{r.y0, r.reference};
  std::mt19937_64 rng(20260);
  std::uniform_real_distribution<double> u(0.1, 1.0);
  for (int k = 0; k < 5; ++k) {
    std::vector<double> y(r.y0.size());
    for (double& v : y) v = u(rng);
    out.push_back(y);
  }
  return out;
}

std::string describe(const std::vector<double>& y) {
  std::ostringstream s;
  s.precision(17);
  for (double v : y) s << v << ' ';
  return s.str();
}

class Problem : public ::testing::TestWithParam<std::string> {
 protected:
  const Reference& ref() const { return references().at(GetParam()); }
};

}  // namespace

TEST(Problems, ReferenceFileListsTheFiveProblems) {
  std::vector<std::string> keys;
  for (const auto& [k, r] : references()) {
    keys.push_back(k);
    EXPECT_EQ(r.states.size(), r.y0.size()) << k;
    EXPECT_EQ(r.states.size(), r.reference.size()) << k;
    EXPECT_TRUE(fs::exists(r.file)) << r.file;
  }
  EXPECT_EQ(keys, (std::vector<std::string>{"e5", "hires", "orego", "pollu", "rober"}));
}

TEST_P(Problem, DocumentValidates) {
  const auto report = esi::esm::validate_file(ref().file);
  std::string errors;
  for (const auto& d : report.errors) errors += esi::format_diagnostic(d) + "\n";
  EXPECT_TRUE(report.valid()) << errors;
}

// The flattened states are exactly the test set's components, and their initial values are the
// test set's `init` (copied into reference.json from the Fortran), bit for bit.
TEST_P(Problem, FlattensToTheTestSetStatesAndInitialValues) {
  const auto sys = esi::esm::flatten(esi::esm::load_resolved(ref().file));
  ASSERT_EQ(sys.states.size(), ref().states.size());
  EXPECT_TRUE(sys.algebraic.empty());
  for (std::size_t i = 0; i < ref().states.size(); ++i) {
    const int s = sys.state_index(ref().states[i]);
    ASSERT_GE(s, 0) << ref().states[i];
    ASSERT_TRUE(sys.states[s].default_value.has_value()) << ref().states[i];
    EXPECT_EQ(*sys.states[s].default_value, ref().y0[i]) << ref().states[i];
  }
  for (const auto& p : sys.parameters) EXPECT_TRUE(p.default_value.has_value()) << p.name;
}

// The compiled kernel against the hand transcription of the test set's feval. Tolerance:
// 1e-13 relative to max(|f_i|, sum |terms of f_i|). The two evaluate the same sums in different
// orders (and HIRES's document sums rate constants, 0.43 + 8.32, where hires.f writes 8.75), so
// they may differ by a few ulps of the largest term; 1e-13 is ~450 ulps of it, far below any
// transcription error (a wrong coefficient or sign is off by O(1) of a term).
TEST_P(Problem, CompiledRhsEqualsHandCodedTestSetRhs) {
  const auto cp = CompiledProblem::load(ref().file, ref().states);
  const auto hand = esi::problems::hand_rhs<double>(GetParam());
  const auto mag = esi::problems::hand_rhs<Magnitude>(GetParam());
  const std::size_t n = ref().states.size();
  double worst = 0;  // largest |kernel - hand| / |hand| over nonzero components, for the log
  for (const auto& y : sample_states(ref())) {
    std::vector<double> want(n);
    hand(y.data(), want.data());
    std::vector<Magnitude> ym(y.begin(), y.end()), scale(n);
    mag(ym.data(), scale.data());
    const auto u = cp->to_system(y);
    std::vector<double> du(n);
    cp->rhs(0.0, u.data(), du.data());
    const auto got = cp->from_system(du);
    for (std::size_t i = 0; i < n; ++i) {
      const double tol = 1e-13 * std::max(std::fabs(want[i]), scale[i].v);
      EXPECT_LE(std::fabs(got[i] - want[i]), tol)
          << ref().states[i] << ": kernel " << got[i] << " hand " << want[i]
          << " at y = " << describe(y);
      if (want[i] != 0) worst = std::max(worst, std::fabs(got[i] - want[i]) / std::fabs(want[i]));
    }
  }
  RecordProperty("max_rel_vs_hand", std::to_string(worst));
}

// The analytic Jacobian (compile_jacobian, the one the integrators use) against complex-step
// derivatives of the hand-coded RHS: df_i/dy_j = Im f_i(y + i h e_j) / h with h = 1e-200 has
// no subtraction, so it is exact to rounding. Every CSR entry must match within 1e-12 of the
// row's largest entry, and every nonzero derivative must be in the CSR pattern.
TEST_P(Problem, AnalyticJacobianEqualsComplexStepOfHandCodedRhs) {
  const auto cp = CompiledProblem::load(ref().file, ref().states);
  const auto& jac = cp->jacobian_program();
  const auto hand = esi::problems::hand_rhs<std::complex<double>>(GetParam());
  const std::size_t n = ref().states.size();
  const double h = 1e-200;
  for (const auto& y : sample_states(ref())) {
    // want[r][c] in System order, from the hand RHS in test-set order.
    std::vector<std::vector<double>> want(n, std::vector<double>(n, 0.0));
    for (std::size_t j = 0; j < n; ++j) {
      std::vector<std::complex<double>> yc(y.begin(), y.end()), f(n);
      yc[j] += std::complex<double>(0.0, h);
      hand(yc.data(), f.data());
      for (std::size_t i = 0; i < n; ++i)
        want[cp->position(i)][cp->position(j)] = f[i].imag() / h;
    }
    const auto u = cp->to_system(y);
    std::vector<double> values(jac.col.size());
    cp->jacobian(0.0, u.data(), values.data());
    for (std::size_t r = 0; r < n; ++r) {
      double row_scale = 0;
      for (double v : want[r]) row_scale = std::max(row_scale, std::fabs(v));
      std::vector<bool> in_pattern(n, false);
      for (int k = jac.row_ptr[r]; k < jac.row_ptr[r + 1]; ++k) {
        const int c = jac.col[k];
        in_pattern[c] = true;
        EXPECT_LE(std::fabs(values[k] - want[r][c]), 1e-12 * row_scale)
            << "d " << cp->system().states[r].name << " / d " << cp->system().states[c].name
            << ": analytic " << values[k] << " complex step " << want[r][c]
            << " at y = " << describe(y);
      }
      for (std::size_t c = 0; c < n; ++c) {
        if (!in_pattern[c]) {
          EXPECT_EQ(want[r][c], 0.0) << "missing entry d " << cp->system().states[r].name
                                      << " / d " << cp->system().states[c].name;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(TestSet, Problem,
                         ::testing::Values("rober", "hires", "pollu", "orego", "e5"),
                         [](const auto& info) { return info.param; });
