// Stochastic runs from documents: the Ornstein-Uhlenbeck closed form, setup-time draws, the
// symbolic Milstein terms against a hand-written update, bitwise reproducibility over threads
// and member orders, and located refusals.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <numeric>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "esi/core/error.hpp"
#include "esi/core/noise.hpp"
#include "esi/esm/flatten.hpp"
#include "esi/exec/stochastic.hpp"
#include "exec/stochastic_support.hpp"
#include "support/temp_dir.hpp"

namespace {

using esi::exec::EnsembleResult;
using esi::exec::StochasticOptions;
using esi::method::SdeMethod;

using esi::testing::column;
using Loaded = esi::testing::LoadedEnsemble;

std::filesystem::path doc_path(const std::string& name) { return esi::testing::stochastic_doc(name); }

// 10^5 members of dx = theta (mu - x) dt + sigma dW, x0 = 1, with SRA1 (chosen automatically:
// the noise is additive) at dt = 0.01: mean and unbiased variance at t = 0.25, 0.5, 1, 2 within 4
// standard errors of the closed form (standard error of the variance: var sqrt(2 / (N - 1)),
// exact for Gaussian x). The observed y = 2x has mean 2 E x and variance 4 var x.
TEST(Stochastic, OrnsteinUhlenbeckEnsembleMatchesTheClosedForm) {
  Loaded ou(doc_path("ou.esm"));
  StochasticOptions o;
  o.t0 = 0;
  o.t1 = 2;
  o.saveat = 0.25;
  o.dt = 0.01;
  o.seed = 11;
  o.members = 100000;
  o.threads = 2;
  const EnsembleResult r = ou.run(o);
  ASSERT_TRUE(r.failure.empty()) << r.failure;
  EXPECT_TRUE(r.sde);
  EXPECT_EQ(r.method, SdeMethod::SRA1);
  EXPECT_EQ(r.steps, 200u);
  const double theta = 2, mu = 0.5, sigma = 0.6, x0 = 1, N = 1e5;
  const std::size_t x = column(r, "OU.x"), y = column(r, "OU.y");
  const std::size_t C = r.names.size();
  for (double t : {0.25, 0.5, 1.0, 2.0}) {
    const auto k = static_cast<std::size_t>(std::find(r.times.begin(), r.times.end(), t) - r.times.begin());
    ASSERT_LT(k, r.times.size()) << t;
    const double mean = mu + (x0 - mu) * std::exp(-theta * t);
    const double var = sigma * sigma / (2 * theta) * (1 - std::exp(-2 * theta * t));
    EXPECT_NEAR(r.mean[k * C + x], mean, 4 * std::sqrt(var / N)) << t;
    EXPECT_NEAR(r.variance[k * C + x], var, 4 * var * std::sqrt(2 / (N - 1))) << t;
    EXPECT_EQ(r.mean[k * C + y], 2 * r.mean[k * C + x]) << t;
    EXPECT_NEAR(r.variance[k * C + y], 4 * r.variance[k * C + x], 1e-12) << t;
  }
  // At t0 every member starts at x0: mean x0, variance exactly 0.
  EXPECT_EQ(r.mean[x], 1.0);
  EXPECT_EQ(r.variance[x], 0.0);
}

// Setup-time draws, read back through observeds (rate = r, vol = v) and the initial value
// (S(0) = S0): normal(0.2, 0.1), lognormal(-1, 0.25), uniform(1, 3) means and variances within
// 4 standard errors over 2 * 10^4 members; each member's draw is the keyed one.
TEST(Stochastic, SampledParametersAreDrawnOncePerMemberFromTheKeyedGenerator) {
  Loaded g(doc_path("gbm_sampled.esm"));
  StochasticOptions o;
  o.t0 = 0;
  o.t1 = 1;
  o.saveat = 0.5;
  o.dt = 0.05;
  o.seed = 3;
  o.members = 20000;
  const EnsembleResult r = g.run(o);
  ASSERT_TRUE(r.failure.empty()) << r.failure;
  EXPECT_EQ(r.method, SdeMethod::Milstein);  // v S dW: diagonal, not additive
  const std::size_t C = r.names.size();
  const double N = 20000;
  auto check = [&](const std::string& name, std::size_t k, double mean, double var) {
    const std::size_t j = column(r, name);
    const double m = r.mean[k * C + j], s2 = r.variance[k * C + j];
    EXPECT_NEAR(m, mean, 4 * std::sqrt(var / N)) << name;
    EXPECT_NEAR(s2, var, 0.05 * var) << name;  // 4 standard errors is below 5% at N = 2e4 for these
  };
  check("G.rate", 0, 0.2, 0.01);
  const double lm = std::exp(-1 + 0.25 * 0.25 / 2), lv = (std::exp(0.0625) - 1) * std::exp(-2 + 0.0625);
  check("G.vol", 0, lm, lv);
  check("G.S", 0, 2.0, 4.0 / 12);
  // The same values at every output time (drawn once, not per step).
  const std::size_t rate = column(r, "G.rate");
  for (std::size_t m : {0u, 17u, 19999u}) {
    EXPECT_EQ(r.value(m, 0, rate), r.value(m, 2, rate));
    // parameter index of r in System::parameters is the slot
    const int slot = g.system.parameter_index("G.r");
    EXPECT_EQ(r.value(m, 0, rate),
              0.2 + 0.1 * esi::noise::normals(3, static_cast<std::uint32_t>(m), esi::noise::kSetupStep, slot).first);
  }
}

// One path of dS = r S dt + v S dW through the document equals the Milstein update written out
// here with the same keyed increments and draws: u += r u h + v u dW + (v u) v (dW^2 - h) / 2.
TEST(Stochastic, MilsteinPathEqualsTheHandWrittenUpdate) {
  Loaded g(doc_path("gbm_sampled.esm"));
  StochasticOptions o;
  o.t0 = 0;
  o.t1 = 1;
  o.dt = 0.01;
  o.seed = 99;
  o.members = 3;
  o.method = SdeMethod::Milstein;
  const EnsembleResult r = g.run(o);
  const auto& P = g.system.parameters;
  for (std::uint32_t m = 0; m < 3; ++m) {
    auto draw_normal = [&](const std::string& name) {
      return esi::noise::normals(99, m, esi::noise::kSetupStep, g.system.parameter_index(name)).first;
    };
    const double rate = 0.2 + 0.1 * draw_normal("G.r"), vol = std::exp(-1 + 0.25 * draw_normal("G.v"));
    double u = 1 + 2 * esi::noise::uniform01(99, m, esi::noise::kSetupStep, g.system.parameter_index("G.S0"));
    for (std::uint64_t s = 0; s < 100; ++s) {
      const double h = 0.01, dW = std::sqrt(h) * esi::noise::normals(99, m, s, 0).first;
      u += rate * u * h + vol * u * dW + 0.5 * ((vol * u) * vol) * (dW * dW - h);
    }
    EXPECT_NEAR(r.value(m, 1, column(r, "G.S")), u, 1e-12 * std::abs(u)) << m;
  }
  (void)P;
}

/// Every value, mean and variance equal, bit for bit.
void expect_identical(const EnsembleResult& a, const EnsembleResult& b) {
  ASSERT_EQ(a.values.size(), b.values.size());
  for (std::size_t q = 0; q < a.values.size(); ++q) ASSERT_EQ(a.values[q], b.values[q]) << q;
  for (std::size_t q = 0; q < a.mean.size(); ++q) {
    ASSERT_EQ(a.mean[q], b.mean[q]) << q;
    ASSERT_EQ(a.variance[q], b.variance[q]) << q;
  }
}

// 1000 members (not a multiple of the 64-lane block): 1 thread, 2 threads, 3 threads and a
// shuffled member order give the same bits; for each method.
TEST(Stochastic, EnsembleIsBitwiseIdenticalOverThreadsAndMemberOrders) {
  Loaded g(doc_path("gbm_sampled.esm"));
  for (SdeMethod method : {SdeMethod::EulerMaruyama, SdeMethod::Milstein}) {
    StochasticOptions o;
    o.t0 = 0;
    o.t1 = 1;
    o.saveat = 0.1;
    o.dt = 0.01;
    o.seed = 2026;
    o.members = 1000;
    o.method = method;
    o.threads = 1;
    const EnsembleResult one = g.run(o);
    o.threads = 2;
    const EnsembleResult two = g.run(o);
    o.threads = 3;
    o.member_order.resize(o.members);
    std::iota(o.member_order.begin(), o.member_order.end(), 0u);
    std::shuffle(o.member_order.begin(), o.member_order.end(), std::mt19937(5));
    const EnsembleResult shuffled = g.run(o);
    expect_identical(one, two);
    expect_identical(one, shuffled);
    // ... and a different seed gives different paths.
    o.seed = 2027;
    EXPECT_NE(g.run(o).values[(5 * one.times.size() + 10) * one.names.size()],
              one.values[(5 * one.times.size() + 10) * one.names.size()]);
  }
  Loaded ou(doc_path("ou.esm"));
  StochasticOptions o;
  o.t1 = 1;
  o.saveat = 0.5;
  o.dt = 0.05;
  o.members = 130;
  o.threads = 1;
  const EnsembleResult a = ou.run(o);
  o.threads = 2;
  o.member_order.resize(130);
  std::iota(o.member_order.rbegin(), o.member_order.rend(), 0u);
  expect_identical(a, ou.run(o));
}

esi::Diagnostic refusal(Loaded& m, StochasticOptions o) {
  try {
    m.run(o);
  } catch (const esi::Error& e) {
    return e.diagnostic();
  }
  ADD_FAILURE() << "the run was not refused";
  return {};
}

std::string model_doc(const std::string& variables, const std::string& equations) {
  return R"({"esm": "1.0.0", "metadata": {"name": "t"}, "models": {"M": {"variables": )" + variables +
         R"(, "equations": )" + equations + "}}}";
}

const std::string kNoise =
    R"("W": {"type": "parameter", "distribution": {"kind": "normal", "mean": 0, "std": 1}, "update": {"kind": "wiener"}})";

std::string one_state(const std::string& rhs, const std::string& extra_vars = "", const std::string& extra_eqs = "") {
  return model_doc(R"({"x": {"type": "unknown", "default": 1.0}, )" + kNoise + extra_vars + "}",
                   R"([{"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": )" + rhs + "}" + extra_eqs + "]");
}

TEST(StochasticRefusals, WienerUsedNonLinearlyIsALocatedError) {
  for (const std::string rhs : {R"({"op": "*", "args": ["W", "W"]})", R"({"op": "exp", "args": ["W"]})",
                                R"({"op": "+", "args": ["W", {"op": "sign", "args": ["W"]}]})",
                                R"({"op": "/", "args": ["x", "W"]})"}) {
    esi::testing::TempDir dir;
    Loaded m(dir.write("m.esm", one_state(rhs)));
    const esi::Diagnostic d = refusal(m, {.t1 = 1});
    EXPECT_EQ(d.code, "wiener_nonlinear") << rhs;
    EXPECT_EQ(d.pointer, "/models/M/variables/x") << rhs;
  }
  // Linear uses pass: W / 2, -(x W), x * W - W.
  for (const std::string rhs : {R"({"op": "/", "args": ["W", 2]})", R"({"op": "-", "args": [{"op": "*", "args": ["x", "W"]}]})",
                                R"({"op": "-", "args": [{"op": "*", "args": ["x", "W"]}, "W"]})"}) {
    esi::testing::TempDir dir;
    Loaded m(dir.write("m.esm", one_state(rhs)));
    EXPECT_NO_THROW(m.run({.t1 = 1})) << rhs;
  }
}

TEST(StochasticRefusals, WienerInAnObservedIsRefusedThere) {
  esi::testing::TempDir dir;
  Loaded m(dir.write("m.esm", one_state("\"W\"", R"(, "y": {"type": "unknown"})", R"(, {"lhs": "y", "rhs": "W"})")));
  const esi::Diagnostic d = refusal(m, {.t1 = 1});
  EXPECT_EQ(d.code, "unsupported_sde_noise");
  EXPECT_EQ(d.pointer, "/models/M/variables/y");
}

TEST(StochasticRefusals, UnknownDistributionKindIsALocatedError) {
  Loaded m(doc_path("unknown_distribution.esm"));  // loaded without the schema layer
  const esi::Diagnostic d = refusal(m, {.t1 = 1});
  EXPECT_EQ(d.code, "unknown_distribution");
  EXPECT_EQ(d.pointer, "/models/OU/variables/theta/distribution/kind");
}

TEST(StochasticRefusals, MethodsTheNoiseDoesNotAllow) {
  Loaded g(doc_path("gbm_sampled.esm"));  // multiplicative noise: no SRA1
  EXPECT_EQ(refusal(g, {.t1 = 1, .method = SdeMethod::SRA1}).code, "invalid_sde_method");
  // Two sources, each coefficient reading the state the other drives: not commutative.
  esi::testing::TempDir dir;
  const std::string vars = R"({"x": {"type": "unknown", "default": 1.0}, "y": {"type": "unknown", "default": 1.0}, )" +
                           kNoise + R"(, "V": {"type": "parameter", "update": {"kind": "wiener"}}})";
  const std::string eqs =
      R"([{"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": {"op": "*", "args": ["y", "W"]}},
          {"lhs": {"op": "D", "args": ["y"], "wrt": "t"}, "rhs": {"op": "*", "args": ["x", "V"]}}])";
  Loaded m(dir.write("m.esm", model_doc(vars, eqs)));
  const esi::Diagnostic d = refusal(m, {.t1 = 1, .method = SdeMethod::Milstein});
  EXPECT_EQ(d.code, "invalid_sde_method");
  EXPECT_NE(d.message.find("not diagonal"), std::string::npos) << d.message;
  EXPECT_EQ(m.run({.t1 = 1}).method, SdeMethod::EulerMaruyama);  // chosen automatically
}

// A path that blows up (dx = x^2 dt + x dW from x0 = 1 over [0, 5]) does not throw: the result
// names the lowest member id with a non-finite value, the variable and the time; the other
// members' values are kept.
TEST(Stochastic, NonFinitePathsAreReportedByMemberVariableAndTime) {
  esi::testing::TempDir dir;
  Loaded m(dir.write("m.esm", one_state(R"({"op": "+", "args": [{"op": "*", "args": ["x", "x"]}, {"op": "*", "args": ["x", "W"]}]})")));
  StochasticOptions o;
  o.t1 = 5;
  o.saveat = 1;
  o.dt = 0.01;
  o.members = 8;
  const EnsembleResult r = m.run(o);
  std::size_t first = 8, when = 0;
  for (std::size_t k = 0; k < 8 && first == 8; ++k)
    for (std::size_t t = 0; t < r.times.size(); ++t)
      if (!std::isfinite(r.value(k, t, 0))) {
        first = k, when = t;
        break;
      }
  ASSERT_LT(first, 8u) << "no path blew up";
  char time[32];
  std::snprintf(time, sizeof time, "%g", r.times[when]);
  EXPECT_EQ(r.failure, "member " + std::to_string(first) + ": 'M.x' is not finite at t = " + time);
  for (std::size_t k = 0; k < 8; ++k) EXPECT_EQ(r.value(k, 0, 0), 1.0);
}

// A model whose Wiener parameter drives nothing and that has no state still runs (outputs at
// every time, nothing to step).
TEST(Stochastic, ModelWithoutStatesRuns) {
  esi::testing::TempDir dir;
  Loaded m(dir.write("m.esm", model_doc("{" + kNoise + R"(, "k": {"type": "parameter", "default": 2}, "y": {"type": "unknown"}})",
                                        R"([{"lhs": "y", "rhs": {"op": "*", "args": ["k", "t"]}}])")));
  StochasticOptions o;
  o.t1 = 1;
  o.saveat = 0.5;
  o.members = 2;
  const EnsembleResult r = m.run(o);
  ASSERT_TRUE(r.failure.empty()) << r.failure;
  EXPECT_EQ(r.value(1, 2, 0), 2.0);
}

TEST(StochasticRefusals, BadOptions) {
  {
    Loaded ou(doc_path("ou.esm"));
    EXPECT_EQ(refusal(ou, {.t1 = 1, .saveat = 1e-6, .members = 1000}).code, "too_many_outputs");
    EXPECT_EQ(refusal(ou, {.t1 = 1, .dt = 1e-10}).code, "too_many_steps");
    EXPECT_EQ(refusal(ou, {.t1 = 1e6, .dt = 1e-7}).code, "too_many_steps");
  }
  Loaded ou(doc_path("ou.esm"));
  EXPECT_EQ(refusal(ou, {.t1 = 1, .members = 0}).code, "invalid_ensemble");
  EXPECT_EQ(refusal(ou, {.t1 = 1, .threads = 0}).code, "invalid_ensemble");
  EXPECT_EQ(refusal(ou, {.t1 = 1, .members = 3, .member_order = {0, 0, 1}}).code, "invalid_ensemble");
}

// Sampled parameters without a Wiener parameter: each member is an ODE run (adaptive) with its
// draws; x' = -r x with r ~ normal(0.2, 0.1) and the exact x(1) = e^{-r}.
TEST(Stochastic, OdeMembersWithSampledParameters) {
  esi::testing::TempDir dir;
  const std::string vars = R"({"x": {"type": "unknown", "default": 1.0}, "r": {"type": "parameter",
      "distribution": {"kind": "normal", "mean": 0.2, "std": 0.1}}, "rate": {"type": "unknown"}})";
  const std::string eqs = R"([{"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": {"op": "*", "args": [{"op": "-", "args": ["r"]}, "x"]}},
      {"lhs": "rate", "rhs": "r"}])";
  Loaded m(dir.write("m.esm", model_doc(vars, eqs)));
  EXPECT_TRUE(esi::exec::is_stochastic(m.system));
  StochasticOptions o;
  o.t1 = 1;
  o.members = 20;
  o.threads = 2;
  o.integrator.rtol = 1e-10;
  o.integrator.atol = 1e-12;
  const EnsembleResult r = m.run(o);
  ASSERT_TRUE(r.failure.empty()) << r.failure;
  EXPECT_FALSE(r.sde);
  const int x = column(r, "M.x"), rate = column(r, "M.rate");
  for (std::size_t k = 0; k < 20; ++k) {
    const double drawn = 0.2 + 0.1 * esi::noise::normals(0, static_cast<std::uint32_t>(k), esi::noise::kSetupStep,
                                                          m.system.parameter_index("M.r")).first;
    EXPECT_EQ(r.value(k, 1, rate), drawn);
    EXPECT_NEAR(r.value(k, 1, x), std::exp(-drawn), 1e-8);
  }
}

}  // namespace
