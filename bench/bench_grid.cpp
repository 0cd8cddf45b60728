// Per-region programs (issue 9, "what must be shown" item 5): array equations flattened with
// FlattenOptions::grid and lowered by kernel::compile_grid to one program per box of cells, so
// the front end's cost and the program size do not grow with the grid.
//   BM_RegionFrontEnd/doc/nx/ny/nz  load + flatten(grid) + compile_grid of transport_3d (doc 0)
//                      or reseact_3d_chem (doc 1) with NLON/NLAT/NLEV rebound; counters:
//                      states, programs, boxes, lane instructions, seconds (and the split).
//   BM_RegionRhs/n/native  one whole-grid grid_rhs of transport_3d at n^3 per iteration (tape,
//                      or native code), with the peer in the same run: a streaming copy of the
//                      same state vector; effective bandwidth = bytes of y read + dy written.
//                      setup_s: load + flatten + compile_grid (+ loading the cached native code;
//                      the first native run compiles every program with g++ into
//                      $ESI_CACHE_DIR, here <tmp>/esi_bench_grid_native: seconds, see RESULTS.md).
//                      Loop timings are this thread's CPU time (the machine may be shared).
//   BM_PpmLon/way      the zonal PPM flux divergence on the interior cells (i = 4..NLON-3) of a
//                      72x46x72 grid on the same data: 0 the region program (tape),
//                      1 its native code, 2 a hand-written loop of the same arithmetic, 3 a
//                      hand-written loop that computes each face flux once (one flux per face
//                      instead of two per cell: what the template cannot express), 4 and 5
//                      the same two with the template's ifelse as selects, not branches. Before
//                      timing, the hand loops are checked against the region program cell by
//                      cell; a mismatch skips the benchmark with an error.
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>

#include "corpus_link.hpp"
#include "esi/esm/flatten.hpp"
#include "esi/esm/load.hpp"
#include "esi/kernel/grid.hpp"
#include "ppm_lon_document.hpp"

#ifndef ESI_DEFAULT_CORPUS
#define ESI_DEFAULT_CORPUS ""
#endif

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// This thread's CPU time: the figures inside the loops do not count time other processes on
/// the machine take from it (the development machine is shared with other builds).
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

fs::path corpus() {
  const char* env = std::getenv("ESI_CORPUS");
  return (env && *env) ? fs::path(env) : fs::path(ESI_DEFAULT_CORPUS);
}

/// A rewritten copy of a corpus document, beside links to the libraries its relative imports
/// name, with the flattening inputs it needs.
struct Doc {
  fs::path file;
  esi::esm::FlattenOptions options;
  std::string error;
};

fs::path work_root() {
  const fs::path root = fs::temp_directory_path() / "esi_bench_grid";
  fs::create_directories(root / "reseact/prototypes/t");
  for (const char* lib : {"EarthSciDiscretizations", "EarthSciModels"})
    if (fs::exists(corpus() / lib)) link_corpus_library(corpus() / lib, root / lib);
  return root;
}

void rebind(nlohmann::json& model, int nx, int ny, int nz) {
  for (auto& imp : model["expression_template_imports"])
    imp["bindings"] = {{"NLON", nx}, {"NLAT", ny}, {"NLEV", nz}};
}

std::string shape_tag(int nx, int ny, int nz) {
  return std::to_string(nx) + "x" + std::to_string(ny) + "x" + std::to_string(nz);
}

/// The first `n` entries of a hybrid-coefficient table column.
nlohmann::json first(const nlohmann::json& column, int n) {
  nlohmann::json v = nlohmann::json::array();
  for (int i = 0; i < n; ++i) v.push_back(column.at(i));
  return v;
}

enum class Variant {
  Transport,  ///< transport_3d as it is (m, mq, dev; three PPM directions)
  PpmLon,     ///< one tracer state q and only the zonal PPM term
  PpmLonProbe ///< PpmLon plus states whose initial values are the observeds the term reads
};

/// transport_3d.esm on an nx x ny x nz grid with dA/dB from the first nz GEOS-FP layers.
Doc transport_document(int nx, int ny, int nz, Variant variant) {
  Doc d;
  const fs::path src = corpus() / "reseact/prototypes/transport_3d/transport_3d.esm";
  const fs::path table = corpus() / "reseact/prototypes/reseact_3d/hybrid_coefs.json";
  if (!fs::exists(src) || !fs::exists(table)) {
    d.error = "corpus not found (set ESI_CORPUS)";
    return d;
  }
  nlohmann::json doc;
  std::ifstream(src) >> doc;
  rebind(doc["models"]["Transport3D"], nx, ny, nz);
  std::string tag = "transport";
  if (variant != Variant::Transport) {
    tag = variant == Variant::PpmLon ? "ppmlon" : "ppmlon_probe";
    esi::ppm::make_zonal_only(doc, variant == Variant::PpmLonProbe);
  }
  const fs::path root = work_root();
  d.file = root / "reseact/prototypes/t" / (tag + "_" + shape_tag(nx, ny, nz) + ".esm");
  std::ofstream(d.file) << doc.dump();
  nlohmann::json h;
  std::ifstream(table) >> h;
  d.options.inputs["Transport3D.dA"] = first(h["dA"], nz);
  d.options.inputs["Transport3D.dB"] = first(h["dB"], nz);
  d.options.grid = true;
  return d;
}

/// reseact_3d_chem.esm on an nx x ny x nz grid with examples/reseact/reseact_3d_chem_inputs.json
/// (hybrid tables cut to nz layers).
Doc chem_document(int nx, int ny, int nz) {
  Doc d;
  const fs::path src = corpus() / "reseact/prototypes/reseact_3d_chem/reseact_3d_chem.esm";
  // The repository's examples: run the bench from the repository root (or set ESI_SOURCE_DIR).
  const char* source_dir = std::getenv("ESI_SOURCE_DIR");
  const fs::path inputs = fs::path(source_dir && *source_dir ? source_dir : ".") /
                          "examples/reseact/reseact_3d_chem_inputs.json";
  if (!fs::exists(src) || !fs::exists(inputs)) {
    d.error = "corpus or examples/reseact/reseact_3d_chem_inputs.json not found";
    return d;
  }
  nlohmann::json doc;
  std::ifstream(src) >> doc;
  rebind(doc["models"]["Transport3D"], nx, ny, nz);
  // The document reads its GEOS-FP slice at native lat 29 + j (j up to NLAT + 1) and lon
  // 14 + i (i up to NLON + 1) of the native 4 x 5 grid (46 x 72). A local grid past that slice
  // (72 x 46 x 72) gets the native index sets widened to cover it. The inputs are constants
  // (reseact_3d_chem_inputs.json), so every value read is the same; only the sizes change.
  auto& sets = doc["index_sets"];
  sets["gf_lat"]["size"] = std::max(sets["gf_lat"]["size"].get<int>(), 29 + ny + 1);
  sets["gf_lon"]["size"] = std::max(sets["gf_lon"]["size"].get<int>(), 14 + nx + 1);
  const fs::path root = work_root();
  d.file = root / "reseact/prototypes/t" / ("chem_" + shape_tag(nx, ny, nz) + ".esm");
  std::ofstream(d.file) << doc.dump();
  nlohmann::json in;
  std::ifstream(inputs) >> in;
  for (const char* k : {"Transport3D.dA", "Transport3D.dB"}) in[k] = first(in[k], nz);
  for (const char* k : {"Transport3D.Ap", "Transport3D.Bp"}) in[k] = first(in[k], nz + 1);
  d.options.inputs = in;
  d.options.grid = true;
  return d;
}

std::vector<double> defaults(const esi::esm::System& s) {
  std::vector<double> p;
  for (const auto& v : s.parameters) p.push_back(v.default_value.value_or(NAN));
  return p;
}

bool usable(benchmark::State& state, const Doc& d) {
  if (!d.error.empty()) {
    state.SkipWithError(d.error.c_str());
    return false;
  }
  return true;
}

bool on_grid(benchmark::State& state, const esi::esm::System& sys) {
  if (!sys.grid_fallback.empty() || sys.grid.empty()) {
    const std::string why = "flatten fell back to cells: " + sys.grid_fallback;
    state.SkipWithError(why.c_str());
    return false;
  }
  return true;
}

// ---- item 1: the front end ----

void BM_RegionFrontEnd(benchmark::State& state) {
  const int which = static_cast<int>(state.range(0));
  const int nx = static_cast<int>(state.range(1)), ny = static_cast<int>(state.range(2)),
            nz = static_cast<int>(state.range(3));
  const Doc d = which == 0 ? transport_document(nx, ny, nz, Variant::Transport) : chem_document(nx, ny, nz);
  if (!usable(state, d)) return;
  double load_s = 0, flatten_s = 0, compile_s = 0;
  std::size_t states = 0;
  esi::kernel::GridProgram::Stats stats;
  for (auto _ : state) {
    try {
      double start = thread_cpu_seconds();
      const auto doc = esi::esm::load_resolved(d.file);
      load_s += thread_cpu_seconds() - start;
      start = thread_cpu_seconds();
      const auto sys = esi::esm::flatten(doc, d.options);
      flatten_s += thread_cpu_seconds() - start;
      if (!on_grid(state, sys)) return;
      start = thread_cpu_seconds();
      const auto gp = esi::kernel::compile_grid(sys);
      compile_s += thread_cpu_seconds() - start;
      states = sys.states.size();
      stats = gp.stats();
    } catch (const std::exception& e) {
      state.SkipWithError(e.what());
      return;
    }
  }
  const double it = static_cast<double>(state.iterations());
  state.counters["cells"] = double(nx) * ny * nz;
  state.counters["states"] = static_cast<double>(states);
  state.counters["programs"] = static_cast<double>(stats.programs);
  state.counters["boxes"] = static_cast<double>(stats.boxes);
  state.counters["lane_instr"] = static_cast<double>(stats.lane_instructions);
  state.counters["load_s"] = load_s / it;
  state.counters["flatten_s"] = flatten_s / it;
  state.counters["compile_s"] = compile_s / it;
  state.counters["s"] = (load_s + flatten_s + compile_s) / it;  // CPU s of this thread
}

// ---- item 2: the whole-grid right-hand side against a streaming copy ----

/// Points the native cache at a directory of this process's own (warm after the first run).
void use_native_cache() {
  const fs::path dir = fs::temp_directory_path() / "esi_bench_grid_native";
  setenv("ESI_CACHE_DIR", dir.c_str(), 1);
}

struct Prepared {
  esi::esm::System sys;
  esi::kernel::GridProgram gp;
  esi::kernel::GridWorkspace ws;
  std::vector<double> y;
};

Prepared prepare(const Doc& d, bool native) {
  Prepared p;
  p.sys = esi::esm::flatten(esi::esm::load_resolved(d.file), d.options);
  p.gp = esi::kernel::compile_grid(p.sys, {.native = native});
  p.ws = esi::kernel::make_grid_workspace(p.gp, p.sys, defaults(p.sys));
  p.y.assign(p.sys.states.size(), 0.0);
  esi::kernel::grid_initial(p.gp, p.ws, p.y);
  return p;
}

void BM_RegionRhs(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const bool native = state.range(1) != 0;
  const Doc d = transport_document(n, n, n, Variant::Transport);
  if (!usable(state, d)) return;
  if (native) use_native_cache();
  Prepared p;
  const auto setup = Clock::now();
  try {
    p = prepare(d, native);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  const double setup_s = seconds_since(setup);
  if (!on_grid(state, p.sys)) return;
  // Away from free stream, so the limiters take every branch.
  for (std::size_t i = 0; i < p.y.size(); ++i) p.y[i] *= 1.0 + 0.05 * std::sin(0.7 * static_cast<double>(i) + 0.3);
  std::vector<double> dy(p.y.size()), copy(p.y.size());
  double rhs_s = 0, copy_s = 0;
  for (auto _ : state) {
    double start = thread_cpu_seconds();
    esi::kernel::grid_rhs(p.gp, p.ws, 0.0, p.y, dy);
    benchmark::ClobberMemory();
    rhs_s += thread_cpu_seconds() - start;
    start = thread_cpu_seconds();
    std::memcpy(copy.data(), p.y.data(), p.y.size() * sizeof(double));
    benchmark::ClobberMemory();
    copy_s += thread_cpu_seconds() - start;
    benchmark::DoNotOptimize(dy.data());
    benchmark::DoNotOptimize(copy.data());
  }
  const double it = static_cast<double>(state.iterations());
  const double bytes = 2.0 * sizeof(double) * static_cast<double>(p.y.size());  // read y, write dy
  const double cells = double(n) * n * n;
  state.counters["states"] = static_cast<double>(p.y.size());
  state.counters["setup_s"] = setup_s;  // load + flatten + compile_grid (+ native load or compile)
  state.counters["ns_per_cell"] = 1e9 * rhs_s / it / cells;
  state.counters["rhs_GBps"] = bytes / (rhs_s / it) / 1e9;
  state.counters["copy_GBps"] = bytes / (copy_s / it) / 1e9;
  state.counters["rhs_vs_copy"] = copy_s / rhs_s;
}

// ---- item 3: one-direction PPM, region program against hand-written C++ ----

constexpr int kPpmLon = 72, kPpmLat = 46, kPpmLev = 72;

/// The zonal-only document's program, its interior tile and the hand loop's inputs.
struct PpmCase {
  Prepared region;
  esi::kernel::GridBox tile;
  std::vector<double> tile_states;
  esi::ppm::LonGrid grid;
  std::string error;
};

PpmCase ppm_case(bool native) {
  PpmCase c;
  const Doc d = transport_document(kPpmLon, kPpmLat, kPpmLev, Variant::PpmLon);
  const Doc probe_doc = transport_document(kPpmLon, kPpmLat, kPpmLev, Variant::PpmLonProbe);
  if (!d.error.empty()) {
    c.error = d.error;
    return c;
  }
  if (native) use_native_cache();
  c.region = prepare(d, native);
  if (!c.region.sys.grid_fallback.empty() || c.region.sys.grid.empty()) {
    c.error = "flatten fell back to cells: " + c.region.sys.grid_fallback;
    return c;
  }
  const Prepared probe = prepare(probe_doc, false);
  c.grid = esi::ppm::lon_grid_from_probe(probe.sys, probe.y, kPpmLon, kPpmLat, kPpmLev, 5.0);  // dlon_deg = 5
  if (c.grid.q != std::vector<double>(c.region.y.begin(), c.region.y.begin() + static_cast<std::ptrdiff_t>(c.grid.q.size())))
    throw std::runtime_error("the probe document's q differs from the zonal-only document's");
  c.tile = esi::kernel::GridBox{{4, 1, 1}, {kPpmLon - 3, kPpmLat, kPpmLev}};
  c.tile_states = esi::kernel::grid_tile_states(c.region.gp, c.tile, c.region.y);
  if (c.tile_states != c.grid.q) c.error = "the interior tile's storage is not the whole q array";
  return c;
}

void BM_PpmLon(benchmark::State& state) {
  const int way = static_cast<int>(state.range(0));
  PpmCase c;
  try {
    c = ppm_case(way == 1);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  if (!c.error.empty()) {
    state.SkipWithError(c.error.c_str());
    return;
  }
  const std::size_t interior = static_cast<std::size_t>(kPpmLon - 6) * kPpmLat * kPpmLev;
  std::vector<double> region(interior, NAN), hand(interior, NAN), faces(interior, NAN), hand_sel(interior, NAN),
      faces_sel(interior, NAN);
  esi::kernel::grid_rhs_tile(c.region.gp, c.region.ws, 0.0, c.tile, c.tile_states, region);
  esi::ppm::lon_tendency_interior(c.grid, hand);
  esi::ppm::lon_tendency_interior_by_face(c.grid, faces);
  esi::ppm::lon_tendency_interior<true>(c.grid, hand_sel);
  esi::ppm::lon_tendency_interior_by_face<true>(c.grid, faces_sel);
  double max_rel = 0;
  std::size_t differ = 0, nonzero = 0;
  for (std::size_t i = 0; i < interior; ++i) {
    for (double h : {hand[i], faces[i], hand_sel[i], faces_sel[i]}) {
      if (h != region[i]) ++differ;
      const double scale = std::max(std::abs(region[i]), 1e-300);
      max_rel = std::max(max_rel, std::abs(h - region[i]) / scale);
    }
    nonzero += region[i] != 0;
  }
  if (max_rel > 1e-13 || !(max_rel == max_rel) || nonzero < interior / 2) {
    const std::string why = "hand-written loop and region program differ: max rel " + std::to_string(max_rel) +
                            ", nonzero " + std::to_string(nonzero);
    state.SkipWithError(why.c_str());
    return;
  }
  double s = 0;
  std::vector<double>& out = region;
  for (auto _ : state) {
    const double start = thread_cpu_seconds();
    switch (way) {
      case 0:
      case 1: esi::kernel::grid_rhs_tile(c.region.gp, c.region.ws, 0.0, c.tile, c.tile_states, out); break;
      case 2: esi::ppm::lon_tendency_interior(c.grid, out); break;
      case 3: esi::ppm::lon_tendency_interior_by_face(c.grid, out); break;
      case 4: esi::ppm::lon_tendency_interior<true>(c.grid, out); break;
      default: esi::ppm::lon_tendency_interior_by_face<true>(c.grid, out); break;
    }
    benchmark::ClobberMemory();
    s += thread_cpu_seconds() - start;
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["cells"] = static_cast<double>(interior);
  state.counters["ns_per_cell"] = 1e9 * s / static_cast<double>(state.iterations()) / static_cast<double>(interior);
  state.counters["values_differing"] = static_cast<double>(differ);
  state.counters["max_rel_diff"] = max_rel;
  state.counters["lane_instr"] = static_cast<double>(c.region.gp.stats().lane_instructions);
}

}  // namespace

// doc (0 transport_3d, 1 reseact_3d_chem), NLON, NLAT, NLEV. transport_3d's qbc_* aggregates
// (output_idx ["gl", "gl"] over lev for [lat, lev] and [lon, lev] arrays) need NLAT <= NLEV and
// NLON <= NLEV. reseact_3d_chem as written reads its GEOS-FP slice at lat 29 + j (j up to
// NLAT + 1) and lon up to 14 + (NLON + 1) of the native 46 x 72 grid, so NLAT <= 17 and
// NLON <= 57 (57x17x72); at 72x46x72 chem_document widens those index sets.
BENCHMARK(BM_RegionFrontEnd)
    ->Args({0, 7, 7, 7})
    ->Args({0, 72, 72, 72})
    ->Args({0, 72, 46, 72})
    ->Args({1, 7, 7, 7})
    ->Args({1, 57, 17, 72})
    ->Args({1, 72, 46, 72})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK(BM_RegionRhs)
    ->ArgsProduct({{16, 32, 48}, {0, 1}})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PpmLon)->DenseRange(0, 5)->Unit(benchmark::kMicrosecond);

