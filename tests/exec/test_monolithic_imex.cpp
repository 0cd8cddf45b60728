// The monolithic IMEX run of a gridded model (a schedule leaf "all" with KenCarp3/KenCarp4:
// exec/imex_operator.hpp): the grid terms explicit, every cell's pointwise terms implicit, one
// integrator, no splitting error.
//
// Oracles: an unsplit tight-tolerance Rodas5P run of the cell form (an independent method on an
// independent form of the model: one scalar equation per cell, symbolic Jacobian), which the
// IMEX run must meet within its tolerance; and the Lie-split runs, whose distance to the
// monolithic run must halve when the macro step halves (first-order splitting error converging
// to the monolithic solution, not a golden number).
#include <cmath>
#include <functional>
#include <iostream>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "esi/core/error.hpp"
#include "esi/esm/flatten.hpp"
#include "esi/esm/load.hpp"
#include "esi/exec/run_config.hpp"
#include "esi/exec/schedule.hpp"
#include "esi/exec/simulate.hpp"
#include "support/decay_diffusion.hpp"
#include "support/grid_and_cells.hpp"
#include "support/temp_dir.hpp"

namespace {

using esi::method::MethodId;
using esi::method::ReturnCode;
using nlohmann::json;

// du_i/dt = -0.01 i u_i + K (u_i+1 - 2 u_i + u_i-1), six cells: decay and diffusion act on the
// same time scale over the 200 s runs, so the splitting error is well above the references'.
const std::string kModel = esi::testing::decay_diffusion_model("0.01");

using Loaded = esi::testing::GridAndCells;

json leaf(const char* op, const char* alg, double rtol, double atol) {
  return {{"leaf", op}, {"alg", alg}, {"control", {{"reltol", rtol}, {"abstol", atol}}}};
}

json config(const json& schedule, double stop, double dt) {
  json c = {{"time", {{"start", 0}, {"stop", stop}}},
            {"operators", {{"transport", {{"select", {{"locality", {"stencil", "column"}}}}}},
                           {"chemistry", {{"select", {{"locality", "pointwise"}}}}}}},
            {"schedule", schedule},
            {"partition", {{"lanes", 4}}}};
  if (dt > 0) c["step"] = {{"dt", dt}};
  return c;
}

esi::exec::ScheduleResult run(const esi::esm::System& s, const json& c) {
  return esi::exec::run_schedule(s, esi::exec::parse_run_config(c, "run.json", ""), {});
}

/// Final value of every state of `names` (the reference's state columns) in `tr`.
std::vector<double> final_states(const esi::exec::Trajectory& tr, const std::vector<std::string>& names) {
  const std::size_t n = tr.names.size(), rows = tr.values.size() / n;
  std::vector<double> out;
  for (const std::string& name : names) {
    const int col = tr.column(name);
    EXPECT_GE(col, 0) << name;
    out.push_back(col < 0 ? NAN : tr.values[(rows - 1) * n + std::size_t(col)]);
  }
  return out;
}

double max_difference(const std::vector<double>& a, const std::vector<double>& b) {
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  return worst;
}

struct Reference {
  std::vector<std::string> names;
  std::vector<double> last;
};

Reference cell_form_reference(const Loaded& m, double t1) {
  esi::exec::SimulateOptions ro;
  ro.t1 = t1;
  ro.integrator.method = MethodId::Rodas5P;
  ro.integrator.rtol = 1e-12;
  ro.integrator.atol = 1e-14;
  const auto ref = esi::exec::simulate(m.cells, ro);
  EXPECT_EQ(ref.code, ReturnCode::Success) << ref.message;
  Reference r;
  r.names.assign(ref.names.begin(), ref.names.begin() + std::ptrdiff_t(ref.state_count));
  r.last = final_states(ref, r.names);
  return r;
}

TEST(MonolithicImex, AgreesWithTheUnsplitCellFormReference) {
  Loaded m(kModel);
  const Reference ref = cell_form_reference(m, 200);
  for (const char* alg : {"KenCarp4", "KenCarp3"}) {
    for (double rtol : {1e-6, 1e-9}) {
      const auto r = run(m.grid, config(leaf("all", alg, rtol, rtol * 1e-3), 200, 0));
      ASSERT_EQ(r.trajectory.code, ReturnCode::Success) << r.trajectory.message;
      EXPECT_EQ(esi::method::method_info(r.trajectory.method).name, std::string(alg));
      EXPECT_NE(r.operators.find("IMEX"), std::string::npos) << r.operators;
      const double diff = max_difference(final_states(r.trajectory, ref.names), ref.last);
      // Values are O(0.1..1); a global error within a few tolerances.
      std::cout << "  [imex] " << alg << " rtol " << rtol << ": max |difference| from Rodas5P cell form " << diff
                << ", " << r.trajectory.stats.accepted << " steps\n";
      EXPECT_LT(diff, 20 * rtol) << alg << " rtol " << rtol;
      EXPECT_GT(r.trajectory.stats.accepted, 0);
    }
  }
}

TEST(MonolithicImex, LieSplittingErrorAgainstItHalvesWithTheMacroStep) {
  Loaded m(kModel);
  const Reference ref = cell_form_reference(m, 200);
  const auto mono = run(m.grid, config(leaf("all", "KenCarp4", 1e-11, 1e-14), 200, 0));
  ASSERT_EQ(mono.trajectory.code, ReturnCode::Success) << mono.trajectory.message;
  const std::vector<double> mono_last = final_states(mono.trajectory, ref.names);
  EXPECT_LT(max_difference(mono_last, ref.last), 1e-9);
  auto split_distance = [&](const char* kind, double dt) {
    const json sched = {{kind, {leaf("transport", "SSPRK43", 1e-12, 1e-15), leaf("chemistry", "Rodas5P", 1e-12, 1e-15)}}};
    const auto r = run(m.grid, config(sched, 200, dt));
    EXPECT_EQ(r.trajectory.code, ReturnCode::Success) << r.trajectory.message;
    return max_difference(final_states(r.trajectory, ref.names), mono_last);
  };
  const double l1 = split_distance("lie", 40), l2 = split_distance("lie", 20), l3 = split_distance("lie", 10);
  std::cout << "  [splitting] distance to the monolithic run: lie 40/20/10 s " << l1 << " " << l2 << " " << l3;
  EXPECT_GT(l3, 1e-7);  // the splitting error is really there, far above the references' error
  EXPECT_NEAR(l1 / l2, 2.0, 0.4);
  EXPECT_NEAR(l2 / l3, 2.0, 0.3);
  const double s1 = split_distance("strang", 40), s2 = split_distance("strang", 20);
  std::cout << ", strang 40/20 s " << s1 << " " << s2 << "\n";
  EXPECT_LT(s1, l1 / 5);
  EXPECT_NEAR(s1 / s2, 4.0, 0.8);
}

// Forcing records bracketing the stage time (as test_schedule's ForcingRecordsBracketTheStageTime
// HalfOpen): du_i/dt = (1 - w) F[1,i] + w F[2,i] - 1e-3 u_i, w the fraction of the hour, F
// read from records every hour; the pointwise source and decay run implicitly, so the stage
// times of the implicit half must see the right records. A tiny decay keeps the integral close
// to the trapezoid of the records; the Rodas5P cell form with the same provider is the oracle.
const char* kForced = R"({"esm": "1.0.0", "metadata": {"name": "f"},
 "index_sets": {"x": {"kind": "interval", "size": 3}, "tt": {"kind": "interval", "size": 2}},
 "models": {"F": {"variables": {
   "u": {"type": "unknown", "shape": ["x"], "default": 0.0},
   "F": {"type": "parameter", "shape": ["tt", "x"]},
   "w": {"type": "unknown"}},
  "equations": [
   {"lhs": "w", "rhs": {"op": "-", "args": [{"op": "/", "args": ["t", 3600]}, {"op": "floor", "args": [{"op": "/", "args": ["t", 3600]}]}]}},
   {"lhs": {"op": "D", "args": ["u"], "wrt": "t"}, "rhs": {"op": "aggregate", "output_idx": ["i"], "args": ["F", "u"],
     "ranges": {"i": [1, 3]}, "expr": {"op": "+", "args": [
       {"op": "*", "args": [{"op": "-", "args": [1, "w"]}, {"op": "index", "args": ["F", 1, "i"]}]},
       {"op": "*", "args": ["w", {"op": "index", "args": ["F", 2, "i"]}]},
       {"op": "*", "args": [-0.001, {"op": "index", "args": ["u", "i"]}]}]}}}]}}})";

TEST(MonolithicImex, ForcingRecordsAreSelectedByStageTime) {
  Loaded m(kForced);
  esi::exec::ForcingProvider p;
  p.target = "F.F";
  p.bracket = "tt";
  p.pointer = "/forcing/F.F";
  for (std::size_t k = 0; k < 4; ++k) p.times.push_back(3600.0 * double(k));
  p.record_values = 3;
  p.read = [](std::size_t k, std::span<double> out) {
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = double(k + 1) * double(i + 1) + double(k * k);
  };
  esi::exec::ScheduleOptions o;
  o.forcing = {p};
  json c = {{"time", {{"start", 0}, {"stop", 3 * 3600}}}, {"step", {{"dt", 1000}}},
            {"schedule", leaf("all", "KenCarp4", 1e-9, 1e-9)}};
  const auto r = esi::exec::run_schedule(m.grid, esi::exec::parse_run_config(c, "run.json", ""), o);
  ASSERT_EQ(r.trajectory.code, ReturnCode::Success) << r.trajectory.message;
  EXPECT_NE(r.operators.find("IMEX"), std::string::npos) << r.operators;
  // The blend is continuous across record times only when a stage exactly on t_k+1 reads the
  // next records; the old ones there are a jump that the controller meets with rejections at
  // every record time (94 rejected steps, measured with the epoch switch disabled; 0 here).
  EXPECT_LT(r.trajectory.stats.rejected, 10);
  c["schedule"] = leaf("all", "Rodas5P", 1e-11, 1e-11);
  const auto ref = esi::exec::run_schedule(m.cells, esi::exec::parse_run_config(c, "run.json", ""), o);
  ASSERT_EQ(ref.trajectory.code, ReturnCode::Success) << ref.trajectory.message;
  std::vector<std::string> names;
  for (int i = 1; i <= 3; ++i) names.push_back(esi::esm::cell_name("F.u", {i}));
  const std::vector<double> a = final_states(r.trajectory, names), b = final_states(ref.trajectory, names);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_NEAR(a[i], b[i], 1e-7 * b[i]) << names[i];
  EXPECT_GT(b[0], 1e4);  // the forcing really drove it
}

std::string code_of(const std::function<void()>& f, std::string* pointer) {
  try {
    f();
  } catch (const esi::Error& e) {
    *pointer = e.diagnostic().pointer;
    return e.code();
  }
  return "no error";
}

TEST(MonolithicImex, RefusedWithoutAGridOrAPointwisePart) {
  std::string ptr;
  // A box model: nothing on a grid to split.
  esi::testing::TempDir dir;
  const auto doc = esi::esm::load_resolved(dir.write("box.esm", R"({"esm": "1.0.0", "metadata": {"name": "b"},
   "models": {"B": {"variables": {"x": {"type": "unknown", "default": 1.0}},
    "equations": [{"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": {"op": "-", "args": ["x"]}}]}}})"));
  esi::esm::FlattenOptions fo;
  fo.grid = true;
  const esi::esm::System box = esi::esm::flatten(doc, fo);
  const json c = {{"time", {{"start", 0}, {"stop", 1}}}, {"schedule", leaf("all", "KenCarp4", 1e-6, 1e-9)}};
  EXPECT_EQ(code_of([&] { run(box, c); }, &ptr), "unsupported_method_for_operator");
  EXPECT_EQ(ptr, "/schedule/alg");
  // A gridded model of diffusion alone: no pointwise terms to integrate implicitly.
  const std::string diffusion_only = R"({"esm": "1.0.0", "metadata": {"name": "d"}, "index_sets": {"x": {"kind": "interval", "size": 4}},
   "models": {"M": {"variables": {"u": {"type": "unknown", "shape": ["x"], "default": 1.0}, "K": {"type": "parameter", "default": 0.1}},
    "equations": [{"lhs": {"op": "D", "args": ["u"], "wrt": "t"}, "rhs":
     {"op": "makearray", "args": [], "regions": [[[2, 3]], [[1, 1]], [[4, 4]]], "values": [
       {"op": "aggregate", "output_idx": ["i"], "args": ["u"], "ranges": {"i": [2, 3]},
        "expr": {"op": "*", "args": ["K", {"op": "-", "args": [
          {"op": "index", "args": ["u", {"op": "+", "args": ["i", 1]}]}, {"op": "index", "args": ["u", {"op": "-", "args": ["i", 1]}]}]}]}},
       {"op": "*", "args": ["K", {"op": "index", "args": ["u", 2]}]},
       {"op": "*", "args": ["K", {"op": "index", "args": ["u", 3]}]}]}}]}}})";
  Loaded d(diffusion_only);
  EXPECT_EQ(code_of([&] { run(d.grid, c); }, &ptr), "unsupported_method_for_operator");
  EXPECT_EQ(ptr, "/schedule/alg");
}

}  // namespace
