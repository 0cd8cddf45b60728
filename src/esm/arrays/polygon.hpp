// Plain polygon rings for the geometry leaves (spec §8.6.1): vertex deduplication (either
// manifold) and, on the plane, orientation, convexity and Sutherland-Hodgman clipping.
#pragma once

#include <array>
#include <optional>
#include <vector>

namespace esi::esm::polygon {

using Ring = std::vector<std::array<double, 2>>;  ///< vertices, implicitly closed

/// Spec §8.6.1: consecutive duplicate vertices (the wrap pair included, so an explicit
/// closing vertex too) are dropped under np.allclose's tolerance (atol 1e-8, rtol 1e-5).
Ring deduplicated(const Ring& ring);

/// The shoelace area, positive when the ring runs counter-clockwise.
double signed_area(const Ring& ring);

bool convex(const Ring& ring);

/// The overlap of two plane rings (at least 3 distinct vertices each): `a` clipped by `b`,
/// Sutherland-Hodgman, the convex one doing the clipping (`b` when both are). nullopt when
/// neither is convex.
std::optional<Ring> clip_planar(Ring a, Ring b);

/// The overlap ring an `intersect_polygon` returns, from a clip's deduplicated result:
/// counter-clockwise (a spherical clip already is), starting at the lowest-leftmost vertex and
/// closed by repeating it; empty when it has fewer than 3 vertices (no area).
Ring canonical_ring(Ring ring, bool spherical);

}  // namespace esi::esm::polygon
