// The Expander's frame: evaluation contexts, relative (per-region) mode and the build-time
// comparisons that narrow a region, and the symbols of cells (expander.hpp).
#include "esm/arrays/expander.hpp"

#include <algorithm>
#include <cmath>

#include "esi/expr/parse.hpp"

namespace esi::esm::detail::arrays {

NodeId Expander::at(NodeId e, const Frame& f, const std::vector<std::pair<expr::StrId, Ix>>& bindings) {
  memo_.clear();
  context_ = next_context_++;
  env_ = bindings;
  drawn_env_.clear();
  const NodeId r = eval(e, f);
  env_.clear();
  return r;
}

bool Expander::needs_cells(NodeId e) {
  if (e < needs_memo_.size() && needs_memo_[e] != 0) return needs_memo_[e] == 2;
  const expr::Node& n = pool_.node(e);
  bool r = false;
  switch (n.op) {
    case Op::Symbol:
      r = array_ids_.count(n.name) || pool_.str(n.name).starts_with("$");
      break;
    case Op::Index: case Op::MakeArray: case Op::Aggregate: case Op::Broadcast: case Op::Const:
    case Op::Skolem: case Op::Rank: case Op::IntersectPolygon: case Op::Transpose: case Op::Reshape:
    case Op::Concat:
      r = true;
      break;
    default:
      for (NodeId k : pool_.children(e)) r = r || needs_cells(k);
  }
  if (e >= needs_memo_.size()) needs_memo_.resize(std::max<std::size_t>(pool_.size(), e + 1), 0);
  needs_memo_[e] = r ? 2 : 1;
  return r;
}

const json& Expander::attrs(NodeId id) {
  auto it = attrs_cache_.find(id);
  if (it == attrs_cache_.end()) it = attrs_cache_.emplace(id, expr::attrs_json(pool_, id)).first;
  return it->second;
}

void Expander::begin_region(const std::vector<std::int64_t>& rep, const std::vector<std::int64_t>& lo,
                  const std::vector<std::int64_t>& hi) {
  relative_ = true;
  rep_ = rep;
  lo_ = lo;
  hi_ = hi;
}

std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>> Expander::open_box() {
  auto saved = std::make_pair(lo_, hi_);
  constexpr std::int64_t kFar = std::int64_t{1} << 40;
  std::fill(lo_.begin(), lo_.end(), -kFar);
  std::fill(hi_.begin(), hi_.end(), kFar);
  return saved;
}

std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>> Expander::close_box(
    std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>> saved) {
  auto own = std::make_pair(lo_, hi_);
  lo_ = std::move(saved.first);
  hi_ = std::move(saved.second);
  narrow(own.first, own.second);
  return own;
}

void Expander::narrow(const std::vector<std::int64_t>& lo, const std::vector<std::int64_t>& hi) {
  for (std::size_t d = 0; d < lo_.size(); ++d) {
    lo_[d] = std::max(lo_[d], lo[d]);
    hi_[d] = std::min(hi_[d], hi[d]);
  }
}

std::vector<Ix> Expander::moving(const std::vector<std::int64_t>& rep) const {
  std::vector<Ix> out;
  for (std::size_t d = 0; d < rep.size(); ++d) out.push_back({rep[d], static_cast<int>(d)});
  return out;
}

bool Expander::test(SVal a, Op op, SVal b) {
  auto truth = [op](double d) {
    switch (op) {
      case Op::Lt: return d < 0;
      case Op::Le: return d <= 0;
      case Op::Gt: return d > 0;
      case Op::Ge: return d >= 0;
      case Op::Eq: return d == 0;
      default: return d != 0;
    }
  };
  const double d0 = a.v - b.v;
  const bool now = truth(d0);
  if (!relative_ || a.axis == b.axis) return now;  // fixed, or a difference along one axis
  ++moving_tests_;
  if (a.axis >= 0 && b.axis >= 0)
    throw NotRelative{"a build-time comparison of positions along two different axes"};
  const int axis = a.axis >= 0 ? a.axis : b.axis;
  const double s = a.axis >= 0 ? 1.0 : -1.0;  // d(x) = d0 + s (x - rep)
  const double r = static_cast<double>(rep_[axis]);
  const double t = r - d0 / s;  // d(t) = 0
  const bool below = truth(-s), above = truth(s), at_t = truth(0.0);
  const bool t_int = t == std::floor(t);
  constexpr std::int64_t kFar = std::int64_t{1} << 40;
  std::int64_t lo = -kFar, hi = kFar;
  if (r < t) {
    hi = static_cast<std::int64_t>(std::ceil(t)) - 1;
    if (t_int && at_t == now) hi = above == now ? kFar : static_cast<std::int64_t>(t);
  } else if (r > t) {
    lo = static_cast<std::int64_t>(std::floor(t)) + 1;
    if (t_int && at_t == now) lo = below == now ? -kFar : static_cast<std::int64_t>(t);
  } else {
    lo = below == now ? -kFar : static_cast<std::int64_t>(t);
    hi = above == now ? kFar : static_cast<std::int64_t>(t);
  }
  lo_[axis] = std::max(lo_[axis], lo);
  hi_[axis] = std::min(hi_[axis], hi);
  return now;
}

bool Expander::test(Ix a, Op op, std::int64_t b) {
  return test(SVal{static_cast<double>(a.v), a.axis}, op, SVal{static_cast<double>(b), -1});
}

NodeId Expander::cell_symbol(const std::string& name, const std::vector<Ix>& cell) {
  if (relative_) return pool_.symbol(relative_name(name, cell));
  if (static_nesting_ == 0 && grid_only_.count(name))
    throw NotRelative{"'" + name + "' is read cell by cell outside an array equation"};
  auto d = st_.declared.find(name);
  if (d != st_.declared.end() && !d->second.unknown) used_[name].insert(plain(cell));
  return pool_.symbol(cell_name(name, plain(cell)));
}

std::string Expander::relative_name(const std::string& name, const std::vector<Ix>& cell) const {
  std::string out = name + "[";
  for (std::size_t d = 0; d < cell.size(); ++d) {
    if (d) out += ",";
    if (cell[d].axis < 0) {
      out += std::to_string(cell[d].v);
      continue;
    }
    const std::int64_t off = cell[d].v - rep_[cell[d].axis];
    out += "@" + std::to_string(cell[d].axis);
    if (off > 0) out += "+" + std::to_string(off);
    if (off < 0) out += std::to_string(off);
  }
  return out + "]";
}

}  // namespace esi::esm::detail::arrays
