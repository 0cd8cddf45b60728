// Ensemble SDE throughput: `exec::simulate_ensemble` on an Ornstein-Uhlenbeck document against
// a hand-written C++ loop of the same update with the same keyed generator, in the same run.
//
//   dx = theta (mu - x) dt + sigma dW, x0 = 1, theta = 2, mu = 0.5, sigma = 0.6
//
// Rows: esi/<method>/<threads> and hand/<method> for EulerMaruyama and SRA1, 4096 members x
// 1000 steps of h = 1e-3 (outputs at t0 and t1 only, so the stepping dominates). Counters:
//   path_steps_per_s   members x steps per second of wall time
//   max_rel_diff       (hand rows) largest relative difference of x(t1) between the hand loop
//                      and esi over all members: the two compute the same numbers
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#if defined(ESI_BENCH_EXEC)
#include "esi/core/noise.hpp"
#include "esi/esm/flatten.hpp"
#include "esi/esm/load.hpp"
#include "esi/exec/stochastic.hpp"

namespace {

constexpr std::size_t kMembers = 4096;
constexpr std::uint64_t kSteps = 1000;
constexpr double kH = 1e-3, kTheta = 2, kMu = 0.5, kSigma = 0.6, kX0 = 1;
constexpr std::uint64_t kSeed = 17;

const char* kOu = R"({"esm": "1.0.0", "metadata": {"name": "OU"}, "models": {"OU": {
  "variables": {"x": {"type": "unknown", "default": 1.0}, "theta": {"type": "parameter", "default": 2.0},
    "mu": {"type": "parameter", "default": 0.5}, "sigma": {"type": "parameter", "default": 0.6},
    "W": {"type": "parameter", "distribution": {"kind": "normal", "mean": 0, "std": 1}, "update": {"kind": "wiener"}}},
  "equations": [{"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": {"op": "+", "args": [
    {"op": "*", "args": ["theta", {"op": "-", "args": ["mu", "x"]}]}, {"op": "*", "args": ["sigma", "W"]}]}}]}}})";

struct Ou {
  esi::esm::ResolvedDocument doc;
  esi::esm::System system;
  Ou() {
    const auto path = std::filesystem::temp_directory_path() / "esi_bench_sde_ou.esm";
    std::ofstream(path) << kOu;
    doc = esi::esm::load_resolved(path);
    system = esi::esm::flatten(doc);
    std::filesystem::remove(path);
  }
};

Ou& ou() {
  static Ou instance;
  return instance;
}

esi::exec::EnsembleResult run_esi(esi::method::SdeMethod method, unsigned threads) {
  esi::exec::StochasticOptions o;
  o.t1 = kSteps * kH;
  o.dt = kH;
  o.method = method;
  o.seed = kSeed;
  o.members = kMembers;
  o.threads = threads;
  o.document = &ou().doc;
  return esi::exec::simulate_ensemble(ou().system, o);
}

/// x(t1) of every member, by the plain loop: member after member, step after step.
std::vector<double> run_hand(esi::method::SdeMethod method) {
  std::vector<double> out(kMembers);
  const double root_h = std::sqrt(kH), inv_sqrt3 = 1.0 / std::sqrt(3.0);
  for (std::uint32_t m = 0; m < kMembers; ++m) {
    double x = kX0;
    for (std::uint64_t s = 0; s < kSteps; ++s) {
      const esi::noise::Normals z = esi::noise::normals(kSeed, m, s, 0);
      const double dW = root_h * z.first;
      if (method == esi::method::SdeMethod::EulerMaruyama) {
        x += kTheta * (kMu - x) * kH + kSigma * dW;
      } else {  // SRA1 with a constant diffusion
        const double chi = 0.5 * (dW + root_h * z.second * inv_sqrt3);
        const double k1 = kH * (kTheta * (kMu - x));
        const double k2 = kH * (kTheta * (kMu - (x + 0.75 * k1 + 1.5 * chi * kSigma)));
        x += k1 / 3 + 2 * k2 / 3 + dW * kSigma;
      }
    }
    out[m] = x;
  }
  return out;
}

void BM_SdeEnsembleEsi(benchmark::State& state, esi::method::SdeMethod method, unsigned threads) {
  for (auto _ : state) benchmark::DoNotOptimize(run_esi(method, threads));
  state.counters["path_steps_per_s"] =
      benchmark::Counter(static_cast<double>(kMembers * kSteps), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_SdeEnsembleHand(benchmark::State& state, esi::method::SdeMethod method) {
  std::vector<double> x;
  for (auto _ : state) {
    x = run_hand(method);
    benchmark::DoNotOptimize(x.data());
  }
  state.counters["path_steps_per_s"] =
      benchmark::Counter(static_cast<double>(kMembers * kSteps), benchmark::Counter::kIsIterationInvariantRate);
  const esi::exec::EnsembleResult r = run_esi(method, 1);
  double worst = 0;
  for (std::size_t m = 0; m < kMembers; ++m)
    worst = std::max(worst, std::abs(r.value(m, 1, 0) - x[m]) / std::abs(x[m]));
  state.counters["max_rel_diff"] = worst;
}

using esi::method::SdeMethod;
BENCHMARK_CAPTURE(BM_SdeEnsembleHand, hand_EM, SdeMethod::EulerMaruyama)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_SdeEnsembleEsi, esi_EM_1thread, SdeMethod::EulerMaruyama, 1u)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_SdeEnsembleEsi, esi_EM_2threads, SdeMethod::EulerMaruyama, 2u)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_SdeEnsembleHand, hand_SRA1, SdeMethod::SRA1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_SdeEnsembleEsi, esi_SRA1_1thread, SdeMethod::SRA1, 1u)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_SdeEnsembleEsi, esi_SRA1_2threads, SdeMethod::SRA1, 2u)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
#endif  // ESI_BENCH_EXEC
