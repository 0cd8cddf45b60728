// The reseact prototype documents (corpus/reseact/prototypes) resized for tests: copies with
// changed grid bindings beside links to the rule and model libraries, so their relative
// imports resolve, and the inputs their data sources would give. Empty without a corpus.
#pragma once

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "esi/esm/flatten.hpp"
#include "esi/esm/load.hpp"
#include "support/temp_dir.hpp"

namespace esi::testing {

namespace reseact_fs = std::filesystem;

/// transport_3d.esm on an n x n x n grid (the document ties its lateral halos to NLAT == NLEV),
/// beside a link to the rule library so its relative imports resolve, with its hybrid
/// coefficients dA/dB set to the first n GEOS-FP layers (as the document's description says;
/// its defaults of 0 make the vertical mass form 0/0). Empty without a corpus.
struct Doc {
  reseact_fs::path file;
  esi::esm::FlattenOptions cells, grid;
};

/// The same on an nx x ny x nz grid (the halos need ny <= nz and nx <= nz; ny > 16 reaches the
/// pole, where the metric is not finite).
inline Doc transport_document(const TempDir& dir, int nx, int ny, int nz) {
  Doc out;
  const reseact_fs::path corpus = corpus_dir();
  const reseact_fs::path src = corpus / "reseact/prototypes/transport_3d/transport_3d.esm";
  const reseact_fs::path table = corpus / "reseact/prototypes/reseact_3d/hybrid_coefs.json";
  if (corpus.empty() || !reseact_fs::exists(src) || !reseact_fs::exists(table)) return {};
  const reseact_fs::path root = dir.path();
  reseact_fs::create_directories(root / "reseact/prototypes/t");
  if (!reseact_fs::exists(root / "EarthSciDiscretizations"))
    reseact_fs::create_directory_symlink(corpus / "EarthSciDiscretizations",
                                         root / "EarthSciDiscretizations");
  nlohmann::json doc;
  std::ifstream(src) >> doc;
  for (auto& imp : doc["models"]["Transport3D"]["expression_template_imports"])
    imp["bindings"] = {{"NLON", nx}, {"NLAT", ny}, {"NLEV", nz}};
  const reseact_fs::path file =
      root / "reseact/prototypes/t" /
      ("t_" + std::to_string(nx) + "_" + std::to_string(ny) + "_" + std::to_string(nz) + ".esm");
  std::ofstream(file) << doc.dump();
  out.file = file;
  nlohmann::json h;
  std::ifstream(table) >> h;
  for (const char* k : {"dA", "dB"}) {
    nlohmann::json v = nlohmann::json::array();
    for (int i = 0; i < nz; ++i) v.push_back(h[k][i]);
    out.cells.inputs[std::string("Transport3D.") + k] = v;
  }
  out.grid = out.cells;
  out.grid.grid = true;
  return out;
}

inline Doc transport_document(const TempDir& dir, int n) {
  return transport_document(dir, n, n, n);
}

/// reseact_3d_chem.esm (SuperFast lifted pointwise onto the PPM transport grid) with NLEV = 7
/// and its GEOS-FP inputs (examples/) cut to those levels.
inline Doc chemistry_document(const TempDir& dir) {
  const reseact_fs::path corpus = corpus_dir();
  const reseact_fs::path src = corpus / "reseact/prototypes/reseact_3d_chem/reseact_3d_chem.esm";
  const reseact_fs::path inputs =
      reseact_fs::path(ESI_SOURCE_DIR) / "examples/reseact/reseact_3d_chem_inputs.json";
  if (corpus.empty() || !reseact_fs::exists(src)) return {};
  Doc out;
  const reseact_fs::path root = dir.path();
  reseact_fs::create_directories(root / "reseact/prototypes/c");
  for (const char* lib : {"EarthSciDiscretizations", "EarthSciModels"})
    if (!reseact_fs::exists(root / lib))
      reseact_fs::create_directory_symlink(corpus / lib, root / lib);
  nlohmann::json doc;
  std::ifstream(src) >> doc;
  std::function<void(nlohmann::json&)> rebind = [&](nlohmann::json& j) {
    if (j.is_object()) {
      if (j.contains("bindings") && j["bindings"].is_object() && j["bindings"].contains("NLEV"))
        j["bindings"]["NLEV"] = 7;
      for (auto& [k, v] : j.items()) rebind(v);
    } else if (j.is_array()) {
      for (auto& v : j) rebind(v);
    }
  };
  rebind(doc);
  out.file = root / "reseact/prototypes/c/chem7.esm";
  std::ofstream(out.file) << doc.dump();
  nlohmann::json in;
  std::ifstream(inputs) >> in;
  for (const char* k : {"Transport3D.dA", "Transport3D.dB"})
    in[k] = std::vector<double>(in[k].begin(), in[k].begin() + 7);
  for (const char* k : {"Transport3D.Ap", "Transport3D.Bp"})
    in[k] = std::vector<double>(in[k].begin(), in[k].begin() + 8);
  out.cells.inputs = in;
  out.grid = out.cells;
  out.grid.grid = true;
  return out;
}

/// The corpus's transport_3d.esm as shipped (7 x 7 x 7) with the inputs the example gives
/// (examples/reseact/transport_3d_inputs.json), and flatten options for the per-region form.
/// `found` is false without a corpus.
struct ShippedTransport {
  bool found = false;
  esi::esm::ResolvedDocument doc;
  esi::esm::FlattenOptions grid;
};

inline ShippedTransport shipped_transport() {
  ShippedTransport out;
  const reseact_fs::path corpus = corpus_dir();
  const reseact_fs::path file = corpus / "reseact/prototypes/transport_3d/transport_3d.esm";
  if (corpus.empty() || !reseact_fs::exists(file)) return out;
  out.doc = esi::esm::load_resolved(file.string());
  std::ifstream(reseact_fs::path(ESI_SOURCE_DIR) / "examples/reseact/transport_3d_inputs.json") >>
      out.grid.inputs;
  out.grid.grid = true;
  out.found = true;
  return out;
}

}  // namespace esi::testing
