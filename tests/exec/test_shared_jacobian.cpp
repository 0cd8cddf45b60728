// Deferred, shared Jacobians (exec/model.hpp SharedJacobian): models built with one
// SharedJacobian compile the analytic Jacobian once, only when a run's method needs it, and
// their runs are the same bits as those of a model that compiled its own at build time.
#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "esi/esm/flatten.hpp"
#include "esi/exec/simulate.hpp"
#include "exec/model.hpp"
#include "exec/run_support.hpp"
#include "support/relaxation_doc.hpp"
#include "support/temp_dir.hpp"

namespace {

using esi::exec::SimulateOptions;
using esi::exec::Trajectory;
namespace detail = esi::exec::detail;

using esi::testing::kRelaxationDoc;

struct Relaxation {
  esi::testing::TempDir dir;
  esi::esm::ResolvedDocument doc;
  esi::esm::System system;
  SimulateOptions options;
  Relaxation() {
    doc = esi::esm::load_resolved(dir.write("m.esm", kRelaxationDoc));
    system = esi::esm::flatten(doc);
    options.t0 = 0;
    options.t1 = 1;
    options.sample_times = {0.001, 0.01, 0.5, 1};
    options.integrator.rtol = 1e-8;
    options.integrator.atol = 1e-10;
    options.document = &doc;
  }
  void set_k(detail::Model& m, double k) {
    m.system.parameters[static_cast<std::size_t>(m.system.parameter_index("M.k"))].default_value =
        k;
    m.reset_parameters(options.require_observed_values);
  }
};

double at(const Trajectory& tr, double t, const std::string& name) {
  for (std::size_t k = 0; k < tr.times.size(); ++k)
    if (tr.times[k] == t) return tr.at(k, static_cast<std::size_t>(tr.column(name)));
  ADD_FAILURE() << "no output at t = " << t;
  return NAN;
}

TEST(SharedJacobian, CompiledOnceWhenAnImplicitRunNeedsItWithTheSameBitsAsAnOwnOne) {
  Relaxation r;
  const auto shared = std::make_shared<detail::SharedJacobian>();
  const auto a = detail::build_model(r.system, &r.doc, true, true, false, 1, shared);
  const auto b = detail::build_model(r.system, &r.doc, true, true, false, 1, shared);
  const auto own = detail::build_model(r.system, &r.doc, true);
  ASSERT_TRUE(own->jacobian.has_value());  // compiled at build time without a SharedJacobian
  EXPECT_FALSE(a->jacobian.has_value());   // deferred
  EXPECT_FALSE(shared->compiled);

  // An explicit run (k small: not stiff) needs none and compiles none.
  r.set_k(*a, 1.0);
  const Trajectory mild = detail::simulate_model(*a, r.options);
  ASSERT_TRUE(mild.ok()) << mild.message;
  EXPECT_EQ(mild.method, esi::method::MethodId::Tsit5);
  EXPECT_FALSE(a->jacobian.has_value());
  EXPECT_FALSE(shared->compiled);
  EXPECT_NEAR(at(mild, 0.5, "M.x"), 1 + 2 * std::exp(-0.5), 1e-6);

  // Stiff runs: the first compiles it, the second model takes the same compiled program.
  for (double k : {1000.0, 1e5}) {
    r.set_k(*a, k);
    r.set_k(*b, k);
    r.set_k(*own, k);
    const Trajectory ta = detail::simulate_model(*a, r.options);
    const Trajectory tb = detail::simulate_model(*b, r.options);
    const Trajectory to = detail::simulate_model(*own, r.options);
    ASSERT_TRUE(ta.ok()) << ta.message;
    EXPECT_EQ(ta.method, esi::method::MethodId::Rodas5P) << k;
    EXPECT_GT(ta.stats.jacobian_evaluations, 0) << k;
    // The analytic Jacobian, not differences (which cost right-hand sides of their own).
    EXPECT_EQ(ta.stats.jacobian_evaluations, to.stats.jacobian_evaluations) << k;
    EXPECT_EQ(ta.stats.rhs_evaluations, to.stats.rhs_evaluations) << k;
    EXPECT_NEAR(at(ta, 0.001, "M.x"), 1 + 2 * std::exp(-k * 0.001), 1e-6) << k;
    EXPECT_NEAR(at(ta, 1, "M.y"), std::exp(-1.0), 1e-7) << k;
    EXPECT_EQ(ta.times, to.times) << k;
    EXPECT_EQ(ta.values, to.values) << k;  // bit for bit
    EXPECT_EQ(tb.values, to.values) << k;
  }
  EXPECT_TRUE(shared->compiled);
  ASSERT_TRUE(a->jacobian.has_value() && b->jacobian.has_value());
  EXPECT_EQ(a->jacobian->values.tape_ptr(), b->jacobian->values.tape_ptr());  // one compilation
  EXPECT_NE(a->jacobian->values.tape_ptr(), own->jacobian->values.tape_ptr());
}

}  // namespace
