#include "esi/expr/parse.hpp"

#include <cmath>
#include <sstream>

#include "esi/core/error.hpp"
#include "esi/core/json.hpp"

namespace esi::expr {
namespace {

using nlohmann::json;

enum class FieldKind { Single, List, Map };

/// Fields whose values are Expressions (spec §4.2, §4.3, §9.5, §9.6); everything else on a
/// node is a scalar attribute kept verbatim in `attrs`.
bool expression_field(std::string_view key, FieldKind& kind) {
  if (key == "expr" || key == "filter" || key == "key" || key == "lower" || key == "upper") {
    kind = FieldKind::Single;
    return true;
  }
  if (key == "values") {
    kind = FieldKind::List;
    return true;
  }
  if (key == "bindings" || key == "axes") {
    kind = FieldKind::Map;
    return true;
  }
  return false;
}

[[noreturn]] void fail(const std::string& file, const std::string& pointer,
                       const std::string& message) {
  throw Error("invalid_expression", file, pointer, message);
}

struct Parser {
  Pool& pool;
  const std::string& file;

  NodeId parse(const json& v, const std::string& ptr) {
    switch (v.type()) {
      case json::value_t::number_integer:
      case json::value_t::number_unsigned:
        return pool.number(v.get<double>(), true);
      case json::value_t::number_float:
        return pool.number(v.get<double>(), false);
      case json::value_t::string: {
        const auto& s = v.get_ref<const std::string&>();
        if (s.empty()) fail(file, ptr, "an empty string is not a variable name");
        return pool.symbol(s);
      }
      case json::value_t::object:
        return parse_node(v, ptr);
      default:
        fail(file, ptr,
             std::string("expected an expression (a number, a name or an {\"op\": ...} node), "
                         "found ") + v.type_name());
    }
  }

  NodeId parse_node(const json& v, const std::string& ptr) {
    auto op_it = v.find("op");
    if (op_it == v.end() || !op_it->is_string())
      fail(file, ptr, "an expression node needs a string field \"op\"");
    const std::string& op_str = op_it->get_ref<const std::string&>();
    if (op_str.empty()) fail(file, pointer_join(ptr, "op"), "the operator name is empty");
    const Op op = op_from_name(op_str);

    std::vector<NodeId> children;
    auto args_it = v.find("args");
    if (args_it != v.end()) {
      if (!args_it->is_array()) fail(file, pointer_join(ptr, "args"), "\"args\" must be an array");
      const std::string args_ptr = pointer_join(ptr, "args");
      for (std::size_t i = 0; i < args_it->size(); ++i)
        children.push_back(parse((*args_it)[i], pointer_join(args_ptr, i)));
    }
    if (children.size() > 0xffff) fail(file, ptr, "too many operands");
    const auto arg_count = static_cast<std::uint16_t>(children.size());

    json attrs = json::object();
    StrId name = 0;
    for (auto it = v.begin(); it != v.end(); ++it) {
      const std::string& key = it.key();
      if (key == "op" || key == "args") continue;
      const std::string fptr = pointer_join(ptr, key);
      FieldKind kind;
      if (expression_field(key, kind) && !(op == Op::Const)) {
        if (kind == FieldKind::Single) {
          attrs[key] = json{{"$child", children.size()}};
          children.push_back(parse(it.value(), fptr));
        } else if (kind == FieldKind::List) {
          if (!it.value().is_array()) fail(file, fptr, "\"" + key + "\" must be an array");
          json slots = json::array();
          for (std::size_t i = 0; i < it.value().size(); ++i) {
            slots.push_back(json{{"$child", children.size()}});
            children.push_back(parse(it.value()[i], pointer_join(fptr, i)));
          }
          attrs[key] = std::move(slots);
        } else {
          if (!it.value().is_object()) fail(file, fptr, "\"" + key + "\" must be an object");
          json slots = json::object();
          for (auto b = it.value().begin(); b != it.value().end(); ++b) {
            slots[b.key()] = json{{"$child", children.size()}};
            children.push_back(parse(b.value(), pointer_join(fptr, b.key())));
          }
          attrs[key] = std::move(slots);
        }
        continue;
      }
      attrs[key] = it.value();
    }

    // The field that names what the node is about is kept as `name` for fast access.
    auto take_name = [&](const char* field) {
      auto f = attrs.find(field);
      if (f != attrs.end() && f->is_string()) {
        name = pool.intern(f->get_ref<const std::string&>());
        attrs.erase(f);
      }
    };
    switch (op) {
      case Op::D: take_name("wrt"); break;
      case Op::Fn: take_name("name"); break;
      case Op::ApplyTemplate: take_name("name"); break;
      case Op::Other: name = pool.intern(op_str); break;
      default: break;
    }
    if (op == Op::Aggregate && op_str == "faq") attrs["$spelling"] = "faq";
    const StrId attrs_id = attrs.empty() ? 0 : pool.intern(canonical_json(attrs));
    return pool.make(op, children, arg_count, name, attrs_id);
  }
};

json restore_slots(const json& slot, const Pool& pool, std::span<const NodeId> children) {
  if (slot.is_object()) {
    auto c = slot.find("$child");
    if (c != slot.end() && slot.size() == 1) return to_json(pool, children[c->get<std::size_t>()]);
    json out = json::object();
    for (auto it = slot.begin(); it != slot.end(); ++it)
      out[it.key()] = restore_slots(it.value(), pool, children);
    return out;
  }
  if (slot.is_array()) {
    json out = json::array();
    for (const auto& e : slot) out.push_back(restore_slots(e, pool, children));
    return out;
  }
  return slot;
}

bool is_infix(Op op) {
  switch (op) {
    case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: case Op::Pow: case Op::Lt:
    case Op::Le: case Op::Gt: case Op::Ge: case Op::Eq: case Op::Ne: case Op::And: case Op::Or:
      return true;
    default:
      return false;
  }
}

std::string format_number(double x, bool integer_literal) {
  if (integer_literal && std::isfinite(x)) {
    std::ostringstream os;
    os.precision(17);
    os << static_cast<long long>(x);
    return os.str();
  }
  json j = x;
  return j.dump();
}

}  // namespace

NodeId parse(Pool& pool, const json& value, const std::string& file, const std::string& pointer) {
  Parser p{pool, file};
  return p.parse(value, pointer);
}

json attrs_json(const Pool& pool, NodeId id) {
  const Node& n = pool.node(id);
  if (n.attrs == 0) return json::object();
  return json::parse(pool.str(n.attrs));
}

json to_json(const Pool& pool, NodeId id) {
  const Node& n = pool.node(id);
  switch (n.op) {
    case Op::Number:
      if (n.integer_literal) return json(static_cast<std::int64_t>(n.number));
      return json(n.number);
    case Op::Symbol:
      return json(std::string(pool.str(n.name)));
    default:
      break;
  }
  json out = json::object();
  const auto children = pool.children(id);
  if (n.attrs != 0) {
    json attrs = json::parse(pool.str(n.attrs));
    for (auto it = attrs.begin(); it != attrs.end(); ++it) {
      if (it.key() == "$spelling") continue;
      out[it.key()] = restore_slots(it.value(), pool, children);
    }
  }
  std::string op(op_name(n.op));
  if (n.op == Op::Other) op = std::string(pool.str(n.name));
  if (n.op == Op::Aggregate && out.contains("$spelling")) op = "faq";
  if (n.op == Op::D && n.name != 0) out["wrt"] = std::string(pool.str(n.name));
  if ((n.op == Op::Fn || n.op == Op::ApplyTemplate) && n.name != 0)
    out["name"] = std::string(pool.str(n.name));
  out["op"] = op;
  json args = json::array();
  for (std::size_t i = 0; i < n.arg_count; ++i) args.push_back(to_json(pool, children[i]));
  out["args"] = std::move(args);
  return out;
}

std::string to_infix(const Pool& pool, NodeId id) {
  const Node& n = pool.node(id);
  if (n.op == Op::Number) return format_number(n.number, n.integer_literal);
  if (n.op == Op::Symbol) return std::string(pool.str(n.name));
  const auto args = pool.args(id);
  std::string op(n.op == Op::Other ? pool.str(n.name) : op_name(n.op));
  if (is_infix(n.op) && args.size() >= 2) {
    std::string s = "(";
    for (std::size_t i = 0; i < args.size(); ++i) {
      if (i) s += " " + op + " ";
      s += to_infix(pool, args[i]);
    }
    return s + ")";
  }
  if ((n.op == Op::Sub || n.op == Op::Neg) && args.size() == 1)
    return "-(" + to_infix(pool, args[0]) + ")";
  if (n.op == Op::Fn) op = std::string(pool.str(n.name));
  std::string s = op + "(";
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (i) s += ", ";
    s += to_infix(pool, args[i]);
  }
  if (n.op == Op::D) s += std::string(args.empty() ? "" : ", ") +
                          (n.name ? std::string(pool.str(n.name)) : std::string("t"));
  if (n.op == Op::ApplyTemplate) s += std::string(pool.str(n.name));
  return s + ")";
}

}  // namespace esi::expr
