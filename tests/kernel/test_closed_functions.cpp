// Closed registry functions (spec §9.2) against hand-computed values and the boundary rules:
// negative times, leap years, floored division, clamps, knots, NaN.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "esi/core/error.hpp"
#include "esi/expr/parse.hpp"
#include "esi/kernel/closed_functions.hpp"

using namespace esi::kernel;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Date {
  double year, month, day, hour, minute, second, doy, leap;
};

Date decompose(double t) {
  return {datetime(ClosedFn::Year, t),   datetime(ClosedFn::Month, t),
          datetime(ClosedFn::Day, t),    datetime(ClosedFn::Hour, t),
          datetime(ClosedFn::Minute, t), datetime(ClosedFn::Second, t),
          datetime(ClosedFn::DayOfYear, t), datetime(ClosedFn::IsLeapYear, t)};
}

void expect_date(double t, Date want) {
  const Date d = decompose(t);
  EXPECT_EQ(d.year, want.year) << t;
  EXPECT_EQ(d.month, want.month) << t;
  EXPECT_EQ(d.day, want.day) << t;
  EXPECT_EQ(d.hour, want.hour) << t;
  EXPECT_EQ(d.minute, want.minute) << t;
  EXPECT_EQ(d.second, want.second) << t;
  EXPECT_EQ(d.doy, want.doy) << t;
  EXPECT_EQ(d.leap, want.leap) << t;
}

esi::expr::NodeId parse(esi::expr::Pool& pool, const char* json) {
  return esi::expr::parse(pool, nlohmann::json::parse(json), "test", "");
}

std::string code_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const esi::Error& e) {
    return e.code();
  }
  return "no error";
}

}  // namespace

TEST(ClosedFunctions, NamesRoundTripAndUnknownIsRefused) {
  EXPECT_EQ(closed_fn_from_name("datetime.julian_day"), ClosedFn::JulianDay);
  EXPECT_EQ(closed_fn_name(ClosedFn::BilinearDy), "interp.bilinear_dy");
  EXPECT_EQ(code_of([] { closed_fn_from_name("datetime.week"); }), "unknown_closed_function");
}

TEST(ClosedFunctions, DatetimeAtTheEpochAndJustBefore) {
  expect_date(0.0, {1970, 1, 1, 0, 0, 0, 1, 0});
  // Floored division: -1 s is the last second of 1969 (spec: (-1) mod 86400 = 86399).
  expect_date(-1.0, {1969, 12, 31, 23, 59, 59, 365, 0});
  expect_date(-0.25, {1969, 12, 31, 23, 59, 59, 365, 0});
  expect_date(86399.999, {1970, 1, 1, 23, 59, 59, 1, 0});
}

TEST(ClosedFunctions, DatetimeLeapYears) {
  expect_date(951782400.0, {2000, 2, 29, 0, 0, 0, 60, 1});             // 2000-02-29
  expect_date(951782400.0 + 86400, {2000, 3, 1, 0, 0, 0, 61, 1});
  expect_date(-2203891200.0 - 1, {1900, 2, 28, 23, 59, 59, 59, 0});    // 1900 is not leap
  expect_date(-2203891200.0, {1900, 3, 1, 0, 0, 0, 60, 0});
  expect_date(1735689599.0, {2024, 12, 31, 23, 59, 59, 366, 1});
  expect_date(-11670974985.0, {1600, 2, 29, 6, 30, 15, 60, 1});
}

TEST(ClosedFunctions, DatetimeBeforeTheCommonEra) {
  const double jan1_0001 = -62135596800.0;
  // Year 0 (1 BC) is a proleptic-Gregorian leap year; year -1 is 2 BC (ISO 8601).
  expect_date(jan1_0001 - 1, {0, 12, 31, 23, 59, 59, 366, 1});
  expect_date(jan1_0001 - 366 * 86400.0, {0, 1, 1, 0, 0, 0, 1, 1});
  expect_date(jan1_0001 - 366 * 86400.0 - 1, {-1, 12, 31, 23, 59, 59, 365, 0});
}

TEST(ClosedFunctions, JulianDay) {
  EXPECT_EQ(datetime(ClosedFn::JulianDay, 0.0), 2440587.5);
  EXPECT_EQ(datetime(ClosedFn::JulianDay, 946728000.0), 2451545.0);  // J2000.0
  EXPECT_EQ(datetime(ClosedFn::JulianDay, -62135596800.0), 1721425.5);  // 0001-01-01
  EXPECT_EQ(datetime(ClosedFn::JulianDay, -43200.0), 2440587.0);
  EXPECT_EQ(datetime(ClosedFn::JulianDay, 21600.0), 2440587.75);
  // Fliegel-van Flandern agrees with "days since epoch + 2440588" across centuries.
  for (double days = -800000; days <= 800000; days += 997.0) {
    const double jd = datetime(ClosedFn::JulianDay, days * 86400.0 + 43200.0);
    ASSERT_EQ(jd, days + 2440588.0) << days;
  }
}

TEST(ClosedFunctions, DatetimeOfNonFiniteOrHugeTimeIsNaN) {
  EXPECT_TRUE(std::isnan(datetime(ClosedFn::Year, kNaN)));
  EXPECT_TRUE(std::isnan(datetime(ClosedFn::Hour, INFINITY)));
  EXPECT_TRUE(std::isnan(datetime(ClosedFn::Year, 1e18)));  // year beyond int32
  const double far = datetime(ClosedFn::Year, 6.0e16);  // ~1.9e9: still an int32 year
  EXPECT_GT(far, 1.9e9);
  EXPECT_LT(far, 2147483647.0);
}

TEST(ClosedFunctions, SearchSorted) {
  const std::vector<double> xs{1.0, 2.0, 2.0, 3.0};
  EXPECT_EQ(searchsorted(0.5, xs), 1.0);
  EXPECT_EQ(searchsorted(1.0, xs), 1.0);  // x <= xs[1] -> 1
  EXPECT_EQ(searchsorted(1.5, xs), 2.0);
  EXPECT_EQ(searchsorted(2.0, xs), 2.0);  // duplicates: the smallest i with xs[i] >= x
  EXPECT_EQ(searchsorted(2.5, xs), 4.0);
  EXPECT_EQ(searchsorted(3.0, xs), 4.0);
  EXPECT_EQ(searchsorted(3.5, xs), 5.0);  // one past the end
  EXPECT_EQ(searchsorted(kNaN, xs), 5.0);
  EXPECT_EQ(searchsorted(-INFINITY, xs), 1.0);
}

TEST(ClosedFunctions, LinearClampsBlendsAndPropagatesNaN) {
  const std::vector<double> ax{0.0, 1.0, 3.0}, tb{10.0, 20.0, 40.0};
  EXPECT_EQ(interp_linear(tb, ax, -5.0), 10.0);
  EXPECT_EQ(interp_linear(tb, ax, 0.0), 10.0);
  EXPECT_EQ(interp_linear(tb, ax, 0.25), 12.5);
  EXPECT_EQ(interp_linear(tb, ax, 1.0), 20.0);  // interior knot: w = 0 on the right segment
  EXPECT_EQ(interp_linear(tb, ax, 2.0), 30.0);
  EXPECT_EQ(interp_linear(tb, ax, 3.0), 40.0);
  EXPECT_EQ(interp_linear(tb, ax, 9.0), 40.0);
  EXPECT_TRUE(std::isnan(interp_linear(tb, ax, kNaN)));
  // Pinned order t_i + w * (t_{i+1} - t_i), w = (x - a_i) / (a_{i+1} - a_i).
  const std::vector<double> ax2{0.1, 0.7}, tb2{0.3, 1.9};
  const double x = 0.35, w = (x - 0.1) / (0.7 - 0.1);
  EXPECT_EQ(interp_linear(tb2, ax2, x), 0.3 + w * (1.9 - 0.3));
  const std::vector<double> nan_tb{1.0, kNaN, 3.0};
  EXPECT_TRUE(std::isnan(interp_linear(nan_tb, ax, 0.5)));
  EXPECT_EQ(interp_linear(nan_tb, ax, -1.0), 1.0);
}

TEST(ClosedFunctions, LinearSlope) {
  const std::vector<double> ax{0.0, 1.0, 3.0}, tb{10.0, 20.0, 40.0};
  EXPECT_EQ(interp_linear_slope(tb, ax, -1.0), 0.0);
  EXPECT_EQ(interp_linear_slope(tb, ax, 0.0), 0.0);  // clamped at the knot
  EXPECT_EQ(interp_linear_slope(tb, ax, 0.5), 10.0);
  EXPECT_EQ(interp_linear_slope(tb, ax, 1.0), 10.0);  // right segment at an interior knot
  EXPECT_EQ(interp_linear_slope(tb, ax, 2.9), 10.0);
  EXPECT_EQ(interp_linear_slope(tb, ax, 3.0), 0.0);
  EXPECT_TRUE(std::isnan(interp_linear_slope(tb, ax, kNaN)));
}

TEST(ClosedFunctions, BilinearPinnedOrderClampsAndDerivatives) {
  const std::vector<double> ax{0.0, 1.0, 2.0}, ay{0.0, 10.0};
  const std::vector<double> tb{0.0, 1.0,    // x = 0
                               2.0, 5.0,    // x = 1
                               4.0, 13.0};  // x = 2
  EXPECT_EQ(interp_bilinear(tb, ax, ay, 0.0, 0.0), 0.0);
  EXPECT_EQ(interp_bilinear(tb, ax, ay, 1.0, 10.0), 5.0);
  EXPECT_EQ(interp_bilinear(tb, ax, ay, 2.0, 10.0), 13.0);
  EXPECT_EQ(interp_bilinear(tb, ax, ay, 5.0, 20.0), 13.0);  // flat outside both axes
  EXPECT_EQ(interp_bilinear(tb, ax, ay, -1.0, -3.0), 0.0);
  {
    const double x = 1.5, y = 2.5, wx = 0.5, wy = 0.25;
    const double rj = 2.0 + wx * (4.0 - 2.0), rjp = 5.0 + wx * (13.0 - 5.0);
    EXPECT_EQ(interp_bilinear(tb, ax, ay, x, y), rj + wy * (rjp - rj));
    EXPECT_EQ(interp_bilinear_dx(tb, ax, ay, x, y), 2.0 + wy * (8.0 - 2.0));
    EXPECT_EQ(interp_bilinear_dy(tb, ax, ay, x, y), (rjp - rj) / 10.0);
  }
  EXPECT_EQ(interp_bilinear_dx(tb, ax, ay, 3.0, 5.0), 0.0);
  EXPECT_EQ(interp_bilinear_dy(tb, ax, ay, 0.5, -1.0), 0.0);
  EXPECT_NE(interp_bilinear_dx(tb, ax, ay, 0.5, -1.0), 0.0);  // y clamp leaves x live
  EXPECT_TRUE(std::isnan(interp_bilinear(tb, ax, ay, kNaN, 1.0)));
  EXPECT_TRUE(std::isnan(interp_bilinear(tb, ax, ay, 1.0, kNaN)));
  EXPECT_TRUE(std::isnan(interp_bilinear_dy(tb, ax, ay, kNaN, 1.0)));
}

TEST(ClosedFunctions, ExtractTableReadsConstArgumentsOnce) {
  esi::expr::Pool pool;
  const auto lin = parse(pool, R"({"op": "fn", "name": "interp.linear", "args": [
      {"op": "const", "args": [], "value": [1, 2, 4]}, {"op": "const", "args": [], "value": [0, 1, 2]}, "x"]})");
  const ClosedTable t = extract_table(pool, lin, ClosedFn::Linear);
  EXPECT_EQ(t.values, (std::vector<double>{1, 2, 4}));
  const double x = 1.5;
  EXPECT_EQ(eval_closed(ClosedFn::Linear, t, &x), 3.0);

  const auto bil = parse(pool, R"({"op": "fn", "name": "interp.bilinear", "args": [
      {"op": "const", "args": [], "value": [[1, 2], [3, 4]]}, {"op": "const", "args": [], "value": [0, 1]},
      {"op": "const", "args": [], "value": [0, 1]}, "x", "y"]})");
  const ClosedTable b = extract_table(pool, bil, ClosedFn::Bilinear);
  EXPECT_EQ(b.values, (std::vector<double>{1, 2, 3, 4}));
  const double xy[2] = {0.5, 0.5};
  EXPECT_EQ(eval_closed(ClosedFn::Bilinear, b, xy), 2.5);

  const auto ss = parse(pool, R"({"op": "fn", "name": "interp.searchsorted", "args": ["x",
      {"op": "const", "args": [], "value": [0, 1, 1, 2]}]})");
  EXPECT_EQ(extract_table(pool, ss, ClosedFn::SearchSorted).axis_x.size(), 4u);
}

TEST(ClosedFunctions, ExtractTableRefusesBadTables) {
  esi::expr::Pool pool;
  auto lin = [&](const char* table, const char* axis) {
    const std::string j = std::string(R"({"op": "fn", "name": "interp.linear", "args": [)") + table +
                          ", " + axis + R"(, "x"]})";
    const auto id = esi::expr::parse(pool, nlohmann::json::parse(j), "t", "");
    return code_of([&] { extract_table(pool, id, ClosedFn::Linear); });
  };
  const char* c3 = R"({"op": "const", "args": [], "value": [1, 2, 3]})";
  EXPECT_EQ(lin(c3, R"({"op": "const", "args": [], "value": [0, 2, 1]})"), "interp_non_monotonic_axis");
  EXPECT_EQ(lin(c3, R"({"op": "const", "args": [], "value": [0, 1, 1]})"), "interp_non_monotonic_axis");
  EXPECT_EQ(lin(c3, R"({"op": "const", "args": [], "value": [0, 1]})"), "interp_axis_length_mismatch");
  EXPECT_EQ(lin(R"({"op": "const", "args": [], "value": [1]})", R"({"op": "const", "args": [], "value": [0]})"),
            "interp_axis_too_short");
  EXPECT_EQ(lin(c3, R"("axis")"), "interp_axis_not_const");
  EXPECT_EQ(lin(R"("tab")", c3), "interp_table_not_const");
  EXPECT_EQ(lin(c3, R"({"op": "const", "args": [], "value": [0, null, 2]})"), "interp_nan_in_axis");
  const auto ss = parse(pool, R"({"op": "fn", "name": "interp.searchsorted", "args": ["x",
      {"op": "const", "args": [], "value": [2, 1]}]})");
  EXPECT_EQ(code_of([&] { extract_table(pool, ss, ClosedFn::SearchSorted); }), "searchsorted_non_monotonic");
}
