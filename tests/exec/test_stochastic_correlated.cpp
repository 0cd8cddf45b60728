// Correlated noise and multivariate distributions (spec §6.3: one vector-valued parameter whose
// `distribution` has a `cov`): sample covariances of setup-time draws and of correlated
// Brownian motion against the matrix, the keying of the independent normals pinned, bitwise
// reproducibility over threads, and the located refusals of a bad covariance.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "esi/core/error.hpp"
#include "esi/core/noise.hpp"
#include "esi/esm/distribution.hpp"
#include "esi/esm/flatten.hpp"
#include "esi/esm/load.hpp"
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
using esi::testing::time_index;

/// Sample mean and unbiased covariance of columns `cols` at output time k over every member,
/// after `transform` of each value.
struct Moments {
  std::vector<double> mean, cov;  // cov row-major
};
template <class F>
Moments moments(const EnsembleResult& r, std::size_t k, const std::vector<std::size_t>& cols, F transform) {
  const std::size_t d = cols.size();
  const double N = static_cast<double>(r.members);
  Moments m{std::vector<double>(d, 0.0), std::vector<double>(d * d, 0.0)};
  for (std::size_t mem = 0; mem < r.members; ++mem)
    for (std::size_t a = 0; a < d; ++a) m.mean[a] += transform(r.value(mem, k, cols[a]));
  for (double& x : m.mean) x /= N;
  for (std::size_t mem = 0; mem < r.members; ++mem)
    for (std::size_t a = 0; a < d; ++a)
      for (std::size_t b = 0; b < d; ++b)
        m.cov[a * d + b] += (transform(r.value(mem, k, cols[a])) - m.mean[a]) *
                            (transform(r.value(mem, k, cols[b])) - m.mean[b]);
  for (double& x : m.cov) x /= N - 1;
  return m;
}

/// Every mean and covariance entry within 4 standard errors of a Gaussian's: the standard error
/// of a mean is sqrt(C_aa / N), of a covariance entry sqrt((C_aa C_bb + C_ab^2) / (N - 1)).
void expect_gaussian_moments(const Moments& got, const std::vector<double>& mean, const std::vector<double>& cov,
                             double N, const std::string& what) {
  const std::size_t d = mean.size();
  for (std::size_t a = 0; a < d; ++a) {
    EXPECT_NEAR(got.mean[a], mean[a], 4 * std::sqrt(cov[a * d + a] / N)) << what << " mean " << a;
    for (std::size_t b = 0; b < d; ++b) {
      const double se = std::sqrt((cov[a * d + a] * cov[b * d + b] + cov[a * d + b] * cov[a * d + b]) / (N - 1));
      EXPECT_NEAR(got.cov[a * d + b], cov[a * d + b], 4 * se) << what << " cov " << a << "," << b;
    }
  }
}

// ---- setup-time multivariate draws ----

// 10^5 members of theta ~ N(mean, cov) and log(phi) ~ N(mu, cov'), exposed through the
// observeds y = theta and z = phi at t0: sample means and every covariance entry within 4
// standard errors of the document's. Not vacuous: cov[0][1] = 1.2 is about 170 standard errors
// from 0, so independent components (L replaced by its diagonal or the identity) fail.
TEST(CorrelatedNoise, MultivariateSetupDrawsHaveTheDocumentsCovariance) {
  Loaded l(doc_path("mvn_setup.esm"));
  StochasticOptions o;
  o.t0 = 0;
  o.t1 = 0.01;
  o.dt = 0.01;
  o.seed = 2024;
  o.members = 100000;
  o.threads = 2;
  const EnsembleResult r = l.run(o);
  ASSERT_TRUE(r.failure.empty()) << r.failure;
  const double N = 1e5;
  const std::vector<std::size_t> y = {column(r, "M.y[1]"), column(r, "M.y[2]"), column(r, "M.y[3]")};
  const std::vector<std::size_t> z = {column(r, "M.z[1]"), column(r, "M.z[2]"), column(r, "M.z[3]")};
  const std::vector<double> cov = {4.0, 1.2, 0.2, 1.2, 1.0, 0.3, 0.2, 0.3, 0.25};
  const Moments theta = moments(r, 0, y, [](double x) { return x; });
  expect_gaussian_moments(theta, {1.0, -2.0, 0.5}, cov, N, "theta");
  EXPECT_GT(std::abs(theta.cov[1]), 50 * std::sqrt((4.0 * 1.0) / (N - 1)));  // far from independent
  const std::vector<double> log_cov = {0.04, 0.03, 0.0, 0.03, 0.09, -0.02, 0.0, -0.02, 0.01};
  const Moments log_phi = moments(r, 0, z, [](double x) { return std::log(x); });
  expect_gaussian_moments(log_phi, {0.0, 0.5, -0.5}, log_cov, N, "log phi");
  // The draws are held for the run: the value at t1 is the value at t0.
  for (std::size_t mem = 0; mem < 100; ++mem) EXPECT_EQ(r.value(mem, 1, y[2]), r.value(mem, 0, y[2]));
}

// The keying of setup-time vectors: a correlated vector of K components uses K slots after
// every parameter index, in the order of the parameters (noise.hpp, sde_model.hpp). Member 7's
// theta is mean + L z with z_j the first normal of (seed, 7, kSetupStep, first slot + j) and L
// the hand-computed Cholesky factor of theta's cov.
TEST(CorrelatedNoise, SetupDrawOfAVectorIsMeanPlusLTimesKeyedNormals) {
  Loaded l(doc_path("mvn_setup.esm"));
  std::uint32_t first_slot = static_cast<std::uint32_t>(l.system.parameters.size());
  for (const auto& p : l.system.parameters)
    if (p.array == "M.phi") {
      first_slot += 3;  // phi comes first: theta's slots follow its three
      break;
    } else if (p.array == "M.theta") {
      break;
    }
  StochasticOptions o;
  o.t0 = 0;
  o.t1 = 0.01;
  o.seed = 99;
  o.members = 10;
  const EnsembleResult r = l.run(o);
  ASSERT_TRUE(r.failure.empty()) << r.failure;
  double z[3];
  for (std::uint32_t j = 0; j < 3; ++j)
    z[j] = esi::noise::normals(99, 7, esi::noise::kSetupStep, first_slot + j).first;
  // L of [[4, 1.2, 0.2], [1.2, 1, 0.3], [0.2, 0.3, 0.25]].
  const double l11 = 2, l21 = 0.6, l31 = 0.1, l22 = std::sqrt(1 - 0.36), l32 = (0.3 - l31 * l21) / l22,
               l33 = std::sqrt(0.25 - l31 * l31 - l32 * l32);
  EXPECT_NEAR(r.value(7, 0, column(r, "M.y[1]")), 1.0 + l11 * z[0], 1e-14);
  EXPECT_NEAR(r.value(7, 0, column(r, "M.y[2]")), -2.0 + l21 * z[0] + l22 * z[1], 1e-14);
  EXPECT_NEAR(r.value(7, 0, column(r, "M.y[3]")), 0.5 + l31 * z[0] + l32 * z[1] + l33 * z[2], 1e-14);
}

// Without a Wiener parameter the members are ODEs (exec::simulate per member) and take the
// same kind of draw: dx = theta (a correlated 2-vector), so x(1) = theta = mean + L z with z
// keyed at the slots after every parameter index.
TEST(CorrelatedNoise, OdeMembersDrawCorrelatedVectorsToo) {
  esi::testing::TempDir dir;
  Loaded l(dir.write("m.esm", R"({"esm": "1.0.0", "metadata": {"name": "t"},
    "index_sets": {"k": {"kind": "interval", "size": 2}},
    "models": {"M": {"variables": {
      "x": {"type": "unknown", "units": "1", "shape": ["k"], "default": 0.0},
      "theta": {"type": "parameter", "units": "1/s", "shape": ["k"],
                "distribution": {"kind": "normal", "mean": [1, 2], "cov": [[0.25, 0.1], [0.1, 0.2]]}}},
    "equations": [{"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": "theta"}]}}})"));
  StochasticOptions o;
  o.t1 = 1;
  o.seed = 8;
  o.members = 3;
  const EnsembleResult r = l.run(o);
  ASSERT_TRUE(r.failure.empty()) << r.failure;
  EXPECT_FALSE(r.sde);
  const auto slot = static_cast<std::uint32_t>(l.system.parameters.size());
  for (std::uint32_t m = 0; m < 3; ++m) {
    const double z0 = esi::noise::normals(8, m, esi::noise::kSetupStep, slot).first;
    const double z1 = esi::noise::normals(8, m, esi::noise::kSetupStep, slot + 1).first;
    const double l21 = 0.1 / 0.5, l22 = std::sqrt(0.2 - l21 * l21);
    EXPECT_NEAR(r.value(m, 1, column(r, "M.x[1]")), 1 + 0.5 * z0, 1e-9) << m;
    EXPECT_NEAR(r.value(m, 1, column(r, "M.x[2]")), 2 + l21 * z0 + l22 * z1, 1e-9) << m;
  }
}

// Independent vector forms: `std` with one entry per component, and uniform `low` / `high`
// arrays: cell c is drawn alone from its parameter's own slot (its index in
// System::parameters), with its own location and spread.
TEST(CorrelatedNoise, IndependentVectorDistributionsDrawEachCellWithItsOwnFields) {
  esi::testing::TempDir dir;
  Loaded l(dir.write("m.esm", R"({"esm": "1.0.0", "metadata": {"name": "t"},
    "index_sets": {"k": {"kind": "interval", "size": 2}},
    "models": {"M": {"variables": {
      "a": {"type": "parameter", "units": "1", "shape": ["k"],
            "distribution": {"kind": "normal", "mean": [1, -1], "std": [0.5, 3]}},
      "b": {"type": "parameter", "units": "1", "shape": ["k"],
            "distribution": {"kind": "uniform", "low": [0, 10], "high": [1, 20]}},
      "ya": {"type": "unknown", "units": "1", "shape": ["k"]},
      "yb": {"type": "unknown", "units": "1", "shape": ["k"]}},
    "equations": [{"lhs": "ya", "rhs": "a"}, {"lhs": "yb", "rhs": "b"}]}}})"));
  StochasticOptions o;
  o.t1 = 1;
  o.seed = 4;
  o.members = 2;
  const EnsembleResult r = l.run(o);
  ASSERT_TRUE(r.failure.empty()) << r.failure;
  const double mean[2] = {1, -1}, sd[2] = {0.5, 3}, low[2] = {0, 10}, high[2] = {1, 20};
  for (std::uint32_t m = 0; m < 2; ++m)
    for (int c = 1; c <= 2; ++c) {
      const auto slot_a = static_cast<std::uint32_t>(l.system.parameter_index("M.a[" + std::to_string(c) + "]"));
      const auto slot_b = static_cast<std::uint32_t>(l.system.parameter_index("M.b[" + std::to_string(c) + "]"));
      EXPECT_EQ(r.value(m, 0, column(r, "M.ya[" + std::to_string(c) + "]")),
                mean[c - 1] + sd[c - 1] * esi::noise::normals(4, m, esi::noise::kSetupStep, slot_a).first);
      EXPECT_EQ(r.value(m, 0, column(r, "M.yb[" + std::to_string(c) + "]")),
                low[c - 1] + (high[c - 1] - low[c - 1]) * esi::noise::uniform01(4, m, esi::noise::kSetupStep, slot_b));
    }
}

// ---- correlated Wiener increments ----

// dx_i = dW_i with Cov(W) = cov per unit time: 10^5 members of x(T) have covariance T cov
// (within 4 standard errors, every entry, at T = 0.5 and 1), with SRA1 (chosen: the noise is
// additive) and with Euler-Maruyama. cov[0][1] = -0.6 is far from 0.
TEST(CorrelatedNoise, CorrelatedBrownianMotionHasCovarianceTTimesCov) {
  Loaded l(doc_path("correlated_bm.esm"));
  for (std::optional<SdeMethod> method : {std::optional<SdeMethod>{}, std::optional<SdeMethod>{SdeMethod::EulerMaruyama}}) {
    StochasticOptions o;
    o.t0 = 0;
    o.t1 = 1;
    o.saveat = 0.5;
    o.dt = 0.05;
    o.seed = 5;
    o.members = 100000;
    o.threads = 2;
    o.method = method;
    const EnsembleResult r = l.run(o);
    ASSERT_TRUE(r.failure.empty()) << r.failure;
    EXPECT_EQ(r.method, method ? *method : SdeMethod::SRA1);
    const std::vector<std::size_t> x = {column(r, "B.x[1]"), column(r, "B.x[2]")};
    for (double T : {0.5, 1.0}) {
      const Moments got = moments(r, time_index(r, T), x, [](double v) { return v; });
      expect_gaussian_moments(got, {0.0, 0.0}, {T * 1.0, T * -0.6, T * -0.6, T * 0.5}, 1e5,
                              "T = " + std::to_string(T));
      EXPECT_LT(got.cov[1], -0.2 * T);  // not independent
    }
  }
}

// Components no equation reads still enter L z: with only W_1 and W_3 of a 3-component vector
// read, x = W_1(T) and y = 1 + T + 2 W_3(T) have Var x = T C_11, Var y = 4 T C_33 and
// Cov(x, y) = 2 T C_13, and W_3 = L_31 z_1 + L_32 z_2 + L_33 z_3 (z_2 belongs to no read cell).
TEST(CorrelatedNoise, UnreadComponentsOfAVectorStillEnterTheDraw) {
  Loaded l(doc_path("correlated_partial.esm"));
  StochasticOptions o;
  o.t0 = 0;
  o.t1 = 1;
  o.dt = 0.1;
  o.seed = 17;
  o.members = 100000;
  o.threads = 2;
  const EnsembleResult r = l.run(o);
  ASSERT_TRUE(r.failure.empty()) << r.failure;
  const Moments got = moments(r, 1, {column(r, "P.x"), column(r, "P.y")}, [](double v) { return v; });
  expect_gaussian_moments(got, {0.0, 2.0}, {1.0, 0.6, 0.6, 6.0}, 1e5, "x, y");

  // One Euler-Maruyama step of member 3 by hand: the sources are z_1..z_3, slots 0..2.
  o.members = 4;
  o.t1 = 0.25;
  o.dt = 0.25;
  o.method = SdeMethod::EulerMaruyama;
  const EnsembleResult one = l.run(o);
  const double h = 0.25;
  double z[3];
  for (std::uint32_t j = 0; j < 3; ++j) z[j] = esi::noise::normals(17, 3, 0, j).first;
  const double l31 = 0.3, l21 = 0.5, l22 = std::sqrt(2 - 0.25), l32 = (0.9 - l31 * l21) / l22,
               l33 = std::sqrt(1.5 - l31 * l31 - l32 * l32);
  EXPECT_NEAR(one.value(3, 1, column(one, "P.x")), std::sqrt(h) * z[0], 1e-14);
  EXPECT_NEAR(one.value(3, 1, column(one, "P.y")), 1 + h + 2 * std::sqrt(h) * (l31 * z[0] + l32 * z[1] + l33 * z[2]),
              1e-13);
}

// The same bits on 1 and 2 threads and under a shuffled member order (300 members: 5 blocks).
TEST(CorrelatedNoise, EnsembleIsBitwiseIdenticalOverThreadsAndMemberOrders) {
  for (const char* file : {"correlated_bm.esm", "correlated_partial.esm", "mvn_setup.esm"}) {
    Loaded l(doc_path(file));
    StochasticOptions o;
    o.t0 = 0;
    o.t1 = 1;
    o.saveat = 0.25;
    o.dt = 0.01;
    o.seed = 77;
    o.members = 300;
    o.threads = 1;
    const EnsembleResult serial = l.run(o);
    ASSERT_TRUE(serial.failure.empty()) << file << ": " << serial.failure;
    o.threads = 2;
    o.member_order.resize(o.members);
    std::iota(o.member_order.begin(), o.member_order.end(), 0u);
    std::shuffle(o.member_order.begin(), o.member_order.end(), std::mt19937(3));
    const EnsembleResult parallel = l.run(o);
    EXPECT_TRUE(serial.values == parallel.values) << file;
    EXPECT_TRUE(serial.mean == parallel.mean) << file;
    EXPECT_TRUE(serial.variance == parallel.variance) << file;
  }
}

// ---- refusals ----

std::string wiener_doc(const std::string& distribution, int size = 2) {
  return R"({"esm": "1.0.0", "metadata": {"name": "t"}, "index_sets": {"k": {"kind": "interval", "size": )" +
         std::to_string(size) + R"(}},
    "models": {"M": {"variables": {
      "x": {"type": "unknown", "units": "1", "shape": ["k"], "default": 0.0},
      "W": {"type": "parameter", "units": "1/s^0.5", "shape": ["k"], "update": {"kind": "wiener"},
            "distribution": )" + distribution + R"(}},
    "equations": [{"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": "W"}]}}})";
}

struct Refusal {
  std::string code, pointer, message;
};

Refusal refusal_of(const std::string& text) {
  esi::testing::TempDir dir;
  const auto file = dir.write("m.esm", text);
  try {
    Loaded l(file);
    StochasticOptions o;
    o.t1 = 1;
    l.run(o);
  } catch (const esi::Error& e) {
    return {e.code(), e.diagnostic().pointer, e.diagnostic().message};
  }
  return {"ok", "", ""};
}

std::string validate_code(const std::string& text, std::string* pointer = nullptr) {
  esi::testing::TempDir dir;
  const auto report = esi::esm::validate_file(dir.write("m.esm", text));
  if (report.errors.empty()) return "ok";
  if (pointer) *pointer = report.errors[0].pointer;
  return report.errors[0].code;
}

const std::string kCov = "/models/M/variables/W/distribution/cov";

// A Wiener vector with independent components (`std` per component) and a mean: one source
// per cell, slot = its position among the sources; one Euler-Maruyama step of member 2 is
// x_c = mean_c h + std_c sqrt(h) xi_c.
TEST(CorrelatedNoise, IndependentWienerVectorWithMeanAndPerComponentStd) {
  esi::testing::TempDir dir;
  Loaded l(dir.write("m.esm", wiener_doc(R"({"kind": "normal", "mean": [0.5, -1], "std": [1, 2]})")));
  StochasticOptions o;
  o.t1 = 0.25;
  o.dt = 0.25;
  o.seed = 6;
  o.members = 3;
  o.method = SdeMethod::Milstein;  // diagonal additive noise: allowed, and the same update as EM here
  const EnsembleResult r = l.run(o);
  ASSERT_TRUE(r.failure.empty()) << r.failure;
  const double h = 0.25;
  EXPECT_NEAR(r.value(2, 1, column(r, "M.x[1]")), 0.5 * h + std::sqrt(h) * esi::noise::normals(6, 2, 0, 0).first, 1e-15);
  EXPECT_NEAR(r.value(2, 1, column(r, "M.x[2]")), -1 * h + 2 * std::sqrt(h) * esi::noise::normals(6, 2, 0, 1).first,
              1e-15);
}

// A scalar parameter may write its variance as a 1 x 1 `cov`: it is drawn as mean + sqrt(cov) z
// (from the slot after every parameter index, as a one-component vector).
TEST(CorrelatedNoise, ScalarWithOneByOneCovariance) {
  esi::testing::TempDir dir;
  Loaded l(dir.write("m.esm", R"({"esm": "1.0.0", "metadata": {"name": "t"},
    "models": {"M": {"variables": {
      "a": {"type": "parameter", "units": "1", "distribution": {"kind": "normal", "mean": 3, "cov": [[0.25]]}},
      "y": {"type": "unknown", "units": "1"}},
    "equations": [{"lhs": "y", "rhs": "a"}]}}})"));
  StochasticOptions o;
  o.t1 = 1;
  o.seed = 2;
  o.members = 2;
  const EnsembleResult r = l.run(o);
  ASSERT_TRUE(r.failure.empty()) << r.failure;
  const auto slot = static_cast<std::uint32_t>(l.system.parameters.size());
  EXPECT_EQ(r.value(1, 0, column(r, "M.y")), 3 + 0.5 * esi::noise::normals(2, 1, esi::noise::kSetupStep, slot).first);
  // A scalar with a 2-component distribution is refused at the distribution.
  const Refusal bad = refusal_of(R"({"esm": "1.0.0", "metadata": {"name": "t"},
    "models": {"M": {"variables": {
      "a": {"type": "parameter", "units": "1", "distribution": {"kind": "normal", "mean": [0, 1], "std": 1}},
      "y": {"type": "unknown", "units": "1"}},
    "equations": [{"lhs": "y", "rhs": "a"}]}}})");
  EXPECT_EQ(bad.code, "invalid_distribution");
  EXPECT_EQ(bad.pointer, "/models/M/variables/a/distribution");
}

TEST(CorrelatedNoiseRefusals, NotPositiveSemidefinite) {
  // A correlation of 2 / sqrt(1 * 1) = 2.
  const std::string text = wiener_doc(R"({"kind": "normal", "mean": [0, 0], "cov": [[1, 2], [2, 1]]})");
  const Refusal r = refusal_of(text);
  EXPECT_EQ(r.code, "distribution_covariance_invalid");
  EXPECT_EQ(r.pointer, kCov);
  EXPECT_NE(r.message.find("positive semidefinite"), std::string::npos) << r.message;
  std::string pointer;
  EXPECT_EQ(validate_code(text, &pointer), "distribution_covariance_invalid");  // esi validate says so too
  EXPECT_EQ(pointer, kCov);
  // Pairwise fine, jointly impossible (correlations 0.6, -0.6, 0.6).
  EXPECT_EQ(refusal_of(wiener_doc(R"({"kind": "normal", "mean": [0, 0, 0],
      "cov": [[1, 0.6, -0.6], [0.6, 1, 0.6], [-0.6, 0.6, 1]]})", 3)).code, "distribution_covariance_invalid");
  // A negative variance, located at the diagonal entry.
  const Refusal negative = refusal_of(wiener_doc(R"({"kind": "normal", "mean": [0, 0], "cov": [[1, 0], [0, -1]]})"));
  EXPECT_EQ(negative.code, "distribution_covariance_invalid");
  EXPECT_EQ(negative.pointer, kCov + "/1/1");
}

TEST(CorrelatedNoiseRefusals, AsymmetricIsLocatedAtTheEntry) {
  const Refusal r = refusal_of(wiener_doc(R"({"kind": "normal", "mean": [0, 0], "cov": [[1, 0.5], [0.4, 1]]})"));
  EXPECT_EQ(r.code, "distribution_covariance_invalid");
  EXPECT_EQ(r.pointer, kCov + "/1/0");
  EXPECT_NE(r.message.find("symmetric"), std::string::npos) << r.message;
}

TEST(CorrelatedNoiseRefusals, WrongSize) {
  // 3 x 3 for a 2-component mean.
  Refusal r = refusal_of(wiener_doc(R"({"kind": "normal", "mean": [0, 0], "cov": [[1, 0, 0], [0, 1, 0], [0, 0, 1]]})"));
  EXPECT_EQ(r.code, "distribution_covariance_invalid");
  EXPECT_EQ(r.pointer, kCov);
  // Not square.
  r = refusal_of(wiener_doc(R"({"kind": "normal", "mean": [0, 0], "cov": [[1, 0], [0]]})"));
  EXPECT_EQ(r.code, "distribution_covariance_invalid");
  EXPECT_EQ(r.pointer, kCov + "/1");
  // 2 x 2 (mean broadcast) for a parameter of 3 cells.
  r = refusal_of(wiener_doc(R"({"kind": "normal", "mean": 0, "cov": [[1, 0], [0, 1]]})", 3));
  EXPECT_EQ(r.code, "distribution_covariance_invalid");
  EXPECT_EQ(r.pointer, kCov);
  EXPECT_NE(r.message.find("3 cells"), std::string::npos) << r.message;
  // A mean of the wrong length without a cov.
  r = refusal_of(wiener_doc(R"({"kind": "normal", "mean": [0, 0, 0], "std": 1})"));
  EXPECT_EQ(r.code, "invalid_distribution");
  EXPECT_EQ(r.pointer, "/models/M/variables/W/distribution");
}

TEST(CorrelatedNoiseRefusals, SemidefiniteIsAcceptedAsPerfectCorrelation) {
  // cov = [[1, 2], [2, 4]]: W_2 = 2 W_1 exactly, so x_2 = 2 x_1 on every path.
  esi::testing::TempDir dir;
  Loaded l(dir.write("m.esm", wiener_doc(R"({"kind": "normal", "mean": [0, 0], "cov": [[1, 2], [2, 4]]})")));
  StochasticOptions o;
  o.t1 = 1;
  o.dt = 0.1;
  o.members = 50;
  o.seed = 1;
  const EnsembleResult r = l.run(o);
  ASSERT_TRUE(r.failure.empty()) << r.failure;
  const std::size_t x1 = column(r, "M.x[1]"), x2 = column(r, "M.x[2]");
  for (std::size_t m = 0; m < 50; ++m) EXPECT_NEAR(r.value(m, 1, x2), 2 * r.value(m, 1, x1), 1e-12);
  EXPECT_GT(std::abs(r.value(0, 1, x1)), 0.0);
}

// Milstein for noise a cov mixes through state-dependent coefficients (dx_i = x_i dW_i): the
// mixed sources do not commute structurally, so Milstein is refused with the reason; the
// automatic choice is Euler-Maruyama.
TEST(CorrelatedNoiseRefusals, MilsteinForMixedMultiplicativeNoise) {
  std::string text = wiener_doc(R"({"kind": "normal", "mean": [0, 0], "cov": [[1, 0.5], [0.5, 1]]})");
  text.replace(text.find(R"("rhs": "W")"), 10, R"("rhs": {"op": "*", "args": ["x", "W"]})");
  text.replace(text.find(R"("default": 0.0)"), 14, R"("default": 1.0)");
  esi::testing::TempDir dir;
  Loaded l(dir.write("m.esm", text));
  StochasticOptions o;
  o.t1 = 1;
  o.members = 3;
  o.method = SdeMethod::Milstein;
  try {
    l.run(o);
    ADD_FAILURE() << "Milstein ran";
  } catch (const esi::Error& e) {
    EXPECT_EQ(e.code(), "invalid_sde_method");
    EXPECT_NE(e.diagnostic().message.find("cov"), std::string::npos) << e.diagnostic().message;
  }
  o.method.reset();
  EXPECT_EQ(l.run(o).method, SdeMethod::EulerMaruyama);
}

// The factor itself: L L^T = cov for a 4 x 4 matrix, L lower triangular.
TEST(CorrelatedNoise, CovarianceFactorReproducesTheMatrix) {
  const nlohmann::json cov = nlohmann::json::parse(
      "[[2.0, 0.3, -0.4, 0.1], [0.3, 1.5, 0.2, 0.0], [-0.4, 0.2, 0.8, 0.25], [0.1, 0.0, 0.25, 0.6]]");
  const std::vector<double> L = esi::esm::covariance_factor(cov, 4, "f", "/cov");
  for (std::size_t i = 0; i < 4; ++i)
    for (std::size_t j = 0; j < 4; ++j) {
      if (j > i) {
        EXPECT_EQ(L[i * 4 + j], 0.0);
      }
      double s = 0;
      for (std::size_t p = 0; p < 4; ++p) s += L[i * 4 + p] * L[j * 4 + p];
      EXPECT_NEAR(s, cov[i][j].get<double>(), 1e-14) << i << "," << j;
    }
}

}  // namespace
