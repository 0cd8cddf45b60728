// exec::gradient on the bundled ozone box: the dot-product identity and central differences
// of the frozen steps in random directions for each method family, and checkpoints that change
// the memory but not one bit of the gradient.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <string>

#include <fstream>

#include <nlohmann/json.hpp>

#include "esi/esm/flatten.hpp"
#include "esi/esm/load.hpp"
#include "esi/exec/gradient.hpp"

namespace {

using esi::method::MethodId;

/// Three checks, each within the dot-product and difference bounds.
void expect_checks(const esi::exec::GradientResult& r, double dot_product, double difference) {
  ASSERT_EQ(r.checks.size(), 3u);
  for (const auto& c : r.checks) {
    EXPECT_LE(c.dot_relative, dot_product) << c.tangent << " vs " << c.adjoint;
    EXPECT_LE(c.difference_relative, difference) << c.loss_tangent << " vs " << c.finite_difference;
  }
}

struct Ozone {
  esi::esm::ResolvedDocument doc = esi::esm::load_resolved(std::filesystem::path(ESI_SOURCE_DIR) / "examples/ozone_box.esm");
  esi::esm::System system = esi::esm::flatten(doc);
  esi::exec::GradientOptions options(MethodId method) const {
    esi::exec::GradientOptions o;
    o.run.t0 = 0;
    o.run.t1 = 21600;
    o.run.integrator.method = method;
    o.run.integrator.rtol = 1e-6;
    o.run.integrator.atol = 1e-2;  // molec/cm^3
    o.run.document = &doc;
    o.loss = "OzoneNOx.O3";
    return o;
  }
};

TEST(Gradient, OzoneBoxIdentityAndDifferencesForEachFamily) {
  const Ozone oz;
  for (MethodId id : {MethodId::Rodas5P, MethodId::Rodas3, MethodId::ROS34PW2, MethodId::Kvaerno3,
                      MethodId::TRBDF2, MethodId::Tsit5, MethodId::SSPRK43}) {
    SCOPED_TRACE(std::string(esi::method::method_info(id).name));
    auto o = oz.options(id);
    o.check_directions = 3;
    const auto r = esi::exec::gradient(oz.system, o);
    ASSERT_TRUE(r.ok()) << r.message;
    EXPECT_GT(r.steps, 10u);
    EXPECT_EQ(r.gradient.size(), r.states + r.parameters);
    // A step's stage points on lanes (the ozone box's J + df/dp is about its products' size);
    // SDIRK stages factor J at each, and use it.
    if (esi::method::is_rosenbrock(id) || !esi::method::method_info(id).needs_jacobian) {
      EXPECT_GT(r.sweep.point_batches, 0);
    }
    expect_checks(r, 1e-13, 1e-6);
  }
}

TEST(Gradient, CheckpointsKeepEveryBit) {
  const Ozone oz;
  auto o = oz.options(MethodId::Rodas5P);
  const auto all = esi::exec::gradient(oz.system, o);
  o.checkpoint_every = 7;
  const auto sparse = esi::exec::gradient(oz.system, o);
  ASSERT_TRUE(all.ok() && sparse.ok());
  EXPECT_LT(sparse.tape_bytes, all.tape_bytes);
  ASSERT_EQ(all.gradient.size(), sparse.gradient.size());
  for (std::size_t k = 0; k < all.gradient.size(); ++k) EXPECT_EQ(all.gradient[k].value, sparse.gradient[k].value) << all.gradient[k].name;
}

// A periodic NO pulse (every 40 min, NO <- 1.2 NO + jNO2 * 1e11 s) through the stiff
// chemistry, held fixed: tangent against adjoint and central differences of the frozen steps
// and firings, for each family, with the loss integrated across the pulses.
TEST(Gradient, PeriodicEventsKeepTheIdentityAndTheDifferences) {
  const auto path = std::filesystem::path(ESI_SOURCE_DIR) / "examples/ozone_box.esm";
  std::ifstream in(path);
  nlohmann::json raw = nlohmann::json::parse(in);
  raw["reaction_systems"]["OzoneNOx"]["discrete_events"] = nlohmann::json::parse(R"([{"name": "pulse",
      "trigger": {"type": "periodic", "interval": 2400},
      "affects": [{"lhs": "NO", "rhs": {"op": "+", "args": [{"op": "*", "args": [1.2, "NO"]},
                   {"op": "*", "args": ["jNO2", 1e11]}]}}]}])");
  const esi::esm::ResolvedDocument doc = esi::esm::load_resolved(path, raw);
  const esi::esm::System system = esi::esm::flatten(doc);
  const Ozone plain;
  double without = 0;
  for (MethodId id : {MethodId::Rodas5P, MethodId::Kvaerno3, MethodId::Tsit5}) {
    SCOPED_TRACE(std::string(esi::method::method_info(id).name));
    esi::exec::GradientOptions o;
    o.run.t0 = 0;
    o.run.t1 = 21600;
    o.run.integrator.method = id;
    o.run.integrator.rtol = 1e-6;
    o.run.integrator.atol = 1e-2;
    o.run.document = &doc;
    esi::exec::LossTerm mean;
    mean.kind = esi::exec::LossTerm::Kind::Mean;
    mean.variable = "OzoneNOx.O3";
    mean.begin = 0, mean.end = 21600;
    o.loss_terms = {mean};
    if (id == MethodId::Rodas5P) {  // the pulses change the loss: the events did fire
      auto p = o;
      p.run.document = &plain.doc;
      without = esi::exec::gradient(plain.system, p).loss;
    }
    o.check_directions = 3;
    const auto r = esi::exec::gradient(system, o);
    ASSERT_TRUE(r.ok()) << r.message;
    EXPECT_GT(std::abs(r.loss - without), 1e-3 * without);
    expect_checks(r, 1e-12, 1e-6);
  }
}

// With only initial values asked for, the sweep evaluates J alone instead of J and df/dp in
// one program (the two differ by rounding only): the same entries to rounding.
TEST(Gradient, InitialValuesAloneAgreeWithTheFullGradient) {
  const Ozone oz;
  auto o = oz.options(MethodId::Rodas5P);
  const auto full = esi::exec::gradient(oz.system, o);
  ASSERT_TRUE(full.ok()) << full.message;
  for (const auto& g : full.gradient)
    if (g.initial) o.wrt.push_back(g.name);
  const auto states = esi::exec::gradient(oz.system, o);
  ASSERT_TRUE(states.ok()) << states.message;
  ASSERT_EQ(states.gradient.size(), states.states);
  std::size_t compared = 0;
  for (const auto& g : states.gradient)
    for (const auto& f : full.gradient)
      if (f.initial && f.name == g.name) {
        EXPECT_NEAR(g.value, f.value, 1e-11 * std::abs(f.value) + 1e-300) << g.name;
        ++compared;
      }
  EXPECT_EQ(compared, states.states);
}

// Observeds as the loss against their definitions chained to the states' own gradients:
// NOx = NO + NO2 gives the sum of theirs; O3_ppb = 1e9 O3 / M (M a parameter only the
// diagnostic reads) gives 1e9 / M times O3's, plus its direct derivative -1e9 O3 / M^2 by M.
// Sweeps from different seeds round differently through the stiff steps (as the two sides of
// the dot-product identity do): measured up to 6e-13 relative, so 1e-11; a wrong or missing
// term is O(1).
TEST(Gradient, ObservedLossesEqualTheirDefinitionsChainedToTheStates) {
  const Ozone oz;
  using Entries = std::map<std::pair<std::string, bool>, double>;  // (name, initial) -> value
  const auto run = [&](const std::string& loss, double& value) {
    auto o = oz.options(MethodId::Rodas5P);
    o.loss = loss;
    const auto r = esi::exec::gradient(oz.system, o);
    EXPECT_TRUE(r.ok()) << loss << ": " << r.message;
    value = r.loss;
    Entries e;
    for (const auto& g : r.gradient) e[{g.name, g.initial}] = g.value;
    return e;
  };
  double l_no = 0, l_no2 = 0, l_nox = 0, l_o3 = 0, l_ppb = 0;
  const Entries no = run("OzoneNOx.NO", l_no), no2 = run("OzoneNOx.NO2", l_no2), nox = run("Diagnostics.NOx", l_nox);
  const Entries o3 = run("OzoneNOx.O3", l_o3), ppb = run("Diagnostics.O3_ppb", l_ppb);
  ASSERT_FALSE(nox.empty());
  ASSERT_EQ(nox.size(), no.size());
  EXPECT_NEAR(l_nox, l_no + l_no2, 1e-15 * (l_no + l_no2));
  for (const auto& [key, value] : nox) {
    const double want = no.at(key) + no2.at(key);
    EXPECT_NEAR(value, want, 1e-11 * (std::abs(no.at(key)) + std::abs(no2.at(key))) + 1e-300) << key.first;
  }
  const double M = 2.46e19;
  EXPECT_NEAR(l_ppb, 1e9 * l_o3 / M, 1e-14 * l_ppb);
  ASSERT_TRUE(ppb.count({"Diagnostics.M", false}));
  for (const auto& [key, value] : ppb) {
    const double chained = 1e9 / M * o3.at(key);
    const double want = key == std::pair<std::string, bool>{"Diagnostics.M", false} ? chained - 1e9 * l_o3 / (M * M) : chained;
    EXPECT_NEAR(value, want, 1e-11 * std::abs(want) + 1e-300) << key.first;
  }
}

}  // namespace
