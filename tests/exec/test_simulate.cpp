// simulate(): exact solutions, output times, events (crossing time, periodic, preset, parameter
// updates), algebraic elimination and refusals.
#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "esi/core/error.hpp"
#include "esi/esm/flatten.hpp"
#include "esi/exec/simulate.hpp"
#include "support/temp_dir.hpp"

namespace {

using esi::exec::SimulateOptions;
using esi::exec::Trajectory;

/// One model "M" with the given variables and equations (JSON fragments), plus extra fields.
std::string model_doc(const std::string& variables, const std::string& equations,
                      const std::string& extra = "") {
  return R"({"esm": "1.0.0", "metadata": {"name": "t"}, "models": {"M": {"variables": )" + variables +
         R"(, "equations": )" + equations + (extra.empty() ? "" : ", " + extra) + "}}}";
}

struct LoadedModel {
  esi::testing::TempDir dir;
  esi::esm::ResolvedDocument doc;
  esi::esm::System system;
  explicit LoadedModel(const std::string& text) {
    doc = esi::esm::load_resolved(dir.write("m.esm", text));
    system = esi::esm::flatten(doc);
  }
  Trajectory simulate(SimulateOptions o) {
    o.document = &doc;
    return esi::exec::simulate(system, o);
  }
};

double value(const Trajectory& tr, double t, const std::string& name) {
  const int j = tr.column(name);
  EXPECT_GE(j, 0) << name;
  for (std::size_t k = 0; k < tr.times.size(); ++k)
    if (tr.times[k] == t) return tr.at(k, static_cast<std::size_t>(j));
  ADD_FAILURE() << "no output at t = " << t;
  return NAN;
}

const std::string kDecayVars =
    R"({"x": {"type": "unknown", "default": 2.0}, "k": {"type": "parameter", "default": 0.3},
        "y": {"type": "unknown"}})";
const std::string kDecayEqs =
    R"([{"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": {"op": "*", "args": [{"op": "-", "args": ["k"]}, "x"]}},
        {"lhs": "y", "rhs": {"op": "*", "args": [2, "x"]}}])";

TEST(Simulate, ExponentialDecayMatchesExactSolutionAtEveryOutput) {
  LoadedModel run(model_doc(kDecayVars, kDecayEqs));
  SimulateOptions o;
  o.t0 = 0;
  o.t1 = 10;
  o.saveat = 0.5;
  o.integrator.rtol = 1e-10;
  o.integrator.atol = 1e-14;
  const Trajectory tr = run.simulate(o);
  ASSERT_TRUE(tr.ok()) << tr.message;
  ASSERT_EQ(tr.times.size(), 21u);
  EXPECT_EQ(tr.names, (std::vector<std::string>{"M.x", "M.y"}));
  for (std::size_t k = 0; k < tr.times.size(); ++k) {
    EXPECT_DOUBLE_EQ(tr.times[k], 0.5 * static_cast<double>(k));
    const double exact = 2.0 * std::exp(-0.3 * tr.times[k]);
    EXPECT_NEAR(tr.at(k, 0), exact, 1e-7 * exact);
    EXPECT_DOUBLE_EQ(tr.at(k, 1), 2 * tr.at(k, 0));  // the observed at the same state
  }
}

TEST(Simulate, SampleTimesAreAddedAndExactWhenStoppedAt) {
  LoadedModel run(model_doc(kDecayVars, kDecayEqs));
  SimulateOptions o;
  o.t1 = 3;
  o.sample_times = {1.25, 2.0};
  o.stop_at_sample_times = true;
  o.integrator.rtol = 1e-10;
  o.integrator.atol = 1e-14;
  const Trajectory tr = run.simulate(o);
  EXPECT_EQ(tr.times, (std::vector<double>{0, 1.25, 2.0, 3}));
  EXPECT_NEAR(value(tr, 1.25, "M.x"), 2 * std::exp(-0.375), 1e-9);
}

TEST(Simulate, ContinuousEventFiresAtTheAnalyticCrossing) {
  // x = exp(-t) crosses 0.5 at ln 2; the event records the time it fired in `hit`.
  LoadedModel run(model_doc(
      R"({"x": {"type": "unknown", "default": 1.0}, "hit": {"type": "unknown", "default": -1.0}})",
      R"([{"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": {"op": "-", "args": ["x"]}},
          {"lhs": {"op": "D", "args": ["hit"], "wrt": "t"}, "rhs": 0}])",
      R"("continuous_events": [{"name": "half", "conditions": [{"op": "-", "args": ["x", 0.5]}],
           "affects": [{"lhs": "hit", "rhs": "t"}]}])"));
  SimulateOptions o;
  o.t1 = 2;
  o.integrator.rtol = 1e-10;
  o.integrator.atol = 1e-14;
  const Trajectory tr = run.simulate(o);
  ASSERT_TRUE(tr.ok());
  EXPECT_EQ(tr.events_fired, 1);
  EXPECT_NEAR(value(tr, 2, "M.hit"), std::log(2.0), 1e-9);
}

TEST(Simulate, AffectNegOnlyOnDownwardCrossingsAndPreReadsTheOldValue) {
  // v = cos(t): down at pi/2 (affect_neg: n += 10), up at 3pi/2 (affects: n = 2 * Pre(n)).
  LoadedModel run(model_doc(
      R"({"s": {"type": "unknown", "default": 0.0}, "n": {"type": "unknown", "default": 1.0}})",
      R"([{"lhs": {"op": "D", "args": ["s"], "wrt": "t"}, "rhs": {"op": "cos", "args": ["t"]}},
          {"lhs": {"op": "D", "args": ["n"], "wrt": "t"}, "rhs": 0}])",
      R"("continuous_events": [{"conditions": [{"op": "cos", "args": ["t"]}],
           "affects": [{"lhs": "n", "rhs": {"op": "*", "args": [2, {"op": "Pre", "args": ["n"]}]}}],
           "affect_neg": [{"lhs": "n", "rhs": {"op": "+", "args": ["n", 10]}}]}])"));
  SimulateOptions o;
  o.t1 = 5;
  o.sample_times = {1.5, 2.0, 5.0};
  const Trajectory tr = run.simulate(o);
  EXPECT_EQ(value(tr, 1.5, "M.n"), 1.0);
  EXPECT_EQ(value(tr, 2.0, "M.n"), 11.0);
  EXPECT_EQ(value(tr, 5.0, "M.n"), 22.0);
}

// A reaction system's own events run like a model's (the schema allows both; they were once
// dropped): A -> B at rate k, and at t = 1 the event adds 1 to A.
TEST(Simulate, ReactionSystemEventsFire) {
  LoadedModel run(R"({"esm": "1.0.0", "metadata": {"name": "r"}, "reaction_systems": {"R": {
      "species": {"A": {"default": 1.0}, "B": {"default": 0.0}},
      "parameters": {"k": {"default": 0.5}},
      "reactions": [{"id": "r1", "substrates": [{"species": "A", "stoichiometry": 1}],
                     "products": [{"species": "B", "stoichiometry": 1}], "rate": "k"}],
      "discrete_events": [{"name": "feed", "trigger": {"type": "preset_times", "times": [1.0]},
                           "affects": [{"lhs": "A", "rhs": {"op": "+", "args": ["A", 1]}}]}]}}})");
  ASSERT_EQ(run.system.events.size(), 1u);
  SimulateOptions o;
  o.t1 = 2;
  o.integrator.rtol = 1e-10;
  o.integrator.atol = 1e-14;
  const Trajectory tr = run.simulate(o);
  ASSERT_TRUE(tr.ok()) << tr.message;
  EXPECT_EQ(tr.events_fired, 1);
  // A(2) = (e^{-k} + 1) e^{-k}; A + B gains the 1 the event added.
  EXPECT_NEAR(value(tr, 2, "R.A"), (std::exp(-0.5) + 1) * std::exp(-0.5), 1e-9);
  EXPECT_NEAR(value(tr, 2, "R.A") + value(tr, 2, "R.B"), 2.0, 1e-9);
}

TEST(Simulate, PeriodicDosingFirstFiresOneIntervalAfterStart) {
  LoadedModel run(model_doc(
      R"({"a": {"type": "unknown", "default": 0.0}, "ke": {"type": "parameter", "default": 0.1}})",
      R"([{"lhs": {"op": "D", "args": ["a"], "wrt": "t"}, "rhs": {"op": "*", "args": [{"op": "-", "args": ["ke"]}, "a"]}}])",
      R"("discrete_events": [{"trigger": {"type": "periodic", "interval": 8.0},
           "affects": [{"lhs": "a", "rhs": {"op": "+", "args": ["a", 100]}}]}])"));
  SimulateOptions o;
  o.t1 = 20;
  o.sample_times = {7.9, 8.0, 16.1};
  o.stop_at_sample_times = true;
  o.integrator.rtol = 1e-10;
  o.integrator.atol = 1e-14;
  const Trajectory tr = run.simulate(o);
  EXPECT_EQ(value(tr, 7.9, "M.a"), 0.0);
  EXPECT_NEAR(value(tr, 8.0, "M.a"), 100.0, 1e-9);  // right-continuous at the firing
  const double at16 = 100 * std::exp(-0.8) + 100;
  EXPECT_NEAR(value(tr, 16.1, "M.a"), at16 * std::exp(-0.01), 1e-7);
  EXPECT_EQ(tr.events_fired, 2);
}

TEST(Simulate, ScheduledParameterUpdateChangesTheRate) {
  // k doubles at t = 1 (preset schedule, §5.4): x = exp(-t) then exp(-1 - 2 (t - 1)).
  LoadedModel run(model_doc(
      R"({"x": {"type": "unknown", "default": 1.0},
          "k": {"type": "parameter", "default": 1.0, "shape": [],
                "update": {"kind": "schedule", "times": [1.0],
                           "expression": {"op": "*", "args": [2, {"op": "Pre", "args": ["k"]}]}}}})",
      R"([{"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": {"op": "*", "args": [{"op": "-", "args": ["k"]}, "x"]}}])"));
  SimulateOptions o;
  o.t1 = 2;
  o.integrator.rtol = 1e-10;
  o.integrator.atol = 1e-14;
  const Trajectory tr = run.simulate(o);
  EXPECT_NEAR(value(tr, 2, "M.x"), std::exp(-3.0), 1e-9);
}

TEST(Simulate, LinearAlgebraicUnknownIsEliminated) {
  // H * OH = K is linear in OH: OH = K / H.
  LoadedModel run(model_doc(
      R"({"x": {"type": "unknown", "default": 1.0}, "OH": {"type": "unknown"},
          "H": {"type": "parameter", "default": 4.0}, "K": {"type": "parameter", "default": 2.0}})",
      R"([{"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": {"op": "-", "args": ["OH"]}},
          {"lhs": {"op": "*", "args": ["H", "OH"]}, "rhs": "K"}])"));
  SimulateOptions o;
  o.t1 = 1;
  const Trajectory tr = run.simulate(o);
  EXPECT_DOUBLE_EQ(value(tr, 1, "M.OH"), 0.5);
  EXPECT_NEAR(value(tr, 1, "M.x"), 0.5, 1e-9);
}

TEST(Simulate, NonlinearAlgebraicConstraintIsRefused) {
  LoadedModel run(model_doc(
      R"({"x": {"type": "unknown", "default": 1.0}, "z": {"type": "unknown"}})",
      R"([{"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": "z"},
          {"lhs": 0, "rhs": {"op": "-", "args": [{"op": "*", "args": ["z", "z"]}, "x"]}}])"));
  try {
    run.simulate(SimulateOptions{.t0 = 0, .t1 = 1});
    FAIL() << "expected unsupported_algebraic";
  } catch (const esi::Error& e) {
    EXPECT_EQ(e.code(), "unsupported_algebraic");
    EXPECT_EQ(e.diagnostic().pointer, "/models/M/equations/1");
  }
}

TEST(Simulate, DataDrivenUpdateIsRefusedNamingTheParameter) {
  LoadedModel run(model_doc(
      R"({"x": {"type": "unknown", "default": 1.0},
          "k": {"type": "parameter", "default": 1.0, "shape": [],
                "update": {"kind": "schedule", "interval": 1.0, "handler": {"handler_id": "H"}}}})",
      R"([{"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": "k"}])"));
  try {
    run.simulate(SimulateOptions{.t0 = 0, .t1 = 1});
    FAIL() << "expected unsupported_event";
  } catch (const esi::Error& e) {
    EXPECT_EQ(e.code(), "unsupported_event");
    EXPECT_NE(e.diagnostic().message.find("M.k"), std::string::npos);
  }
}

TEST(Simulate, InvalidSpanIsAnError) {
  LoadedModel run(model_doc(kDecayVars, kDecayEqs));
  EXPECT_THROW(run.simulate(SimulateOptions{.t0 = 1, .t1 = 0}), esi::Error);
}

TEST(Simulate, FailedSolveIsReportedNotThrown) {
  // x' = x^2 from 1 blows up at t = 1.
  LoadedModel run(model_doc(R"({"x": {"type": "unknown", "default": 1.0}})",
                    R"([{"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": {"op": "*", "args": ["x", "x"]}}])"));
  SimulateOptions o;
  o.t1 = 2;
  o.integrator.max_steps = 5000;
  const Trajectory tr = run.simulate(o);
  EXPECT_FALSE(tr.ok());
  EXPECT_FALSE(tr.message.empty());
  ASSERT_FALSE(tr.times.empty());
  EXPECT_EQ(tr.times[0], 0.0);
}

}  // namespace

TEST(Simulate, AnObservedReadingAParameterWithoutValueIsAnErrorNotNaN) {
  // No states: the run still reports y, so k must have a value.
  LoadedModel run(model_doc(R"({"k": {"type": "parameter"}, "y": {"type": "unknown"}})",
                            R"([{"lhs": "y", "rhs": {"op": "*", "args": ["k", 2]}}])"));
  SimulateOptions o;
  o.t1 = 1;
  try {
    run.simulate(o);
    ADD_FAILURE() << "expected missing_parameter_value";
  } catch (const esi::Error& e) {
    EXPECT_EQ(e.code(), "missing_parameter_value");
    EXPECT_NE(e.diagnostic().message.find("'M.k'"), std::string::npos) << e.diagnostic().message;
  }
}

namespace {

// Rows streamed to on_row: the same times and values as a stored run, in order, with nothing
// kept in the Trajectory.
TEST(Simulate, RowsStreamedToTheCallbackMatchTheStoredRun) {
  LoadedModel run(model_doc(kDecayVars, kDecayEqs));
  SimulateOptions o;
  o.t1 = 2;
  o.saveat = 0.25;
  o.sample_times = {0.3, 0.5, 2.0};  // 0.5 and 2.0 coincide with the grid: one row each
  const Trajectory stored = run.simulate(o);
  std::vector<std::string> columns;
  std::vector<double> times, values;
  o.on_columns = [&](const std::vector<std::string>& names) { columns = names; };
  o.on_row = [&](double t, std::span<const double> row) {
    times.push_back(t);
    values.insert(values.end(), row.begin(), row.end());
  };
  const Trajectory streamed = run.simulate(o);
  ASSERT_TRUE(streamed.ok());
  EXPECT_TRUE(streamed.times.empty());
  EXPECT_TRUE(streamed.values.empty());
  EXPECT_EQ(streamed.rows, 10u);  // 0, 0.25, 0.3, 0.5, ..., 2
  EXPECT_EQ(streamed.last_time, 2.0);
  EXPECT_EQ(columns, stored.names);
  EXPECT_EQ(times, stored.times);
  EXPECT_EQ(values, stored.values);
  ASSERT_EQ(times.size(), 10u);
  EXPECT_EQ(times[2], 0.3);
}

TEST(Simulate, AGridOverTheRowLimitIsRefused) {
  LoadedModel run(model_doc(kDecayVars, kDecayEqs));
  SimulateOptions o;
  o.t1 = 1;
  o.saveat = 1e-8;
  try {
    run.simulate(o);
    ADD_FAILURE() << "expected too_many_outputs";
  } catch (const esi::Error& e) {
    EXPECT_EQ(e.code(), "too_many_outputs");
  }
}

// x' = 1 / (x - 1) from x = 1: the derivative is infinite at the start.
TEST(Simulate, AnInfiniteDerivativeEndsTheRunNamingTheState) {
  LoadedModel run(model_doc(R"({"x": {"type": "unknown", "default": 1.0}})",
                            R"([{"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": {"op": "/", "args": [1, {"op": "-", "args": ["x", 1]}]}}])"));
  SimulateOptions o;
  o.t1 = 1;
  const Trajectory tr = run.simulate(o);
  EXPECT_EQ(tr.code, esi::method::ReturnCode::NonFinite);
  EXPECT_EQ(tr.message, "NonFinite at t = 0: the derivative of M.x is +inf (at M.x = 1)");
  EXPECT_EQ(tr.rows, 0u);
}

// An observed that is not finite stops the run unless the caller reads only some observeds
// (the inline-test runner), where it is just a column value.
TEST(Simulate, ANonFiniteObservedEndsTheRunWhenObservedsAreRequired) {
  LoadedModel run(model_doc(R"({"x": {"type": "unknown", "default": 0.0}, "y": {"type": "unknown"}})",
                            R"([{"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": 1},
                                {"lhs": "y", "rhs": {"op": "sqrt", "args": [{"op": "-", "args": [1.2, "x"]}]}}])"));
  SimulateOptions o;
  o.t1 = 2;
  o.saveat = 0.5;
  const Trajectory tr = run.simulate(o);
  EXPECT_EQ(tr.code, esi::method::ReturnCode::NonFinite);
  EXPECT_NE(tr.message.find("NonFinite at t = 1.5: observed M.y is NaN"), std::string::npos) << tr.message;
  EXPECT_EQ(tr.times, (std::vector<double>{0, 0.5, 1}));
  o.require_observed_values = false;
  const Trajectory lenient = run.simulate(o);
  EXPECT_TRUE(lenient.ok()) << lenient.message;
  EXPECT_EQ(lenient.times.size(), 5u);
}

}  // namespace
