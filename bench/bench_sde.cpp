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
//
// Langevin rows: `exec::sample` (tape, native) on E = 0.5 sum (x_i - y_i)^2 over 33 features,
// 4096 chains x 100 steps, against the scalar loop of the same update and keyed noise:
//   row_steps_per_s    chains x steps per second
//   bitwise_equal      (hand row) 1 when tape and native results equal the loop's bit for bit
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "esi/core/noise.hpp"
#include "esi/esm/flatten.hpp"
#include "esi/esm/load.hpp"
#include "esi/exec/sample.hpp"
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

// ---- Langevin sampler: E = 0.5 sum_i (x_i - y_i)^2 over 33 features, 4096 chains x 100 steps ----

constexpr std::size_t kFeatures = 33, kRows = 4096;
constexpr std::uint64_t kLangevinSteps = 100;
constexpr double kEta = 0.05, kTemperature = 0.5;

double target(std::size_t i) { return 0.25 * static_cast<double>(i) - 1.0; }

struct Quadratic {
  esi::esm::ResolvedDocument doc;
  esi::esm::System system;
  Quadratic() {
    std::string vars = "{", eqs = "[", terms;
    for (std::size_t i = 0; i < kFeatures; ++i) {
      const std::string x = "x" + std::to_string(i), y = "y" + std::to_string(i);
      char value[32];
      std::snprintf(value, sizeof value, "%.17g", target(i));
      vars += "\"" + x + "\": {\"type\": \"unknown\", \"default\": 1}, \"" + y +
              "\": {\"type\": \"parameter\", \"default\": " + value + "}, ";
      const std::string diff = "{\"op\": \"-\", \"args\": [\"" + x + "\", \"" + y + "\"]}";
      eqs += "{\"lhs\": {\"op\": \"D\", \"args\": [\"" + x + "\"], \"wrt\": \"t\"}, \"rhs\": {\"op\": \"-\", \"args\": [" + diff + "]}}, ";
      terms += (i ? ", " : "") + std::string("{\"op\": \"^\", \"args\": [") + diff + ", 2]}";
    }
    vars += "\"E\": {\"type\": \"unknown\"}}";
    eqs += "{\"lhs\": \"E\", \"rhs\": {\"op\": \"*\", \"args\": [0.5, {\"op\": \"+\", \"args\": [" + terms + "]}]}}]";
    const auto path = std::filesystem::temp_directory_path() / "esi_bench_langevin.esm";
    std::ofstream(path) << R"({"esm": "1.0.0", "metadata": {"name": "q"}, "models": {"Q": {"variables": )" + vars +
                               R"(, "equations": )" + eqs + "}}}";
    doc = esi::esm::load_resolved(path);
    system = esi::esm::flatten(doc);
    std::filesystem::remove(path);
  }
};

Quadratic& quadratic() {
  static Quadratic instance;
  return instance;
}

esi::exec::SampleResult run_sampler(bool native, unsigned threads) {
  esi::exec::SampleOptions o;
  o.energy = "E";
  o.rows = kRows;
  o.steps = kLangevinSteps;
  o.step_size = kEta;
  o.temperature = kTemperature;
  o.seed = kSeed;
  o.threads = threads;
  o.native = native;
  o.document = &quadratic().doc;
  return esi::exec::sample(quadratic().system, o);
}

std::vector<double> run_langevin_hand() {
  std::vector<double> out(kRows * kFeatures);
  const double scale = std::sqrt(2 * kEta * kTemperature);
  double x[kFeatures], g[kFeatures];
  for (std::uint32_t row = 0; row < kRows; ++row) {
    std::fill(x, x + kFeatures, 1.0);
    for (std::uint64_t k = 0; k < kLangevinSteps; ++k) {
      for (std::size_t i = 0; i < kFeatures; ++i) g[i] = x[i] - target(i);
      for (std::size_t i = 0; i < kFeatures; i += 2) {
        const esi::noise::Normals z = esi::noise::normals(kSeed, row, k, static_cast<std::uint32_t>(i / 2));
        x[i] = x[i] - kEta * g[i] + scale * z.first;
        if (i + 1 < kFeatures) x[i + 1] = x[i + 1] - kEta * g[i + 1] + scale * z.second;
      }
    }
    std::copy(x, x + kFeatures, out.begin() + row * kFeatures);
  }
  return out;
}

void BM_LangevinEsi(benchmark::State& state, bool native, unsigned threads) {
  run_sampler(native, 1);  // compile (and cache) native code outside the timing
  for (auto _ : state) benchmark::DoNotOptimize(run_sampler(native, threads));
  state.counters["row_steps_per_s"] =
      benchmark::Counter(static_cast<double>(kRows * kLangevinSteps), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_LangevinHand(benchmark::State& state) {
  std::vector<double> x;
  for (auto _ : state) {
    x = run_langevin_hand();
    benchmark::DoNotOptimize(x.data());
  }
  state.counters["row_steps_per_s"] =
      benchmark::Counter(static_cast<double>(kRows * kLangevinSteps), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["bitwise_equal"] = run_sampler(false, 1).values == x && run_sampler(true, 1).values == x;
}

BENCHMARK(BM_LangevinHand)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_LangevinEsi, tape_1thread, false, 1u)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_LangevinEsi, native_1thread, true, 1u)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_LangevinEsi, native_2threads, true, 2u)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
