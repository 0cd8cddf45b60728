// The passes of the array expansion over a FlattenState, in the order expand_arrays
// (expand.cpp) runs them, and what the two forms of array equations share.
#pragma once

#include <map>
#include <optional>

#include "esm/arrays/expander.hpp"

namespace esi::esm::detail::arrays {

/// One cell of an equation written cell by cell: the frame its right-hand side is evaluated
/// in and the index symbols the left-hand side binds.
struct LhsCell {
  Frame frame;
  std::vector<std::pair<expr::StrId, Ix>> bindings;
};

/// An index on a left-hand side: an index symbol ("$i") plus an integer offset (i, i + 1,
/// 1 + i, i - 1); nullopt for anything else.
struct OffsetIndex {
  expr::StrId symbol = 0;
  std::int64_t offset = 0;
};
std::optional<OffsetIndex> offset_index(const Pool& pool, NodeId e);

/// The cell `cell` of the target of a left-hand side `aggregate(D(index(x, i, j)), ...)` or
/// `index(D(x), i, j)`; nullopt when that left-hand side does not define the cell.
std::optional<LhsCell> lhs_cell(Pool& pool, NodeId lhs, const ArrayShape& target,
                                const std::vector<Ix>& cell, const std::string& file,
                                const std::string& pointer, Expander& ex);

/// One component's equations that define cells of an array (index(D(u), 1), an aggregate over
/// the interior) must define each cell once; terms of composed systems add up. Records that `t`
/// defines `cell` in `seen` (component -> its equation) and throws `array_cell_defined_twice`
/// at t when another equation of its component already does.
void note_cell_piece(std::map<std::size_t, const Tendency*>& seen, const Tendency& t, const std::string& cell);

/// `operator_compose` of a 0-D system with a gridded one, lifting "pointwise" (spec §10.5, the
/// default): every unknown of the 0-D system becomes an array over the grid, so its equations
/// (mass-action rates included) hold cell by cell; its parameters stay scalars and broadcast,
/// unless a variable_map feeds them from an array, which then substitutes cell by cell.
void lift_pointwise(FlattenState& st);

/// Extents of axes named by no index set (`"shape": ["i"]` with `"ranges": {"i": [1, 2]}` on
/// the defining equation): the largest stop any defining equation gives that axis.
void infer_extents(FlattenState& st);

/// The per-region form of every array equation (FlattenOptions::grid). Builds everything
/// aside and commits to `st` only at the end, so a NotRelative leaves `st` as it was.
void lower_to_regions(FlattenState& st);

}  // namespace esi::esm::detail::arrays
