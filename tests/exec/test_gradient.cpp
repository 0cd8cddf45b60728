// exec::gradient on the bundled ozone box: the dot-product identity and central differences
// of the frozen steps in random directions for each method family, and checkpoints that change
// the memory but not one bit of the gradient.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "esi/esm/flatten.hpp"
#include "esi/esm/load.hpp"
#include "esi/exec/gradient.hpp"

namespace {

using esi::method::MethodId;

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
    ASSERT_EQ(r.checks.size(), 3u);
    for (const auto& c : r.checks) {
      EXPECT_LE(c.dot_relative, 1e-13) << c.tangent << " vs " << c.adjoint;
      EXPECT_LE(c.difference_relative, 1e-6) << c.loss_tangent << " vs " << c.finite_difference;
    }
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

}  // namespace
