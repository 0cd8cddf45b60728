// RHS cost per cell of the compiled tape and of its native code against a hand-written C++ SuperFast right-hand side
// (bench/superfast_handwritten.cpp), for block widths L in {1, 8, 32, 128}, f64 and f32.
//
// Both evaluate the same 4096 cells (random states around the document's defaults) laid out
// species-major, cell index fastest; both compute rate constants once per parameter set (the
// tape hoists them into `prepare`, the hand-written code into `rate_constants`), so the rows
// compare per-cell work only. Counters:
//   ns_per_cell   time per cell of one RHS evaluation, best of 5 batches of 20 calls
//   hand_ns       the hand-written RHS's ns_per_cell, measured in the same run
//   x_hand        ns_per_cell / hand_ns
//   max_rel       largest |tape - hand| over a row, relative to the row's largest |du| (f64
//                 only; printed with SI prefixes, a = 1e-18): both compute the same function

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>

#include <benchmark/benchmark.h>

#include "esi/esm/flatten.hpp"
#include "esi/kernel/native.hpp"
#include "esi/kernel/program.hpp"
#include "superfast_handwritten.hpp"

#ifndef ESI_DEFAULT_CORPUS
#define ESI_DEFAULT_CORPUS ""
#endif

namespace {

namespace fs = std::filesystem;
using esi::bench::SuperFastHand;
using namespace esi::kernel;

constexpr std::size_t kCells = 4096;

fs::path superfast_file() {
  const char* env = std::getenv("ESI_CORPUS");
  const fs::path root = (env && *env) ? fs::path(env) : fs::path(ESI_DEFAULT_CORPUS);
  return root / "EarthSciModels/components/gaschem/superfast.esm";
}

/// The flattened document, its program, and the same cells in both layouts.
struct Setup {
  esi::esm::System system;
  Program program = compile(system);
  Program native = with_native(program);  // cached in ~/.cache/esi/native after the first run
  std::vector<double> p;                    // System::parameters order
  std::vector<double> u_tape, u_hand;       // [s * kCells + c]; System / hand species order
  std::array<double, 27> k{};
  std::string error;

  static Setup& get() {
    static Setup s = make();
    return s;
  }

 private:
  explicit Setup(esi::esm::System sys) : system(std::move(sys)) {}

  static Setup make();
};

Setup Setup::make() {
  if (!fs::exists(superfast_file())) {
    Setup s{esi::esm::System{}};
    s.error = "corpus file not found: " + superfast_file().string() + " (set ESI_CORPUS)";
    return s;
  }
  Setup s{esi::esm::flatten(esi::esm::load_resolved(superfast_file()))};
  for (const auto& v : s.system.parameters) s.p.push_back(v.default_value.value_or(1.0));
  s.k = SuperFastHand::rate_constants({});
  const std::size_t n = s.system.states.size();
  if (n != SuperFastHand::kSpecies.size()) s.error = "unexpected species count";
  s.u_tape.assign(n * kCells, 0.0);
  s.u_hand.assign(n * kCells, 0.0);
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> f(0.5, 2.0);
  for (std::size_t h = 0; h < SuperFastHand::kSpecies.size() && s.error.empty(); ++h) {
    const int i = s.system.state_index(std::string("SuperFast.") + SuperFastHand::kSpecies[h]);
    if (i < 0) {
      s.error = std::string("no state SuperFast.") + SuperFastHand::kSpecies[h];
      break;
    }
    const double base = s.system.states[i].default_value.value_or(1.0);
    for (std::size_t c = 0; c < kCells; ++c)
      s.u_tape[i * kCells + c] = s.u_hand[h * kCells + c] = base * f(rng);
  }
  return s;
}

template <class T>
std::vector<T> as(const std::vector<double>& v) {
  return std::vector<T>(v.begin(), v.end());
}

/// Hand-written time per cell [ns], best of 5 batches.
template <class T>
double hand_ns_per_cell() {
  const Setup& s = Setup::get();
  const auto u = as<T>(s.u_hand);
  std::vector<T> du(u.size());
  double best = 1e300;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int k = 0; k < 20; ++k) {
      SuperFastHand::rhs<T>(s.k, u.data(), du.data(), kCells, kCells);
      benchmark::DoNotOptimize(du.data());
    }
    const std::chrono::duration<double, std::nano> dt = std::chrono::steady_clock::now() - t0;
    best = std::min(best, dt.count() / (20.0 * kCells));
  }
  return best;
}

/// max over rows of |tape - hand| / max |hand| (f64).
double tape_vs_hand(const std::vector<double>& du_tape) {
  const Setup& s = Setup::get();
  std::vector<double> du_hand(s.u_hand.size());
  SuperFastHand::rhs<double>(s.k, s.u_hand.data(), du_hand.data(), kCells, kCells);
  double worst = 0;
  for (std::size_t h = 0; h < SuperFastHand::kSpecies.size(); ++h) {
    const int i = s.system.state_index(std::string("SuperFast.") + SuperFastHand::kSpecies[h]);
    double scale = 0, err = 0;
    for (std::size_t c = 0; c < kCells; ++c) {
      scale = std::max(scale, std::fabs(du_hand[h * kCells + c]));
      err = std::max(err, std::fabs(du_hand[h * kCells + c] - du_tape[i * kCells + c]));
    }
    worst = std::max(worst, err / std::max(scale, 1e-300));
  }
  return worst;
}

template <class T, bool Native>
void BM_TapeRHS(benchmark::State& state) {
  Setup& s = Setup::get();
  if (!s.error.empty()) {
    state.SkipWithError(s.error.c_str());
    return;
  }
  if (Native && !s.native.is_native()) {
    state.SkipWithError(s.native.native_status().c_str());
    return;
  }
  const Program& program = Native ? s.native : s.program;
  const auto L = static_cast<std::size_t>(state.range(0));
  Workspace ws = program.make_workspace(L, std::is_same_v<T, double> ? DType::F64 : DType::F32);
  program.prepare(ws, s.p);
  const auto u = as<T>(s.u_tape);
  std::vector<T> du(u.size());
  const double t = 0.0;
  RunArgs<T> a;
  a.u = {u.data(), s.system.states.size(), kCells, kCells};
  a.t = std::span(&t, 1);
  a.du = {du.data(), s.system.states.size(), kCells, kCells};
  for (auto _ : state) {
    run(program, ws, a);
    benchmark::DoNotOptimize(du.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kCells));
  const double hand = hand_ns_per_cell<T>();
  state.counters["hand_ns"] = hand;
  // The tape's per-cell time measured the same way as the hand's, so the ratio is like for like.
  double best = 1e300;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int k = 0; k < 20; ++k) run(program, ws, a);
    const std::chrono::duration<double, std::nano> dt = std::chrono::steady_clock::now() - t0;
    best = std::min(best, dt.count() / (20.0 * kCells));
  }
  state.counters["ns_per_cell"] = best;
  state.counters["x_hand"] = best / hand;
  if constexpr (std::is_same_v<T, double>) state.counters["max_rel"] = tape_vs_hand(du);
}

template <class T>
void BM_HandRHS(benchmark::State& state) {
  const Setup& s = Setup::get();
  if (!s.error.empty()) {
    state.SkipWithError(s.error.c_str());
    return;
  }
  const auto u = as<T>(s.u_hand);
  std::vector<T> du(u.size());
  for (auto _ : state) {
    SuperFastHand::rhs<T>(s.k, u.data(), du.data(), kCells, kCells);
    benchmark::DoNotOptimize(du.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kCells));
  state.counters["ns_per_cell"] = hand_ns_per_cell<T>();
}

BENCHMARK(BM_TapeRHS<double, false>)->Name("SuperFastRHS/tape_f64")->Arg(1)->Arg(8)->Arg(32)->Arg(128);
BENCHMARK(BM_TapeRHS<float, false>)->Name("SuperFastRHS/tape_f32")->Arg(1)->Arg(8)->Arg(32)->Arg(128);
BENCHMARK(BM_TapeRHS<double, true>)->Name("SuperFastRHS/native_f64")->Arg(1)->Arg(8)->Arg(32)->Arg(128);
BENCHMARK(BM_TapeRHS<float, true>)->Name("SuperFastRHS/native_f32")->Arg(1)->Arg(8)->Arg(32)->Arg(128);
BENCHMARK(BM_HandRHS<double>)->Name("SuperFastRHS/hand_f64");
BENCHMARK(BM_HandRHS<float>)->Name("SuperFastRHS/hand_f32");

}  // namespace

