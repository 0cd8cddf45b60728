// Jacobian assembly per operator (issue 10, seed 004): every layout's values against an
// independent forward-mode dual-number Jacobian (tests/kernel/dual_oracle.hpp), on every
// reaction system of the corpus and on the PPM transport operators of transport_3d; apply and
// apply_transpose against J v and J^T w from the dense dual Jacobian and the adjoint identity;
// the seed's refusals as located errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <string>

#include "esi/core/error.hpp"
#include "esi/esm/flatten.hpp"
#include "esi/esm/load.hpp"
#include "esi/core/json.hpp"
#include "esi/kernel/jacobian.hpp"
#include "esi/linalg/sparse_lu.hpp"
#include "esi/plan/jacobian_assembly.hpp"
#include "esi/plan/plan.hpp"
#include "kernel/dual_oracle.hpp"
#include "kernel/kernel_cases.hpp"
#include "support/temp_dir.hpp"

namespace fs = std::filesystem;
using namespace esi::plan;
using Dense = std::vector<std::vector<double>>;

namespace {

constexpr double kTol = 1e-12;

esi::esm::System flatten_grid(const fs::path& file, const nlohmann::json& inputs = nlohmann::json::object()) {
  esi::esm::FlattenOptions fo;
  fo.grid = true;
  fo.inputs = inputs;
  return esi::esm::flatten(esi::esm::load_resolved(file), fo);
}

PlanOptions no_validation() {
  PlanOptions o;
  o.validate = false;
  return o;
}

/// The operator's right-hand side of each dof position (kNoNode where it writes none).
std::vector<esi::expr::NodeId> row_expressions(const Operator& op) {
  std::vector<esi::expr::NodeId> out;
  for (const auto& name : op.block.species) {
    const auto it = std::find(op.rows.begin(), op.rows.end(), name);
    out.push_back(it == op.rows.end() ? esi::expr::kNoNode : op.rhs[static_cast<std::size_t>(it - op.rows.begin())]);
  }
  return out;
}

/// d(operator rows) / d(dofs) at one state (all System::states), by dual numbers.
Dense dual_jacobian(const esi::esm::System& s, const OperatorJacobian& jac, const std::vector<esi::expr::NodeId>& rows,
                    const std::vector<double>& u, const std::vector<double>& p, double t) {
  const std::size_t n = jac.n();
  Dense J(n, std::vector<double>(n, 0.0));
  for (std::size_t c = 0; c < n; ++c) {
    esi::testing::DualOracle o(s, u.data(), p.data(), t, static_cast<std::size_t>(jac.program.dofs[c]));
    for (std::size_t r = 0; r < n; ++r)
      if (rows[r] != esi::expr::kNoNode) J[r][c] = o.eval(rows[r]).d;
  }
  return J;
}

/// Lane l's Jacobian read back from a lane layout's storage through the plan's slots; also
/// counts nonzero storage slots no nonzero maps to (must be none).
Dense read_back(const OperatorJacobian& jac, const ScatterPlan& plan, const std::vector<double>& out, std::size_t L,
                std::size_t l, std::size_t& stray) {
  const std::size_t n = jac.n();
  Dense J(n, std::vector<double>(n, 0.0));
  std::vector<bool> used(plan.slots, false);
  for (std::size_t r = 0; r < n; ++r)
    for (int k = jac.program.row_ptr[r]; k < jac.program.row_ptr[r + 1]; ++k) {
      used[static_cast<std::size_t>(plan.slot[k])] = true;
      J[r][static_cast<std::size_t>(jac.program.col[k])] = out[static_cast<std::size_t>(plan.slot[k]) * L + l];
    }
  for (std::size_t q = 0; q < plan.slots; ++q)
    if (!used[q] && out[q * L + l] != 0) ++stray;
  return J;
}

struct Tally {
  double max_rel = 0;
  std::size_t entries = 0, rows_skipped = 0;
  std::string failure;
};

/// got == dual within kTol of the row's largest dual entry; an entry outside the pattern reads
/// 0 from storage, so a dual nonzero there fails too (the pattern must cover the dual).
void compare(const Dense& got, const Dense& want, const std::string& what, Tally& t) {
  for (std::size_t r = 0; r < want.size(); ++r) {
    double scale = 0;
    bool finite = true;
    for (double v : want[r]) {
      finite = finite && std::isfinite(v);
      scale = std::max(scale, std::fabs(v));
    }
    if (!finite) {  // a rate that needs data the corpus lacks: nothing to compare
      ++t.rows_skipped;
      continue;
    }
    for (std::size_t c = 0; c < want.size(); ++c) {
      const double err = std::fabs(got[r][c] - want[r][c]);
      if (scale > 0) t.max_rel = std::max(t.max_rel, err / scale);
      if (want[r][c] != 0 || got[r][c] != 0) ++t.entries;
      if (!(err <= kTol * scale) && t.failure.empty())
        t.failure = what + ": entry (" + std::to_string(r) + ", " + std::to_string(c) + ") assembled " +
                    std::to_string(got[r][c]) + ", dual " + std::to_string(want[r][c]);
    }
  }
}

bool finite_matrix(const Dense& J) {
  for (const auto& row : J)
    for (double v : row)
      if (!std::isfinite(v)) return false;
  return true;
}

/// apply / apply_transpose on lane storage against the dense dual matrices (one per lane) and
/// the adjoint identity <w, J v> = <J^T w, v>.
void check_products(const OperatorJacobian& jac, const ScatterPlan& plan, const std::vector<double>& out, std::size_t L,
                    const std::vector<Dense>& J, const std::string& what, std::mt19937_64& rng) {
  const std::size_t n = jac.n();
  std::uniform_real_distribution<double> d(-1, 1);
  std::vector<double> v(n * L), w(n * L), y0(n * L), g0(n * L);
  for (auto* x : {&v, &w, &y0, &g0})
    for (double& e : *x) e = d(rng);
  std::vector<double> y = y0, g = g0, jv(n * L, 0.0), jtw(n * L, 0.0);
  apply(jac, plan, out.data(), L, v.data(), y.data());
  apply_transpose(jac, plan, out.data(), L, w.data(), g.data());
  apply(jac, plan, out.data(), L, v.data(), jv.data());
  apply_transpose(jac, plan, out.data(), L, w.data(), jtw.data());
  for (std::size_t l = 0; l < L; ++l) {
    if (!finite_matrix(J[l])) continue;
    double wjv = 0, jtwv = 0, scale = 0;
    for (std::size_t r = 0; r < n; ++r) {
      double want_y = y0[r * L + l], want_g = g0[r * L + l], sy = std::fabs(want_y), sg = std::fabs(want_g);
      for (std::size_t c = 0; c < n; ++c) {
        want_y += J[l][r][c] * v[c * L + l];
        sy += std::fabs(J[l][r][c] * v[c * L + l]);
        want_g += J[l][c][r] * w[c * L + l];
        sg += std::fabs(J[l][c][r] * w[c * L + l]);
        scale += std::fabs(w[r * L + l] * J[l][r][c] * v[c * L + l]);
      }
      EXPECT_LE(std::fabs(y[r * L + l] - want_y), kTol * sy) << what << " apply, row " << r << " lane " << l;
      EXPECT_LE(std::fabs(g[r * L + l] - want_g), kTol * sg) << what << " apply_transpose, column " << r << " lane " << l;
      wjv += w[r * L + l] * jv[r * L + l];
      jtwv += jtw[r * L + l] * v[r * L + l];
    }
    EXPECT_LE(std::fabs(wjv - jtwv), 4 * n * 1.2e-16 * scale + 1e-300) << what << " adjoint identity, lane " << l;
  }
}

/// The reaction-system documents of the corpus, flattened (the same selection as the
/// planner's corpus test: scalar form, at most 400 states).
std::vector<std::pair<std::string, esi::esm::System>> reaction_systems(const fs::path& corpus) {
  std::vector<std::pair<std::string, esi::esm::System>> out;
  for (const auto& f : esi::testing::corpus_documents(corpus)) {
    {
      std::ifstream in(f);
      const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (text.find("\"reaction_systems\"") == std::string::npos) continue;
    }
    try {
      const auto doc = esi::esm::load_resolved(f);
      // (No validate_file: its trial flatten forms every gridded document cell by cell, which
      // costs most of a minute over the corpus; what flattens and compiles is a case.)
      if (doc.library_only) continue;
      esi::esm::FlattenOptions fo;
      fo.grid = true;
      esi::esm::System s = esi::esm::flatten(doc, fo);
      const bool cells = std::any_of(s.states.begin(), s.states.end(), [](const auto& v) { return !v.array.empty(); });
      if (s.reactions.empty() || !s.grid.empty() || cells || s.states.size() > 400) continue;
      (void)esi::kernel::compile(s);  // documents the kernel refuses are no cases
      out.emplace_back(fs::relative(f, corpus).generic_string(), std::move(s));
    } catch (const esi::Error&) {
    }
  }
  return out;
}

}  // namespace

TEST(JacobianAssembly, EveryReactionSystemOfTheCorpusInEveryLaneLayout) {
  const fs::path corpus = esi::testing::corpus_dir();
  if (corpus.empty()) GTEST_SKIP() << "corpus not found: set ESI_CORPUS";
  const auto start = std::chrono::steady_clock::now();
  auto docs = reaction_systems(corpus);
  std::set<std::string> assembled;
  Tally tally;
  std::size_t operators = 0, nonzeros = 0;
  for (auto& [rel, s] : docs) {
    const Plan plan = make_plan(s, no_validation());
    for (const Operator& op : plan.operators) {
      if (op.rows.empty()) continue;
      const OperatorJacobian jac = compile_operator_jacobian(s, plan, op);
      // The JacobianProgram's pattern is the planned block.
      EXPECT_EQ(jac.program.row_ptr, op.block.row_ptr) << rel << " " << op.name;
      EXPECT_EQ(jac.program.col, op.block.col) << rel << " " << op.name;
      const std::size_t n = jac.n(), L = 3;
      // Three lanes at three different non-default states.
      std::mt19937_64 rng(20261202);
      const auto p = esi::testing::defaults(s.parameters);
      std::vector<std::vector<double>> states;
      std::vector<double> u_soa(s.states.size() * L);
      for (std::size_t l = 0; l < L; ++l) {
        states.push_back(esi::testing::perturbed(s.states, rng));
        for (std::size_t i = 0; i < s.states.size(); ++i) u_soa[i * L + l] = states[l][i];
      }
      const std::vector<double> t{3600.0};
      const auto rows = row_expressions(op);
      std::vector<Dense> dual;
      for (std::size_t l = 0; l < L; ++l) dual.push_back(dual_jacobian(s, jac, rows, states[l], p, t[0]));
      const auto lu = esi::linalg::plan_sparse_lu(esi::linalg::Pattern{static_cast<int>(n), jac.program.row_ptr, jac.program.col});
      for (const ScatterPlan& layout : {plan_lane_dense(jac), plan_lane_sparse(jac, lu), plan_csr(jac)}) {
        const std::string what = rel + " " + op.name + " " + layout_name(layout.kind);
        JacWorkspace ws = make_workspace(jac, layout, L);
        prepare(jac, layout, ws, p);
        std::vector<double> out(layout.slots * L, -777.0);  // every slot must be written
        eval_into<double>(jac, layout, ws, {u_soa.data(), s.states.size(), L, L}, t, out.data());
        std::size_t stray = 0;
        for (std::size_t l = 0; l < L; ++l) compare(read_back(jac, layout, out, L, l, stray), dual[l], what, tally);
        EXPECT_EQ(stray, 0u) << what << ": storage outside the pattern is not 0";
        EXPECT_EQ(tally.failure, "") << what;
        tally.failure.clear();
        check_products(jac, layout, out, L, dual, what, rng);
      }
      ++operators;
      nonzeros += jac.nonzeros();
    }
    assembled.insert(rel);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "[assembly corpus] " << assembled.size() << " reaction-system documents, " << operators << " operators, "
            << nonzeros << " nonzeros, " << tally.entries << " entries compared in 3 layouts x 3 lanes, max error "
            << tally.max_rel << " (relative to the row's largest dual entry), " << tally.rows_skipped
            << " non-finite dual rows skipped, " << seconds << " s\n";
  EXPECT_LE(tally.max_rel, kTol);
  for (const char* must : {"EarthSciModels/components/gaschem/superfast.esm", "EarthSciModels/components/gaschem/pollu.esm",
                           "EarthSciModels/components/gaschem/geoschem_fullchem.esm"})
    EXPECT_TRUE(assembled.count(must)) << must << " was not assembled";
}

TEST(JacobianAssembly, SinglePrecisionStorageAndATransposeAccumulatedInDouble) {
  const fs::path corpus = esi::testing::corpus_dir();
  const fs::path f = corpus / "EarthSciModels/components/gaschem/superfast.esm";
  if (corpus.empty() || !fs::exists(f)) GTEST_SKIP() << "corpus not found: set ESI_CORPUS";
  esi::esm::System s = flatten_grid(f);
  const Plan plan = make_plan(s, no_validation());
  const OperatorJacobian jac = compile_operator_jacobian(s, plan, plan.operators[0]);
  const ScatterPlan layout = plan_lane_dense(jac);
  const std::size_t L = 4, n = jac.n();
  const auto p = esi::testing::defaults(s.parameters);
  std::vector<double> u64(s.states.size() * L);
  std::vector<float> u32(u64.size());
  std::mt19937_64 rng(5);
  for (std::size_t l = 0; l < L; ++l) {
    const auto st = esi::testing::perturbed(s.states, rng);
    for (std::size_t i = 0; i < st.size(); ++i) u32[i * L + l] = static_cast<float>(u64[i * L + l] = st[i]);
  }
  // The f32 state rounded back to double, so both precisions see the same point.
  for (std::size_t i = 0; i < u64.size(); ++i) u64[i] = u32[i];
  JacWorkspace w64 = make_workspace(jac, layout, L), w32 = make_workspace(jac, layout, L, esi::kernel::DType::F32);
  prepare(jac, layout, w64, p);
  prepare(jac, layout, w32, p);
  std::vector<double> J64(layout.slots * L);
  std::vector<float> J32(layout.slots * L);
  const std::vector<double> t{0.0};
  eval_into<double>(jac, layout, w64, {u64.data(), s.states.size(), L, L}, t, J64.data());
  eval_into<float>(jac, layout, w32, {u32.data(), s.states.size(), L, L}, t, J32.data());
  double scale = 0;
  for (double x : J64) scale = std::max(scale, std::fabs(x));
  for (std::size_t q = 0; q < J64.size(); ++q) EXPECT_LE(std::fabs(J32[q] - J64[q]), 1e-4 * scale) << q;
  // apply_transpose on f32 values sums in double: equal to the double sum over the same floats.
  std::vector<double> lambda(n * L), g(n * L, 0.0), want(n * L, 0.0);
  for (double& x : lambda) x = std::uniform_real_distribution<double>(-1, 1)(rng);
  apply_transpose(jac, layout, J32.data(), L, lambda.data(), g.data());
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t c = 0; c < n; ++c)
      for (std::size_t l = 0; l < L; ++l)
        want[c * L + l] += static_cast<double>(J32[(r * n + c) * L + l]) * lambda[r * L + l];
  for (std::size_t q = 0; q < g.size(); ++q) EXPECT_NEAR(g[q], want[q], 1e-12 * (std::fabs(want[q]) + 1)) << q;
}

TEST(JacobianAssembly, PpmTransportOperatorsEqualTheCellFormDualJacobian) {
  const fs::path corpus = esi::testing::corpus_dir();
  const fs::path f = corpus / "reseact/prototypes/transport_3d/transport_3d.esm";
  if (corpus.empty() || !fs::exists(f)) GTEST_SKIP() << "corpus not found: set ESI_CORPUS";
  nlohmann::json inputs;
  std::ifstream(fs::path(ESI_SOURCE_DIR) / "examples/reseact/transport_3d_inputs.json") >> inputs;
  const auto start = std::chrono::steady_clock::now();
  esi::esm::System s = flatten_grid(f, inputs);
  ASSERT_EQ(s.grid_fallback, "");
  const Plan plan = make_plan(s, no_validation());
  ASSERT_EQ(plan.operators.size(), 3u);
  // The state, perturbed per cell, shared by the per-region and the cell form by name.
  std::mt19937_64 rng(20261202);
  const std::vector<double> u = esi::testing::perturbed(s.states, rng);
  const std::vector<double> p = esi::testing::defaults(s.parameters);
  const std::vector<double> t{600.0};
  // Per operator: CSR values (one instance: the grid), keyed by (row state, column state).
  std::map<std::pair<int, int>, double> total;
  std::map<int, double> row_scale;
  std::size_t nonzeros = 0;
  std::vector<OperatorJacobian> jacs;
  std::vector<std::vector<double>> csr_values;
  for (const Operator& op : plan.operators) {
    jacs.push_back(compile_operator_jacobian(s, plan, op));
    const OperatorJacobian& jac = jacs.back();
    ASSERT_TRUE(jac.grid);
    const ScatterPlan csr = plan_csr(jac);
    JacWorkspace ws = make_workspace(jac, csr, 1);
    prepare(jac, csr, ws, p);
    std::vector<double> values(csr.slots, -777.0);
    eval_into<double>(jac, csr, ws, {u.data(), s.states.size(), 1, 1}, t, values.data());
    csr_values.push_back(values);
    nonzeros += jac.nonzeros();
    // The pattern lies inside the planned reach (per axis, from the row's cell).
    std::size_t outside = 0;
    for (std::size_t r = 0; r < jac.n(); ++r)
      for (int k = jac.program.row_ptr[r]; k < jac.program.row_ptr[r + 1]; ++k) {
        const auto& a = jac.cell[r];
        const auto& b = jac.cell[static_cast<std::size_t>(jac.program.col[k])];
        for (std::size_t d = 0; d < a.size(); ++d)
          if (b[d] - a[d] < -op.reach[d].minus || b[d] - a[d] > op.reach[d].plus) ++outside;
        const int row = jac.program.dofs[r], col = jac.program.dofs[static_cast<std::size_t>(jac.program.col[k])];
        total[{row, col}] += values[static_cast<std::size_t>(k)];
        row_scale[row] = std::max(row_scale[row], std::fabs(values[static_cast<std::size_t>(k)]));
      }
    EXPECT_EQ(outside, 0u) << op.name;
    // Lane layouts hold one block per cell of a scalar system: refused for a gridded operator.
    try {
      (void)plan_lane_dense(jac);
      ADD_FAILURE() << "a lane layout of a gridded operator";
    } catch (const esi::Error& e) {
      EXPECT_EQ(e.code(), "layout_not_applicable");
    }
    // The column operator in its banded layout: the same values, bitwise, the rest of the
    // band 0; products equal the CSR ones bitwise (same accumulation order).
    if (op.locality == Locality::Column) {
      const ScatterPlan band = plan_column_banded(jac, plan, op);
      EXPECT_EQ(band.storage_lanes, 49u);          // 7 x 7 columns
      EXPECT_EQ(band.n, 7 * 3);                   // 7 levels, 3 arrays
      EXPECT_EQ(band.half_bandwidth, 4 * 3 - 1);  // bandwidth 3 levels
      JacWorkspace bw = make_workspace(jac, band, 1);
      prepare(jac, band, bw, p);
      std::vector<double> banded(band.slots * band.storage_lanes, -777.0);
      eval_into<double>(jac, band, bw, {u.data(), s.states.size(), 1, 1}, t, banded.data());
      std::size_t written = 0;
      for (std::size_t k = 0; k < jac.nonzeros(); ++k)
        EXPECT_EQ(banded[static_cast<std::size_t>(band.slot[k]) * band.storage_lanes + static_cast<std::size_t>(band.lane[k])],
                  values[k]);
      for (double x : banded) written += x != 0;
      std::size_t nonzero_values = 0;
      for (double x : values) nonzero_values += x != 0;
      EXPECT_EQ(written, nonzero_values);
      std::vector<double> v(jac.n()), y1(jac.n(), 0.0), y2(jac.n(), 0.0), g1(jac.n(), 0.0), g2(jac.n(), 0.0);
      for (double& x : v) x = std::uniform_real_distribution<double>(-1, 1)(rng);
      apply(jac, csr, values.data(), 1, v.data(), y1.data());
      apply(jac, band, banded.data(), 1, v.data(), y2.data());
      apply_transpose(jac, csr, values.data(), 1, v.data(), g1.data());
      apply_transpose(jac, band, banded.data(), 1, v.data(), g2.data());
      EXPECT_EQ(y1, y2);
      EXPECT_EQ(g1, g2);
      // Adjoint identity on the column operator.
      double wjv = 0, jtwv = 0, scale = 0;
      for (std::size_t r = 0; r < jac.n(); ++r) {
        wjv += v[r] * y1[r];
        jtwv += g1[r] * v[r];
        scale += std::fabs(v[r]) * row_scale[jac.program.dofs[r]] * 60;
      }
      EXPECT_LE(std::fabs(wjv - jtwv), 1e-13 * scale);
    } else {
      try {
        (void)plan_column_banded(jac, plan, op);
        ADD_FAILURE() << "a banded layout of a stencil operator";
      } catch (const esi::Error& e) {
        EXPECT_EQ(e.code(), "layout_not_applicable");
      }
    }
  }
  // Independent: the cell form (one scalar equation per cell, the array expander's other
  // path), its whole right-hand side by dual numbers, column by column at sampled columns.
  esi::esm::FlattenOptions fo;
  fo.inputs = inputs;
  const esi::esm::System cells = esi::esm::flatten(esi::esm::load_resolved(f), fo);
  std::vector<int> to_grid(cells.states.size());
  std::vector<double> u_cells(cells.states.size());
  for (std::size_t i = 0; i < cells.states.size(); ++i) {
    to_grid[i] = s.state_index(cells.states[i].name);
    ASSERT_GE(to_grid[i], 0) << cells.states[i].name;
    u_cells[i] = u[static_cast<std::size_t>(to_grid[i])];
  }
  const std::vector<double> p_cells = esi::testing::defaults(cells.parameters);
  // Columns of the tracer mass mq (the transported field: every operator reads it).
  std::vector<std::size_t> columns;
  for (std::size_t i = 0; i < cells.states.size(); ++i)
    if (cells.states[i].name.find(".mq[") != std::string::npos) columns.push_back(i);
  ASSERT_GT(columns.size(), 12u);
  std::shuffle(columns.begin(), columns.end(), rng);
  columns.resize(12);
  double max_rel = 0;
  std::size_t compared = 0, dual_nonzeros = 0;
  std::map<std::size_t, std::vector<double>> dual_column;  // cell-form column -> rows
  for (std::size_t c : columns) {
    esi::testing::DualOracle o(cells, u_cells.data(), p_cells.data(), t[0], c);
    for (std::size_t r = 0; r < cells.states.size(); ++r) {
      const double want = o.eval(cells.state_rhs[r]).d;
      dual_column[c].push_back(want);
      const auto it = total.find({to_grid[r], to_grid[c]});
      const double got = it == total.end() ? 0.0 : it->second;
      const double scale = std::max(row_scale[to_grid[r]], std::fabs(want));
      ASSERT_TRUE(std::isfinite(want)) << cells.states[r].name;
      if (want != 0) {
        ++dual_nonzeros;
        EXPECT_NE(it, total.end()) << "d " << cells.states[r].name << " / d " << cells.states[c].name
                                   << " is outside every operator's pattern";
      }
      if (scale > 0) max_rel = std::max(max_rel, std::fabs(got - want) / scale);
      EXPECT_LE(std::fabs(got - want), kTol * scale) << cells.states[r].name << " / " << cells.states[c].name;
      ++compared;
    }
  }
  // Products of the whole transport (the three operators' apply summed) against the dual
  // columns: v nonzero only on the sampled columns, so J v is a sum of known dual columns; the
  // sampled entries of J^T w are dual column . w.
  std::uniform_real_distribution<double> d(-1, 1);
  std::vector<double> v(s.states.size(), 0.0), w(s.states.size()), y(s.states.size(), 0.0), g(s.states.size(), 0.0);
  for (std::size_t c : columns) v[static_cast<std::size_t>(to_grid[c])] = d(rng);
  for (double& x : w) x = d(rng);
  for (std::size_t o = 0; o < jacs.size(); ++o) {
    const OperatorJacobian& jac = jacs[o];
    const ScatterPlan csr = plan_csr(jac);
    std::vector<double> vj(jac.n()), wj(jac.n()), yj(jac.n(), 0.0), gj(jac.n(), 0.0);
    for (std::size_t i = 0; i < jac.n(); ++i) {
      vj[i] = v[static_cast<std::size_t>(jac.program.dofs[i])];
      wj[i] = w[static_cast<std::size_t>(jac.program.dofs[i])];
    }
    apply(jac, csr, csr_values[o].data(), 1, vj.data(), yj.data());
    apply_transpose(jac, csr, csr_values[o].data(), 1, wj.data(), gj.data());
    for (std::size_t i = 0; i < jac.n(); ++i) {
      y[static_cast<std::size_t>(jac.program.dofs[i])] += yj[i];
      g[static_cast<std::size_t>(jac.program.dofs[i])] += gj[i];
    }
  }
  for (std::size_t r = 0; r < cells.states.size(); ++r) {
    double want = 0, scale = 0;
    for (std::size_t c : columns) {
      want += dual_column[c][r] * v[static_cast<std::size_t>(to_grid[c])];
      scale += std::fabs(dual_column[c][r] * v[static_cast<std::size_t>(to_grid[c])]);
    }
    EXPECT_LE(std::fabs(y[static_cast<std::size_t>(to_grid[r])] - want), kTol * scale + 1e-300)
        << "J v at " << cells.states[r].name;
  }
  for (std::size_t c : columns) {
    double want = 0, scale = 0;
    for (std::size_t r = 0; r < cells.states.size(); ++r) {
      want += dual_column[c][r] * w[static_cast<std::size_t>(to_grid[r])];
      scale += std::fabs(dual_column[c][r] * w[static_cast<std::size_t>(to_grid[r])]);
    }
    EXPECT_LE(std::fabs(g[static_cast<std::size_t>(to_grid[c])] - want), kTol * scale + 1e-300)
        << "J^T w at " << cells.states[c].name;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "[assembly ppm] 3 operators, " << nonzeros << " nonzeros; " << compared << " entries of 12 sampled columns ("
            << dual_nonzeros << " dual nonzeros), max error " << max_rel << " (relative to the row's largest entry), "
            << seconds << " s\n";
  EXPECT_GT(dual_nonzeros, 12u * 7);  // a tracer cell reaches at least the 7 cells of its stencils
}

namespace {

const char* kSmallReactions = R"("reaction_systems": {"R": {
    "species": {"A": {"default": 1.0}, "B": {"default": 2.0}, "C": {"default": 0.5}},
    "parameters": {"k1": {"default": 0.3}, "k2": {"default": 0.7}},
    "reactions": [
      {"id": "R1", "substrates": [{"species": "A", "stoichiometry": 1}, {"species": "B", "stoichiometry": 1}],
       "products": [{"species": "C", "stoichiometry": 1}], "rate": "k1"},
      {"id": "R2", "substrates": [{"species": "C", "stoichiometry": 1}],
       "products": [{"species": "A", "stoichiometry": 1}], "rate": "k2"}]}})";

}  // namespace

TEST(JacobianAssembly, AnLuPlanWithoutAnEntryIsRefusedAtTheRowsDeclaration) {
  esi::esm::System s = esi::testing::system_from(kSmallReactions);
  const Plan plan = make_plan(s, no_validation());
  ASSERT_EQ(plan.operators.size(), 1u);
  const OperatorJacobian jac = compile_operator_jacobian(s, plan, plan.operators[0]);
  const int n = static_cast<int>(jac.n());
  esi::linalg::Pattern diagonal{n, {}, {}};
  for (int i = 0; i <= n; ++i) diagonal.row_ptr.push_back(i);
  for (int i = 0; i < n; ++i) diagonal.col.push_back(i);
  try {
    (void)plan_lane_sparse(jac, esi::linalg::plan_sparse_lu(diagonal));
    FAIL() << "a factor pattern without the off-diagonal entries was accepted";
  } catch (const esi::Error& e) {
    EXPECT_EQ(e.code(), "layout_cannot_hold");
    EXPECT_NE(e.diagnostic().pointer, "");
    EXPECT_NE(e.diagnostic().file, "");
    EXPECT_NE(std::string(e.what()).find("d rhs(R."), std::string::npos) << e.what();
  }
  try {
    (void)plan_lane_sparse(jac, esi::linalg::plan_dense_lu(n + 1));
    FAIL() << "an LU plan of another size was accepted";
  } catch (const esi::Error& e) {
    EXPECT_EQ(e.code(), "layout_not_applicable");
  }
  // The dense LU holds every entry; its factor storage is written in place, fully.
  const ScatterPlan full = plan_lane_sparse(jac, esi::linalg::plan_dense_lu(n));
  EXPECT_TRUE(full.in_place);
  EXPECT_EQ(full.slots, static_cast<std::size_t>(n * n));
}

TEST(JacobianAssembly, APlanOrWorkspaceOfAnotherProgramIsRefused) {
  esi::esm::System s = esi::testing::system_from(kSmallReactions);
  const Plan plan = make_plan(s, no_validation());
  const OperatorJacobian jac = compile_operator_jacobian(s, plan, plan.operators[0]);
  // The same system with the second reaction dropped: another pattern, another build.
  Plan other_plan = plan;
  Operator& op = other_plan.operators[0];
  op.rhs[0] = s.pool.number(1.0);
  const OperatorJacobian other = compile_operator_jacobian(s, other_plan, op);
  ASSERT_NE(other.fingerprint, jac.fingerprint);
  const ScatterPlan mine = plan_csr(jac);
  try {
    (void)make_workspace(other, mine, 1);
    FAIL() << "a scatter plan of another program was accepted";
  } catch (const esi::Error& e) {
    EXPECT_EQ(e.code(), "layout_from_another_build");
  }
  JacWorkspace ws = make_workspace(jac, plan_lane_dense(jac), 1);
  std::vector<double> u(s.states.size(), 1.0), out(mine.slots);
  const std::vector<double> t{0.0};
  try {
    eval_into<double>(jac, mine, ws, {u.data(), u.size(), 1, 1}, t, out.data());
    FAIL() << "a workspace of another layout was accepted";
  } catch (const esi::Error& e) {
    EXPECT_EQ(e.code(), "layout_from_another_build");
  }
}

TEST(JacobianAssembly, ANonDifferentiableNodeIsLocatedAtItsEquation) {
  esi::esm::System s = esi::testing::system_from(kSmallReactions);
  Plan plan = make_plan(s, no_validation());
  Operator& op = plan.operators[0];
  // interp.linear whose table is the state itself: no derivative rule.
  const auto a = s.pool.symbol(op.rows[0]);
  op.rhs[0] = s.pool.make(esi::expr::Op::Fn, std::vector<esi::expr::NodeId>{a, a, a}, 3, s.pool.intern("interp.linear"));
  try {
    (void)compile_operator_jacobian(s, plan, op);
    FAIL() << "differentiated a table that depends on the state";
  } catch (const esi::Error& e) {
    EXPECT_EQ(e.code(), "not_differentiable");
    const auto& v = s.states[static_cast<std::size_t>(s.state_index(op.rows[0]))];
    EXPECT_EQ(e.diagnostic().file, v.file);
    EXPECT_EQ(e.diagnostic().pointer, v.pointer);
    EXPECT_NE(e.diagnostic().pointer, "");
  }
}

TEST(JacobianAssembly, AGriddedOperatorWithNoEntryAndABandTooNarrowAreRefused) {
  esi::testing::TempDir dir;
  // c over (x, lev): a pointwise source (no state read: an empty Jacobian) and a column
  // coupling to the level above and below (bandwidth 1).
  const auto file = dir.write("g.esm", R"({"esm": "1.0.0", "metadata": {"name": "t"},
    "index_sets": {"x": {"kind": "interval", "size": 3}, "lev": {"kind": "interval", "size": 4}},
    "models": {"M": {"variables": {
      "c": {"type": "unknown", "shape": ["x", "lev"], "default": 2.0},
      "d": {"type": "unknown", "shape": ["x", "lev"], "default": 1.0},
      "w": {"type": "parameter", "shape": ["x", "lev"], "default": 1.5},
      "s": {"type": "parameter", "default": 0.01}},
     "equations": [
      {"lhs": {"op": "D", "args": ["d"], "wrt": "t"}, "rhs": {"op": "aggregate", "output_idx": ["i", "j"],
        "args": ["w"], "expr": {"op": "*", "args": ["s", {"op": "index", "args": ["w", "i", "j"]}]}}},
      {"lhs": {"op": "D", "args": ["c"], "wrt": "t"}, "rhs": {"op": "makearray", "args": [],
        "regions": [[[1, 3], [2, 3]], [[1, 3], [1, 1]], [[1, 3], [4, 4]]],
        "values": [
          {"op": "aggregate", "output_idx": ["i", "j"], "args": ["c"], "ranges": {"i": [1, 3], "j": [2, 3]},
           "expr": {"op": "-", "args": [{"op": "index", "args": ["c", "i", {"op": "+", "args": ["j", 1]}]},
                                        {"op": "index", "args": ["c", "i", {"op": "-", "args": ["j", 1]}]}]}},
          {"op": "aggregate", "output_idx": ["i", "j"], "args": ["c"], "ranges": {"i": [1, 3], "j": [1, 1]},
           "expr": {"op": "*", "args": ["s", {"op": "index", "args": ["c", "i", "j"]}]}},
          {"op": "aggregate", "output_idx": ["i", "j"], "args": ["c"], "ranges": {"i": [1, 3], "j": [4, 4]},
           "expr": {"op": "*", "args": ["s", {"op": "index", "args": ["c", "i", "j"]}]}}]}}]}}})");
  esi::esm::System s = flatten_grid(file);
  ASSERT_EQ(s.grid_fallback, "");
  const Plan plan = make_plan(s, no_validation());
  bool saw_empty = false, saw_column = false;
  for (const Operator& op : plan.operators) {
    if (std::find(op.rows.begin(), op.rows.end(), "M.d") != op.rows.end()) {
      try {
        (void)compile_operator_jacobian(s, plan, op);
        ADD_FAILURE() << "an empty Jacobian of an array-state operator was accepted";
      } catch (const esi::Error& e) {
        EXPECT_EQ(e.code(), "empty_jacobian");
        EXPECT_NE(e.diagnostic().pointer, "");
        saw_empty = true;
      }
    }
    if (op.locality == Locality::Column) {
      saw_column = true;
      EXPECT_EQ(op.column_bandwidth, 1);
      const OperatorJacobian jac = compile_operator_jacobian(s, plan, op);
      // Levels 2 and 3 read the level below and above, levels 1 and 4 themselves.
      EXPECT_EQ(jac.nonzeros(), 3u * 2 * 2 + 3u * 2);
      EXPECT_NO_THROW((void)plan_column_banded(jac, plan, op));
      Operator narrow = op;
      narrow.column_bandwidth = 0;
      try {
        (void)plan_column_banded(jac, plan, narrow);
        ADD_FAILURE() << "a band narrower than the pattern was accepted";
      } catch (const esi::Error& e) {
        EXPECT_EQ(e.code(), "layout_cannot_hold");
        EXPECT_NE(std::string(e.what()).find("bandwidth"), std::string::npos) << e.what();
      }
    }
  }
  EXPECT_TRUE(saw_empty) << esi::canonical_json(to_json(plan));
  EXPECT_TRUE(saw_column) << esi::canonical_json(to_json(plan));
}

TEST(JacobianAssembly, ACellsBlockDoesNotDependOnItsLaneOrTheLaneCount) {
  // Seed 004 §4: a lane's block depends only on that cell's inputs and the plan. POLLU's cells
  // at lane widths 3 and 8 (a partial block padded inside the kernel), in reversed order.
  const fs::path corpus = esi::testing::corpus_dir();
  const fs::path f = corpus / "EarthSciModels/components/gaschem/pollu.esm";
  if (corpus.empty() || !fs::exists(f)) GTEST_SKIP() << "corpus not found: set ESI_CORPUS";
  esi::esm::System s = flatten_grid(f);
  const Plan plan = make_plan(s, no_validation());
  const OperatorJacobian jac = compile_operator_jacobian(s, plan, plan.operators[0]);
  const auto lu = esi::linalg::plan_sparse_lu({static_cast<int>(jac.n()), jac.program.row_ptr, jac.program.col});
  const auto p = esi::testing::defaults(s.parameters);
  std::mt19937_64 rng(3);
  std::vector<std::vector<double>> cells;
  for (int c = 0; c < 8; ++c) cells.push_back(esi::testing::perturbed(s.states, rng));
  const std::vector<double> t{0.0};
  for (const ScatterPlan& layout : {plan_lane_dense(jac), plan_lane_sparse(jac, lu), plan_csr(jac)}) {
    auto assemble = [&](const std::vector<int>& order) {
      const std::size_t L = order.size();
      std::vector<double> u(s.states.size() * L), out(layout.slots * L);
      for (std::size_t l = 0; l < L; ++l)
        for (std::size_t i = 0; i < s.states.size(); ++i) u[i * L + l] = cells[static_cast<std::size_t>(order[l])][i];
      JacWorkspace ws = make_workspace(jac, layout, L);
      prepare(jac, layout, ws, p);
      eval_into<double>(jac, layout, ws, {u.data(), s.states.size(), L, L}, t, out.data());
      std::map<int, std::vector<double>> by_cell;  // cell -> its block
      for (std::size_t l = 0; l < L; ++l)
        for (std::size_t q = 0; q < layout.slots; ++q) by_cell[order[l]].push_back(out[q * L + l]);
      return by_cell;
    };
    const auto eight = assemble({7, 6, 5, 4, 3, 2, 1, 0});
    const auto three = assemble({1, 4, 6});
    for (int c : {1, 4, 6}) EXPECT_EQ(three.at(c), eight.at(c)) << layout_name(layout.kind) << " cell " << c;
  }
}
