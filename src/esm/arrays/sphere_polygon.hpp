// Polygons on the unit sphere for the geometry leaves `intersect_polygon` and
// `polygon_intersection_area` under `manifold: "spherical"` (spec §8.6.1, schema `manifold`):
// vertices are lon-lat pairs in degrees, every edge is the shorter great-circle arc between its
// ends (a parallel too), and areas are solid angles in steradians.
#pragma once

#include <array>
#include <optional>
#include <vector>

namespace esi::esm::sphere {

using LonLat = std::array<double, 2>;  ///< degrees east, degrees north

/// The overlap of two rings (distinct vertices, implicit closure, at least 3 each), one of them
/// convex on the sphere: Sutherland-Hodgman clipping of the other by the great-circle half
/// spaces of its edges. nullopt when neither is convex (or a ring spans more than a
/// hemisphere, where "inside" is ambiguous). The ring comes back counter-clockwise seen from
/// outside the sphere, every longitude within 180 degrees of the first operand's first vertex
/// (the operands' vertices otherwise as written, crossing points computed);
/// empty or shorter than 3 when the overlap has no area.
std::optional<std::vector<LonLat>> clip(const std::vector<LonLat>& a, const std::vector<LonLat>& b);

/// The solid angle (sr) enclosed by a ring with great-circle edges that lies within a
/// hemisphere; 0 for fewer than 3 vertices. Orientation does not matter.
double area(const std::vector<LonLat>& ring);

}  // namespace esi::esm::sphere
