// Analytic Jacobians against forward-mode dual numbers: the pattern is exactly the set of
// entries that can be nonzero, values agree to rounding, on the every-operator model, a
// hand-checked chemistry system and every corpus document that compiles.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "esi/core/error.hpp"
#include "esi/kernel/jacobian.hpp"
#include "kernel/dual_oracle.hpp"
#include "kernel/kernel_cases.hpp"

namespace fs = std::filesystem;
using namespace esi::kernel;

namespace {

/// Dense d(RHS)/du over the DOF block from dual numbers, at state u.
std::vector<std::vector<double>> dual_jacobian(const esi::esm::System& s, const std::vector<int>& dofs,
                                               const double* u, const double* p, double t) {
  std::vector<std::vector<double>> J(dofs.size(), std::vector<double>(dofs.size(), 0.0));
  for (std::size_t c = 0; c < dofs.size(); ++c) {
    esi::testing::DualOracle o(s, u, p, t, static_cast<std::size_t>(dofs[c]));
    for (std::size_t r = 0; r < dofs.size(); ++r) J[r][c] = o.eval(s.state_rhs[dofs[r]]).d;
  }
  return J;
}

/// The Jacobian program's nonzeros at one state (one lane).
std::vector<double> tape_values(const JacobianProgram& jac, const std::vector<double>& u,
                                const std::vector<double>& p, double t) {
  Workspace ws = jac.values.make_workspace(1);
  jac.values.prepare(ws, p);
  return esi::testing::run_whole(jac.values, ws, u, 1, {t});
}

struct Comparison {
  double max_rel = 0;
  std::string failure;
};

/// Pattern entries match the dual values; entries outside the pattern are zero in the dual.
Comparison compare(const JacobianProgram& jac, const std::vector<double>& vals,
                   const std::vector<std::vector<double>>& J, const esi::esm::System& s) {
  Comparison out;
  for (std::size_t r = 0; r < J.size(); ++r) {
    double scale = 0;
    for (double v : J[r]) scale = std::max(scale, std::fabs(v));
    std::vector<bool> in_pattern(J.size(), false);
    for (int k = jac.row_ptr[r]; k < jac.row_ptr[r + 1]; ++k) {
      const int c = jac.col[k];
      in_pattern[c] = true;
      const double want = J[r][c], got = vals[k];
      if (std::isnan(want) && std::isnan(got)) continue;
      const double err = std::fabs(got - want) / std::max(scale, 1e-300);
      if (scale > 0) out.max_rel = std::max(out.max_rel, err);
      if (!(err <= 1e-11) && !(got == want))
        out.failure = "d " + s.states[jac.dofs[r]].name + " / d " + s.states[jac.dofs[c]].name +
                      ": tape " + std::to_string(got) + " dual " + std::to_string(want);
    }
    // Outside the pattern the dual must be 0; NaN there is a dual-arithmetic artifact (0 * inf
    // through a factor the symbolic derivative proved absent), not a missing entry.
    for (std::size_t c = 0; c < J.size(); ++c)
      if (!in_pattern[c] && J[r][c] != 0 && !std::isnan(J[r][c]))
        out.failure = "missing entry d " + s.states[jac.dofs[r]].name + " / d " +
                      s.states[jac.dofs[c]].name + " = " + std::to_string(J[r][c]);
  }
  return out;
}

}  // namespace

TEST(Jacobian, HandCheckedChemistry) {
  // A + B -> C (k1), C -> A (k2 * exp(-E/T)), with an observed rate r1 = k1 * A * B.
  const auto s = esi::testing::system_from(R"("models": {"M": {"variables": {
      "A": {"type": "unknown", "default": 1}, "B": {"type": "unknown", "default": 2},
      "C": {"type": "unknown", "default": 3}, "k1": {"type": "parameter", "default": 0.5},
      "k2": {"type": "parameter", "default": 4}, "E": {"type": "parameter", "default": 100},
      "T": {"type": "parameter", "default": 300}, "r1": {"type": "unknown"}},
    "equations": [
      {"lhs": "r1", "rhs": {"op": "*", "args": ["k1", "A", "B"]}},
      {"lhs": {"op": "D", "args": ["A"], "wrt": "t"}, "rhs": {"op": "+", "args": [{"op": "neg", "args": ["r1"]},
          {"op": "*", "args": ["k2", {"op": "exp", "args": [{"op": "/", "args": [{"op": "neg", "args": ["E"]}, "T"]}]}, "C"]}]}},
      {"lhs": {"op": "D", "args": ["B"], "wrt": "t"}, "rhs": {"op": "neg", "args": ["r1"]}},
      {"lhs": {"op": "D", "args": ["C"], "wrt": "t"}, "rhs": {"op": "-", "args": ["r1",
          {"op": "*", "args": ["k2", {"op": "exp", "args": [{"op": "/", "args": [{"op": "neg", "args": ["E"]}, "T"]}]}, "C"]}]}}]}})");
  const JacobianProgram jac = compile_jacobian(s);
  const int A = s.state_index("M.A"), B = s.state_index("M.B"), C = s.state_index("M.C");
  auto at = [&](int r, int c) -> int {
    for (int k = jac.row_ptr[r]; k < jac.row_ptr[r + 1]; ++k)
      if (jac.dofs[jac.col[k]] == c) return k;
    return -1;
  };
  // Row B depends on A and B only; every other pair of rows and columns is structurally full.
  EXPECT_EQ(at(B, C), -1);
  EXPECT_EQ(jac.col.size(), 8u);
  const std::vector<double> u{1.5, 2.5, 0.25};
  std::vector<double> uu(3);
  uu[A] = u[0], uu[B] = u[1], uu[C] = u[2];
  const auto p = esi::testing::defaults(s.parameters);
  const auto v = tape_values(jac, uu, p, 0.0);
  const double k2e = 4 * std::exp(-100.0 / 300.0);
  EXPECT_DOUBLE_EQ(v[at(A, A)], -0.5 * 2.5);
  EXPECT_DOUBLE_EQ(v[at(A, B)], -0.5 * 1.5);
  EXPECT_DOUBLE_EQ(v[at(A, C)], k2e);
  EXPECT_DOUBLE_EQ(v[at(B, A)], -0.5 * 2.5);
  EXPECT_DOUBLE_EQ(v[at(C, B)], 0.5 * 1.5);
  EXPECT_DOUBLE_EQ(v[at(C, C)], -k2e);
}

TEST(Jacobian, EveryOperatorMatchesDualNumbers) {
  const auto s = esi::testing::system_from(esi::testing::all_ops_model());
  const JacobianProgram jac = compile_jacobian(s);
  EXPECT_EQ(jac.row_ptr.size(), s.states.size() + 1);
  std::mt19937_64 rng(17);
  const auto p = esi::testing::defaults(s.parameters);
  for (int rep = 0; rep < 3; ++rep) {
    const auto u = esi::testing::perturbed(s.states, rng);
    const auto vals = tape_values(jac, u, p, 1.7e9);
    const auto J = dual_jacobian(s, jac.dofs, u.data(), p.data(), 1.7e9);
    const Comparison c = compare(jac, vals, J, s);
    EXPECT_EQ(c.failure, "");
    EXPECT_LT(c.max_rel, 1e-13);
  }
}

TEST(Jacobian, DofSubsetIsTheSquareBlock) {
  const auto s = esi::testing::system_from(esi::testing::all_ops_model());
  CompileOptions o;
  o.dofs = {s.state_index("M.z"), s.state_index("M.x")};
  const JacobianProgram jac = compile_jacobian(s, o);
  ASSERT_EQ(jac.row_ptr.size(), 3u);
  for (int c : jac.col) EXPECT_LT(c, 2);
  const auto u = esi::testing::defaults(s.states);
  const auto p = esi::testing::defaults(s.parameters);
  const auto J = dual_jacobian(s, jac.dofs, u.data(), p.data(), 0.0);
  EXPECT_EQ(compare(jac, tape_values(jac, u, p, 0.0), J, s).failure, "");
}

TEST(Jacobian, CorpusDocumentsMatchDualNumbers) {
  const fs::path corpus = esi::testing::corpus_dir();
  if (corpus.empty()) GTEST_SKIP() << "corpus not found: set ESI_CORPUS";
  const std::vector<fs::path> files = esi::testing::corpus_documents(corpus);
  int checked = 0, not_differentiable = 0, nonzeros = 0, too_large = 0;
  double max_rel = 0;
  for (const auto& f : files) {
    esi::esm::System s;
    try {
      const auto doc = esi::esm::load_resolved(f);
      if (doc.library_only || !esi::esm::validate_file(f).valid()) continue;
      s = esi::esm::flatten(doc);
      (void)compile(s);  // documents the RHS compiler refuses are not Jacobian cases
    } catch (const esi::Error&) {
      continue;
    }
    const std::string rel = fs::relative(f, corpus).generic_string();
    // The dual-number oracle costs one RHS walk per state; gridded documents of a thousand
    // cells and more are checked cell by cell in tests/esm/test_arrays.cpp instead.
    if (s.states.size() > 400) {
      ++too_large;
      continue;
    }
    try {
      const JacobianProgram jac = compile_jacobian(s);
      std::mt19937_64 rng(99);
      const auto u = esi::testing::perturbed(s.states, rng);
      const auto p = esi::testing::defaults(s.parameters);
      const auto J = dual_jacobian(s, jac.dofs, u.data(), p.data(), 3600.0);
      const Comparison c = compare(jac, tape_values(jac, u, p, 3600.0), J, s);
      EXPECT_EQ(c.failure, "") << rel;
      max_rel = std::max(max_rel, c.max_rel);
      nonzeros += static_cast<int>(jac.col.size());
      ++checked;
    } catch (const esi::Error& e) {
      if (e.code() != "not_differentiable") ADD_FAILURE() << rel << ": " << e.what();
      ++not_differentiable;
    }
  }
  std::cout << "[jacobian corpus] " << checked << " documents, " << nonzeros << " nonzeros, max error "
            << max_rel << " (relative to the row's largest entry); " << not_differentiable
            << " not differentiable; " << too_large << " over 400 states skipped\n";
  EXPECT_GT(checked, 0);
}
