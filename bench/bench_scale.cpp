// Size scaling of the front end and the run driver: N independent decays dx_i/dt = -k_i x_i
// (one state, one parameter and one observed each), N = 10^3 ... 10^5, through the stages
// `esi simulate` and `esi inspect` run: load_checked (parse, schema, resolve, structure,
// units), flatten, describe (inspect), and simulate (compile, Tsit5 over [0, 1], 2 outputs).
// The counter ns_per_eq is each stage's time divided by N; a linear stage keeps it flat as N
// grows, which is the claim under test. The peer is the same stage at N = 10^3 in the same run.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <benchmark/benchmark.h>

#include "esi/esm/flatten.hpp"
#include "esi/esm/load.hpp"
#include "esi/exec/simulate.hpp"

namespace {

namespace fs = std::filesystem;

/// Writes the N-decay document once per N and returns its path.
fs::path decay_document(int n) {
  const fs::path path =
      fs::temp_directory_path() / ("esi_bench_scale_" + std::to_string(n) + ".esm");
  if (fs::exists(path)) return path;
  std::ofstream out(path);
  out << R"({"esm":"1.0.0","metadata":{"name":"Decays"},"models":{"Decays":{"variables":{)";
  for (int i = 0; i < n; ++i) {
    const std::string s = std::to_string(i);
    out << (i ? "," : "") << "\"x" << s << R"(":{"type":"unknown","units":"1","default":1},)"
        << "\"k" << s << R"(":{"type":"parameter","units":"1/s","default":)" << 0.1 + 0.9 * i / n
        << "},\"y" << s << R"(":{"type":"unknown","units":"1"})";
  }
  out << R"(},"equations":[)";
  for (int i = 0; i < n; ++i) {
    const std::string s = std::to_string(i);
    out << (i ? "," : "") << R"({"lhs":{"op":"D","args":["x)" << s
        << R"("],"wrt":"t"},"rhs":{"op":"*","args":[{"op":"-","args":["k)" << s << R"("]},"x)" << s
        << R"("]}},{"lhs":"y)" << s << R"(","rhs":{"op":"*","args":[2,"x)" << s << "\"]}}";
  }
  out << "]}}}\n";
  return path;
}

enum class Stage { Load, Flatten, Describe, Simulate };

void BM_Scale(benchmark::State& state, Stage stage) {
  const int n = static_cast<int>(state.range(0));
  const fs::path path = decay_document(n);
  esi::esm::CheckedDocument checked = esi::esm::load_checked(path);
  if (!checked.doc) {
    state.SkipWithError(("document refused: " + checked.report.errors.front().message).c_str());
    return;
  }
  const esi::esm::System system = esi::esm::flatten(*checked.doc);
  double seconds = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    switch (stage) {
      case Stage::Load:
        benchmark::DoNotOptimize(esi::esm::load_checked(path));
        break;
      case Stage::Flatten:
        benchmark::DoNotOptimize(esi::esm::flatten(*checked.doc));
        break;
      case Stage::Describe:
        benchmark::DoNotOptimize(esi::esm::describe(system));
        break;
      case Stage::Simulate: {
        esi::exec::SimulateOptions o;
        o.t1 = 1;
        o.integrator.method = esi::method::MethodId::Tsit5;
        const esi::exec::Trajectory traj = esi::exec::simulate(system, o);
        if (!traj.ok()) state.SkipWithError(traj.message.c_str());
        benchmark::DoNotOptimize(traj.values.data());
        break;
      }
    }
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  state.counters["ns_per_eq"] = 1e9 * seconds / (static_cast<double>(state.iterations()) * n);
}

}  // namespace

// N = 10^3 ... 10^5; each size runs for at least half a second (one run at the largest).
void sizes(benchmark::internal::Benchmark* b) {
  for (int n : {1000, 3000, 10000, 30000, 100000}) b->Arg(n);
  b->Unit(benchmark::kMillisecond)->MinTime(0.5);
}

BENCHMARK_CAPTURE(BM_Scale, load_checked, Stage::Load)->Apply(sizes);
BENCHMARK_CAPTURE(BM_Scale, flatten, Stage::Flatten)->Apply(sizes);
BENCHMARK_CAPTURE(BM_Scale, describe, Stage::Describe)->Apply(sizes);
BENCHMARK_CAPTURE(BM_Scale, simulate, Stage::Simulate)->Apply(sizes);
