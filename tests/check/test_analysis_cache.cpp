// The Jacobian that analyses of one document share (AnalysisCache): compiled once for a
// component's implicit runs, with the same bits as runs that compile their own.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "esi/check/analyze.hpp"
#include "esi/esm/load.hpp"
#include "support/relaxation_doc.hpp"
#include "support/temp_dir.hpp"

namespace {

using esi::exec::Trajectory;

using esi::testing::kRelaxationDoc;

double at(const Trajectory& tr, double t, const std::string& name) {
  for (std::size_t k = 0; k < tr.times.size(); ++k)
    if (tr.times[k] == t) return tr.at(k, static_cast<std::size_t>(tr.column(name)));
  ADD_FAILURE() << "no output at t = " << t;
  return NAN;
}

// Three analyses of one stiff component through one AnalysisCache: the Jacobian is compiled
// once for the two whose runs are implicit (none for the explicit one), and every run is the
// same bits as without the cache, on one worker or two.
TEST(AnalysisCache, AnalysesOfOneComponentShareTheirJacobianThroughTheCache) {
  esi::testing::TempDir dir;
  std::string text = kRelaxationDoc;
  text.replace(text.rfind("]}}}"), 4, R"(],
    "analyses": [
      {"id": "sweep", "time_span": {"start": 0, "end": 1},
       "parameter_sweep": {"type": "cartesian", "dimensions": [{"parameter": "k", "values": [1000, 10000]}]}},
      {"id": "mild", "time_span": {"start": 0, "end": 1}, "parameters": {"k": 1}},
      {"id": "other_start", "time_span": {"start": 0, "end": 1}, "parameters": {"k": 100000},
       "initial_state": {"x": 5}}]}}})");
  const esi::esm::ResolvedDocument doc = esi::esm::load_resolved(dir.write("m.esm", text));
  const auto refs = esi::check::find_analyses(doc);
  ASSERT_EQ(refs.size(), 3u);
  std::vector<esi::check::AnalysisResult> plain, cached;
  esi::check::AnalysisCache cache;
  for (const auto& ref : refs) {
    const esi::check::AnalysisPlan plan = esi::check::plan_analysis(ref);
    esi::check::AnalyzeOptions o;
    plain.push_back(esi::check::run_analysis(doc, plan, o));
    o.cache = &cache;
    o.jobs = 2;
    cached.push_back(esi::check::run_analysis(doc, plan, o));
    if (ref.id == "mild") {
      EXPECT_EQ(cache.compiled_jacobians(), 1u);  // the sweep's, not another
    }
  }
  EXPECT_EQ(cache.compiled_jacobians(), 1u);
  for (std::size_t a = 0; a < refs.size(); ++a) {
    ASSERT_EQ(plain[a].runs.size(), cached[a].runs.size());
    for (std::size_t i = 0; i < plain[a].runs.size(); ++i) {
      const Trajectory& p = plain[a].runs[i].trajectory;
      const Trajectory& c = cached[a].runs[i].trajectory;
      ASSERT_TRUE(c.ok()) << c.message;
      EXPECT_EQ(c.method, refs[a].id == "mild" ? esi::method::MethodId::Tsit5
                                               : esi::method::MethodId::Rodas5P);
      EXPECT_EQ(p.values, c.values) << refs[a].id << " run " << i;  // bit for bit
    }
  }
  // x(t) = 1 + (x0 - 1) exp(-k t) at the first output after 0 (t = 0.01).
  const Trajectory& fast = cached[2].runs[0].trajectory;
  EXPECT_NEAR(at(fast, 0.01, "M.x"), 1 + 4 * std::exp(-1000.0), 1e-7);
  EXPECT_NEAR(at(cached[0].runs[0].trajectory, 0.01, "M.x"), 1 + 2 * std::exp(-10.0), 1e-6);
}

}  // namespace
