// reshape, transpose and concat (spec §4.3.5): array-valued operators whose results are
// anonymous (they name no index sets), read at a cell by mapping the cell's position onto the
// operand's. Such a result aligns with the value around it positionally (§4.3.4 rule 2): its
// axes are the frame's first axes in order, and an axis of extent 1 broadcasts.
#include <algorithm>
#include <numeric>

#include "esm/arrays/expander.hpp"

namespace esi::esm::detail::arrays {

namespace {

std::string extents_text(const std::vector<std::int64_t>& e) {
  std::string out = "(";
  for (std::size_t d = 0; d < e.size(); ++d) out += (d ? ", " : "") + std::to_string(e[d]);
  return out + (e.size() == 1 ? ",)" : ")");
}

/// The dimensions of a nested JSON array (a `const` literal), first axis outermost.
std::vector<std::int64_t> literal_extents(const json& v) {
  std::vector<std::int64_t> out;
  for (const json* at = &v; at->is_array(); at = at->empty() ? nullptr : &(*at)[0]) {
    out.push_back(static_cast<std::int64_t>(at->size()));
    if (at->empty()) break;
  }
  return out;
}

}  // namespace

std::vector<std::int64_t> Expander::extents_of(NodeId e) {
  // A node's shape is the same at every cell: computed once (the shape operators ask per cell).
  if (const auto known = extents_cache_.find(e); known != extents_cache_.end())
    return known->second;
  std::vector<std::int64_t> shape = extents_uncached(e);
  extents_cache_.emplace(e, shape);
  return shape;
}

std::vector<std::int64_t> Expander::extents_uncached(NodeId e) {
  const expr::Node n = pool_.node(e);
  const std::vector<NodeId> args = args_of(e);
  switch (n.op) {
    case Op::Number:
      return {};
    case Op::Symbol: {
      if (const ArrayShape* a = array_of(e)) {
        ready(*a);
        return a->extents;
      }
      return {};
    }
    case Op::Const:
      return literal_extents(attrs(e).value("value", json()));
    case Op::Index:
    case Op::Fn:
      return {};
    case Op::Transpose: {
      if (args.size() != 1) fail("invalid_transpose", "'transpose' takes one operand");
      const std::vector<std::int64_t> in = extents_of(args[0]);
      std::vector<std::int64_t> out;
      for (std::size_t p : permutation(e, in.size())) out.push_back(in[p]);
      return out;
    }
    case Op::Reshape: {
      const json shape = attrs(e).value("shape", json());
      if (!shape.is_array() || shape.empty())
        fail("invalid_reshape", "'reshape' needs a 'shape': a list of lengths");
      std::vector<std::int64_t> out;
      for (const json& s : shape) {
        if (s.is_string()) {  // a symbolic length: an index set's size
          auto size = st_.doc.index_set_sizes.find(s.get<std::string>());
          if (size == st_.doc.index_set_sizes.end())
            fail("invalid_reshape",
                 "reshape length '" + s.get<std::string>() + "' names no index set with a size");
          out.push_back(size->second);
        } else {
          out.push_back(json_int(s, "a reshape length"));
          if (out.back() < 1) fail("invalid_reshape", "reshape lengths must be positive");
        }
      }
      if (args.size() != 1) fail("invalid_reshape", "'reshape' takes one operand");
      const std::vector<std::int64_t> in = extents_of(args[0]);
      const auto count = [](const std::vector<std::int64_t>& v) {
        return std::accumulate(v.begin(), v.end(), std::int64_t{1}, std::multiplies<>());
      };
      if (count(in) != count(out))
        fail("array_shape_mismatch", "reshape of an array of shape " + extents_text(in) + " (" +
                                         std::to_string(count(in)) + " elements) to " +
                                         extents_text(out) + " (" + std::to_string(count(out)) +
                                         "): the count must be kept");
      return out;
    }
    case Op::Concat: {
      if (args.empty()) fail("invalid_concat", "'concat' needs operands");
      const std::size_t axis = concat_axis(e);
      std::vector<std::int64_t> out;
      for (std::size_t k = 0; k < args.size(); ++k) {
        std::vector<std::int64_t> in = extents_of(args[k]);
        if (in.size() <= axis)
          fail("array_shape_mismatch", "concat along axis " + std::to_string(axis) +
                                           " of an operand of shape " + extents_text(in));
        if (k == 0) {
          out = in;
          continue;
        }
        for (std::size_t d = 0; d < in.size(); ++d)
          if (d != axis && (in.size() != out.size() || in[d] != out[d]))
            fail("array_shape_mismatch", "concat operand " + std::to_string(k + 1) + " has shape " +
                                             extents_text(in) + ", which differs from " +
                                             extents_text(out) + " off axis " +
                                             std::to_string(axis));
        out[axis] += in[axis];
      }
      return out;
    }
    case Op::MakeArray: {
      std::vector<std::int64_t> out;
      for (const json& reg : attrs(e).value("regions", json::array())) {
        if (!reg.is_array()) continue;
        out.resize(std::max(out.size(), reg.size()), 0);
        for (std::size_t d = 0; d < reg.size(); ++d)
          if (reg[d].is_array() && reg[d].size() == 2)
            out[d] = std::max(out[d], json_int(reg[d][1], "a makearray region bound"));
      }
      return out;
    }
    case Op::Aggregate: {
      const json& a = attrs(e);
      const json ranges = a.value("ranges", json::object());
      std::vector<std::int64_t> out;
      for (const json& o : a.value("output_idx", json::array())) {
        if (!o.is_string()) {
          out.push_back(1);  // a singleton axis
          continue;
        }
        const std::string sym = o.get<std::string>();
        if (!ranges.contains(sym))
          fail("array_shape_mismatch", "the shape of an aggregate whose output index '" + sym +
                                           "' has no range is not known here; give it a range");
        out.push_back(range_of(ranges[sym], sym).stop);
      }
      return out;
    }
    default: {
      // Elementwise (an operator or a broadcast): the operands' shapes broadcast together.
      std::vector<std::int64_t> out;
      for (NodeId k : args) {
        const std::vector<std::int64_t> in = extents_of(k);
        if (in.size() > out.size()) out.resize(in.size(), 1);
        for (std::size_t d = 0; d < in.size(); ++d) {
          if (in[d] == out[d] || in[d] == 1) continue;
          if (out[d] != 1)
            fail("array_shape_mismatch", "operands of shapes " + extents_text(out) + " and " +
                                             extents_text(in) + " do not broadcast (axis " +
                                             std::to_string(d + 1) + ")");
          out[d] = in[d];
        }
      }
      return out;
    }
  }
}

std::vector<std::size_t> Expander::permutation(NodeId e, std::size_t rank) {
  const json perm = attrs(e).value("perm", json());
  std::vector<std::size_t> out(rank);
  if (perm.is_null()) {  // the axes reversed
    for (std::size_t k = 0; k < rank; ++k) out[k] = rank - 1 - k;
    return out;
  }
  if (!perm.is_array() || perm.size() != rank)
    fail("invalid_transpose", "'perm' " + perm.dump() + " must list each of the operand's " +
                                  std::to_string(rank) + " axes once (0-based)");
  std::vector<bool> seen(rank, false);
  for (std::size_t k = 0; k < rank; ++k) {
    const std::int64_t p = json_int(perm[k], "a 'perm' entry");
    if (p < 0 || p >= static_cast<std::int64_t>(rank) || seen[static_cast<std::size_t>(p)])
      fail("invalid_transpose", "'perm' " + perm.dump() + " must list each of the operand's " +
                                    std::to_string(rank) + " axes once (0-based)");
    seen[static_cast<std::size_t>(p)] = true;
    out[k] = static_cast<std::size_t>(p);
  }
  return out;
}

std::size_t Expander::concat_axis(NodeId e) {
  const json axis = attrs(e).value("axis", json(0));
  const std::int64_t a = json_int(axis, "the concat 'axis'");
  if (a < 0) fail("invalid_concat", "the concat 'axis' is 0-based and must not be negative");
  return static_cast<std::size_t>(a);
}

std::vector<Ix> Expander::positional(const Frame& f, const std::vector<std::int64_t>& extents,
                                     const char* what) {
  if (f.scalar())
    fail("array_used_as_scalar",
         std::string("a '") + what + "' is used where one value is expected");
  std::vector<Ix> pos;
  for (std::size_t d = 0; d < extents.size(); ++d) {
    if (extents[d] == 1) {
      pos.push_back(Ix{1, -1});
      continue;
    }
    if (d >= f.pos.size())
      fail("array_shape_mismatch", std::string("a '") + what + "' of shape " +
                                       extents_text(extents) + " is used in a value with " +
                                       std::to_string(f.pos.size()) + " axes");
    if (!test(f.pos[d], Op::Ge, 1) || !test(f.pos[d], Op::Le, extents[d]))
      fail("array_shape_mismatch", std::string("a '") + what + "' of shape " +
                                       extents_text(extents) + " is read at position " +
                                       std::to_string(f.pos[d].v) + " along axis " +
                                       std::to_string(d + 1));
    pos.push_back(f.pos[d]);
  }
  return pos;
}

NodeId Expander::transpose_cell(NodeId e, const Frame& f) {
  const std::vector<std::int64_t> shape = extents_of(e);
  const std::vector<Ix> at = positional(f, shape, "transpose");
  const NodeId operand = args_of(e)[0];
  const std::vector<std::size_t> perm = permutation(e, shape.size());
  // Result axis k is operand axis perm[k]: the operand is read with position k on axis perm[k].
  std::vector<Ix> in(shape.size());
  for (std::size_t k = 0; k < shape.size(); ++k) in[perm[k]] = at[k];
  return in_context([&] { return eval(operand, Frame{{}, in}); });
}

NodeId Expander::reshape_cell(NodeId e, const Frame& f) {
  const std::vector<std::int64_t> shape = extents_of(e);
  const std::vector<Ix> at = positional(f, shape, "reshape");
  for (const Ix& p : at)
    if (relative_ && p.axis >= 0) throw NotRelative{"a reshape read at a cell-dependent position"};
  const NodeId operand = args_of(e)[0];
  const std::vector<std::int64_t> in_shape = extents_of(operand);
  // Column-major, as Julia's reshape: the first index varies fastest on both sides.
  std::int64_t linear = 0, stride = 1;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    linear += (at[d].v - 1) * stride;
    stride *= shape[d];
  }
  std::vector<Ix> in;
  for (std::int64_t extent : in_shape) {
    in.push_back(Ix{linear % extent + 1, -1});
    linear /= extent;
  }
  return in_context([&] { return eval(operand, Frame{{}, in}); });
}

NodeId Expander::concat_cell(NodeId e, const Frame& f) {
  const std::vector<std::int64_t> shape = extents_of(e);
  const std::vector<Ix> at = positional(f, shape, "concat");
  const std::size_t axis = concat_axis(e);
  std::int64_t before = 0;
  for (NodeId operand : args_of(e)) {
    const std::int64_t extent = extents_of(operand)[axis];
    if (test(at[axis], Op::Le, before + extent)) {  // narrows the box in the per-region form
      std::vector<Ix> in = at;
      in[axis].v -= before;
      return in_context([&] { return eval(operand, Frame{{}, in}); });
    }
    before += extent;
  }
  fail("array_shape_mismatch", "concat read past its end along axis " + std::to_string(axis));
}

}  // namespace esi::esm::detail::arrays
