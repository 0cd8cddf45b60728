// A document written to a temporary folder and flattened both ways: the per-region (grid) form
// and the cell-by-cell form, for tests that compare runs of the two.
#pragma once

#include <string>

#include "esi/esm/flatten.hpp"
#include "esi/esm/load.hpp"
#include "support/temp_dir.hpp"

namespace esi::testing {

struct GridAndCells {
  TempDir dir;
  esm::ResolvedDocument doc;
  esm::System grid, cells;
  explicit GridAndCells(const std::string& text) {
    doc = esm::load_resolved(dir.write("m.esm", text));
    esm::FlattenOptions fo;
    cells = esm::flatten(doc, fo);
    fo.grid = true;
    grid = esm::flatten(doc, fo);
  }
};

}  // namespace esi::testing
