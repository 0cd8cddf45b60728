// The planner: operators, locality, patterns and their validation, on small documents written
// here and on the corpus (reaction systems, the PPM transport operator, reseact_3d_chem).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>

#include "esi/core/error.hpp"
#include "esi/core/json.hpp"
#include "esi/esm/flatten.hpp"
#include "esi/esm/load.hpp"
#include "esi/kernel/jacobian.hpp"
#include "esi/plan/plan.hpp"
#include "support/temp_dir.hpp"

namespace fs = std::filesystem;
using esi::plan::Locality;
using esi::plan::Operator;
using esi::plan::Plan;

namespace {

esi::esm::System flatten_grid(const fs::path& file, const nlohmann::json& inputs = nlohmann::json::object()) {
  esi::esm::FlattenOptions fo;
  fo.grid = true;
  fo.inputs = inputs;
  return esi::esm::flatten(esi::esm::load_resolved(file), fo);
}

const Operator* find_op(const Plan& p, const std::string& name) {
  for (const auto& op : p.operators)
    if (op.name == name) return &op;
  return nullptr;
}

const esi::plan::AxisReach& reach(const Operator& op, const std::string& axis) {
  for (const auto& a : op.reach)
    if (a.axis == axis) return a;
  throw std::runtime_error("no axis " + axis);
}

std::string validation_text(const Plan& p) { return esi::canonical_json(esi::plan::to_json(p)["validation"]); }

// A column model written for this test: c over (x, lev); its tendency is a pointwise loss
// plus a fraction of the column sum of c (read through the observed array col).
std::string column_doc(const std::string& vertical_name) {
  const std::string v = vertical_name;
  return R"({"esm": "1.0.0", "metadata": {"name": "t"},
    "index_sets": {"x": {"kind": "interval", "size": 5}, ")" + v + R"(": {"kind": "interval", "size": 4}},
    "models": {"M": {"variables": {
      "c": {"type": "unknown", "shape": ["x", ")" + v + R"("], "default": 2.0},
      "col": {"type": "unknown", "shape": ["x"]},
      "k": {"type": "parameter", "default": 0.1}, "s": {"type": "parameter", "default": 0.01}},
     "equations": [
      {"lhs": "col", "rhs": {"op": "aggregate", "output_idx": ["i"], "args": ["c"],
        "expr": {"op": "index", "args": ["c", "i", "j"]}}},
      {"lhs": {"op": "D", "args": ["c"], "wrt": "t"}, "rhs": {"op": "aggregate", "output_idx": ["i", "j"],
        "args": ["c", "col"], "expr": {"op": "+", "args": [
          {"op": "*", "args": [-1, "k", {"op": "index", "args": ["c", "i", "j"]}]},
          {"op": "*", "args": ["s", {"op": "index", "args": ["col", "i"]}]}]}}}]}}})";
}

}  // namespace

TEST(Plan, VerticalAxisIsRecognisedByName) {
  EXPECT_EQ(esi::plan::vertical_axis_of({"lon", "lat", "lev"}), "lev");
  EXPECT_EQ(esi::plan::vertical_axis_of({"gf_t", "gf_lev", "gf_lat"}), "gf_lev");
  EXPECT_EQ(esi::plan::vertical_axis_of({"x", "y"}), "");
  EXPECT_EQ(esi::plan::vertical_axis_of({"lon", "lev_nodes"}), "lev_nodes");
}

TEST(Plan, AColumnSumIsAColumnOperatorBesideThePointwiseLoss) {
  esi::testing::TempDir dir;
  esi::esm::System s = flatten_grid(dir.write("col.esm", column_doc("lev")));
  ASSERT_EQ(s.grid_fallback, "");
  const Plan p = esi::plan::make_plan(s);
  EXPECT_EQ(p.form, "grid");
  EXPECT_EQ(p.vertical_axis, "lev");
  ASSERT_EQ(p.operators.size(), 2u) << esi::canonical_json(esi::plan::to_json(p));
  const Operator* loss = find_op(p, "M");
  const Operator* column = find_op(p, "M.lev");
  ASSERT_TRUE(loss && column);
  EXPECT_EQ(loss->locality, Locality::Pointwise);
  EXPECT_EQ(loss->block.nonzeros(), 1u);  // d c / d c = -k
  EXPECT_EQ(column->locality, Locality::Column);
  EXPECT_EQ(column->column_axis, "lev");
  EXPECT_EQ(column->column_bandwidth, 3);  // every level of a 4-level column
  EXPECT_TRUE(reach(*column, "lev").unbounded);
  EXPECT_EQ(reach(*column, "x").minus, 0);
  EXPECT_EQ(reach(*column, "x").plus, 0);
  // Every level of the column shows up in the dual-number Jacobian: the reach is tight.
  ASSERT_TRUE(p.validation.ok()) << validation_text(p);
  EXPECT_EQ(p.validation.cells_checked, 20u);
  EXPECT_EQ(column->measured_reach[1].minus, 3);
  EXPECT_EQ(column->measured_reach[1].plus, 3);
  EXPECT_EQ(p.validation.outside_pattern, 0u);
  EXPECT_GT(p.validation.jacobian_nonzeros, 0u);
}

TEST(Plan, ArraysAsCellsAreRefusedWithTheReason) {
  esi::testing::TempDir dir;
  esi::esm::System s = esi::esm::flatten(esi::esm::load_resolved(dir.write("col.esm", column_doc("lev"))));
  try {
    (void)esi::plan::make_plan(s);
    FAIL() << "planned a cell-by-cell system";
  } catch (const esi::Error& e) {
    EXPECT_EQ(e.code(), "plan_needs_region_form");
    EXPECT_NE(e.diagnostic().pointer, "");
  }
}

TEST(Plan, ASumAlongAHorizontalAxisIsGlobal) {
  esi::testing::TempDir dir;
  esi::esm::System s = flatten_grid(dir.write("row.esm", column_doc("y")));
  const Plan p = esi::plan::make_plan(s);
  const Operator* sum = find_op(p, "M.y");
  ASSERT_TRUE(sum) << esi::canonical_json(esi::plan::to_json(p));
  EXPECT_EQ(sum->locality, Locality::Global);
  EXPECT_TRUE(p.validation.ok()) << validation_text(p);
}

TEST(Plan, AnOperatorWritingStatesWithoutAPatternIsRefused) {
  Plan p;
  p.document = "d.esm";
  Operator op;
  op.name = "Transport.lon";
  op.rows = {"C.q"};
  p.operators.push_back(op);
  try {
    esi::plan::require_patterns(p);
    FAIL() << "accepted";
  } catch (const esi::Error& e) {
    EXPECT_EQ(e.code(), "missing_pattern");
    EXPECT_NE(std::string(e.what()).find("Transport.lon"), std::string::npos);
  }
  p.operators[0].has_pattern = true;
  EXPECT_NO_THROW(esi::plan::require_patterns(p));
}

TEST(Plan, AWrongPatternIsCaughtByTheDualNumberCheck) {
  // The validation must be able to fail: drop one entry of a planned block and validate again.
  const fs::path corpus = esi::testing::corpus_dir();
  const fs::path f = corpus / "EarthSciModels/components/gaschem/superfast.esm";
  if (corpus.empty() || !fs::exists(f)) GTEST_SKIP() << "corpus not found: set ESI_CORPUS";
  esi::esm::System s = flatten_grid(f);
  Plan p = esi::plan::make_plan(s);
  ASSERT_TRUE(p.validation.ok()) << validation_text(p);
  ASSERT_EQ(p.operators.size(), 1u);
  auto& b = p.operators[0].block;
  ASSERT_GT(b.row_ptr[1], b.row_ptr[0]);
  b.col.erase(b.col.begin() + b.row_ptr[0]);  // the first entry of the first row
  for (std::size_t r = 1; r < b.row_ptr.size(); ++r) --b.row_ptr[r];
  Plan checked = p;
  esi::plan::validate(s, checked);
  EXPECT_FALSE(checked.validation.ok());
  EXPECT_GT(checked.validation.outside_pattern, 0u);
}

TEST(Plan, EveryReactionSystemOfTheCorpusIsCoveredByItsPattern) {
  const fs::path corpus = esi::testing::corpus_dir();
  if (corpus.empty()) GTEST_SKIP() << "corpus not found: set ESI_CORPUS";
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(corpus))
    if (e.path().extension() == ".esm" && e.path().string().find("EarthSciAST-tests/invalid") == std::string::npos)
      files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::set<std::string> planned;
  std::size_t nonzeros = 0, analytic = 0;
  for (const auto& f : files) {
    {  // every reaction system is written in a file that says so (cheap: skips the grids)
      std::ifstream in(f);
      const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (text.find("\"reaction_systems\"") == std::string::npos) continue;
    }
    esi::esm::System s;
    try {
      const auto doc = esi::esm::load_resolved(f);
      if (doc.library_only || !esi::esm::validate_file(f).valid()) continue;
      esi::esm::FlattenOptions fo;
      fo.grid = true;
      s = esi::esm::flatten(doc, fo);
      // Gridded documents are planned in the per-region form (the transport tests below);
      // compile_jacobian has no per-region form.
      const bool cells = std::any_of(s.states.begin(), s.states.end(), [](const auto& v) { return !v.array.empty(); });
      if (s.reactions.empty() || !s.grid.empty() || cells || s.states.size() > 400) continue;
      (void)esi::kernel::compile_jacobian(s);  // documents the kernel refuses are no cases
    } catch (const esi::Error&) {
      continue;
    }
    const std::string rel = fs::relative(f, corpus).generic_string();
    const Plan p = esi::plan::make_plan(s);
    if (p.validation.rows_not_finite > 0) continue;  // a rate that needs data the corpus lacks
    EXPECT_TRUE(p.validation.ok()) << rel << ": " << validation_text(p);
    EXPECT_EQ(p.validation.outside_pattern, 0u) << rel;
    EXPECT_LE(p.validation.max_analytic_error, 1e-12) << rel;
    EXPECT_LE(p.validation.max_sum_error, 1e-12) << rel;
    // The reactions of a reaction system form one pointwise operator named after it.
    std::set<std::string> reaction_systems;
    for (const auto& r : s.reactions) reaction_systems.insert(r.component);
    for (const auto& rs : reaction_systems) {
      const Operator* op = find_op(p, rs);
      if (!op) continue;  // a reaction system whose species all are reservoirs
      EXPECT_EQ(op->locality, Locality::Pointwise) << rel;
      EXPECT_EQ(op->origin, "reactions of " + rs) << rel;
    }
    nonzeros += p.validation.jacobian_nonzeros;
    analytic += p.validation.analytic_entries;
    planned.insert(rel);
  }
  std::cout << "[plan corpus] " << planned.size() << " reaction-system documents, " << nonzeros
            << " dual-number nonzeros checked, " << analytic << " analytic entries compared\n";
  for (const char* must : {"EarthSciModels/components/gaschem/superfast.esm", "EarthSciModels/components/gaschem/pollu.esm",
                           "EarthSciModels/components/gaschem/geoschem_fullchem.esm"})
    EXPECT_TRUE(planned.count(must)) << must << " was not planned";
}

TEST(Plan, SuperFastIsOnePointwiseBlockWithItsMechanismsPattern) {
  const fs::path corpus = esi::testing::corpus_dir();
  const fs::path f = corpus / "EarthSciModels/components/gaschem/superfast.esm";
  if (corpus.empty() || !fs::exists(f)) GTEST_SKIP() << "corpus not found: set ESI_CORPUS";
  esi::esm::System s = flatten_grid(f);
  const esi::kernel::JacobianProgram jac = esi::kernel::compile_jacobian(s);
  const Plan p = esi::plan::make_plan(s);
  ASSERT_EQ(p.operators.size(), 1u);
  const Operator& op = p.operators[0];
  EXPECT_EQ(op.name, "SuperFast");
  EXPECT_EQ(op.rows.size(), 12u);
  EXPECT_EQ(op.block.species.size(), 12u);
  // One operator: its block is the whole system's Jacobian pattern.
  EXPECT_EQ(op.block.nonzeros(), jac.col.size());
  EXPECT_EQ(op.block.nonzeros(), 68u);
  EXPECT_GT(p.validation.analytic_entries, 0u);
  ASSERT_TRUE(op.lu.planned);
  EXPECT_EQ(op.lu.order.size(), 12u);
  EXPECT_GE(op.lu.factor_nonzeros, op.block.nonzeros());
}

TEST(Plan, ABoxModelSplitsChemistryFromDepositionByComponent) {
  const fs::path corpus = esi::testing::corpus_dir();
  const fs::path f = corpus / "reseact/prototypes/box_model/box.esm";
  if (corpus.empty() || !fs::exists(f)) GTEST_SKIP() << "corpus not found: set ESI_CORPUS";
  esi::esm::System s = flatten_grid(f);
  const Plan p = esi::plan::make_plan(s);
  ASSERT_EQ(p.operators.size(), 2u) << esi::canonical_json(esi::plan::to_json(p));
  const Operator* chem = find_op(p, "SuperFast");
  const Operator* dep = find_op(p, "SuperFastDepositionSink");
  ASSERT_TRUE(chem && dep);
  EXPECT_EQ(chem->origin, "reactions of SuperFast");
  EXPECT_EQ(chem->rows.size(), 12u);
  EXPECT_EQ(dep->rows.size(), 7u);
  // A first-order sink: each deposited species depends on itself only.
  EXPECT_EQ(dep->block.nonzeros(), 7u);
  EXPECT_TRUE(p.validation.ok()) << validation_text(p);
}

TEST(Plan, PpmTransportHasStencilsOfRadiusThreeAndAColumn) {
  const fs::path corpus = esi::testing::corpus_dir();
  const fs::path f = corpus / "reseact/prototypes/transport_3d/transport_3d.esm";
  if (corpus.empty() || !fs::exists(f)) GTEST_SKIP() << "corpus not found: set ESI_CORPUS";
  // Its hybrid-coordinate coefficients (examples/, as the runs use them): without them the
  // layer thicknesses are 0 and the right-hand side is not finite.
  nlohmann::json inputs;
  std::ifstream(fs::path(ESI_SOURCE_DIR) / "examples/reseact/transport_3d_inputs.json") >> inputs;
  esi::esm::System s = flatten_grid(f, inputs);
  ASSERT_EQ(s.grid_fallback, "");
  esi::plan::PlanOptions o;
  o.max_cells = 400;  // all 343 cells of the 7x7x7 default
  const Plan p = esi::plan::make_plan(s, o);
  EXPECT_EQ(p.axes, (std::vector<std::string>{"lon", "lat", "lev"}));
  EXPECT_EQ(p.extents, (std::vector<std::int64_t>{7, 7, 7}));
  ASSERT_EQ(p.operators.size(), 3u) << esi::canonical_json(esi::plan::to_json(p));
  // PPM's face value reaches two cells upwind and one downwind of its face; with both wind
  // signs and both faces of a cell, the flux divergence reads three cells on each side.
  struct Want {
    const char* name;
    Locality locality;
    const char* axis;
  };
  for (const Want& w : {Want{"Transport3D.lon", Locality::Stencil, "lon"}, Want{"Transport3D.lat", Locality::Stencil, "lat"},
                        Want{"Transport3D.lev", Locality::Column, "lev"}}) {
    const Operator* op = find_op(p, w.name);
    ASSERT_TRUE(op) << w.name;
    EXPECT_EQ(op->locality, w.locality) << w.name;
    for (const auto& a : op->reach) {
      const bool own = a.axis == w.axis;
      EXPECT_EQ(a.minus, own ? 3 : 0) << w.name << " " << a.axis;
      EXPECT_EQ(a.plus, own ? 3 : 0) << w.name << " " << a.axis;
      EXPECT_FALSE(a.unbounded) << w.name << " " << a.axis;
    }
    // The dual-number Jacobian reaches exactly as far: the planned radius is tight.
    ASSERT_EQ(op->measured_reach.size(), 3u);
    for (std::size_t k = 0; k < 3; ++k) {
      EXPECT_EQ(op->measured_reach[k].minus, op->reach[k].minus) << w.name << " " << op->reach[k].axis;
      EXPECT_EQ(op->measured_reach[k].plus, op->reach[k].plus) << w.name << " " << op->reach[k].axis;
    }
    EXPECT_EQ(op->rows, (std::vector<std::string>{"Transport3D.m", "Transport3D.mq", "Transport3D.dev"}));
  }
  EXPECT_EQ(find_op(p, "Transport3D.lev")->column_bandwidth, 3);
  ASSERT_TRUE(p.validation.ok()) << validation_text(p);
  EXPECT_EQ(p.validation.cells_checked, 343u);
  EXPECT_LE(p.validation.max_sum_error, 1e-12);
  EXPECT_EQ(p.validation.rows_not_finite, 0u);
  EXPECT_GT(p.validation.jacobian_nonzeros, 343u * 3);
}

TEST(Plan, ReseactChemistryPlanIsByteIdenticalAndListsTransportAndChemistry) {
  const fs::path corpus = esi::testing::corpus_dir();
  const fs::path f = corpus / "reseact/prototypes/reseact_3d_chem/reseact_3d_chem.esm";
  const fs::path inputs_file = fs::path(ESI_SOURCE_DIR) / "examples/reseact/reseact_3d_chem_inputs.json";
  if (corpus.empty() || !fs::exists(f)) GTEST_SKIP() << "corpus not found: set ESI_CORPUS";
  nlohmann::json inputs;
  std::ifstream(inputs_file) >> inputs;
  std::string text[2];
  Plan p;
  for (int run = 0; run < 2; ++run) {
    esi::esm::System s = flatten_grid(f, inputs);
    esi::plan::PlanOptions o;
    o.document = "reseact_3d_chem.esm";
    p = esi::plan::make_plan(s, o);
    text[run] = esi::canonical_json(esi::plan::to_json(p));
  }
  EXPECT_EQ(text[0], text[1]);
  ASSERT_TRUE(p.validation.ok()) << validation_text(p);
  EXPECT_EQ(p.validation.rows_not_finite, 0u);
  const Operator* chem = find_op(p, "SuperFast");
  ASSERT_TRUE(chem) << text[0].substr(0, 2000);
  EXPECT_EQ(chem->locality, Locality::Pointwise);
  EXPECT_EQ(chem->block.species.size(), 12u);
  EXPECT_EQ(chem->block.nonzeros(), 68u);  // the same block as SuperFast alone
  EXPECT_EQ(chem->rows.size(), 12u);
  // The symbolic block entries agree with the dual numbers at every checked cell.
  EXPECT_EQ(p.validation.analytic_entries, 68u * p.validation.cells_checked * 3);
  EXPECT_LE(p.validation.max_analytic_error, 1e-12);
  ASSERT_TRUE(chem->lu.planned);
  EXPECT_EQ(chem->lu.order.size(), 12u);
  // Factor storage: the pattern, the diagonals it lacks (HNO3 is only produced) and the fill.
  std::size_t missing_diagonal = 0;
  for (int r = 0; r < 12; ++r) {
    const auto b = chem->block.col.begin();
    missing_diagonal += !std::binary_search(b + chem->block.row_ptr[r], b + chem->block.row_ptr[r + 1], r);
  }
  EXPECT_EQ(missing_diagonal, 1u);
  EXPECT_EQ(chem->lu.factor_nonzeros, 68u + missing_diagonal + chem->lu.fill);
  EXPECT_EQ(find_op(p, "Transport3D.lon")->locality, Locality::Stencil);
  EXPECT_EQ(find_op(p, "Transport3D.lat")->locality, Locality::Stencil);
  EXPECT_EQ(find_op(p, "Transport3D.lev")->locality, Locality::Column);
  EXPECT_EQ(find_op(p, "Transport3D.lev")->column_axis, "lev");
  // The air mass and the 12 species are transported.
  EXPECT_EQ(find_op(p, "Transport3D.lon")->rows.size(), 13u);
  const nlohmann::json j = nlohmann::json::parse(text[0]);
  EXPECT_EQ(j["operators"].size(), 4u);
  EXPECT_EQ(j["grid"]["vertical_axis"], "lev");
}
