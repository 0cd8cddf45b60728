// Run configurations (run_config.hpp) and the schedule interpreter (schedule.hpp).
//
// Oracles: the Lie schedule against the SplitDriver of `esi simulate` (bitwise: two drivers of
// the same splitting); Strang's second order in the macro step against an unsplit tight
// reference (the error quarters when the step halves) next to Lie's first order; `subcycle` and
// `every` against the equivalent plain schedules (bitwise); resuming from a restart state
// against the uninterrupted run (bitwise); forcing records bracketed by stage time against
// the exact integral of a piecewise-linear forcing; and every refusal by code and pointer.
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
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
#include "support/reseact_docs.hpp"
#include "support/temp_dir.hpp"

namespace {

using esi::exec::RunConfig;
using esi::method::MethodId;
using esi::method::ReturnCode;
using nlohmann::json;

// du_i/dt = -0.01 i u_i + K (u_i+1 - 2 u_i + u_i-1) with closed ends: a pointwise decay plus a
// stencil diffusion, six cells.
const std::string kModel = esi::testing::decay_diffusion_model("0.01");

using Loaded = esi::testing::GridAndCells;

json leaf(const char* op, const char* alg, double rtol = 1e-10, double atol = 1e-12) {
  return {{"leaf", op}, {"alg", alg}, {"control", {{"reltol", rtol}, {"abstol", atol}}}};
}

json split_config(const json& schedule, double stop, double dt) {
  json c = {{"time", {{"start", 0}, {"stop", stop}}},
            {"operators",
             {{"transport", {{"select", {{"locality", {"stencil", "column"}}}}}},
              {"chemistry", {{"select", {{"locality", "pointwise"}}}}}}},
            {"schedule", schedule},
            {"partition", {{"lanes", 4}}}};
  if (dt > 0) c["step"] = {{"dt", dt}};
  return c;
}

RunConfig parse(const json& c) {
  return esi::exec::parse_run_config(c, "run.json", "");
}

esi::exec::ScheduleResult run(const esi::esm::System& s, const json& c,
                              const esi::exec::ScheduleOptions& o = {}) {
  return esi::exec::run_schedule(s, parse(c), o);
}

std::vector<double> final_row(const esi::exec::Trajectory& tr) {
  const std::size_t n = tr.names.size();
  return {tr.values.end() - static_cast<std::ptrdiff_t>(n), tr.values.end()};
}

std::string code_of(const std::function<void()>& f, std::string* pointer = nullptr) {
  try {
    f();
  } catch (const esi::Error& e) {
    if (pointer) *pointer = e.diagnostic().pointer;
    return e.code();
  }
  return "no error";
}

TEST(RunConfig, ParsesTheSeedsReseactExampleShape) {
  const json c = split_config(
      {{"sequence", {leaf("transport", "SSPRK43"), leaf("chemistry", "Rodas3")}}}, 3600, 300);
  const RunConfig r = parse(c);
  ASSERT_EQ(r.operators.size(), 2u);
  EXPECT_EQ(r.stop, 3600);
  EXPECT_EQ(r.macro_dt, 300);
  EXPECT_EQ(r.lanes, 4);
  ASSERT_EQ(r.schedule.children.size(), 2u);
  EXPECT_EQ(r.schedule.children[1].leaf.method, MethodId::Rodas3);
  EXPECT_EQ(*r.schedule.children[1].leaf.rtol, 1e-10);
  EXPECT_EQ(r.schedule.children[1].pointer, "/schedule/sequence/1");
}

TEST(RunConfig, RefusesWhatItDoesNotKnowWithFileAndPointer) {
  std::string ptr;
  json c = split_config(leaf("all", "Tsit5"), 10, 0);
  c["schedule"]["contrl"] = json::object();
  EXPECT_EQ(code_of([&] { parse(c); }, &ptr), "run_config_unknown_key");
  EXPECT_EQ(ptr, "/schedule");
  c = split_config(leaf("all", "Tsit5"), 10, 0);
  c["outptu"] = json::object();
  EXPECT_EQ(code_of([&] { parse(c); }, &ptr), "run_config_unknown_key");
  EXPECT_EQ(ptr, "");
  c = split_config(leaf("chem", "Tsit5"), 10, 0);
  EXPECT_EQ(code_of([&] { parse(c); }, &ptr), "unknown_operator");
  EXPECT_EQ(ptr, "/schedule/leaf");
  c = split_config(leaf("all", "Tsit6"), 10, 0);
  EXPECT_EQ(code_of([&] { parse(c); }, &ptr), "unknown_method");
  EXPECT_EQ(ptr, "/schedule/alg");
  c = split_config(leaf("all", "Tsit5"), 10, 0);
  c["precision"] = {{"state", "f32"}};
  EXPECT_EQ(code_of([&] { parse(c); }), "unsupported_precision");
  c = split_config(leaf("all", "Tsit5"), -1, 0);
  EXPECT_EQ(code_of([&] { parse(c); }), "invalid_time_span");
  c = split_config(leaf("all", "Tsit5"), 10, 0);
  c["partition"]["lanes"] = 12;  // lane pools take powers of two
  EXPECT_EQ(code_of([&] { parse(c); }, &ptr), "run_config_invalid");
  EXPECT_EQ(ptr, "/partition/lanes");
  c = split_config(leaf("all", "Tsit5"), 10, 0);
  c["step"] = {{"dt", -5}};
  EXPECT_EQ(code_of([&] { parse(c); }, &ptr), "run_config_invalid");
  EXPECT_EQ(ptr, "/step/dt");
}

TEST(Schedule, SelectorsAreCheckedAgainstThePlannersOperators) {
  Loaded m(kModel);
  std::string ptr;
  json c = split_config(leaf("all", "SSPRK43"), 10, 0);
  c["operators"]["transport"]["select"]["locality"] = "global";
  c["schedule"] = {{"sequence", {leaf("transport", "SSPRK43"), leaf("chemistry", "Rodas3")}}};
  EXPECT_EQ(code_of([&] { run(m.grid, c); }, &ptr), "selector_matches_nothing");
  EXPECT_EQ(ptr, "/operators/transport/select");
  c["operators"]["transport"]["select"]["locality"] = "all";
  EXPECT_EQ(code_of([&] { run(m.grid, c); }, &ptr), "operators_overlap");
  c["operators"].erase("transport");
  c["schedule"] = leaf("chemistry", "Rodas3");
  EXPECT_EQ(code_of([&] { run(m.grid, c); }), "operator_terms_unassigned");
  c["operators"]["chemistry"]["select"]["locality"] = {"pointwise", "stencil"};
  EXPECT_EQ(code_of([&] { run(m.grid, c); }), "unsupported_operator_split");
  // A stiff method on the grid operator, a non-Rosenbrock one on the cells, a cell dt scope on
  // the grid: each refused at its leaf.
  c = split_config({{"sequence", {leaf("transport", "Rodas3"), leaf("chemistry", "Rodas3")}}}, 10,
                   0);
  EXPECT_EQ(code_of([&] { run(m.grid, c); }, &ptr), "unsupported_method_for_operator");
  EXPECT_EQ(ptr, "/schedule/sequence/0/alg");
  c = split_config({{"sequence", {leaf("transport", "SSPRK43"), leaf("chemistry", "Tsit5")}}}, 10,
                   0);
  EXPECT_EQ(code_of([&] { run(m.grid, c); }, &ptr), "unsupported_method_for_operator");
  EXPECT_EQ(ptr, "/schedule/sequence/1/alg");
  c["schedule"]["sequence"][1] = leaf("chemistry", "Rodas3");
  c["schedule"]["sequence"][0]["control"]["dt_scope"] = "cell";
  EXPECT_EQ(code_of([&] { run(m.grid, c); }), "unsupported_dt_scope");
}

TEST(Schedule, LieEqualsTheSimulateSplitDriverBitForBit) {
  Loaded m(kModel);
  const json c =
      split_config({{"lie", {leaf("transport", "SSPRK43"), leaf("chemistry", "Rodas3")}}}, 200, 20);
  const auto a = run(m.grid, c);
  ASSERT_EQ(a.trajectory.code, ReturnCode::Success) << a.trajectory.message;
  EXPECT_EQ(a.macro_steps, 10u);
  esi::exec::SimulateOptions o;
  o.t1 = 200;
  o.integrator.method = MethodId::SSPRK43;
  o.integrator.rtol = 1e-10;
  o.integrator.atol = 1e-12;
  esi::exec::SimulateOptions::CellSplit split;
  split.cells.rtol = 1e-10;
  split.cells.atol = {1e-12};
  split.cells.lanes = 4;
  split.step = 20;
  o.cell_split = split;
  const auto b = esi::exec::simulate(m.grid, o);
  ASSERT_EQ(b.code, ReturnCode::Success) << b.message;
  EXPECT_EQ(a.trajectory.values, b.values);
  EXPECT_EQ(a.trajectory.times, b.times);
  ASSERT_EQ(a.leaves.size(), 2u);
  EXPECT_EQ(a.leaves[0].calls, 10);
  EXPECT_EQ(a.leaves[1].accepted, b.cell_stats.accepted);
}

TEST(Schedule, StrangIsSecondOrderAndLieFirstInTheMacroStep) {
  Loaded m(kModel);
  esi::exec::SimulateOptions ro;
  ro.t1 = 200;
  ro.integrator.method = MethodId::Rodas5P;
  ro.integrator.rtol = 1e-13;
  ro.integrator.atol = 1e-15;
  const auto ref = esi::exec::simulate(m.cells, ro);
  ASSERT_EQ(ref.code, ReturnCode::Success) << ref.message;
  const auto ref_last = final_row(ref);
  auto error = [&](const char* kind, double dt) {
    const json sched = {
        {kind,
         {leaf("transport", "SSPRK43", 1e-13, 1e-15), leaf("chemistry", "Rodas5P", 1e-13, 1e-15)}}};
    const auto tr = run(m.grid, split_config(sched, 200, dt)).trajectory;
    EXPECT_EQ(tr.code, ReturnCode::Success) << tr.message;
    const auto last = final_row(tr);
    double worst = 0;
    for (std::size_t j = 0; j < ref.state_count; ++j)
      worst = std::max(worst, std::abs(last[std::size_t(tr.column(ref.names[j]))] - ref_last[j]));
    return worst;
  };
  const double l1 = error("lie", 40), l2 = error("lie", 20);
  const double s1 = error("strang", 40), s2 = error("strang", 20), s3 = error("strang", 10);
  EXPECT_NEAR(l1 / l2, 2.0, 0.4);
  EXPECT_GT(s1, 1e-10);  // the split is really there
  EXPECT_LT(s1, l1 / 10);
  EXPECT_NEAR(s1 / s2, 4.0, 0.6);
  EXPECT_NEAR(s2 / s3, 4.0, 0.6);
}

TEST(Schedule, SubcycleAndEveryEqualTheirPlainSchedules) {
  Loaded m(kModel);
  const json T = leaf("transport", "SSPRK43"), C = leaf("chemistry", "Rodas3");
  // subcycle n of [T, C] over 4h == [T, C] over h.
  const auto sub =
      run(m.grid, split_config({{"subcycle", {{"sequence", {T, C}}}}, {"substeps", 4}}, 200, 40));
  const auto plain = run(m.grid, split_config({{"sequence", {T, C}}}, 200, 10));
  ASSERT_EQ(sub.trajectory.code, ReturnCode::Success) << sub.trajectory.message;
  EXPECT_EQ(sub.trajectory.values, plain.trajectory.values);
  // [T, every 2h: C] at h == [subcycle 2: T, C] at 2h.
  const auto every =
      run(m.grid, split_config({{"sequence", {T, {{"every", C}, {"period", 20}}}}}, 200, 10));
  const auto twice =
      run(m.grid, split_config({{"sequence", {{{"subcycle", T}, {"substeps", 2}}, C}}}, 200, 20));
  ASSERT_EQ(every.trajectory.code, ReturnCode::Success) << every.trajectory.message;
  EXPECT_EQ(every.trajectory.values, twice.trajectory.values);
  EXPECT_EQ(every.leaves[1].calls, 10);
  EXPECT_EQ(every.leaves[0].calls, 20);
}

TEST(Schedule, ResumingFromARestartStateContinuesBitForBit) {
  Loaded m(kModel);
  json c = split_config(
      {{"lie",
        {leaf("transport", "SSPRK43", 1e-8, 1e-10), leaf("chemistry", "Rodas3", 1e-8, 1e-10)}}},
      300, 7);
  c["output"] = {{"every", 25}};
  std::vector<esi::exec::RestartState> saved;
  esi::exec::ScheduleOptions o;
  o.restart_every = 50;
  o.on_restart = [&](const esi::exec::RestartState& s) { saved.push_back(s); };
  const auto full = run(m.grid, c, o);
  ASSERT_EQ(full.trajectory.code, ReturnCode::Success) << full.trajectory.message;
  ASSERT_EQ(saved.size(), 5u);  // 50, 100, ..., 250
  EXPECT_EQ(saved[1].t, 100);
  // Through a file, as esi run does.
  esi::testing::TempDir dir;
  const std::string path = (dir.path() / "r.esr").string();
  esi::exec::write_restart(path, saved[1]);
  const esi::exec::RestartState back = esi::exec::read_restart(path);
  esi::exec::ScheduleOptions ro;
  ro.resume = &back;
  const auto resumed = run(m.grid, c, ro);
  ASSERT_EQ(resumed.trajectory.code, ReturnCode::Success) << resumed.trajectory.message;
  // The resumed rows are the full run's rows from t = 100 on, bit for bit.
  const auto& ft = full.trajectory;
  const auto& rt = resumed.trajectory;
  ASSERT_EQ(rt.times.front(), 100);
  const std::size_t skip = static_cast<std::size_t>(
      std::find(ft.times.begin(), ft.times.end(), 100.0) - ft.times.begin());
  ASSERT_EQ(ft.times.size() - skip, rt.times.size());
  EXPECT_EQ(
      std::vector<double>(ft.values.begin() + static_cast<std::ptrdiff_t>(skip * ft.names.size()),
                          ft.values.end()),
      rt.values);
  EXPECT_EQ(resumed.leaves[0].accepted, full.leaves[0].accepted);
  EXPECT_EQ(resumed.leaves[1].accepted, full.leaves[1].accepted);
  // Another configuration, a damaged file: refused.
  json other = c;
  other["step"]["dt"] = 8;
  EXPECT_EQ(code_of([&] { run(m.grid, other, ro); }), "restart_mismatch");
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 3);
  EXPECT_EQ(code_of([&] { esi::exec::read_restart(path); }), "restart_unreadable");
}

// du_i/dt = (1 - w) F[1,i] + w F[2,i], w = frac(t / 3600): a forcing blended between two
// bracketing records, as GEOS-FP fields are.
const char* kForced = R"({"esm": "1.0.0", "metadata": {"name": "f"},
 "index_sets": {"x": {"kind": "interval", "size": 3}, "tt": {"kind": "interval", "size": 2}},
 "models": {"F": {"variables": {
   "u": {"type": "unknown", "shape": ["x"], "default": 0.0},
   "F": {"type": "parameter", "shape": ["tt", "x"]},
   "w": {"type": "unknown"}},
  "equations": [
   {"lhs": "w", "rhs": {"op": "-", "args": [{"op": "/", "args": ["t", 3600]}, {"op": "floor", "args": [{"op": "/", "args": ["t", 3600]}]}]}},
   {"lhs": {"op": "D", "args": ["u"], "wrt": "t"}, "rhs": {"op": "aggregate", "output_idx": ["i"], "args": ["F"],
     "ranges": {"i": [1, 3]}, "expr": {"op": "+", "args": [
       {"op": "*", "args": [{"op": "-", "args": [1, "w"]}, {"op": "index", "args": ["F", 1, "i"]}]},
       {"op": "*", "args": ["w", {"op": "index", "args": ["F", 2, "i"]}]}]}}}]}}})";

double record_value(std::size_t k, std::size_t i) {
  return double(k + 1) * double(i + 1) + double(k * k);
}

esi::exec::ForcingProvider bracket_provider(std::size_t records) {
  esi::exec::ForcingProvider p;
  p.target = "F.F";
  p.bracket = "tt";
  p.pointer = "/forcing/F.F";
  for (std::size_t k = 0; k < records; ++k) p.times.push_back(3600.0 * double(k));
  p.record_values = 3;
  p.read = [](std::size_t k, std::span<double> out) {
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = record_value(k, i);
  };
  return p;
}

TEST(Schedule, ForcingRecordsBracketTheStageTimeHalfOpen) {
  Loaded m(kForced);
  json c = {{"time", {{"start", 0}, {"stop", 3 * 3600}}},
            {"schedule", leaf("all", "SSPRK43", 1e-6, 1e-8)},
            {"step", {{"dt", 1000}}}};
  esi::exec::ScheduleOptions o;
  o.forcing = {bracket_provider(4)};
  const auto r = run(m.grid, c, o);
  ASSERT_EQ(r.trajectory.code, ReturnCode::Success) << r.trajectory.message;
  // Macro steps end on every record time: 0-1000-2000-3000-3600-4600-... (4 per hour).
  EXPECT_EQ(r.macro_steps, 12u);
  const auto last = final_row(r.trajectory);
  for (std::size_t i = 0; i < 3; ++i) {
    double exact = 0;  // the blend is linear in t within each hour: the trapezoid is exact
    for (std::size_t k = 0; k < 3; ++k)
      exact += 3600 * 0.5 * (record_value(k, i) + record_value(k + 1, i));
    const int col = r.trajectory.column(esi::esm::cell_name("F.u", {int(i) + 1}));
    ASSERT_GE(col, 0);
    EXPECT_NEAR(last[std::size_t(col)], exact, 1e-9 * exact) << "cell " << i + 1;
  }
  // The cell form (one parameter per forcing cell) with an implicit method: the same integral.
  json implicit = c;
  implicit["schedule"] = leaf("all", "Rodas5P", 1e-8, 1e-10);
  const auto rc = run(m.cells, implicit, o);
  ASSERT_EQ(rc.trajectory.code, ReturnCode::Success) << rc.trajectory.message;
  const auto last_cells = final_row(rc.trajectory);
  for (std::size_t i = 0; i < 3; ++i) {
    const int col = rc.trajectory.column(esi::esm::cell_name("F.u", {int(i) + 1}));
    ASSERT_GE(col, 0);
    const int grid_col = r.trajectory.column(esi::esm::cell_name("F.u", {int(i) + 1}));
    EXPECT_NEAR(last_cells[std::size_t(col)], last[std::size_t(grid_col)],
                1e-9 * last[std::size_t(grid_col)]);
  }
  EXPECT_TRUE(esi::exec::whole_implicit(parse(implicit)));
  EXPECT_FALSE(esi::exec::whole_implicit(parse(c)));
  // A run past the last bracketing pair is refused before it steps there.
  c["time"]["stop"] = 4 * 3600;
  std::string ptr;
  EXPECT_EQ(code_of([&] { run(m.grid, c, o); }, &ptr), "forcing_out_of_range");
  EXPECT_EQ(ptr, "/forcing/F.F");
  // Targets and shapes are checked before a run.
  auto bad = bracket_provider(4);
  bad.record_values = 4;
  EXPECT_EQ(code_of([&] { esi::exec::check_schedule(m.grid, parse(c), {bad}); }),
            "forcing_shape_mismatch");
  bad = bracket_provider(4);
  bad.target = "F.G";
  EXPECT_EQ(code_of([&] { esi::exec::check_schedule(m.grid, parse(c), {bad}); }),
            "forcing_target_unknown");
  bad = bracket_provider(4);
  bad.target = "F.u";
  EXPECT_EQ(code_of([&] { esi::exec::check_schedule(m.grid, parse(c), {bad}); }),
            "forcing_target_unknown");
}

// Discrete events in a schedule fire at macro-step ends: dx/dt = -k x, x(0) = 1, k = 0.1;
// x <- 2 at t = 30 (preset), k <- k / 2 every 40 s (periodic, parameter): x(60) = 2 e^-1 e^-1.
// Resuming from a restart written between the two firings keeps the halved k and ends on the
// same bits. Crossing events, and parameter changes in split runs, are refused.
TEST(Schedule, DiscreteEventsFireAtMacroStepEndsAndSurviveARestart) {
  const std::string doc = R"({"esm": "1.0.0", "metadata": {"name": "e"}, "models": {"M": {
    "variables": {"x": {"type": "unknown", "default": 1.0}, "k": {"type": "parameter", "default": 0.1}},
    "equations": [{"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": {"op": "*", "args": [{"op": "-", "args": ["k"]}, "x"]}}],
    "discrete_events": [
      {"trigger": {"type": "preset_times", "times": [30]}, "affects": [{"lhs": "x", "rhs": 2}]},
      {"trigger": {"type": "periodic", "interval": 40}, "affects": [{"lhs": "k", "rhs": {"op": "/", "args": ["k", 2]}}]}]}}})";
  Loaded m(doc);
  json c = {{"time", {{"start", 0}, {"stop", 60}}},
            {"schedule", leaf("all", "Rodas5P", 1e-10, 1e-14)},
            {"step", {{"dt", 25}}},
            {"output", {{"every", 25}}}};
  const auto r = run(m.cells, c);
  ASSERT_EQ(r.trajectory.code, ReturnCode::Success) << r.trajectory.message;
  EXPECT_NEAR(final_row(r.trajectory)[0], 2 * std::exp(-2.0), 1e-8);
  // Macro steps end on the firings too: 0-25 (output), 30 (preset), 40 (periodic), 50, 60.
  EXPECT_EQ(r.macro_steps, 5u);
  // Resume from t = 35: after the preset, before the periodic firing... and from t = 45, after it.
  for (double at : {35.0, 45.0}) {
    json cut = c;
    std::vector<esi::exec::RestartState> saved;
    esi::exec::ScheduleOptions o;
    o.restart_every = at;
    o.on_restart = [&](const esi::exec::RestartState& s) { saved.push_back(s); };
    cut["output"]["every"] = 5;
    const auto full = run(m.cells, cut, o);
    ASSERT_FALSE(saved.empty());
    esi::exec::ScheduleOptions resume;
    resume.resume = &saved.front();
    const auto rest = run(m.cells, cut, resume);
    ASSERT_EQ(rest.trajectory.code, ReturnCode::Success) << rest.trajectory.message;
    EXPECT_EQ(final_row(rest.trajectory), final_row(full.trajectory))
        << "resumed at " << saved.front().t;
  }
  // A crossing event is refused, by name.
  std::string crossing = doc;
  crossing.replace(
      crossing.find(R"("discrete_events")"), 0,
      R"("continuous_events": [{"conditions": [{"op": "-", "args": ["x", 0.5]}], "affects": [{"lhs": "x", "rhs": 1}]}], )");
  Loaded mc(crossing);
  EXPECT_EQ(code_of([&] { run(mc.cells, c); }), "unsupported_event");
}

// A map node applies a named event's affects where the schedule reaches it: dx/dt = -k x,
// x(0) = 1, k = 0.1, "halve" (x <- x / 2) after the leaf in every 10 s macro step, so
// x(30) = e^-3 / 8. The event's own trigger (a preset time at 15) no longer fires it: no
// macro step ends at 15 and there is no fourth halving. A map of an event the model does not
// declare is refused at its pointer; the schema refuses a map that is not a name.
TEST(Schedule, MapNodeAppliesANamedEventWhereTheScheduleReachesIt) {
  const std::string doc = R"({"esm": "1.0.0", "metadata": {"name": "e"}, "models": {"M": {
    "variables": {"x": {"type": "unknown", "default": 1.0}, "k": {"type": "parameter", "default": 0.1}},
    "equations": [{"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": {"op": "*", "args": [{"op": "-", "args": ["k"]}, "x"]}}],
    "discrete_events": [
      {"name": "halve", "trigger": {"type": "preset_times", "times": [15]}, "affects": [{"lhs": "x", "rhs": {"op": "/", "args": ["x", 2]}}]}]}}})";
  Loaded m(doc);
  json c = {
      {"time", {{"start", 0}, {"stop", 30}}},
      {"schedule", {{"sequence", {leaf("all", "Rodas5P", 1e-10, 1e-14), {{"map", "halve"}}}}}},
      {"step", {{"dt", 10}}},
      {"output", {{"every", 10}}}};
  const auto r = run(m.cells, c);
  ASSERT_EQ(r.trajectory.code, ReturnCode::Success) << r.trajectory.message;
  EXPECT_NEAR(final_row(r.trajectory)[0], std::exp(-3.0) / 8, 1e-9);
  EXPECT_EQ(r.macro_steps, 3u);
  EXPECT_EQ(r.trajectory.events_fired, 3);
  // The component-qualified name binds the same event.
  c["schedule"]["sequence"][1]["map"] = "M.halve";
  EXPECT_NEAR(final_row(run(m.cells, c).trajectory)[0], std::exp(-3.0) / 8, 1e-9);
  // Without the map node the trigger fires once, at 15.
  json plain = c;
  plain["schedule"] = leaf("all", "Rodas5P", 1e-10, 1e-14);
  EXPECT_NEAR(final_row(run(m.cells, plain).trajectory)[0], std::exp(-3.0) / 2, 1e-9);
  std::string ptr;
  c["schedule"]["sequence"][1]["map"] = "double";
  EXPECT_EQ(code_of([&] { run(m.cells, c); }, &ptr), "unknown_map_event");
  EXPECT_EQ(ptr, "/schedule/sequence/1/map");
  c["schedule"]["sequence"][1]["map"] = 3;
  EXPECT_EQ(code_of([&] { parse(c); }, &ptr), "run_config_invalid");
}

// The next record is read on another thread while the leaves step (prefetch), one read at a
// time, and the run is the same as with every record read when it is needed.
TEST(Schedule, TheNextForcingRecordIsReadAheadOnAnotherThread) {
  Loaded m(kForced);
  json c = {{"time", {{"start", 0}, {"stop", 3 * 3600}}},
            {"schedule", leaf("all", "SSPRK43", 1e-6, 1e-8)},
            {"step", {{"dt", 1000}}}};
  std::mutex mutex;
  std::vector<std::pair<std::size_t, std::thread::id>> reads;
  int in_flight = 0, most_in_flight = 0;
  auto p = bracket_provider(5);
  const auto plain = p.read;
  p.read = [&](std::size_t k, std::span<double> out) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      reads.emplace_back(k, std::this_thread::get_id());
      most_in_flight = std::max(most_in_flight, ++in_flight);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    plain(k, out);
    std::lock_guard<std::mutex> lock(mutex);
    --in_flight;
  };
  esi::exec::ScheduleOptions o;
  o.forcing = {p};
  const auto r = run(m.grid, c, o);
  ASSERT_EQ(r.trajectory.code, ReturnCode::Success) << r.trajectory.message;
  esi::exec::ScheduleOptions direct;
  direct.forcing = {bracket_provider(5)};
  EXPECT_EQ(final_row(r.trajectory), final_row(run(m.grid, c, direct).trajectory));
  // Records 0 and 1 are read when the run starts; 2 and 3 ahead of time, on another thread;
  // none twice, and never two at once.
  std::map<std::size_t, int> times_read;
  bool ahead = false;
  for (const auto& [k, id] : reads) {
    ++times_read[k];
    ahead = ahead || (k >= 2 && id != std::this_thread::get_id());
  }
  EXPECT_TRUE(ahead);
  for (const auto& [k, n] : times_read) EXPECT_EQ(n, 1) << "record " << k;
  EXPECT_EQ(most_in_flight, 1);
}

// "auto" leaves (seed 002 §3.5): structure picks the family, the planner's Gershgorin bound at
// sampled states times the macro step says stiff or not. The model's Jacobian is constant:
// decay rows 0.01 i (largest 0.06 at i = 6), diffusion rows at most |-2K| + K + K = 0.008.
TEST(Schedule, AutoLeavesAreChosenByStructureAndTheSampledGershgorinBound) {
  Loaded m(kModel);
  json auto_leaf = {{"leaf", "transport"}};
  json c = split_config({{"lie", {auto_leaf, {{"leaf", "chemistry"}}}}}, 20000, 10000);
  auto choices = esi::exec::run_strategy(m.grid, parse(c));
  ASSERT_EQ(choices.size(), 2u);
  EXPECT_EQ(choices[0].leaf, "transport");
  EXPECT_TRUE(choices[0].automatic);
  EXPECT_EQ(choices[0].method, MethodId::SSPRK43);
  EXPECT_NE(choices[0].why.find("Gershgorin bound 0.008 /s"), std::string::npos) << choices[0].why;
  EXPECT_NE(choices[0].why.find(": 80, not stiff"), std::string::npos) << choices[0].why;
  EXPECT_EQ(choices[1].method, MethodId::Rodas3);
  EXPECT_NE(choices[1].why.find("Gershgorin bound 0.06 /s"), std::string::npos) << choices[1].why;
  EXPECT_NE(choices[1].why.find(": 600, stiff, above 500"), std::string::npos) << choices[1].why;
  // A shorter macro step: the same chemistry is not stiff over it.
  c["step"]["dt"] = 100;
  choices = esi::exec::run_strategy(m.grid, parse(c));
  EXPECT_NE(choices[1].why.find(": 6, not stiff"), std::string::npos) << choices[1].why;
  // A method the configuration gives is kept, and said so.
  c["schedule"]["lie"][1]["alg"] = "Rosenbrock23";
  choices = esi::exec::run_strategy(m.grid, parse(c));
  EXPECT_FALSE(choices[1].automatic);
  EXPECT_EQ(choices[1].method, MethodId::Rosenbrock23);
  // The run reports the same choice for its auto leaf.
  const auto r = run(m.grid, c);
  ASSERT_EQ(r.trajectory.code, ReturnCode::Success) << r.trajectory.message;
  EXPECT_EQ(r.leaves[0].why, choices[0].why);
  EXPECT_TRUE(r.leaves[1].why.empty());
}

// An `expression` forcing in the run configuration: records of (t/3600 + 1) x + (t/3600)^2 every
// hour are record_value(k, x - 1) exactly, so the run equals the one with those records given
// by a provider, bit for bit.
TEST(Schedule, ExpressionForcingGivesTheRecordsItsFormulaStates) {
  Loaded m(kForced);
  const json hours = {{"op", "/"}, {"args", {"t", 3600}}};
  json c = {{"time", {{"start", 0}, {"stop", 3 * 3600}}},
            {"schedule", leaf("all", "SSPRK43", 1e-6, 1e-8)},
            {"step", {{"dt", 1000}}},
            {"forcing",
             {{"F.F",
               {{"expression",
                 {{"op", "+"},
                  {"args",
                   {{{"op", "*"}, {"args", {{{"op", "+"}, {"args", {hours, 1}}}, "x"}}},
                    {{"op", "^"}, {"args", {hours, 2}}}}}}},
                {"every", 3600},
                {"bracket", "tt"}}}}}};
  const RunConfig config = parse(c);
  ASSERT_EQ(config.forcing.size(), 1u);
  const esi::exec::ForcingProvider p =
      esi::exec::expression_forcing(config, config.forcing[0], m.grid);
  EXPECT_EQ(p.times, (std::vector<double>{0, 3600, 7200, 10800, 14400}));
  ASSERT_EQ(p.record_values, 3u);
  for (std::size_t k = 0; k < 4; ++k) {
    std::vector<double> out(3);
    p.read(k, out);
    for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(out[i], record_value(k, i)) << k << " " << i;
  }
  esi::exec::ScheduleOptions by_expression, by_records;
  by_expression.forcing = {p};
  by_records.forcing = {bracket_provider(4)};
  const auto a = run(m.grid, c, by_expression), b = run(m.grid, c, by_records);
  ASSERT_EQ(a.trajectory.code, ReturnCode::Success) << a.trajectory.message;
  EXPECT_EQ(final_row(a.trajectory), final_row(b.trajectory));

  // Refusals, located at the expression.
  auto refusal = [&](const json& expression, double every, std::string* ptr) {
    json bad = c;
    bad["forcing"]["F.F"]["expression"] = expression;
    if (every > 0)
      bad["forcing"]["F.F"]["every"] = every;
    else
      bad["forcing"]["F.F"].erase("every");
    const RunConfig rc = parse(bad);
    return code_of([&] { esi::exec::expression_forcing(rc, rc.forcing[0], m.grid); }, ptr);
  };
  std::string ptr;
  EXPECT_EQ(refusal({{"op", "*"}, {"args", {"y", "x"}}}, 3600, &ptr),
            "forcing_expression_invalid");  // not an axis
  EXPECT_EQ(ptr, "/forcing/F.F/expression");
  EXPECT_EQ(refusal({{"op", "*"}, {"args", {"t", "x"}}}, 0, &ptr),
            "forcing_expression_invalid");  // t, no every
  EXPECT_EQ(refusal({{"op", "log"}, {"args", {{{"op", "-"}, {"args", {"x", 1}}}}}}, 3600, &ptr),
            "forcing_expression_invalid");  // -inf at x = 1, found before the run
  EXPECT_EQ(refusal({{"op", "nonsense"}, {"args", {1}}}, 3600, &ptr), "unsupported_operator");
  EXPECT_EQ(ptr, "/forcing/F.F/expression");
  json unknown = c;
  unknown["forcing"] = {{"F.G", c["forcing"]["F.F"]}};
  const RunConfig uc = parse(unknown);
  EXPECT_EQ(code_of([&] { esi::exec::expression_forcing(uc, uc.forcing[0], m.grid); }, &ptr),
            "forcing_target_unknown");
  EXPECT_EQ(ptr, "/forcing/F.G");
  json zero = c;
  zero["forcing"]["F.F"]["every"] = 0;
  EXPECT_EQ(code_of([&] { parse(zero); }, &ptr), "run_config_invalid");
}

}  // namespace

namespace {

// Issue 13 item 2: the reseact transport prototype keeps its conservation gate exactly (q = mq/m
// exactly 1, dev exactly 0 in every cell) when run through a schedule.
TEST(Schedule, Transport3dKeepsItsGateExactlyUnderASchedule) {
  const esi::testing::ShippedTransport t = esi::testing::shipped_transport();
  if (!t.found) GTEST_SKIP() << "corpus not found: set ESI_CORPUS";
  const esi::esm::ResolvedDocument& doc = t.doc;
  const esi::esm::System sys = esi::esm::flatten(doc, t.grid);
  const json c = {{"time", {{"stop", 3600}}},
                  {"schedule", {{"subcycle", leaf("all", "SSPRK43", 1e-6, 1e-8)}, {"substeps", 2}}},
                  {"step", {{"dt", 600}}},
                  {"output", {{"every", 1200}}}};
  esi::exec::ScheduleOptions o;
  o.document = &doc;
  const auto r = run(sys, c, o);
  const auto& tr = r.trajectory;
  ASSERT_EQ(tr.code, ReturnCode::Success) << tr.message;
  ASSERT_EQ(tr.times, (std::vector<double>{0, 1200, 2400, 3600}));
  EXPECT_EQ(r.leaves[0].calls, 12);
  std::map<std::string, std::size_t> at;
  for (std::size_t j = 0; j < tr.names.size(); ++j) at[tr.names[j]] = j;
  std::size_t gate_cells = 0, dev_cells = 0;
  for (std::size_t k = 0; k < tr.times.size(); ++k)
    for (std::size_t j = 0; j < tr.state_count; ++j) {
      const std::string& name = tr.names[j];
      if (name.rfind("Transport3D.dev[", 0) == 0) {
        ASSERT_EQ(tr.at(k, j), 0.0) << name;
        ++dev_cells;
      } else if (name.rfind("Transport3D.mq[", 0) == 0) {
        const std::string m = "Transport3D.m" + name.substr(std::string("Transport3D.mq").size());
        ASSERT_EQ(tr.at(k, j), tr.at(k, at.at(m))) << name << " (q = mq/m must stay exactly 1)";
        ++gate_cells;
      }
    }
  EXPECT_EQ(gate_cells, tr.times.size() * 343);
  EXPECT_EQ(dev_cells, tr.times.size() * 343);
}

}  // namespace

namespace {

// Native code for the grid's region programs (which read states through forcing fields and get
// no state array) and for the cells gives the tape's bits.
TEST(Schedule, NativeGridAndCellProgramsGiveTheTapesBits) {
  Loaded m(kModel);
  const json c =
      split_config({{"lie", {leaf("transport", "SSPRK43"), leaf("chemistry", "Rodas3")}}}, 200, 20);
  esi::exec::ScheduleOptions native;
  native.native = true;
  const auto a = run(m.grid, c);
  const auto b = run(m.grid, c, native);
  ASSERT_EQ(b.trajectory.code, ReturnCode::Success) << b.trajectory.message;
  EXPECT_EQ(a.trajectory.values, b.trajectory.values);
  EXPECT_EQ(b.trajectory.native_status.rfind("native", 0), 0u) << b.trajectory.native_status;
}

}  // namespace
