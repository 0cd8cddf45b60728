// Values known when the model is built: indices, region bounds, filters and the table entries
// they read (a constant parameter, an input, or an observed that folds to a number).
#include <cmath>

#include "esi/expr/parse.hpp"
#include "esm/arrays/expander.hpp"

namespace esi::esm::detail::arrays {

SVal Expander::static_value(NodeId e) {
  const expr::Node n = pool_.node(e);
  const std::vector<NodeId> args = args_of(e);
  auto a = [&](std::size_t i) { return static_value(args[i]); };
  auto fixed = [](double v) { return SVal{v, -1}; };
  auto moving_op = [&]() -> SVal {
    throw NotRelative{"'" + std::string(expr::op_name(n.op)) +
                      "' of a cell position in an index expression"};
  };
  auto cmp = [&](Op op) { return fixed(test(a(0), op, a(1)) ? 1.0 : 0.0); };
  auto truthy = [&](SVal x) { return test(x, Op::Ne, fixed(0.0)); };
  switch (n.op) {
    case Op::Number: return fixed(n.number);
    case Op::Symbol:
      if (auto v = bound(n.name)) return SVal{static_cast<double>(v->v), v->axis};
      return fixed(static_constant(e));
    case Op::Add: {
      SVal v = a(0);
      for (std::size_t i = 1; i < args.size(); ++i) {
        const SVal x = a(i);
        if (v.axis >= 0 && x.axis >= 0) return moving_op();
        v = SVal{v.v + x.v, std::max(v.axis, x.axis)};
      }
      return v;
    }
    case Op::Mul: {
      SVal v = a(0);
      for (std::size_t i = 1; i < args.size(); ++i) {
        const SVal x = a(i);
        if (v.axis >= 0 && x.axis >= 0) return moving_op();
        const SVal& m = v.axis >= 0 ? v : x;
        const SVal& c = v.axis >= 0 ? x : v;
        if (m.axis >= 0 && c.v == 0) v = fixed(0.0);
        else if (m.axis >= 0 && c.v != 1) return moving_op();
        else v = SVal{v.v * x.v, m.axis};
      }
      return v;
    }
    case Op::Sub: {
      if (args.size() == 1) {
        const SVal x = a(0);
        return x.axis >= 0 ? moving_op() : fixed(-x.v);
      }
      const SVal x = a(0), y = a(1);
      if (y.axis >= 0 && x.axis != y.axis) return moving_op();
      return SVal{x.v - y.v, x.axis == y.axis ? -1 : x.axis};
    }
    case Op::Neg: {
      const SVal x = a(0);
      return x.axis >= 0 ? moving_op() : fixed(-x.v);
    }
    case Op::Div: {
      const SVal x = a(0), y = a(1);
      if (y.axis >= 0 || (x.axis >= 0 && y.v != 1)) return moving_op();
      return SVal{x.v / y.v, x.axis};
    }
    case Op::Min: case Op::Max: {
      SVal v = a(0);
      for (std::size_t i = 1; i < args.size(); ++i) {
        const SVal x = a(i);
        const bool keep = test(v, n.op == Op::Min ? Op::Le : Op::Ge, x);
        if (!keep) v = x;
      }
      return v;
    }
    case Op::Abs: {
      const SVal x = a(0);
      if (x.axis < 0) return fixed(std::abs(x.v));
      if (!test(x, Op::Ge, fixed(0.0))) return moving_op();
      return x;
    }
    case Op::Floor: case Op::Ceil: {
      const SVal x = a(0);
      if (x.axis >= 0) return x;  // positions are integers
      return fixed(n.op == Op::Floor ? std::floor(x.v) : std::ceil(x.v));
    }
    case Op::Lt: return cmp(Op::Lt);
    case Op::Le: return cmp(Op::Le);
    case Op::Gt: return cmp(Op::Gt);
    case Op::Ge: return cmp(Op::Ge);
    case Op::Eq: return cmp(Op::Eq);
    case Op::Ne: return cmp(Op::Ne);
    case Op::And: {
      bool v = true;
      for (std::size_t i = 0; i < args.size() && v; ++i) v = truthy(a(i));
      return fixed(v);
    }
    case Op::Or: {
      bool v = false;
      for (std::size_t i = 0; i < args.size() && !v; ++i) v = truthy(a(i));
      return fixed(v);
    }
    case Op::Not: return fixed(!truthy(a(0)));
    case Op::True: return fixed(1.0);
    case Op::IfElse: return truthy(a(0)) ? a(1) : a(2);
    case Op::Skolem: return fixed(skolem_id(static_key(e)));
    case Op::Index: {
      // A gather from literal data (connectivity, enum tables) is static too.
      ++static_nesting_;
      struct Unnest {
        int& n;
        ~Unnest() { --n; }
      } unnest{static_nesting_};
      const NodeId v = gather(e, Frame{});
      if (pool_.node(v).op == Op::Number) return fixed(pool_.node(v).number);
      if (pool_.node(v).op != Op::Symbol) {
        // A gather that itself selects at run time: its value is not known now either.
        if ((runtime_probe_ > 0 && static_depth_ == 0) || !deriving_.empty())
          throw RuntimeIndex{"a table read at a position known only while the model runs"};
        fail("unsupported_array_feature",
             "an index reads a table at a position known only while the model runs; such "
             "indices are supported only as the position of a gather");
      }
      return fixed(static_constant(v));
    }
    default:
      fail("unsupported_array_feature",
           "'" + std::string(expr::op_name(n.op)) +
               "' in an index expression: gathers at run-time positions are not supported yet "
               "(indices must be computable when the model is built)");
  }
}

double Expander::static_constant(NodeId symbol) {
  const std::string name = name_of(symbol);
  if (name.find('@') != std::string::npos)
    throw NotRelative{"an index reads '" + name + "', a cell-dependent table entry"};
  std::string array = name;
  std::vector<std::int64_t> cell;
  if (const auto open = name.find('['); open != std::string::npos && name.back() == ']') {
    array = name.substr(0, open);
    std::string rest = name.substr(open + 1, name.size() - open - 2);
    for (std::size_t p = 0; p <= rest.size();) {
      const std::size_t comma = std::min(rest.find(',', p), rest.size());
      cell.push_back(std::stoll(rest.substr(p, comma - p)));
      p = comma + 1;
    }
  }
  const auto d = st_.declared.find(array);
  const bool parameter = d != st_.declared.end() && !d->second.unknown;
  auto runtime = [&]() -> double {
    // A gather asked for this position may read it while the model runs instead.
    if ((runtime_probe_ > 0 && static_depth_ == 0) || !deriving_.empty())
      throw RuntimeIndex{"'" + pretty(symbol) + "'", parameter};
    fail("unsupported_array_feature",
         "an index reads '" + pretty(symbol) +
             "', a value known only while the model runs; gathers at run-time positions are "
             "not supported yet (indices must be computable when the model is built)");
  };
  if (auto d = st_.declared.find(array); d != st_.declared.end() && !d->second.unknown) {
    if (d->second.var.cadence != Cadence::Constant) return runtime();
    // The caller's input replaces the default (apply_inputs), so it is the value here too.
    if (auto v = input_value(array, cell)) return *v;
    if (d->second.var.default_value) return *d->second.var.default_value;
    return runtime();
  }
  auto o = st_.observed_eqs.find(array);
  if (o == st_.observed_eqs.end() || static_depth_ > 64 || st_.observed_pieces.count(array)) return runtime();
  // Evaluate that definition at the cell, with this evaluation's state set aside.
  auto saved_env = std::move(env_);
  auto saved_memo = std::move(memo_);
  const std::uint64_t saved_context = context_;
  const bool saved_relative = relative_;
  relative_ = false;
  ++static_nesting_;
  ++static_depth_;
  env_.clear();
  memo_.clear();
  context_ = next_context_++;
  const auto a = st_.arrays.find(array);
  Frame f;
  if (a != st_.arrays.end()) f = Frame{a->second.axes, absolute(cell)};
  const NodeId v = eval(o->second.rhs, f);
  const double value = static_value(v).v;
  --static_depth_;
  --static_nesting_;
  relative_ = saved_relative;
  env_ = std::move(saved_env);
  memo_ = std::move(saved_memo);
  context_ = saved_context;
  return value;
}

std::optional<double> Expander::input_value(const std::string& array, const std::vector<std::int64_t>& cell) const {
  if (!st_.inputs || !st_.inputs->is_object()) return std::nullopt;
  const json* v = nullptr;
  for (auto it = st_.inputs->begin(); it != st_.inputs->end(); ++it)
    if (it.key() == array ||
        (array.size() > it.key().size() && array.ends_with("." + it.key()) && !v))
      v = &*it;
  if (!v) return std::nullopt;
  if (!v->is_number())
    for (std::int64_t c : cell) {
      if (!v->is_array() || c < 1 || c > static_cast<std::int64_t>(v->size())) return std::nullopt;
      v = &(*v)[static_cast<std::size_t>(c - 1)];
    }
  if (!v->is_number()) return std::nullopt;
  return v->get<double>();
}

Ix Expander::static_int(NodeId e, const char* what) {
  const SVal s = static_value(e);
  const double v = s.v;
  if (!std::isfinite(v) || v != std::floor(v) || std::abs(v) > 1e15)
    fail("array_index_not_integer", std::string(what) + " evaluates to " + json(v).dump() +
                                        ", which is not an integer");
  return Ix{static_cast<std::int64_t>(v), s.axis};
}

std::int64_t Expander::json_int(const json& j, const char* what) {
  if (j.is_number_integer()) return j.get<std::int64_t>();
  if (j.is_number_float() && j.get<double>() == std::floor(j.get<double>())) return j.get<std::int64_t>();
  if (j.is_object() && j.contains("op") && j.contains("args") && j["args"].is_array()) {
    const std::string op = j["op"].get<std::string>();
    std::vector<std::int64_t> v;
    for (const auto& x : j["args"]) v.push_back(json_int(x, what));
    if (op == "+" && !v.empty()) { std::int64_t s = 0; for (auto x : v) s += x; return s; }
    if (op == "*" && !v.empty()) { std::int64_t s = 1; for (auto x : v) s *= x; return s; }
    if (op == "-" && v.size() == 2) return v[0] - v[1];
    if (op == "-" && v.size() == 1) return -v[0];
    if (op == "/" && v.size() == 2 && v[1] != 0 && v[0] % v[1] == 0) return v[0] / v[1];
  }
  fail("array_index_not_static", std::string(what) + " " + j.dump() +
                                     " is not an integer known when the model is built (an "
                                     "unbound metaparameter?)");
}

}  // namespace esi::esm::detail::arrays
