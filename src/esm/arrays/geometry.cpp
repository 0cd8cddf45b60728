// The geometry leaves (§8.6.1): polygon operands read when the model is built, their overlap
// area and overlap ring, on the plane (polygon.hpp) or the unit sphere (sphere_polygon.hpp).
#include <algorithm>
#include <cmath>

#include "esm/arrays/expander.hpp"
#include "esm/arrays/polygon.hpp"
#include "esm/arrays/sphere_polygon.hpp"

namespace esi::esm::detail::arrays {

std::vector<std::array<double, 2>> Expander::polygon_operand(NodeId operand, const char* which, const char* op) {
  std::vector<std::array<double, 2>> ring;
  const expr::Node& on = pool_.node(operand);
  if (on.op == Op::Const) {
    const json v = attrs(operand).value("value", json());
    if (!v.is_array()) fail("invalid_polygon", std::string("the ") + which + " polygon of '" + op + "' must be a [verts, 2] array");
    for (const auto& p : v) {
      if (!p.is_array() || p.size() != 2 || !p[0].is_number() || !p[1].is_number())
        fail("invalid_polygon", std::string("a vertex of the ") + which + " polygon is not a pair of numbers");
      ring.push_back({p[0].get<double>(), p[1].get<double>()});
    }
    return ring;
  }
  // A whole [verts, 2] array, or one ring of a stack of them: index(polys, i) of a
  // [cells, verts, 2] array (the leading indices fixed, the last two axes the ring).
  NodeId array_node = operand;
  std::vector<std::int64_t> lead;
  if (on.op == Op::Index && !pool_.args(operand).empty() && array_of(pool_.args(operand)[0])) {
    const std::vector<NodeId> args = args_of(operand);
    array_node = args[0];
    for (std::size_t i = 1; i < args.size(); ++i) {
      const Ix ix = static_int(args[i], "an index");
      if (relative_ && ix.axis >= 0) throw NotRelative{"a polygon operand at a cell-dependent position"};
      lead.push_back(ix.v);
    }
  }
  const ArrayShape* a = array_of(array_node);
  if (a) ready(*a);
  if (!a || a->extents.size() != lead.size() + 2 || a->extents.back() != 2)
    fail("invalid_polygon", std::string("the ") + which + " polygon of '" + op + "' must be an "
                            "array of shape [verts, 2] (lon-lat vertex pairs), or index(A, i, ...) "
                            "of an array whose last two axes are [verts, 2]");
  const std::string name = name_of(array_node);
  for (std::size_t d = 0; d < lead.size(); ++d)
    if (lead[d] < 1 || lead[d] > a->extents[d])
      fail("invalid_polygon", "the " + std::string(which) + " polygon is ring " + std::to_string(lead[d]) +
                                  " of '" + name + "', which has " + std::to_string(a->extents[d]) +
                                  " along '" + a->axes[d] + "'");
  for (std::int64_t v = 1; v <= a->extents[lead.size()]; ++v) {
    std::array<double, 2> xy{};
    for (std::int64_t c = 1; c <= 2; ++c) {
      ++runtime_probe_;
      try {
        std::vector<std::int64_t> cell = lead;
        cell.push_back(v);
        cell.push_back(c);
        xy[c - 1] = static_constant(pool_.symbol(cell_name(name, cell)));
        --runtime_probe_;
      } catch (const RuntimeIndex&) {
        --runtime_probe_;
        if (!deriving_.empty()) throw;
        fail("unsupported_array_feature",
             "'" + std::string(op) + "' of '" + name + "', whose vertices are known only while the "
             "model runs, is not supported yet (only polygons known when the model is built)");
      } catch (...) {
        --runtime_probe_;
        throw;
      }
    }
    ring.push_back(xy);
  }
  return ring;
}

bool Expander::on_sphere(NodeId e, const char* op) {
  const std::string manifold = attrs(e).value("manifold", std::string());
  if (manifold == "planar") return false;
  if (manifold == "spherical") return true;
  fail("unsupported_array_feature", std::string("'") + op + "' on the '" + manifold +
                                        "' manifold is not supported yet (only 'planar' and 'spherical')");
}

NodeId Expander::polygon_intersection_area(NodeId e) {
  const bool spherical = on_sphere(e, "polygon_intersection_area");
  const std::vector<NodeId> args = args_of(e);
  if (args.size() != 2) fail("invalid_polygon", "'polygon_intersection_area' takes two polygons");
  const auto subject = clipped(args[0], args[1], "polygon_intersection_area", spherical);
  const double area = subject.size() < 3 ? 0.0 : spherical ? sphere::area(subject) : std::abs(polygon::signed_area(subject));
  return pool_.number(area, false);
}

std::vector<std::array<double, 2>> Expander::clipped(NodeId first, NodeId second, const char* op, bool spherical) {
  auto a = polygon::deduplicated(polygon_operand(first, "first", op));
  auto b = polygon::deduplicated(polygon_operand(second, "second", op));
  for (const auto* ring : {&a, &b})
    if (ring->size() < 3)
      fail("invalid_polygon", std::string("a polygon of '") + op + "' has fewer than 3 distinct vertices");
  if (spherical) {
    auto ring = sphere::clip(a, b);
    if (!ring)
      fail("unsupported_array_feature",
           std::string("'") + op + "' on the sphere of two polygons neither of which is convex, or of a "
                                   "polygon wider than a hemisphere, is not supported yet");
    return *ring;
  }
  auto ring = polygon::clip_planar(std::move(a), std::move(b));
  if (!ring)
    fail("unsupported_array_feature",
         std::string("'") + op + "' of two non-convex polygons is not supported yet (one must be convex)");
  return *ring;
}

std::vector<std::array<double, 2>> Expander::intersection_ring(NodeId e) {
  const bool spherical = on_sphere(e, "intersect_polygon");
  const std::vector<NodeId> args = args_of(e);
  if (args.size() != 2) fail("invalid_polygon", "'intersect_polygon' takes two polygons");
  return polygon::canonical_ring(polygon::deduplicated(clipped(args[0], args[1], "intersect_polygon", spherical)),
                                 spherical);
}

NodeId Expander::ring_cell(NodeId e, const Frame& f) {
  const DerivedSet& set = set_produced_by(attrs(e).value("id", std::string()), "intersect_polygon");
  if (f.pos.size() != 2)
    fail("array_shape_mismatch", "'intersect_polygon' gives a [ring, 2] array (vertex, lon-lat) but is "
                                 "used as a value over " + std::to_string(f.pos.size()) + " axes");
  if (relative_ && (f.pos[0].axis >= 0 || f.pos[1].axis >= 0))
    throw NotRelative{"the vertices of an intersection ring"};
  const std::int64_t v = f.pos[0].v, c = f.pos[1].v;
  if (v < 1 || v > set.size || c < 1 || c > 2)
    fail("array_shape_mismatch", "the intersection ring has " + std::to_string(set.size) +
                                     " vertices of 2 coordinates but is read at [" + std::to_string(v) +
                                     "," + std::to_string(c) + "]");
  return pool_.number(set.ring[static_cast<std::size_t>(v - 1)][static_cast<std::size_t>(c - 1)], false);
}

}  // namespace esi::esm::detail::arrays
