// exec's seam for callers that run one system many times (esi/exec/bind.hpp, parallel.hpp): a
// BoundModel's runs are the bits of exec::simulate on the same values, before and after a
// rebind, and parallel_for runs every index once and rethrows the lowest index's failure.
#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "esi/esm/flatten.hpp"
#include "esi/exec/bind.hpp"
#include "esi/exec/parallel.hpp"
#include "esi/exec/simulate.hpp"
#include "support/relaxation_doc.hpp"
#include "support/temp_dir.hpp"

namespace {

using esi::testing::kRelaxationDoc;

void set_k(esi::esm::System& s, double k) {
  s.parameters[static_cast<std::size_t>(s.parameter_index("M.k"))].default_value = k;
}

TEST(BoundModel, RunsAreTheBitsOfSimulateBeforeAndAfterARebind) {
  esi::testing::TempDir dir;
  const esi::esm::ResolvedDocument doc = esi::esm::load_resolved(dir.write("m.esm", kRelaxationDoc));
  esi::esm::System system = esi::esm::flatten(doc);
  esi::exec::SimulateOptions o;
  o.t1 = 1;
  o.sample_times = {0.001, 0.5};
  o.integrator.rtol = 1e-8;
  o.integrator.atol = 1e-10;
  o.document = &doc;
  const esi::exec::JacobianShare jacobian;
  EXPECT_FALSE(jacobian.compiled());
  esi::exec::BoundModel model(system, o, jacobian);
  const esi::exec::Trajectory first = model.simulate(o);
  ASSERT_TRUE(first.ok()) << first.message;
  EXPECT_EQ(first.values, esi::exec::simulate(system, o).values);
  EXPECT_TRUE(jacobian.compiled());  // the implicit run compiled it through the share

  set_k(model.system(), 5000);
  model.rebind();
  set_k(system, 5000);
  const esi::exec::Trajectory second = model.simulate(o);
  ASSERT_TRUE(second.ok()) << second.message;
  EXPECT_EQ(second.values, esi::exec::simulate(system, o).values);
  EXPECT_NE(second.values, first.values);
}

TEST(BoundModel, AnExplicitRunCompilesNoJacobian) {
  esi::testing::TempDir dir;
  const esi::esm::ResolvedDocument doc = esi::esm::load_resolved(dir.write("m.esm", kRelaxationDoc));
  esi::esm::System system = esi::esm::flatten(doc);
  set_k(system, 1);
  esi::exec::SimulateOptions o;
  o.t1 = 1;
  o.integrator.method = esi::method::MethodId::Tsit5;
  o.document = &doc;
  const esi::exec::JacobianShare jacobian;
  esi::exec::BoundModel model(system, o, jacobian);
  ASSERT_TRUE(model.simulate(o).ok());
  EXPECT_FALSE(jacobian.compiled());
}

TEST(ParallelFor, RunsEveryIndexOnceAndRethrowsTheLowestFailure) {
  std::vector<std::atomic<int>> runs(50);
  try {
    esi::exec::parallel_for(runs.size(), 4, [&](std::size_t i, unsigned worker) {
      EXPECT_LT(worker, 4u);
      ++runs[i];
      if (i == 7 || i == 30) throw std::runtime_error(std::to_string(i));
    });
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "7");
  }
  for (const auto& r : runs) EXPECT_EQ(r.load(), 1);
}

}  // namespace
