// The cost of a gradient against the forward run it differentiates (issue 31): exec::gradient
// on POLLU, the bundled ozone box, SuperFast and GEOS-Chem fullchem (272 states, every rate
// parameter at once), with Rodas3 and Rodas5P, and SSPRK43 where an explicit method is
// reasonable. One forward run that records its tape, then the discrete adjoint of every step
// (replay + transposed stage solves + second derivatives), in the same process.
//
// Counters (best of the iterations, each phase timed by exec::gradient itself):
//   forward_ms   the recorded forward run (the tape adds a copy of the state per step)
//   adjoint_ms   the backward sweep
//   ratio        (forward + adjoint) / forward: the gradient's cost in forward runs
//   plain_ms     the same forward run without a tape: ratio_plain = (forward + adjoint) / plain
//                is the cost against a plain run
//   tape_MB      what the sweep reads besides one step's buffers: the step records and, every
//                step (the default), the state and what the step's sweep needs (stages, J, a
//                sparse LU's factors), or with --checkpoint-every K (the _K rows) the state
//                every K steps, the sweep then replaying each interval (one interval's states
//                more at a time)
//   steps, params, states
// The _y0 rows take the gradient with respect to the initial values only.
// The gradient's entries are checked by tests (tests/problems, tests/method); this only times.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <string>

#include "esi/esm/flatten.hpp"
#include "esi/esm/load.hpp"
#include "esi/exec/gradient.hpp"

namespace {

namespace fs = std::filesystem;

struct Case {
  const char* name;
  fs::path file;
  std::string loss;
  double t1;
  double rtol, atol;
};

fs::path source_dir() { return fs::path(__FILE__).parent_path().parent_path(); }

void run_case(benchmark::State& state, const Case& c, esi::method::MethodId method,
              std::size_t checkpoint_every = 1, bool native = false, bool initial_values_only = false) {
  if (!fs::exists(c.file)) {
    state.SkipWithError(("missing " + c.file.string()).c_str());
    return;
  }
  const esi::esm::ResolvedDocument doc = esi::esm::load_resolved(c.file);
  const esi::esm::System system = esi::esm::flatten(doc);
  esi::exec::GradientOptions o;
  o.run.t0 = 0;
  o.run.t1 = c.t1;
  o.run.integrator.method = method;
  o.run.integrator.rtol = c.rtol;
  o.run.integrator.atol = c.atol;
  o.run.document = &doc;
  o.run.require_observed_values = false;
  o.loss = c.loss;
  o.time_plain_forward = true;
  o.checkpoint_every = checkpoint_every;
  o.run.native = native;
  if (initial_values_only)
    for (const auto& s : system.states) o.wrt.push_back(s.name);
  double best_forward = std::numeric_limits<double>::infinity(), best_adjoint = best_forward,
         best_plain = best_forward;
  esi::exec::GradientResult last;
  for (auto _ : state) {
    last = esi::exec::gradient(system, o);
    if (!last.ok()) {
      state.SkipWithError(last.message.c_str());
      return;
    }
    best_forward = std::min(best_forward, last.forward_seconds);
    best_adjoint = std::min(best_adjoint, last.sweep_seconds);
    best_plain = std::min(best_plain, last.plain_seconds);
  }
  state.counters["forward_ms"] = best_forward * 1e3;
  state.counters["adjoint_ms"] = best_adjoint * 1e3;
  state.counters["plain_ms"] = best_plain * 1e3;
  state.counters["ratio"] = (best_forward + best_adjoint) / best_forward;
  state.counters["ratio_plain"] = (best_forward + best_adjoint) / best_plain;
  state.counters["tape_MB"] = double(last.tape_bytes) / 1e6;
  state.counters["steps"] = double(last.steps);
  state.counters["params"] = double(last.parameters);
  state.counters["states"] = double(last.states);
}

const fs::path kGaschem = fs::path(ESI_DEFAULT_CORPUS) / "EarthSciModels/components/gaschem";

const Case kPollu{"pollu", source_dir() / "tests/problems/pollu.esm", "POLLU.NO2", 60, 1e-6, 1e-10};
const Case kOzone{"ozone_box", source_dir() / "examples/ozone_box.esm", "OzoneNOx.O3", 21600, 1e-6, 1e-2};
const Case kSuperFast{"superfast", kGaschem / "superfast.esm", "SuperFast.O3", 3600, 1e-4, 1e-3};
const Case kFullchem{"fullchem", kGaschem / "geoschem_fullchem.esm", "GEOSChemGasPhase.O3", 3600, 1e-3, 1e-2};

using esi::method::MethodId;

void BM_Gradient_Pollu_Rodas3(benchmark::State& s) { run_case(s, kPollu, MethodId::Rodas3); }
void BM_Gradient_Pollu_Rodas5P(benchmark::State& s) { run_case(s, kPollu, MethodId::Rodas5P); }
void BM_Gradient_Ozone_Rodas3(benchmark::State& s) { run_case(s, kOzone, MethodId::Rodas3); }
void BM_Gradient_Ozone_Rodas5P(benchmark::State& s) { run_case(s, kOzone, MethodId::Rodas5P); }
void BM_Gradient_Ozone_SSPRK43(benchmark::State& s) { run_case(s, kOzone, MethodId::SSPRK43); }
void BM_Gradient_SuperFast_Rodas3(benchmark::State& s) { run_case(s, kSuperFast, MethodId::Rodas3); }
void BM_Gradient_SuperFast_Rodas5P(benchmark::State& s) { run_case(s, kSuperFast, MethodId::Rodas5P); }
void BM_Gradient_Fullchem_Rodas3(benchmark::State& s) { run_case(s, kFullchem, MethodId::Rodas3); }
void BM_Gradient_Pollu_Rodas5P_K16(benchmark::State& s) { run_case(s, kPollu, MethodId::Rodas5P, 16); }
void BM_Gradient_Fullchem_Rodas3_K4(benchmark::State& s) { run_case(s, kFullchem, MethodId::Rodas3, 4); }
// The same on native kernels (compiled C++, cached after the first run): forward and sweep
// programs alike.
void BM_Gradient_Pollu_Rodas5P_native(benchmark::State& s) { run_case(s, kPollu, MethodId::Rodas5P, 1, true); }
void BM_Gradient_Ozone_Rodas3_native(benchmark::State& s) { run_case(s, kOzone, MethodId::Rodas3, 1, true); }
void BM_Gradient_Ozone_SSPRK43_native(benchmark::State& s) { run_case(s, kOzone, MethodId::SSPRK43, 1, true); }
void BM_Gradient_Fullchem_Rodas3_native(benchmark::State& s) { run_case(s, kFullchem, MethodId::Rodas3, 1, true); }
// With respect to the initial values only: the sweep skips df/dp.
void BM_Gradient_Pollu_Rodas5P_y0(benchmark::State& s) { run_case(s, kPollu, MethodId::Rodas5P, 1, false, true); }
void BM_Gradient_Fullchem_Rodas3_y0(benchmark::State& s) { run_case(s, kFullchem, MethodId::Rodas3, 1, false, true); }

BENCHMARK(BM_Gradient_Pollu_Rodas3)->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK(BM_Gradient_Pollu_Rodas5P)->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK(BM_Gradient_Ozone_Rodas3)->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK(BM_Gradient_Ozone_Rodas5P)->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK(BM_Gradient_Ozone_SSPRK43)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_Gradient_SuperFast_Rodas3)->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK(BM_Gradient_SuperFast_Rodas5P)->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK(BM_Gradient_Fullchem_Rodas3)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_Gradient_Pollu_Rodas5P_K16)->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK(BM_Gradient_Fullchem_Rodas3_K4)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_Gradient_Pollu_Rodas5P_native)->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK(BM_Gradient_Ozone_Rodas3_native)->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK(BM_Gradient_Ozone_SSPRK43_native)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_Gradient_Fullchem_Rodas3_native)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_Gradient_Pollu_Rodas5P_y0)->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK(BM_Gradient_Fullchem_Rodas3_y0)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
