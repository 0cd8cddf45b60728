#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <unordered_set>

#include "esi/expr/expr.hpp"

namespace esi::expr {
namespace {

struct OpSpelling {
  Op op;
  std::string_view name;
};

constexpr std::array kSpellings{
    OpSpelling{Op::Add, "+"},          OpSpelling{Op::Sub, "-"},
    OpSpelling{Op::Mul, "*"},          OpSpelling{Op::Div, "/"},
    OpSpelling{Op::Pow, "^"},          OpSpelling{Op::Neg, "neg"},
    OpSpelling{Op::Exp, "exp"},        OpSpelling{Op::Log, "log"},
    OpSpelling{Op::Log10, "log10"},    OpSpelling{Op::Sqrt, "sqrt"},
    OpSpelling{Op::Abs, "abs"},        OpSpelling{Op::Sign, "sign"},
    OpSpelling{Op::Sin, "sin"},        OpSpelling{Op::Cos, "cos"},
    OpSpelling{Op::Tan, "tan"},        OpSpelling{Op::Asin, "asin"},
    OpSpelling{Op::Acos, "acos"},      OpSpelling{Op::Atan, "atan"},
    OpSpelling{Op::Atan2, "atan2"},    OpSpelling{Op::Sinh, "sinh"},
    OpSpelling{Op::Cosh, "cosh"},      OpSpelling{Op::Tanh, "tanh"},
    OpSpelling{Op::Asinh, "asinh"},    OpSpelling{Op::Acosh, "acosh"},
    OpSpelling{Op::Atanh, "atanh"},    OpSpelling{Op::Min, "min"},
    OpSpelling{Op::Max, "max"},        OpSpelling{Op::Floor, "floor"},
    OpSpelling{Op::Ceil, "ceil"},      OpSpelling{Op::IfElse, "ifelse"},
    OpSpelling{Op::Lt, "<"},           OpSpelling{Op::Le, "<="},
    OpSpelling{Op::Gt, ">"},           OpSpelling{Op::Ge, ">="},
    OpSpelling{Op::Eq, "=="},          OpSpelling{Op::Ne, "!="},
    OpSpelling{Op::And, "and"},        OpSpelling{Op::Or, "or"},
    OpSpelling{Op::Not, "not"},        OpSpelling{Op::True, "true"},
    OpSpelling{Op::D, "D"},            OpSpelling{Op::Ic, "ic"},
    OpSpelling{Op::Pre, "Pre"},        OpSpelling{Op::Fn, "fn"},
    OpSpelling{Op::Enum, "enum"},      OpSpelling{Op::TableLookup, "table_lookup"},
    OpSpelling{Op::Const, "const"},    OpSpelling{Op::Index, "index"},
    OpSpelling{Op::MakeArray, "makearray"}, OpSpelling{Op::Aggregate, "aggregate"},
    OpSpelling{Op::Broadcast, "broadcast"}, OpSpelling{Op::Reshape, "reshape"},
    OpSpelling{Op::Transpose, "transpose"}, OpSpelling{Op::Concat, "concat"},
    OpSpelling{Op::Skolem, "skolem"},  OpSpelling{Op::Rank, "rank"},
    OpSpelling{Op::Argmin, "argmin"},  OpSpelling{Op::Argmax, "argmax"},
    OpSpelling{Op::IntersectPolygon, "intersect_polygon"},
    OpSpelling{Op::PolygonIntersectionArea, "polygon_intersection_area"},
    OpSpelling{Op::ApplyTemplate, "apply_expression_template"},
};


}  // namespace

std::string_view op_name(Op op) {
  for (const auto& s : kSpellings)
    if (s.op == op) return s.name;
  return {};
}

Op op_from_name(std::string_view name) {
  for (const auto& s : kSpellings)
    if (s.name == name) return s.op;
  if (name == "faq") return Op::Aggregate;  // newer EarthSciDiscretizations spelling
  return Op::Other;
}

bool is_scalar_op(Op op) {
  return (op >= Op::Add && op <= Op::True);
}

Pool::Pool() {
  strings_.emplace_back();
  string_index_.emplace(std::string(), 0);
}

StrId Pool::intern(std::string_view s) {
  auto it = string_index_.find(s);
  if (it != string_index_.end()) return it->second;
  const auto id = static_cast<StrId>(strings_.size());
  strings_.emplace_back(s);
  string_index_.emplace(std::string(s), id);
  return id;
}

StrId Pool::find_string(std::string_view s) const {
  auto it = string_index_.find(s);
  return it == string_index_.end() ? 0 : it->second;
}

std::uint64_t Pool::hash_of(const Node& n, std::span<const NodeId> children) const {
  // A multiply-xorshift per 64-bit word of the fields that make a node: deterministic across
  // runs (no address or seed), and one multiply per word where byte-wise FNV-1a took eight
  // (hashing was a tenth of flattening the corpus).
  std::uint64_t h = 0x9e3779b97f4a7c15ull;
  auto mix = [&h](std::uint64_t v) {
    h = (h ^ v) * 0xbf58476d1ce4e5b9ull;
    h ^= h >> 31;
  };
  mix(static_cast<std::uint64_t>(n.op) | (std::uint64_t{n.integer_literal} << 8) |
      (std::uint64_t{n.arg_count} << 16));
  mix(std::uint64_t{n.name} | (std::uint64_t{n.attrs} << 32));
  mix(std::bit_cast<std::uint64_t>(n.number));
  for (NodeId c : children) mix(c);
  return h;
}

bool Pool::same(NodeId id, const Node& n, std::span<const NodeId> children) const {
  const Node& m = nodes_[id];
  if (m.op != n.op || m.integer_literal != n.integer_literal || m.arg_count != n.arg_count ||
      m.name != n.name || m.attrs != n.attrs || m.child_count != children.size() ||
      std::bit_cast<std::uint64_t>(m.number) != std::bit_cast<std::uint64_t>(n.number))
    return false;
  const NodeId* mc = child_store_.data() + m.first_child;
  return std::equal(children.begin(), children.end(), mc);
}

namespace {
constexpr std::uint64_t kEmptySlot = ~std::uint64_t{0};
std::uint64_t slot_of(NodeId id, std::uint32_t hash) { return (std::uint64_t{hash} << 32) | id; }
}  // namespace

void Pool::grow_index() {
  std::vector<std::uint64_t> slots(std::max<std::size_t>(64, node_slots_.size() * 2), kEmptySlot);
  const std::size_t mask = slots.size() - 1;
  for (NodeId id = 0; id < nodes_.size(); ++id) {
    std::size_t i = node_hash_[id] & mask;
    while (slots[i] != kEmptySlot) i = (i + 1) & mask;
    slots[i] = slot_of(id, node_hash_[id]);
  }
  node_slots_ = std::move(slots);
}

NodeId Pool::intern_node(const Node& n, std::span<const NodeId> children) {
  if (2 * (nodes_.size() + 1) > node_slots_.size()) grow_index();
  const std::size_t mask = node_slots_.size() - 1;
  const std::uint64_t full = hash_of(n, children);
  const auto hash = static_cast<std::uint32_t>(full ^ (full >> 32));
  std::size_t i = hash & mask;
  for (; node_slots_[i] != kEmptySlot; i = (i + 1) & mask) {
    const std::uint64_t slot = node_slots_[i];
    if (static_cast<std::uint32_t>(slot >> 32) != hash) continue;
    const auto candidate = static_cast<NodeId>(slot);
    if (same(candidate, n, children)) return candidate;
  }
  const auto id = static_cast<NodeId>(nodes_.size());
  Node stored = n;
  stored.first_child = static_cast<std::uint32_t>(child_store_.size());
  stored.child_count = static_cast<std::uint32_t>(children.size());
  const NodeId* base = child_store_.data();
  if (!children.empty() && children.data() >= base && children.data() < base + child_store_.size()) {
    // The children are a span of this pool's own store (a node rebuilt from its children):
    // copy them out before the store can reallocate under them.
    const std::vector<NodeId> copy(children.begin(), children.end());
    child_store_.insert(child_store_.end(), copy.begin(), copy.end());
  } else {
    child_store_.insert(child_store_.end(), children.begin(), children.end());
  }
  nodes_.push_back(stored);
  node_hash_.push_back(hash);
  node_slots_[i] = slot_of(id, hash);
  return id;
}

NodeId Pool::number(double value, bool integer_literal) {
  Node n;
  n.op = Op::Number;
  n.number = value;
  n.integer_literal = integer_literal;
  return intern_node(n, {});
}

NodeId Pool::symbol(std::string_view name) {
  return make(Op::Symbol, {}, 0, intern(name), 0);
}

NodeId Pool::make(Op op, std::span<const NodeId> children, std::uint16_t arg_count, StrId name,
                  StrId attrs) {
  Node n;
  n.op = op;
  n.arg_count = arg_count;
  n.name = name;
  n.attrs = attrs;
  return intern_node(n, children);
}

std::span<const NodeId> Pool::children(NodeId id) const {
  const Node& n = nodes_[id];
  return {child_store_.data() + n.first_child, n.child_count};
}

std::span<const NodeId> Pool::args(NodeId id) const {
  const Node& n = nodes_[id];
  return {child_store_.data() + n.first_child, n.arg_count};
}

std::vector<StrId> symbols_under(const Pool& pool, NodeId root) {
  std::vector<StrId> names;
  std::unordered_set<StrId> named;
  std::unordered_set<NodeId> seen{root};
  std::vector<NodeId> stack{root};
  while (!stack.empty()) {
    const NodeId id = stack.back();
    stack.pop_back();
    const Node& n = pool.node(id);
    if (n.op == Op::Symbol && named.insert(n.name).second) names.push_back(n.name);
    for (NodeId k : pool.children(id))
      if (seen.insert(k).second) stack.push_back(k);
  }
  return names;
}

}  // namespace esi::expr
