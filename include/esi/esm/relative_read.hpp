// The names by which a grid system's per-region equations read arrays relative to the cell
// they are evaluated at (System::GridEquation regions): "C.x[@0+1,@1,3]" reads array "C.x" at
// (the cell's position along axis 0, plus 1; along axis 1; the fixed position 3). The flattener
// writes them (esm/arrays); kernel, plan and exec read them through this one parser.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace esi::esm {

struct RelativeRead {
  std::string array;                 ///< "C.x" ("$index" for the cell's own position)
  std::vector<int> axis;             ///< per index of the array: the cell axis it follows, -1 fixed
  std::vector<std::int64_t> offset;  ///< added to that axis' position, or the fixed 1-based position

  /// Every index is the cell itself along some axis ("C.x[@0,@1,@2]").
  bool own_cell() const;
};

/// Takes a relative read apart; false when `name` is not of that form (an ordinary name, an
/// empty array name, an index that is neither "@d", "@d+k", "@d-k" nor an integer).
bool parse_relative_read(std::string_view name, RelativeRead& out);

}  // namespace esi::esm
