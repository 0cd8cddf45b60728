// Small vector helpers of the sensitivity tests: random directions and dot products.
#pragma once

#include <cmath>
#include <cstddef>
#include <random>
#include <vector>

namespace esi::testing {

/// n values uniform in [-1, 1].
inline std::vector<double> random_vector(std::mt19937& rng, std::size_t n) {
  std::uniform_real_distribution<double> dist(-1, 1);
  std::vector<double> v(n);
  for (double& x : v) x = dist(rng);
  return v;
}

inline double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

/// sum |a_i b_i|: the scale a dot product's rounding lives on (its terms may cancel).
inline double dot_magnitude(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += std::abs(a[i] * b[i]);
  return s;
}

}  // namespace esi::testing
