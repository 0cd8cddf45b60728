// The closed function registry (spec §9.2): calendar decomposition of UTC seconds and the
// searchsorted / linear / bilinear table lookups, with the exact evaluation orders the spec pins
// for cross-binding bit-equivalence.
//
// Tables are `const` arrays in the expression; `extract_table` reads and checks them once (at
// compile time), so evaluation never touches JSON. Three internal helpers that no document may
// name (`interp.linear_slope`, `interp.bilinear_dx`, `interp.bilinear_dy`) give the derivative
// of the lookup along its query axis, for symbolic Jacobians.
//
// Evaluation never throws: a datetime of a non-finite time, or one whose year leaves the signed
// 32-bit range (spec: `closed_function_overflow`), is NaN so that a step using it is rejected.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "esi/expr/expr.hpp"

namespace esi::kernel {

enum class ClosedFn : std::uint8_t {
  Year, Month, Day, Hour, Minute, Second, DayOfYear, JulianDay, IsLeapYear,
  SearchSorted, Linear, Bilinear,
  LinearSlope, BilinearDx, BilinearDy,  // internal derivative helpers
  BilinearDxy,                          // ... and the cross slope (second derivatives)
};

/// The function named `name` (a registry name or an internal helper). Throws esi::Error
/// `unknown_closed_function` for anything else.
ClosedFn closed_fn_from_name(std::string_view name);
std::string_view closed_fn_name(ClosedFn f);
bool is_datetime(ClosedFn f);
/// How many arguments the `fn` node has, and how many of them (the leading ones for the interp
/// lookups, the trailing one for searchsorted) are `const` tables rather than scalars.
int closed_fn_arity(ClosedFn f);
int closed_fn_table_args(ClosedFn f);

/// datetime.*: `t_utc` in seconds since 1970-01-01T00:00:00Z (proleptic Gregorian, no leap
/// seconds). Integer results are returned as exact doubles; NaN on non-finite input or
/// int32 overflow of the year.
double datetime(ClosedFn f, double t_utc);

/// 1-based index of the first xs[i] >= x; N+1 when none (and for NaN x).
double searchsorted(double x, std::span<const double> xs);
/// Flat-extrapolated linear interpolation; `table` and `axis` have equal length >= 2.
double interp_linear(std::span<const double> table, std::span<const double> axis, double x);
/// d interp_linear / dx: the slope of the segment used, 0 where the query is clamped.
double interp_linear_slope(std::span<const double> table, std::span<const double> axis, double x);
/// Bilinear interpolation; `table` is row-major [ax.size()][ay.size()].
double interp_bilinear(std::span<const double> table, std::span<const double> ax,
                       std::span<const double> ay, double x, double y);
/// Partial derivatives of interp_bilinear along x and y (0 where that axis is clamped).
double interp_bilinear_dx(std::span<const double> table, std::span<const double> ax,
                          std::span<const double> ay, double x, double y);
double interp_bilinear_dy(std::span<const double> table, std::span<const double> ax,
                          std::span<const double> ay, double x, double y);
/// d^2 interp_bilinear / dx dy: the cell's cross slope (0 where either axis is clamped). The
/// lookup is linear along each axis within a cell, so this is its only second derivative.
double interp_bilinear_dxy(std::span<const double> table, std::span<const double> ax,
                           std::span<const double> ay, double x, double y);

/// The `const` arguments of one `fn` node, read once. For searchsorted only `axis_x` is used
/// (the sorted xs); for linear `values` and `axis_x`; for bilinear all three.
struct ClosedTable {
  std::vector<double> values;  ///< row-major table
  std::vector<double> axis_x;
  std::vector<double> axis_y;
};

/// Reads and checks the const arguments of `fn_node` (spec §9.2 load-time rules; throws
/// esi::Error with the `interp_*` / `searchsorted_non_monotonic` codes). Datetime: empty table.
ClosedTable extract_table(const expr::Pool& pool, expr::NodeId fn_node, ClosedFn f);

/// Evaluates `f` given its pre-extracted table and its scalar arguments in order.
double eval_closed(ClosedFn f, const ClosedTable& table, const double* scalar_args);

}  // namespace esi::kernel
