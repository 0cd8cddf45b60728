// The hand-written zonal PPM loop that bench/bench_grid.cpp (BM_PpmLon) times against the region
// program computes the same values: on the interior cells of the zonal-only transport_3d document
// both hand loops (two face fluxes per cell as the template writes it, and one flux per face)
// equal the region program's tendency bit for bit (each with the templates' ifelse as branches
// and as selects), on a rough q that takes every limiter branch
// and both wind signs. Without that, the bench's tape/hand ratio would compare different work.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../../bench/ppm_lon_document.hpp"
#include "esi/esm/flatten.hpp"
#include "esi/esm/load.hpp"
#include "esi/kernel/grid.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;

struct Region {
  esi::esm::System sys;
  esi::kernel::GridProgram gp;
  esi::kernel::GridWorkspace ws;
  std::vector<double> y;
};

/// The zonal-only document (or its probe) on nx x ny x nz, flattened on the grid and compiled.
Region region(const esi::testing::TempDir& dir, int nx, int ny, int nz, bool probe) {
  const fs::path corpus = esi::testing::corpus_dir();
  const fs::path root = dir.path();
  fs::create_directories(root / "reseact/prototypes/t");
  if (!fs::exists(root / "EarthSciDiscretizations"))
    fs::create_directory_symlink(corpus / "EarthSciDiscretizations", root / "EarthSciDiscretizations");
  nlohmann::json doc;
  std::ifstream(corpus / "reseact/prototypes/transport_3d/transport_3d.esm") >> doc;
  for (auto& imp : doc["models"]["Transport3D"]["expression_template_imports"])
    imp["bindings"] = {{"NLON", nx}, {"NLAT", ny}, {"NLEV", nz}};
  esi::ppm::make_zonal_only(doc, probe);
  const fs::path file = root / "reseact/prototypes/t" / (probe ? "probe.esm" : "zonal.esm");
  std::ofstream(file) << doc.dump();
  esi::esm::FlattenOptions fo;
  fo.grid = true;
  fo.inputs["Transport3D.dA"] = std::vector<double>(static_cast<std::size_t>(nz), 1000.0);
  fo.inputs["Transport3D.dB"] = std::vector<double>(static_cast<std::size_t>(nz), 0.01);
  Region r;
  r.sys = esi::esm::flatten(esi::esm::load_resolved(file), fo);
  r.gp = esi::kernel::compile_grid(r.sys);
  std::vector<double> p;
  for (const auto& v : r.sys.parameters) p.push_back(v.default_value.value_or(NAN));
  r.ws = esi::kernel::make_grid_workspace(r.gp, r.sys, p);
  r.y.assign(r.sys.states.size(), NAN);
  esi::kernel::grid_initial(r.gp, r.ws, r.y);
  return r;
}

TEST(PpmHandwritten, EqualsTheRegionProgramOnInteriorCellsBitwise) {
  const fs::path corpus = esi::testing::corpus_dir();
  if (corpus.empty() || !fs::exists(corpus / "reseact/prototypes/transport_3d/transport_3d.esm"))
    GTEST_SKIP() << "corpus not found: set ESI_CORPUS";
  esi::testing::TempDir dir;
  const int nx = 72, ny = 5, nz = 3;  // 72 cells along lon: the wind changes sign along a row
  Region zonal = region(dir, nx, ny, nz, false);
  const Region probe = region(dir, nx, ny, nz, true);
  ASSERT_EQ(zonal.sys.grid_fallback, "");
  ASSERT_EQ(zonal.sys.states.size(), static_cast<std::size_t>(nx * ny * nz));

  const esi::ppm::LonGrid g = esi::ppm::lon_grid_from_probe(probe.sys, probe.y, nx, ny, nz, 5.0);
  ASSERT_EQ(g.q, zonal.y);  // the same initial q in both documents
  std::size_t positive = 0, negative = 0;
  for (double w : g.mx) (w > 0 ? positive : negative) += 1;
  EXPECT_GT(positive, g.mx.size() / 5);
  EXPECT_GT(negative, g.mx.size() / 5);

  const esi::kernel::GridBox tile{{4, 1, 1}, {nx - 3, ny, nz}};
  const std::vector<double> states = esi::kernel::grid_tile_states(zonal.gp, tile, zonal.y);
  ASSERT_EQ(states, zonal.y);  // the interior's halo reaches both walls
  const std::size_t interior = static_cast<std::size_t>(nx - 6) * ny * nz;
  std::vector<double> expect(interior, NAN), by_cell(interior, NAN), by_face(interior, NAN),
      by_cell_select(interior, NAN), by_face_select(interior, NAN);
  esi::kernel::grid_rhs_tile(zonal.gp, zonal.ws, 0.0, tile, states, expect);
  esi::ppm::lon_tendency_interior(g, by_cell);
  esi::ppm::lon_tendency_interior_by_face(g, by_face);
  esi::ppm::lon_tendency_interior<true>(g, by_cell_select);
  esi::ppm::lon_tendency_interior_by_face<true>(g, by_face_select);
  std::size_t nonzero = 0;
  for (std::size_t c = 0; c < interior; ++c) {
    ASSERT_EQ(by_cell[c], expect[c]) << "interior cell " << c;
    ASSERT_EQ(by_face[c], expect[c]) << "interior cell " << c;
    ASSERT_EQ(by_cell_select[c], expect[c]) << "interior cell " << c;
    ASSERT_EQ(by_face_select[c], expect[c]) << "interior cell " << c;
    nonzero += expect[c] != 0;
  }
  EXPECT_GT(nonzero, interior * 9 / 10);

  // The interior of the whole-grid RHS is the same (the tile is not a different computation).
  std::vector<double> whole(zonal.y.size(), NAN);
  esi::kernel::grid_rhs(zonal.gp, zonal.ws, 0.0, zonal.y, whole);
  std::size_t c = 0;
  for (int k = 0; k < nz; ++k)
    for (int j = 0; j < ny; ++j)
      for (int i = 3; i < nx - 3; ++i, ++c)
        ASSERT_EQ(whole[static_cast<std::size_t>(i + nx * (j + ny * k))], expect[c]);
}

}  // namespace
