// Plain polygon rings (polygon.hpp).
#include "esm/arrays/polygon.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace esi::esm::polygon {

Ring deduplicated(const Ring& ring) {
  auto close = [](const std::array<double, 2>& a, const std::array<double, 2>& b) {
    for (int k = 0; k < 2; ++k)
      if (!(std::abs(a[k] - b[k]) <= 1e-8 + 1e-5 * std::abs(b[k]))) return false;
    return true;
  };
  Ring out;
  for (const auto& p : ring)
    if (out.empty() || !close(out.back(), p)) out.push_back(p);
  while (out.size() > 1 && close(out.back(), out.front())) out.pop_back();
  return out;
}

double signed_area(const Ring& ring) {
  double s = 0;
  for (std::size_t i = 0; i < ring.size(); ++i) {
    const auto& a = ring[i];
    const auto& b = ring[(i + 1) % ring.size()];
    s += a[0] * b[1] - b[0] * a[1];
  }
  return s / 2;
}

bool convex(const Ring& ring) {
  int sign = 0;
  for (std::size_t i = 0; i < ring.size(); ++i) {
    const auto& a = ring[i];
    const auto& b = ring[(i + 1) % ring.size()];
    const auto& c = ring[(i + 2) % ring.size()];
    const double cross = (b[0] - a[0]) * (c[1] - b[1]) - (b[1] - a[1]) * (c[0] - b[0]);
    const int s = cross > 0 ? 1 : cross < 0 ? -1 : 0;
    if (s != 0 && sign != 0 && s != sign) return false;
    if (s != 0) sign = s;
  }
  return true;
}

std::optional<Ring> clip_planar(Ring a, Ring b) {
  if (!convex(b)) std::swap(a, b);
  if (!convex(b)) return std::nullopt;
  if (signed_area(b) < 0) std::reverse(b.begin(), b.end());
  Ring subject = a;
  for (std::size_t i = 0; i < b.size() && !subject.empty(); ++i) {
    const auto& p = b[i];
    const auto& q = b[(i + 1) % b.size()];
    auto side = [&](const std::array<double, 2>& x) {
      return (q[0] - p[0]) * (x[1] - p[1]) - (q[1] - p[1]) * (x[0] - p[0]);
    };
    Ring out;
    for (std::size_t j = 0; j < subject.size(); ++j) {
      const auto& s = subject[j];
      const auto& t = subject[(j + 1) % subject.size()];
      const double ds = side(s), dt = side(t);
      if (ds >= 0) out.push_back(s);
      if ((ds >= 0) != (dt >= 0)) {
        const double r = ds / (ds - dt);
        out.push_back({s[0] + r * (t[0] - s[0]), s[1] + r * (t[1] - s[1])});
      }
    }
    subject = std::move(out);
  }
  return subject;
}

Ring canonical_ring(Ring ring, bool spherical) {
  if (ring.size() < 3) return {};
  // (the spherical clip already turns the ring counter-clockwise seen from outside)
  if (!spherical && signed_area(ring) < 0) std::reverse(ring.begin(), ring.end());
  // The lowest latitude, and among the vertices level with it (equal under the §8.6.1
  // point tolerance: crossing points carry rounding) the westernmost.
  double low = ring[0][1];
  for (const auto& p : ring) low = std::min(low, p[1]);
  auto lowest = ring.end();
  for (auto it = ring.begin(); it != ring.end(); ++it)
    if (std::abs((*it)[1] - low) <= 1e-8 + 1e-5 * std::abs(low) && (lowest == ring.end() || (*it)[0] < (*lowest)[0]))
      lowest = it;
  std::rotate(ring.begin(), lowest, ring.end());
  ring.push_back(ring.front());
  return ring;
}

}  // namespace esi::esm::polygon
