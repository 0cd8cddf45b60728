// Polygons on the unit sphere: clipping and solid angles (sphere_polygon.hpp).
#include "esm/arrays/sphere_polygon.hpp"

#include <algorithm>
#include <cmath>

namespace esi::esm::sphere {

namespace {

using Vec = std::array<double, 3>;

constexpr double kDegree = 3.14159265358979323846 / 180.0;

Vec cross(const Vec& a, const Vec& b) {
  return {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
}
double dot(const Vec& a, const Vec& b) {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

/// A vertex as a unit vector, with the lon-lat it was given as: vertices of the operands come
/// back exactly as written, only crossing points are converted back from vectors.
struct Vertex {
  Vec p;
  LonLat ll;
};

Vertex vertex(const LonLat& ll) {
  const double lon = ll[0] * kDegree, lat = ll[1] * kDegree;
  return {{std::cos(lat) * std::cos(lon), std::cos(lat) * std::sin(lon), std::sin(lat)}, ll};
}

/// The lon-lat of a unit vector, its longitude within 180 degrees of `near_lon`.
LonLat lon_lat(const Vec& p, double near_lon) {
  double lon = std::atan2(p[1], p[0]) / kDegree;
  const double lat = std::atan2(p[2], std::hypot(p[0], p[1])) / kDegree;
  lon += 360.0 * std::round((near_lon - lon) / 360.0);
  return {lon, lat};
}

std::vector<Vertex> vertices(const std::vector<LonLat>& ring) {
  std::vector<Vertex> out;
  for (const auto& ll : ring) out.push_back(vertex(ll));
  return out;
}

/// Whether every vertex lies strictly on the side of the sphere its centroid points to; the
/// centroid direction is returned in `centre`.
bool in_hemisphere(const std::vector<Vertex>& ring, Vec& centre) {
  centre = {0, 0, 0};
  for (const auto& v : ring)
    for (int k = 0; k < 3; ++k) centre[k] += v.p[k];
  for (const auto& v : ring)
    if (!(dot(v.p, centre) > 0)) return false;
  return true;
}

/// Positive when the ring runs counter-clockwise seen from outside, around `centre`.
double orientation(const std::vector<Vertex>& ring, const Vec& centre) {
  double s = 0;
  for (std::size_t i = 0; i < ring.size(); ++i)
    s += dot(cross(ring[i].p, ring[(i + 1) % ring.size()].p), centre);
  return s;
}

/// Every turn the same way (straight runs allowed), as the planar test.
bool convex(const std::vector<Vertex>& ring) {
  int sign = 0;
  const std::size_t n = ring.size();
  for (std::size_t i = 0; i < n; ++i) {
    const double turn = dot(cross(ring[i].p, ring[(i + 1) % n].p), ring[(i + 2) % n].p);
    const int s = turn > 0 ? 1 : turn < 0 ? -1 : 0;
    if (s != 0 && sign != 0 && s != sign) return false;
    if (s != 0) sign = s;
  }
  return true;
}

}  // namespace

std::optional<std::vector<LonLat>> clip(const std::vector<LonLat>& a,
                                        const std::vector<LonLat>& b) {
  std::vector<Vertex> subject = vertices(a), window = vertices(b);
  Vec centre_a{}, centre_b{};
  if (!in_hemisphere(subject, centre_a) || !in_hemisphere(window, centre_b)) return std::nullopt;
  Vec centre = centre_b;
  if (!convex(window)) {
    std::swap(subject, window);
    centre = centre_a;
  }
  if (!convex(window)) return std::nullopt;
  if (orientation(window, centre) < 0) std::reverse(window.begin(), window.end());
  const double near_lon = a.front()[0];
  // Each edge p -> q of the (counter-clockwise) window keeps the half sphere on its left,
  // n . x >= 0 with n = p x q. Where an arc s -> t crosses that great circle, the point of the
  // chord at the same fraction, normalized, is the crossing on the arc: the chord, the arc and
  // the centre lie in one plane.
  for (std::size_t i = 0; i < window.size() && !subject.empty(); ++i) {
    const Vec n = cross(window[i].p, window[(i + 1) % window.size()].p);
    std::vector<Vertex> kept;
    for (std::size_t j = 0; j < subject.size(); ++j) {
      const Vertex& s = subject[j];
      const Vertex& t = subject[(j + 1) % subject.size()];
      const double ds = dot(n, s.p), dt = dot(n, t.p);
      if (ds >= 0) kept.push_back(s);
      if ((ds >= 0) != (dt >= 0)) {
        const double r = ds / (ds - dt);
        Vec x{};
        for (int k = 0; k < 3; ++k) x[k] = s.p[k] + r * (t.p[k] - s.p[k]);
        const double len = std::sqrt(dot(x, x));
        for (double& c : x) c /= len;
        kept.push_back({x, lon_lat(x, near_lon)});
      }
    }
    subject = std::move(kept);
  }
  // Sutherland-Hodgman keeps the subject's orientation: turn it the window's way.
  if (subject.size() >= 3 && orientation(subject, centre) < 0)
    std::reverse(subject.begin(), subject.end());
  // One branch of longitude for the whole ring (an operand may write 190 where the other
  // writes -170); a vertex already on it keeps its bits (the shift is 0).
  std::vector<LonLat> out;
  for (const auto& v : subject) {
    LonLat ll = v.ll;
    ll[0] += 360.0 * std::round((near_lon - ll[0]) / 360.0);
    out.push_back(ll);
  }
  return out;
}

double area(const std::vector<LonLat>& ring) {
  if (ring.size() < 3) return 0.0;
  const std::vector<Vertex> v = vertices(ring);
  // A fan of triangles from the first vertex, each with its signed spherical excess by
  // Van Oosterom and Strackee: tan(E/2) = a.(b x c) / (1 + a.b + b.c + c.a).
  double total = 0;
  for (std::size_t i = 1; i + 1 < v.size(); ++i) {
    const Vec& a = v[0].p;
    const Vec& b = v[i].p;
    const Vec& c = v[i + 1].p;
    total += 2.0 * std::atan2(dot(a, cross(b, c)), 1.0 + dot(a, b) + dot(b, c) + dot(c, a));
  }
  return std::abs(total);
}

}  // namespace esi::esm::sphere
