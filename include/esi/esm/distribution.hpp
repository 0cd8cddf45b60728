// A parameter's `distribution` (spec §6.3, schema $defs/Distribution), read and checked once.
//
// A distribution is univariate when its fields are numbers and multivariate when they are
// arrays: then it has one component per cell of the parameter's (one-axis) shape. A normal or
// lognormal gives its spread either as `std` / `sigma` (independent components: a number for
// all, or one per component) or as `cov`, the full covariance matrix (on the log scale for a
// lognormal). `cov` is how the format writes correlated noise: one vector-valued parameter
// whose components are correlated.
//
// `cov` is checked when it is read (schema $defs/CovarianceMatrix: square, of the vector's
// order, symmetric, positive semidefinite; `distribution_covariance_invalid` otherwise, nothing
// repaired) and factored once: L lower triangular with L L^T = cov, by a Cholesky that accepts
// a zero pivot when the rest of its column vanishes too (a semidefinite matrix: perfectly
// correlated components). A draw is then mean + L z with z independent standard normals.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "esi/esm/system.hpp"

namespace esi::esm {

struct DistributionSpec {
  enum class Kind : std::uint8_t { Normal, LogNormal, Uniform } kind = Kind::Normal;
  /// Components: 1 for a univariate distribution, else the length of its array fields.
  std::size_t components = 1;
  bool multivariate = false;     ///< some field is an array
  std::vector<double> location;  ///< mean / mu / low, one per component
  std::vector<double> spread;    ///< std / sigma / high, one per component (empty with `cov`)
  /// With `cov`: L, components x components row-major and lower triangular, L L^T = cov.
  std::vector<double> factor;
  std::string pointer;  ///< JSON pointer of the `distribution` object

  bool correlated() const { return !factor.empty(); }
};

/// Tolerance of the symmetry check: |c_ij - c_ji| <= kCovarianceSymmetryTolerance * max(|c_ij|, |c_ji|).
inline constexpr double kCovarianceSymmetryTolerance = 1e-12;

/// Reads the `distribution` of the declaration at `pointer` (of the variable). Throws
/// `invalid_distribution` (missing or malformed fields, a non-positive spread, low >= high,
/// arrays of different lengths, both `std` and `cov`), `unknown_distribution` (a kind outside
/// normal / lognormal / uniform) and `distribution_covariance_invalid` (pointer: the `cov`
/// field or the offending row).
DistributionSpec read_distribution(const nlohmann::json& declaration, const std::string& file,
                                   const std::string& pointer);

/// The factor L (row-major, order x order, lower triangular) with L L^T = cov; throws
/// `distribution_covariance_invalid` at `pointer` (the `cov` field) unless `cov` is an order x
/// order matrix of finite numbers, symmetric and positive semidefinite.
std::vector<double> covariance_factor(const nlohmann::json& cov, std::size_t order, const std::string& file,
                                      const std::string& pointer);

/// The distribution of parameter `parameter` of `system` (a cell of an array or a scalar),
/// read from `document` and checked against the parameter's shape: a multivariate
/// distribution needs a one-axis array parameter with one component per cell
/// (`invalid_distribution`, or `distribution_covariance_invalid` for a `cov` of another order;
/// `unsupported_distribution` for several axes). A parameter without a `distribution` gets
/// the standard normal.
DistributionSpec parameter_distribution(const System& system, std::size_t parameter, const nlohmann::json& document);

/// Checks every sampled (no override) and Wiener parameter's distribution, once per
/// declaration: what the stochastic driver would refuse. Run by `esi validate`'s trial flatten.
void check_distributions(const System& system, const nlohmann::json& document);

}  // namespace esi::esm
