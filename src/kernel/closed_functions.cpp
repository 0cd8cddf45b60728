#include "esi/kernel/closed_functions.hpp"

#include <array>
#include <cmath>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

#include "esi/core/error.hpp"
#include "esi/expr/parse.hpp"

namespace esi::kernel {
namespace {

using std::int64_t;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Spelling {
  ClosedFn f;
  std::string_view name;
};
constexpr std::array kNames{
    Spelling{ClosedFn::Year, "datetime.year"},
    Spelling{ClosedFn::Month, "datetime.month"},
    Spelling{ClosedFn::Day, "datetime.day"},
    Spelling{ClosedFn::Hour, "datetime.hour"},
    Spelling{ClosedFn::Minute, "datetime.minute"},
    Spelling{ClosedFn::Second, "datetime.second"},
    Spelling{ClosedFn::DayOfYear, "datetime.day_of_year"},
    Spelling{ClosedFn::JulianDay, "datetime.julian_day"},
    Spelling{ClosedFn::IsLeapYear, "datetime.is_leap_year"},
    Spelling{ClosedFn::SearchSorted, "interp.searchsorted"},
    Spelling{ClosedFn::Linear, "interp.linear"},
    Spelling{ClosedFn::Bilinear, "interp.bilinear"},
    Spelling{ClosedFn::LinearSlope, "interp.linear_slope"},
    Spelling{ClosedFn::BilinearDx, "interp.bilinear_dx"},
    Spelling{ClosedFn::BilinearDy, "interp.bilinear_dy"},
    Spelling{ClosedFn::BilinearDxy, "interp.bilinear_dxy"},
};

// Floored division and modulo on integers (Python semantics, spec §9.2 boundary rules).
int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }
int64_t floor_mod(int64_t a, int64_t b) { return a - floor_div(a, b) * b; }

struct Civil {
  int64_t year;
  int month;
  int day;
};

// Days since 1970-01-01 -> proleptic-Gregorian date (H. Hinnant's exact integer algorithm).
Civil civil_from_days(int64_t z) {
  z += 719468;
  const int64_t era = floor_div(z, 146097);
  const int64_t doe = z - era * 146097;                                     // [0, 146096]
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;  // [0, 399]
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);               // [0, 365]
  const int64_t mp = (5 * doy + 2) / 153;                                    // [0, 11], March = 0
  const int day = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  const int month = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  return {yoe + era * 400 + (month <= 2), month, day};
}

bool leap(int64_t y) { return (floor_mod(y, 4) == 0 && floor_mod(y, 100) != 0) || floor_mod(y, 400) == 0; }

int64_t day_of_year(const Civil& c) {
  static constexpr std::array<int, 12> kBefore{0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334};
  return kBefore[c.month - 1] + c.day + (c.month > 2 && leap(c.year));
}

// Fliegel & van Flandern (1968), as the spec's reference: C (truncating) integer division.
int64_t julian_day_number(const Civil& c) {
  const int64_t y = c.year, m = c.month, d = c.day;
  return (1461 * (y + 4800 + (m - 14) / 12)) / 4 + (367 * (m - 2 - 12 * ((m - 14) / 12))) / 12 -
         (3 * ((y + 4900 + (m - 14) / 12) / 100)) / 4 + d - 32075;
}

// First 0-based index i with xs[i] > x (x not NaN); xs.size() when none.
std::size_t upper_index(std::span<const double> xs, double x) {
  std::size_t lo = 0, hi = xs.size();
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (xs[mid] > x) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

// Segment i of a strictly increasing axis with axis[i] <= x < axis[i+1] for an in-range x, and
// the largest such i in [0, n-2] for a clamped x (so x == axis[n-1] uses the last segment).
std::size_t segment(std::span<const double> axis, double x) {
  if (std::isnan(x)) return 0;  // any segment: the NaN weight propagates
  const std::size_t u = upper_index(axis, x);
  const std::size_t i = u == 0 ? 0 : u - 1;
  return std::min(i, axis.size() - 2);
}

double clamp_to(double v, double lo, double hi) { return v <= lo ? lo : (v >= hi ? hi : v); }

struct Cell {
  std::size_t i, j;
  double wx, wy;
  bool x_clamped, y_clamped;
};

Cell locate(std::span<const double> ax, std::span<const double> ay, double x, double y) {
  Cell c{};
  const double xq = clamp_to(x, ax.front(), ax.back());
  const double yq = clamp_to(y, ay.front(), ay.back());
  c.x_clamped = x <= ax.front() || x >= ax.back();
  c.y_clamped = y <= ay.front() || y >= ay.back();
  c.i = segment(ax, xq);
  c.j = segment(ay, yq);
  c.wx = (xq - ax[c.i]) / (ax[c.i + 1] - ax[c.i]);
  c.wy = (yq - ay[c.j]) / (ay[c.j + 1] - ay[c.j]);
  return c;
}

[[noreturn]] void fail(const std::string& code, const std::string& message) {
  throw Error(code, "", "", message);
}

}  // namespace

ClosedFn closed_fn_from_name(std::string_view name) {
  for (const auto& s : kNames)
    if (s.name == name) return s.f;
  fail("unknown_closed_function",
       "'" + std::string(name) + "' is not a function of the closed registry (spec §9.2)");
}

std::string_view closed_fn_name(ClosedFn f) {
  for (const auto& s : kNames)
    if (s.f == f) return s.name;
  return {};
}

bool is_datetime(ClosedFn f) { return f <= ClosedFn::IsLeapYear; }

int closed_fn_arity(ClosedFn f) {
  if (is_datetime(f)) return 1;
  if (f == ClosedFn::SearchSorted) return 2;
  if (f == ClosedFn::Linear || f == ClosedFn::LinearSlope) return 3;
  return 5;
}

int closed_fn_table_args(ClosedFn f) {
  if (is_datetime(f)) return 0;
  if (f == ClosedFn::SearchSorted) return 1;
  if (f == ClosedFn::Linear || f == ClosedFn::LinearSlope) return 2;
  return 3;
}

double datetime(ClosedFn f, double t_utc) {
  // |t| beyond ~6.7e16 s puts the year outside int32 (closed_function_overflow).
  if (!std::isfinite(t_utc) || std::fabs(t_utc) > 6.7e16) return kNaN;
  // One floor-divmod by 86400 on the whole seconds; exact for every t in the domain.
  const double whole = std::floor(t_utc);
  const auto secs = static_cast<int64_t>(whole);
  const int64_t days = floor_div(secs, 86400), sod = floor_mod(secs, 86400);
  const Civil c = civil_from_days(days);
  if (c.year > std::numeric_limits<std::int32_t>::max() ||
      c.year < std::numeric_limits<std::int32_t>::min())
    return kNaN;
  switch (f) {
    case ClosedFn::Year: return static_cast<double>(c.year);
    case ClosedFn::Month: return c.month;
    case ClosedFn::Day: return c.day;
    case ClosedFn::Hour: return static_cast<double>(sod / 3600);
    case ClosedFn::Minute: return static_cast<double>(sod / 60 % 60);
    case ClosedFn::Second: return static_cast<double>(sod % 60);
    case ClosedFn::DayOfYear: return static_cast<double>(day_of_year(c));
    case ClosedFn::IsLeapYear: return leap(c.year) ? 1.0 : 0.0;
    case ClosedFn::JulianDay: {
      // Time of day with its fraction: t - days*86400 is exact (both are multiples of ulp(t)).
      const double tod = t_utc - static_cast<double>(days) * 86400.0;
      return static_cast<double>(julian_day_number(c)) + (tod - 43200.0) / 86400.0;
    }
    default: return kNaN;
  }
}

double searchsorted(double x, std::span<const double> xs) {
  if (std::isnan(x)) return static_cast<double>(xs.size() + 1);
  // First i with xs[i] >= x (left bias): count the leading elements that are < x.
  std::size_t lo = 0, hi = xs.size();
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (xs[mid] >= x) hi = mid;
    else lo = mid + 1;
  }
  return static_cast<double>(lo + 1);
}

double interp_linear(std::span<const double> table, std::span<const double> axis, double x) {
  const std::size_t n = axis.size();
  if (x <= axis[0]) return table[0];
  if (x >= axis[n - 1]) return table[n - 1];
  const std::size_t i = segment(axis, x);
  const double w = (x - axis[i]) / (axis[i + 1] - axis[i]);  // pinned order (spec §9.2)
  return table[i] + w * (table[i + 1] - table[i]);
}

double interp_linear_slope(std::span<const double> table, std::span<const double> axis, double x) {
  const std::size_t n = axis.size();
  if (x <= axis[0] || x >= axis[n - 1]) return 0.0;
  if (std::isnan(x)) return kNaN;
  const std::size_t i = segment(axis, x);
  return (table[i + 1] - table[i]) / (axis[i + 1] - axis[i]);
}

double interp_bilinear(std::span<const double> table, std::span<const double> ax,
                       std::span<const double> ay, double x, double y) {
  const Cell c = locate(ax, ay, x, y);
  const std::size_t ny = ay.size();
  const double* r0 = table.data() + c.i * ny;  // row i
  const double* r1 = r0 + ny;                  // row i+1
  const double row_j = r0[c.j] + c.wx * (r1[c.j] - r0[c.j]);
  const double row_jp1 = r0[c.j + 1] + c.wx * (r1[c.j + 1] - r0[c.j + 1]);
  return row_j + c.wy * (row_jp1 - row_j);
}

double interp_bilinear_dx(std::span<const double> table, std::span<const double> ax,
                          std::span<const double> ay, double x, double y) {
  if (std::isnan(x) || std::isnan(y)) return kNaN;
  const Cell c = locate(ax, ay, x, y);
  if (c.x_clamped) return 0.0;
  const std::size_t ny = ay.size();
  const double* r0 = table.data() + c.i * ny;
  const double* r1 = r0 + ny;
  const double h = ax[c.i + 1] - ax[c.i];
  const double d_j = (r1[c.j] - r0[c.j]) / h;
  const double d_jp1 = (r1[c.j + 1] - r0[c.j + 1]) / h;
  return d_j + c.wy * (d_jp1 - d_j);
}

double interp_bilinear_dy(std::span<const double> table, std::span<const double> ax,
                          std::span<const double> ay, double x, double y) {
  if (std::isnan(x) || std::isnan(y)) return kNaN;
  const Cell c = locate(ax, ay, x, y);
  if (c.y_clamped) return 0.0;
  const std::size_t ny = ay.size();
  const double* r0 = table.data() + c.i * ny;
  const double* r1 = r0 + ny;
  const double row_j = r0[c.j] + c.wx * (r1[c.j] - r0[c.j]);
  const double row_jp1 = r0[c.j + 1] + c.wx * (r1[c.j + 1] - r0[c.j + 1]);
  return (row_jp1 - row_j) / (ay[c.j + 1] - ay[c.j]);
}

double interp_bilinear_dxy(std::span<const double> table, std::span<const double> ax,
                           std::span<const double> ay, double x, double y) {
  if (std::isnan(x) || std::isnan(y)) return kNaN;
  const Cell c = locate(ax, ay, x, y);
  if (c.x_clamped || c.y_clamped) return 0.0;
  const std::size_t ny = ay.size();
  const double* r0 = table.data() + c.i * ny;
  const double* r1 = r0 + ny;
  const double hx = ax[c.i + 1] - ax[c.i], hy = ay[c.j + 1] - ay[c.j];
  return ((r1[c.j + 1] - r1[c.j]) - (r0[c.j + 1] - r0[c.j])) / (hx * hy);
}

double eval_closed(ClosedFn f, const ClosedTable& t, const double* a) {
  switch (f) {
    case ClosedFn::SearchSorted: return searchsorted(a[0], t.axis_x);
    case ClosedFn::Linear: return interp_linear(t.values, t.axis_x, a[0]);
    case ClosedFn::LinearSlope: return interp_linear_slope(t.values, t.axis_x, a[0]);
    case ClosedFn::Bilinear: return interp_bilinear(t.values, t.axis_x, t.axis_y, a[0], a[1]);
    case ClosedFn::BilinearDx: return interp_bilinear_dx(t.values, t.axis_x, t.axis_y, a[0], a[1]);
    case ClosedFn::BilinearDy: return interp_bilinear_dy(t.values, t.axis_x, t.axis_y, a[0], a[1]);
    case ClosedFn::BilinearDxy: return interp_bilinear_dxy(t.values, t.axis_x, t.axis_y, a[0], a[1]);
    default: return datetime(f, a[0]);
  }
}

// ---- table extraction (compile time) ----

namespace {

using nlohmann::json;

json const_value(const expr::Pool& pool, expr::NodeId id, const std::string& what,
                 std::string_view fn) {
  if (pool.node(id).op != expr::Op::Const)
    fail("interp_" + what + "_not_const",
         std::string(fn) + ": the " + what + " must be a literal 'const' array");
  return expr::attrs_json(pool, id).value("value", json());
}

// Table entries may be null (missing data, read as NaN); axes must be finite numbers.
std::vector<double> numbers(const json& v, bool is_axis, std::string_view fn) {
  if (!v.is_array())
    fail(is_axis ? "interp_axis_not_const" : "interp_table_not_const",
         std::string(fn) + ": expected a const array of numbers");
  std::vector<double> out;
  out.reserve(v.size());
  for (const auto& e : v) {
    if (e.is_number()) out.push_back(e.get<double>());
    else if (!is_axis && e.is_null()) out.push_back(kNaN);
    else if (is_axis) fail("interp_nan_in_axis", std::string(fn) + ": axis entries must be finite numbers");
    else fail("interp_table_not_const", std::string(fn) + ": table entries must be numbers");
  }
  return out;
}

std::vector<double> strict_axis(const json& v, std::string_view fn) {
  std::vector<double> a = numbers(v, true, fn);
  if (a.size() < 2) fail("interp_axis_too_short", std::string(fn) + ": an axis needs at least 2 entries");
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i])) fail("interp_nan_in_axis", std::string(fn) + ": the axis is not finite");
    if (i > 0 && !(a[i] > a[i - 1]))
      fail("interp_non_monotonic_axis", std::string(fn) + ": the axis is not strictly increasing");
  }
  return a;
}

}  // namespace

ClosedTable extract_table(const expr::Pool& pool, expr::NodeId fn_node, ClosedFn f) {
  const auto args = pool.args(fn_node);
  const std::string_view fn = closed_fn_name(f);
  if (static_cast<int>(args.size()) != closed_fn_arity(f))
    fail("closed_function_arity", std::string(fn) + " takes " + std::to_string(closed_fn_arity(f)) +
                                      " arguments, got " + std::to_string(args.size()));
  ClosedTable t;
  if (is_datetime(f)) return t;
  if (f == ClosedFn::SearchSorted) {
    t.axis_x = numbers(const_value(pool, args[1], "axis", fn), true, fn);
    if (t.axis_x.empty()) fail("interp_axis_not_const", std::string(fn) + ": xs must be non-empty");
    for (std::size_t i = 1; i < t.axis_x.size(); ++i)
      if (!(t.axis_x[i] >= t.axis_x[i - 1]))
        fail("searchsorted_non_monotonic", std::string(fn) + ": xs must be non-decreasing");
    return t;
  }
  const json table = const_value(pool, args[0], "table", fn);
  t.axis_x = strict_axis(const_value(pool, args[1], "axis", fn), fn);
  if (f == ClosedFn::Linear || f == ClosedFn::LinearSlope) {
    t.values = numbers(table, false, fn);
    if (t.values.size() != t.axis_x.size())
      fail("interp_axis_length_mismatch", std::string(fn) + ": table and axis lengths differ");
    return t;
  }
  t.axis_y = strict_axis(const_value(pool, args[2], "axis", fn), fn);
  if (!table.is_array() || table.size() != t.axis_x.size())
    fail("interp_axis_length_mismatch", std::string(fn) + ": table rows differ from axis_x length");
  for (const auto& row : table) {
    const std::vector<double> r = numbers(row, false, fn);
    if (r.size() != t.axis_y.size())
      fail("interp_axis_length_mismatch", std::string(fn) + ": a table row differs from axis_y length");
    t.values.insert(t.values.end(), r.begin(), r.end());
  }
  return t;
}

}  // namespace esi::kernel
