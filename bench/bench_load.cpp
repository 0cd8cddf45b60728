// Front-end cost: load_resolved + flatten, and the full checking pipeline (load_checked) +
// flatten, of the two GEOS-Chem-derived mechanisms of the corpus, against the in-run peer "just
// nlohmann::json::parse the same bytes".
//
// The corpus comes from $ESI_CORPUS, else the build's ESI_DEFAULT_CORPUS; a missing file makes
// its benchmarks report an error saying so instead of a time. Counters on the load rows:
//   parse_ms         best-of-5 nlohmann::json::parse of the file (in memory), measured in-run
//   x_parse          (load_resolved + flatten) time / parse time: the front end's overhead
//   states, observed size of the flattened system (a sanity check that work was done)
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>

#include "esi/esm/flatten.hpp"
#include "esi/esm/load.hpp"

#ifndef ESI_DEFAULT_CORPUS
#define ESI_DEFAULT_CORPUS ""
#endif

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr const char* kFullchem = "EarthSciModels/components/gaschem/geoschem_fullchem.esm";
constexpr const char* kSuperfast = "EarthSciModels/components/gaschem/superfast.esm";

fs::path corpus_file(const char* relative) {
  const char* env = std::getenv("ESI_CORPUS");
  const fs::path root =
      (env != nullptr && *env != '\0') ? fs::path(env) : fs::path(ESI_DEFAULT_CORPUS);
  return root / relative;
}

/// The file's bytes, or "" after marking the benchmark skipped.
std::string read_or_skip(benchmark::State& state, const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    state.SkipWithError(
        ("corpus file not found: " + path.string() + " (set ESI_CORPUS to the corpus folder)")
            .c_str());
    return {};
  }
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double best_parse_seconds(const std::string& text, int repeats) {
  double best = 1e300;
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = Clock::now();
    nlohmann::json j = nlohmann::json::parse(text);
    benchmark::DoNotOptimize(j);
    best = std::min(best, seconds_since(t0));
  }
  return best;
}

/// The peer: parse the same bytes with nlohmann-json, nothing else.
void BM_Parse(benchmark::State& state, const char* relative) {
  const std::string text = read_or_skip(state, corpus_file(relative));
  if (text.empty()) return;
  for (auto _ : state) {
    nlohmann::json j = nlohmann::json::parse(text);
    benchmark::DoNotOptimize(j);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
}

/// How the document is brought in before flatten: load_resolved alone (refs, templates), or the
/// pipeline every command runs (load_checked: parse, schema, refs, structure, units).
enum class Front { Resolve, Checked };

/// The front end + flatten.
void BM_LoadFlatten(benchmark::State& state, const char* relative, Front front) {
  const fs::path path = corpus_file(relative);
  const std::string text = read_or_skip(state, path);
  if (text.empty()) return;
  const double parse_s = best_parse_seconds(text, 5);

  double total_s = 0.0;
  std::size_t states = 0, observed = 0;
  bool failed = false;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    try {
      esi::esm::ResolvedDocument doc;
      if (front == Front::Checked) {
        esi::esm::CheckedDocument checked = esi::esm::load_checked(path);
        if (!checked.doc) throw esi::Error(checked.report.errors.front());
        doc = std::move(*checked.doc);
      } else {
        doc = esi::esm::load_resolved(path);
      }
      const esi::esm::System system = esi::esm::flatten(doc);
      states = system.states.size();
      observed = system.observed.size();
    } catch (const esi::Error& e) {
      state.SkipWithError(e.what());
      failed = true;
      break;
    }
    total_s += seconds_since(t0);
  }
  if (failed) return;
  const double per_iter =
      total_s / static_cast<double>(std::max<benchmark::IterationCount>(1, state.iterations()));
  state.counters["parse_ms"] = parse_s * 1e3;
  state.counters["x_parse"] = per_iter / parse_s;
  state.counters["states"] = static_cast<double>(states);
  state.counters["observed"] = static_cast<double>(observed);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
}

BENCHMARK_CAPTURE(BM_Parse, superfast, kSuperfast)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_LoadFlatten, superfast_resolve, kSuperfast, Front::Resolve)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_LoadFlatten, superfast_checked, kSuperfast, Front::Checked)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Parse, fullchem, kFullchem)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_LoadFlatten, fullchem_resolve, kFullchem, Front::Resolve)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_LoadFlatten, fullchem_checked, kFullchem, Front::Checked)
    ->Unit(benchmark::kMillisecond);

}  // namespace

// BENCHMARK_MAIN with the build the figures hold for in the context block (--benchmark_format
// json carries it too): build type, compiler and flags.
int main(int argc, char** argv) {
  benchmark::AddCustomContext("esi_build", ESI_BUILD_DESCRIPTION);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
