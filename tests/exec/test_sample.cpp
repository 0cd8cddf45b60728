// The Langevin sampler: bit-for-bit equal to a plain scalar loop of the same update and keyed
// noise (tape and native, f64 and f32, several K, feature counts and temperatures), the stationary mean and
// variance of a quadratic energy, thread-count independence, and refusals.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "esi/core/error.hpp"
#include "esi/core/noise.hpp"
#include "esi/esm/flatten.hpp"
#include "esi/exec/sample.hpp"
#include "support/temp_dir.hpp"

namespace {

using esi::exec::SampleOptions;
using esi::exec::SampleResult;

double target(std::size_t i) { return 0.25 * static_cast<double>(i) - 1.0; }

/// F features x_i (x_i(0) = 1 + i / 10), parameters y_i = target(i), gradient flow
/// D(x_i) = -(x_i - y_i) and the energy E = 0.5 * sum_i (x_i - y_i)^2.
std::string quadratic_doc(std::size_t features) {
  std::string vars = "{", eqs = "[", terms;
  for (std::size_t i = 0; i < features; ++i) {
    const std::string x = "x" + std::to_string(i), y = "y" + std::to_string(i);
    vars += "\"" + x + "\": {\"type\": \"unknown\", \"default\": " + std::to_string(1 + i / 10.0) + "}, ";
    char value[32];
    std::snprintf(value, sizeof value, "%.17g", target(i));
    vars += "\"" + y + "\": {\"type\": \"parameter\", \"default\": " + value + "}, ";
    const std::string diff = "{\"op\": \"-\", \"args\": [\"" + x + "\", \"" + y + "\"]}";
    eqs += "{\"lhs\": {\"op\": \"D\", \"args\": [\"" + x + "\"], \"wrt\": \"t\"}, \"rhs\": {\"op\": \"-\", \"args\": [" + diff + "]}}, ";
    terms += (i ? ", " : "") + std::string("{\"op\": \"^\", \"args\": [") + diff + ", 2]}";
  }
  vars += "\"E\": {\"type\": \"unknown\"}}";
  eqs += "{\"lhs\": \"E\", \"rhs\": {\"op\": \"*\", \"args\": [0.5, {\"op\": \"+\", \"args\": [" + terms + "]}]}}]";
  return R"({"esm": "1.0.0", "metadata": {"name": "q"}, "models": {"Q": {"variables": )" + vars +
         R"(, "equations": )" + eqs + "}}}";
}

struct Loaded {
  esi::testing::TempDir dir;
  esi::esm::ResolvedDocument doc;
  esi::esm::System system;
  explicit Loaded(const std::string& text) {
    doc = esi::esm::load_resolved(dir.write("m.esm", text));
    system = esi::esm::flatten(doc);
  }
  SampleResult run(SampleOptions o) {
    o.document = &doc;
    return esi::exec::sample(system, o);
  }
};

/// The update written out for one chain in precision T: x <- x - eta (x - y) + sqrt(2 eta T) xi
/// (eta, the noise scale, y and xi rounded to T; the gradient of the energy is x - y exactly).
template <class T>
std::vector<double> reference_chain(std::size_t features, std::uint32_t row, std::uint64_t steps, double eta,
                                    double temperature, std::uint64_t seed) {
  std::vector<T> x(features);
  for (std::size_t i = 0; i < features; ++i) x[i] = static_cast<T>(1 + i / 10.0);
  const T eta_t = static_cast<T>(eta), scale = static_cast<T>(std::sqrt(2 * eta * temperature));
  for (std::uint64_t k = 0; k < steps; ++k) {
    std::vector<T> g(features);
    for (std::size_t i = 0; i < features; ++i) g[i] = x[i] - static_cast<T>(target(i));
    for (std::size_t i = 0; i < features; ++i) {
      const auto z = esi::noise::normals(seed, row, k, static_cast<std::uint32_t>(i / 2));
      x[i] = x[i] - eta_t * g[i] + scale * static_cast<T>(i % 2 == 0 ? z.first : z.second);
    }
  }
  return std::vector<double>(x.begin(), x.end());
}

TEST(Sample, EqualsTheScalarReferenceLoopBitForBit) {
  for (std::size_t features : {5u, 8u, 33u, 100u}) {
    Loaded q(quadratic_doc(features));
    for (bool native : {false, true})
    for (bool f32 : {false, true})
      for (std::uint64_t steps : {1u, 4u, 5u, 8u, 12u})
        for (double temperature : {0.0, 0.3, 0.5, 0.7}) {
          SampleOptions o;
          o.energy = "E";
          o.rows = 70;  // one full 64-chain block and a partial one
          o.steps = steps;
          o.step_size = 0.1;
          o.temperature = temperature;
          o.seed = 77;
          o.native = native;
          o.single_precision = f32;
          const SampleResult r = q.run(o);
          ASSERT_EQ(r.features.size(), features);
          for (std::uint32_t row : {0u, 63u, 64u, 69u}) {
            const std::vector<double> ref = f32 ? reference_chain<float>(features, row, steps, 0.1, temperature, 77)
                                                : reference_chain<double>(features, row, steps, 0.1, temperature, 77);
            for (std::size_t i = 0; i < features; ++i)
              ASSERT_EQ(r.values[row * features + i], ref[i])
                  << "features " << features << " native " << native << " f32 " << f32 << " K " << steps << " T " << temperature
                  << " row " << row << " feature " << i << " (" << r.gradient_status << ")";
          }
        }
  }
}

// 1024 features (one K, one T; tape and native, f64 and f32).
TEST(Sample, ThousandFeaturesEqualTheScalarReferenceLoop) {
  Loaded q(quadratic_doc(1024));
  for (bool native : {false, true})
    for (bool f32 : {false, true}) {
      SampleOptions o;
      o.energy = "E";
      o.rows = 65;
      o.steps = 5;
      o.step_size = 0.1;
      o.temperature = 0.5;
      o.seed = 8;
      o.native = native;
      o.single_precision = f32;
      const SampleResult r = q.run(o);
      for (std::uint32_t row : {0u, 64u}) {
        const std::vector<double> ref = f32 ? reference_chain<float>(1024, row, 5, 0.1, 0.5, 8)
                                            : reference_chain<double>(1024, row, 5, 0.1, 0.5, 8);
        for (std::size_t i = 0; i < 1024; ++i)
          ASSERT_EQ(r.values[row * 1024 + i], ref[i]) << "native " << native << " f32 " << f32 << " feature " << i;
      }
    }
}

// 10^4 chains on E = 0.5 ((x0 - y0)^2 + (x1 - y1)^2) at T = 0.5, eta = 0.02, after 800 steps
// (e^{-16} of the start left): per feature the mean is y_i and the variance is the exact
// stationary variance of the discrete chain, T / (1 - eta / 2), within 4 standard errors.
TEST(Sample, QuadraticEnergyReachesTheStationaryMeanAndVariance) {
  Loaded q(quadratic_doc(2));
  SampleOptions o;
  o.energy = "Q.E";
  o.rows = 10000;
  o.steps = 800;
  o.step_size = 0.02;
  o.temperature = 0.5;
  o.seed = 1;
  o.threads = 2;
  const SampleResult r = q.run(o);
  const double N = 10000, var = 0.5 / (1 - 0.01);
  for (std::size_t i = 0; i < 2; ++i) {
    double sum = 0, sum2 = 0;
    for (std::size_t row = 0; row < 10000; ++row) sum += r.values[row * 2 + i];
    const double mean = sum / N;
    for (std::size_t row = 0; row < 10000; ++row) sum2 += (r.values[row * 2 + i] - mean) * (r.values[row * 2 + i] - mean);
    EXPECT_NEAR(mean, target(i), 4 * std::sqrt(var / N)) << i;
    EXPECT_NEAR(sum2 / (N - 1), var, 4 * var * std::sqrt(2 / (N - 1))) << i;
  }
}

// f32 chains really run in float: every value is a float, and they differ from the f64 chains
// (by rounding only: within 1e-5 relative after 12 steps).
TEST(Sample, SinglePrecisionChainsAreFloats) {
  Loaded q(quadratic_doc(5));
  SampleOptions o;
  o.energy = "E";
  o.rows = 10;
  o.steps = 12;
  o.step_size = 0.1;
  o.temperature = 0.3;
  const SampleResult d = q.run(o);
  o.single_precision = true;
  const SampleResult f = q.run(o);
  bool differs = false;
  for (std::size_t q2 = 0; q2 < d.values.size(); ++q2) {
    EXPECT_EQ(f.values[q2], static_cast<double>(static_cast<float>(f.values[q2])));
    EXPECT_NEAR(f.values[q2], d.values[q2], 1e-5 * (1 + std::abs(d.values[q2])));
    differs |= f.values[q2] != d.values[q2];
  }
  EXPECT_TRUE(differs);
}

TEST(Sample, ThreadCountDoesNotChangeTheBits) {
  Loaded q(quadratic_doc(3));
  SampleOptions o;
  o.energy = "E";
  o.rows = 300;
  o.steps = 20;
  o.step_size = 0.05;
  o.temperature = 0.4;
  o.threads = 1;
  const SampleResult a = q.run(o);
  o.threads = 3;
  EXPECT_EQ(a.values, q.run(o).values);
}

// eta = 3 on a unit-curvature energy multiplies the distance to y by -2 each step: after 2000
// steps the chains overflow, and the result says which chain first (in chain order).
TEST(Sample, DivergingChainsAreReported) {
  Loaded q(quadratic_doc(2));
  SampleOptions o;
  o.energy = "E";
  o.rows = 3;
  o.steps = 2000;
  o.step_size = 3;
  const SampleResult r = q.run(o);
  EXPECT_EQ(r.failure.rfind("chain 0: 'Q.x0' is not finite after 2000 steps", 0), 0u) << r.failure;
}

TEST(Sample, Refusals) {
  Loaded q(quadratic_doc(2));
  SampleOptions o;
  o.energy = "Q.EE";
  o.steps = 1;
  o.step_size = 0.1;
  try {
    q.run(o);
    FAIL() << "accepted";
  } catch (const esi::Error& e) {
    EXPECT_EQ(e.diagnostic().code, "unknown_energy");
    EXPECT_NE(e.diagnostic().message.find("did you mean 'Q.E'"), std::string::npos) << e.diagnostic().message;
  }
  o.energy = "E";
  o.steps = 1000000001;
  try {
    q.run(o);
    FAIL() << "accepted";
  } catch (const esi::Error& e) {
    EXPECT_EQ(e.diagnostic().code, "invalid_sample");
  }
  o.steps = 1;
  o.step_size = 0;
  try {
    q.run(o);
    FAIL() << "accepted";
  } catch (const esi::Error& e) {
    EXPECT_EQ(e.diagnostic().code, "invalid_sample");
  }
}

}  // namespace
