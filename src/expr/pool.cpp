#include <array>
#include <bit>
#include <cstring>

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

void append_raw(std::string& key, const void* p, std::size_t n) {
  key.append(static_cast<const char*>(p), n);
}

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

std::size_t Pool::KeyHash::operator()(const std::string& k) const noexcept {
  // FNV-1a over the packed key: deterministic across runs (no address or seed involved).
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : k) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return static_cast<std::size_t>(h);
}

Pool::Pool() {
  strings_.emplace_back();
  string_index_.emplace(std::string(), 0);
}

StrId Pool::intern(std::string_view s) {
  auto it = string_index_.find(std::string(s));
  if (it != string_index_.end()) return it->second;
  const auto id = static_cast<StrId>(strings_.size());
  strings_.emplace_back(s);
  string_index_.emplace(std::string(s), id);
  return id;
}

StrId Pool::find_string(std::string_view s) const {
  auto it = string_index_.find(std::string(s));
  return it == string_index_.end() ? 0 : it->second;
}

NodeId Pool::number(double value, bool integer_literal) {
  Node n;
  n.op = Op::Number;
  n.number = value;
  n.integer_literal = integer_literal;
  std::string key;
  key.push_back(static_cast<char>(Op::Number));
  key.push_back(integer_literal ? 1 : 0);
  const std::uint64_t bits = std::bit_cast<std::uint64_t>(value);
  append_raw(key, &bits, sizeof bits);
  auto [it, inserted] = node_index_.emplace(std::move(key), static_cast<NodeId>(nodes_.size()));
  if (inserted) nodes_.push_back(n);
  return it->second;
}

NodeId Pool::symbol(std::string_view name) {
  return make(Op::Symbol, {}, 0, intern(name), 0);
}

NodeId Pool::make(Op op, std::span<const NodeId> children, std::uint16_t arg_count, StrId name,
                  StrId attrs) {
  std::string key;
  key.reserve(16 + 4 * children.size());
  key.push_back(static_cast<char>(op));
  append_raw(key, &arg_count, sizeof arg_count);
  append_raw(key, &name, sizeof name);
  append_raw(key, &attrs, sizeof attrs);
  for (NodeId c : children) append_raw(key, &c, sizeof c);
  auto [it, inserted] = node_index_.emplace(std::move(key), static_cast<NodeId>(nodes_.size()));
  if (inserted) {
    Node n;
    n.op = op;
    n.arg_count = arg_count;
    n.name = name;
    n.attrs = attrs;
    n.first_child = static_cast<std::uint32_t>(child_store_.size());
    n.child_count = static_cast<std::uint32_t>(children.size());
    child_store_.insert(child_store_.end(), children.begin(), children.end());
    nodes_.push_back(n);
  }
  return it->second;
}

std::span<const NodeId> Pool::children(NodeId id) const {
  const Node& n = nodes_[id];
  return {child_store_.data() + n.first_child, n.child_count};
}

std::span<const NodeId> Pool::args(NodeId id) const {
  const Node& n = nodes_[id];
  return {child_store_.data() + n.first_child, n.arg_count};
}

}  // namespace esi::expr
