// The expression DAG: every ESM expression (spec §4) lives in a hash-consed Pool.
//
// Structurally identical subtrees share one node, so a template expanded at many sites, or an
// observed referenced many times, costs one node. A node is (op, name, number, attrs, children).
// `children` are the `args` followed by the node's other Expression-valued fields (`expr`,
// `filter`, `lower`, `upper`, `values[]`, `bindings{}`, `axes{}`); `attrs` is the interned
// canonical JSON of the node's remaining (non-Expression) fields, in which each
// Expression-valued field is replaced by {"$child": k}. Node ids are dense, so passes keep
// per-node tables in plain vectors.
#pragma once

#include <cstdint>
#include <span>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace esi::expr {

enum class Op : std::uint8_t {
  // leaves
  Number, Symbol,
  // arithmetic
  Add, Sub, Mul, Div, Pow, Neg,
  // elementary functions
  Exp, Log, Log10, Sqrt, Abs, Sign, Sin, Cos, Tan, Asin, Acos, Atan, Atan2, Sinh, Cosh, Tanh,
  Asinh, Acosh, Atanh, Min, Max, Floor, Ceil,
  // conditionals and logic (comparisons yield 1.0 / 0.0)
  IfElse, Lt, Le, Gt, Ge, Eq, Ne, And, Or, Not, True,
  // calculus and events
  D, Ic, Pre,
  // closed registry, constants
  Fn, Enum, TableLookup, Const,
  // arrays and queries
  Index, MakeArray, Aggregate, Broadcast, Reshape, Transpose, Concat, Skolem, Rank, Argmin,
  Argmax, IntersectPolygon, PolygonIntersectionArea,
  // templates
  ApplyTemplate,
  // any other identifier: an open-tier rewrite-target op (grad, div, integral, user ops)
  Other,
};

using NodeId = std::uint32_t;
using StrId = std::uint32_t;  ///< interned string; 0 is the empty string
inline constexpr NodeId kNoNode = 0xffffffffu;

struct Node {
  Op op = Op::Number;
  bool integer_literal = false;  ///< a Number written as a JSON integer (index arithmetic)
  std::uint16_t arg_count = 0;   ///< how many children are `args` (the rest are fields)
  StrId name = 0;   ///< Symbol: the name; D: wrt; Fn: fn name; Other: the op; ApplyTemplate: name
  StrId attrs = 0;  ///< canonical JSON of the other fields ("" when none)
  double number = 0.0;
  std::uint32_t first_child = 0;
  std::uint32_t child_count = 0;
};

/// Owns nodes and interned strings. Not thread-safe for insertion; reads are.
class Pool {
 public:
  Pool();

  NodeId number(double value, bool integer_literal = false);
  NodeId symbol(std::string_view name);
  /// Interns a node; returns the existing id when an identical node exists.
  NodeId make(Op op, std::span<const NodeId> children, std::uint16_t arg_count, StrId name = 0,
              StrId attrs = 0);
  NodeId make(Op op, std::span<const NodeId> args) {
    return make(op, args, static_cast<std::uint16_t>(args.size()));
  }

  const Node& node(NodeId id) const { return nodes_[id]; }
  std::span<const NodeId> children(NodeId id) const;
  std::span<const NodeId> args(NodeId id) const;
  std::size_t size() const { return nodes_.size(); }

  StrId intern(std::string_view s);
  std::string_view str(StrId id) const { return strings_[id]; }
  /// The interned id of `s` or 0 when never interned (no insertion).
  StrId find_string(std::string_view s) const;
  /// Interned strings so far (ids 0 .. string_count() - 1).
  std::size_t string_count() const { return strings_.size(); }

 private:
  /// Hash-consing: returns the id of a node equal to `n` with `children`, adding it if new.
  NodeId intern_node(const Node& n, std::span<const NodeId> children);
  std::uint64_t hash_of(const Node& n, std::span<const NodeId> children) const;
  bool same(NodeId id, const Node& n, std::span<const NodeId> children) const;
  void grow_index();

  std::vector<Node> nodes_;
  std::vector<NodeId> child_store_;
  std::vector<std::string> strings_;
  /// Transparent hash and equality: a lookup by string_view builds no std::string.
  struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, StrId, StringHash, std::equal_to<>> string_index_;
  // Open addressing, size a power of two, at most half full. A slot holds a node's id in its
  // low 32 bits and 32 bits of the node's hash above them (~0: empty), so a probe compares
  // nodes only when their hashes agree, and growing reuses the stored hashes (node_hash_).
  // Plain ids, no pointers: a copied or moved Pool keeps a valid index.
  std::vector<std::uint64_t> node_slots_;
  std::vector<std::uint32_t> node_hash_;  ///< by node id
};

/// Spelling of an op as it appears in JSON ("+", "ifelse", ...); Other returns "".
std::string_view op_name(Op op);
/// The Op for a JSON op string (Other for an unknown but well-formed identifier).
Op op_from_name(std::string_view name);
/// True for ops whose value is a plain function of scalar arguments.
bool is_scalar_op(Op op);

/// The name of every Symbol under `root`, each once, in first-seen order (one walk of the DAG,
/// each node visited once).
std::vector<StrId> symbols_under(const Pool& pool, NodeId root);

}  // namespace esi::expr
