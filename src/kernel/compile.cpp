// Lowering a System's expressions to the three tapes (see tape.hpp and program.hpp).
//
// One walk over the DAG from the outputs assigns each reachable node one virtual register in
// one tier: Setup when it reads only parameters and constants (hoisted into `prepare`), Time
// when it also reads t (double, per block), Lane otherwise. A Setup value read by another tier
// is imported once into a pinned register (or, as an operand of + - * /, a scalar slot).
// Observed symbols resolve to their defining expression, so an observed is computed once
// however often it is read; D(x, t) of a state on a right-hand side resolves to x's tendency.
// N-ary + * min max and or become left folds of binary instructions, the order the oracle
// evaluates. Register allocation (regalloc.cpp) then maps virtual to physical registers.
#include <algorithm>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "esi/core/error.hpp"
#include "esi/expr/parse.hpp"
#include "kernel/regalloc.hpp"
#include "kernel/tape.hpp"

namespace esi::kernel {
namespace {

using detail::Instr;
using detail::Opcode;
using expr::NodeId;
using expr::Op;

// Ordered: a node's tier is the highest of its operands' tiers.
enum class Tier : std::uint8_t { Setup, Time, Lane };

struct Value {
  Tier tier;
  std::uint32_t reg;  // virtual register in its tier's tape
};

enum class SourceKind : std::uint8_t { State, Param, Forcing, Time, Observed, Algebraic };
struct Source {
  SourceKind kind;
  std::uint32_t index;
};

/// One tape under construction, in virtual registers.
struct TierCode {
  std::vector<Instr> code;
  std::uint32_t vregs = 0;
  std::vector<std::uint32_t> pinned;       // vregs filled from setup values, in import order
  std::vector<std::uint32_t> pinned_from;  // the setup vreg of each
  std::unordered_map<std::uint32_t, std::uint32_t> imported;  // setup vreg -> vreg here
};

Opcode unary_opcode(Op op) {
  switch (op) {
    case Op::Neg: return Opcode::Neg;     case Op::Exp: return Opcode::Exp;
    case Op::Log: return Opcode::Log;     case Op::Log10: return Opcode::Log10;
    case Op::Sqrt: return Opcode::Sqrt;   case Op::Abs: return Opcode::Abs;
    case Op::Sign: return Opcode::Sign;   case Op::Sin: return Opcode::Sin;
    case Op::Cos: return Opcode::Cos;     case Op::Tan: return Opcode::Tan;
    case Op::Asin: return Opcode::Asin;   case Op::Acos: return Opcode::Acos;
    case Op::Atan: return Opcode::Atan;   case Op::Sinh: return Opcode::Sinh;
    case Op::Cosh: return Opcode::Cosh;   case Op::Tanh: return Opcode::Tanh;
    case Op::Asinh: return Opcode::Asinh; case Op::Acosh: return Opcode::Acosh;
    case Op::Atanh: return Opcode::Atanh; case Op::Floor: return Opcode::Floor;
    case Op::Ceil: return Opcode::Ceil;   case Op::Not: return Opcode::Not;
    default: return Opcode::Store;  // not unary
  }
}

Opcode binary_opcode(Op op) {
  switch (op) {
    case Op::Add: return Opcode::Add;     case Op::Sub: return Opcode::Sub;
    case Op::Mul: return Opcode::Mul;     case Op::Div: return Opcode::Div;
    case Op::Pow: return Opcode::Pow;     case Op::Atan2: return Opcode::Atan2;
    case Op::Min: return Opcode::Min;     case Op::Max: return Opcode::Max;
    case Op::Lt: return Opcode::Lt;       case Op::Le: return Opcode::Le;
    case Op::Gt: return Opcode::Gt;       case Op::Ge: return Opcode::Ge;
    case Op::Eq: return Opcode::Eq;       case Op::Ne: return Opcode::Ne;
    case Op::And: return Opcode::And;     case Op::Or: return Opcode::Or;
    default: return Opcode::Store;  // not binary
  }
}

bool is_fold(Op op) {
  return op == Op::Add || op == Op::Mul || op == Op::Min || op == Op::Max || op == Op::And ||
         op == Op::Or || op == Op::Sub;
}

struct Lowering {
  const esm::System& sys;
  const expr::Pool& pool;
  detail::Tape& tape;
  std::unordered_map<expr::StrId, Source> names;
  std::unordered_map<NodeId, Value> memo;
  std::unordered_set<NodeId> in_progress;  // cycle guard for observeds and D(state)
  TierCode tiers[3];
  std::unordered_map<std::uint32_t, std::uint32_t> time_in_lane;  // time vreg -> lane vreg
  std::vector<std::uint32_t> scalar_from;                          // setup vreg of each slot
  std::unordered_map<std::uint32_t, std::uint32_t> scalar_slot;   // setup vreg -> slot
  std::unordered_map<std::uint64_t, std::uint32_t> constant_vreg;

  [[noreturn]] void fail(const std::string& code, const std::string& message) const {
    throw Error(code, "", "", message);
  }

  std::string op_spelling(NodeId id) const {
    const expr::Node& n = pool.node(id);
    return std::string(n.op == Op::Other ? pool.str(n.name) : expr::op_name(n.op));
  }

  TierCode& at(Tier t) { return tiers[static_cast<int>(t)]; }

  Value emit(Tier tier, Opcode op, std::uint32_t a = 0, std::uint32_t b = 0, std::uint32_t c = 0,
             ClosedFn fn = ClosedFn::Year) {
    TierCode& tc = at(tier);
    const std::uint32_t dst = tc.vregs++;
    tc.code.push_back(Instr{op, fn, dst, a, b, c});
    return {tier, dst};
  }

  /// The register of `v` as an operand of an instruction in `tier` (>= v.tier): setup values
  /// are imported once into a pinned register, time values loaded once into the lane tape.
  std::uint32_t reg_in(Tier tier, Value v) {
    if (v.tier == tier) return v.reg;
    if (v.tier == Tier::Setup) {
      TierCode& tc = at(tier);
      auto [it, inserted] = tc.imported.emplace(v.reg, tc.vregs);
      if (inserted) {
        tc.pinned.push_back(tc.vregs++);
        tc.pinned_from.push_back(v.reg);
      }
      return it->second;
    }
    ESI_ASSERT(v.tier == Tier::Time && tier == Tier::Lane);
    if (auto it = time_in_lane.find(v.reg); it != time_in_lane.end()) return it->second;
    const std::uint32_t r = emit(Tier::Lane, Opcode::LoadTimeValue, v.reg).reg;
    time_in_lane.emplace(v.reg, r);
    return r;
  }

  /// A binary lane instruction with one setup operand reads it as a scalar (one load per block,
  /// not a broadcast register per lane). + and * are commutative bit for bit, so the scalar may
  /// be either operand; - and / have a form for each side.
  Value binary(Tier t, Opcode op, Value x, Value y) {
    const bool sx = x.tier == Tier::Setup, sy = y.tier == Tier::Setup;
    if (t == Tier::Lane && sx != sy) {
      Opcode s = Opcode::Store;
      if (op == Opcode::Add) s = Opcode::AddS;
      if (op == Opcode::Mul) s = Opcode::MulS;
      if (op == Opcode::Sub) s = sx ? Opcode::SSub : Opcode::SubS;
      if (op == Opcode::Div) s = sx ? Opcode::SDiv : Opcode::DivS;
      if (s != Opcode::Store) {
        const Value k = sx ? x : y, r = sx ? y : x;
        auto [it, inserted] = scalar_slot.emplace(k.reg, static_cast<std::uint32_t>(scalar_from.size()));
        if (inserted) scalar_from.push_back(k.reg);
        return emit(t, s, reg_in(t, r), it->second);
      }
    }
    return emit(t, op, reg_in(t, x), reg_in(t, y));
  }

  Value constant(double x) {
    std::uint64_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    if (auto it = constant_vreg.find(bits); it != constant_vreg.end()) return {Tier::Setup, it->second};
    const auto k = static_cast<std::uint32_t>(tape.constants.size());
    tape.constants.push_back(x);
    const Value v = emit(Tier::Setup, Opcode::Const, k);
    constant_vreg.emplace(bits, v.reg);
    return v;
  }

  Value symbol(NodeId id) {
    const expr::StrId name = pool.node(id).name;
    auto it = names.find(name);
    if (it == names.end())
      fail("undefined_variable", "'" + std::string(pool.str(name)) +
                                     "' is not a state, parameter, observed or t of the system");
    const Source s = it->second;
    switch (s.kind) {
      case SourceKind::State: return emit(Tier::Lane, Opcode::LoadState, s.index);
      case SourceKind::Param: return emit(Tier::Setup, Opcode::LoadParam, s.index);
      case SourceKind::Forcing: return emit(Tier::Lane, Opcode::LoadForcing, s.index);
      case SourceKind::Time: return emit(Tier::Time, Opcode::LoadTime);
      case SourceKind::Observed: return guarded(id, sys.observed_rhs[s.index]);
      case SourceKind::Algebraic: break;
    }
    fail("undefined_variable", "'" + std::string(pool.str(name)) +
                                   "' is an algebraic unknown; compiled programs evaluate explicit "
                                   "equations only");
  }

  Value closed(NodeId id) {
    const ClosedFn f = closed_fn_from_name(pool.str(pool.node(id).name));
    const auto table_index = static_cast<std::uint32_t>(tape.tables.size());
    tape.tables.push_back(extract_table(pool, id, f));
    const auto args = pool.args(id);
    std::vector<Value> xs;
    if (f == ClosedFn::SearchSorted) xs.push_back(value(args[0]));
    else
      for (std::size_t i = closed_fn_table_args(f); i < args.size(); ++i) xs.push_back(value(args[i]));
    Tier tier = Tier::Setup;
    for (const Value& x : xs) tier = std::max(tier, x.tier);
    const std::uint32_t a = reg_in(tier, xs[0]);
    const std::uint32_t b = xs.size() > 1 ? reg_in(tier, xs[1]) : 0;
    return emit(tier, xs.size() > 1 ? Opcode::Closed2 : Opcode::Closed1, a, b, table_index, f);
  }

  /// The value of `rhs` standing for `id` (an observed name, or D(state, t) on a right-hand
  /// side, which is that state's tendency); a definition that reaches itself is an error.
  Value guarded(NodeId id, NodeId rhs) {
    if (!in_progress.insert(id).second)
      fail("observed_cycle", "'" + expr::to_infix(pool, id) + "' depends on itself");
    const Value v = value(rhs);
    in_progress.erase(id);
    return v;
  }

  Value derivative(NodeId id) {
    const auto args = pool.args(id);
    const expr::Node& n = pool.node(id);
    if (args.size() == 1 && pool.node(args[0]).op == Op::Symbol && (n.name == 0 || pool.str(n.name) == "t")) {
      auto it = names.find(pool.node(args[0]).name);
      if (it != names.end() && it->second.kind == SourceKind::State)
        return guarded(id, sys.state_rhs[it->second.index]);
    }
    fail("unsupported_operator", "'" + expr::to_infix(pool, id) +
                                     "' is not the time derivative of a state of the system");
  }

  Value operation(NodeId id);

  Value value(NodeId id) {
    if (auto it = memo.find(id); it != memo.end()) return it->second;
    const expr::Node& n = pool.node(id);
    Value v;
    switch (n.op) {
      case Op::Number: v = constant(n.number); break;
      case Op::True: v = constant(1.0); break;
      case Op::Symbol: v = symbol(id); break;
      case Op::Fn: v = closed(id); break;
      case Op::D: v = derivative(id); break;
      case Op::Const: {
        const auto c = expr::attrs_json(pool, id).value("value", nlohmann::json());
        if (!c.is_number()) fail("unsupported_operator", "a 'const' array outside a closed-function table");
        v = constant(c.get<double>());
        break;
      }
      default: v = operation(id);
    }
    memo.emplace(id, v);
    return v;
  }

  void bind_names(const std::vector<std::string>& forcing, const std::vector<std::string>& cell_inputs,
                  bool bind_states);

  /// Observed chains can be 10^4 links long, and lowering them by recursion from the outputs
  /// nests a few C++ frames per link (a stack overflow at that length). So the observeds the
  /// outputs reach are found first by an explicit-stack walk and lowered in the system's
  /// dependency order: each recursion then stops at an observed already lowered. Observeds
  /// no output reaches emit nothing, as before.
  void lower_reachable_observeds(std::span<const NodeId> outputs) {
    std::vector<NodeId> observed_symbol(sys.observed.size(), 0);
    std::vector<bool> reached(sys.observed.size(), false), seen(pool.size(), false);
    std::vector<NodeId> pending(outputs.begin(), outputs.end());
    while (!pending.empty()) {
      const NodeId id = pending.back();
      pending.pop_back();
      if (seen[id]) continue;
      seen[id] = true;
      const expr::Node& n = pool.node(id);
      if (n.op == Op::Symbol) {
        auto it = names.find(n.name);
        if (it != names.end() && it->second.kind == SourceKind::Observed && !reached[it->second.index]) {
          reached[it->second.index] = true;
          observed_symbol[it->second.index] = id;
          pending.push_back(sys.observed_rhs[it->second.index]);
        }
        continue;
      }
      for (NodeId a : pool.args(id)) pending.push_back(a);
    }
    for (std::size_t i = 0; i < sys.observed.size(); ++i)
      if (reached[i]) value(observed_symbol[i]);
  }
};

/// y when `id` is -1 * y or y * -1 (a loss term of a mass-action sum), else kNoNode.
NodeId negated_operand(const expr::Pool& pool, NodeId id) {
  const expr::Node& n = pool.node(id);
  if (n.op != Op::Mul) return expr::kNoNode;
  const auto args = pool.args(id);
  if (args.size() != 2) return expr::kNoNode;
  for (int side = 0; side < 2; ++side) {
    const expr::Node& c = pool.node(args[side]);
    if (c.op == Op::Number && c.number == -1.0) return args[1 - side];
  }
  return expr::kNoNode;
}

Value Lowering::operation(NodeId id) {
  const expr::Node& n = pool.node(id);
  const auto args = pool.args(id);
  // -1 * y is -y exactly, and a + (-y) is a - y by definition (IEEE 754 subtraction), so a
  // sum's later operands of that form subtract y, and -1 * y alone is a negation: the same
  // bits as the oracle's left fold, one multiply fewer per loss term (fullchem has 1,259).
  if (const NodeId y = negated_operand(pool, id); y != expr::kNoNode) {
    const Value v = value(y);
    return emit(v.tier, Opcode::Neg, v.reg);
  }
  if (n.op == Op::Add && args.size() >= 2) {
    Value acc = value(args[0]);
    for (std::size_t i = 1; i < args.size(); ++i) {
      const NodeId y = negated_operand(pool, args[i]);
      const Value x = value(y != expr::kNoNode ? y : args[i]);
      acc = binary(std::max(acc.tier, x.tier), y != expr::kNoNode ? Opcode::Sub : Opcode::Add, acc,
                   x);
    }
    return acc;
  }
  std::vector<Value> xs;
  xs.reserve(args.size());
  for (NodeId a : args) xs.push_back(value(a));
  auto tier_of = [&](std::size_t from, std::size_t to) {
    Tier t = Tier::Setup;
    for (std::size_t i = from; i < to; ++i) t = std::max(t, xs[i].tier);
    return t;
  };
  auto arity = [&](std::size_t k) {
    if (xs.size() != k)
      fail("unsupported_operator", "'" + op_spelling(id) + "' with " + std::to_string(xs.size()) +
                                       " arguments (expected " + std::to_string(k) + ")");
  };
  if (n.op == Op::Sub && xs.size() == 1) {
    return emit(xs[0].tier, Opcode::Neg, xs[0].reg);
  }
  if (is_fold(n.op)) {
    if (xs.empty()) fail("unsupported_operator", "'" + op_spelling(id) + "' with no arguments");
    // Left fold, as the oracle: ((x0 op x1) op x2) ...; each step's tier is the running max.
    Value acc = xs[0];
    for (std::size_t i = 1; i < xs.size(); ++i) {
      const Tier t = tier_of(0, i + 1);
      acc = binary(t, binary_opcode(n.op), acc, xs[i]);
    }
    return acc;
  }
  if (n.op == Op::IfElse) {
    arity(3);
    const Tier t = tier_of(0, 3);
    return emit(t, Opcode::Select, reg_in(t, xs[0]), reg_in(t, xs[1]), reg_in(t, xs[2]));
  }
  if (const Opcode u = unary_opcode(n.op); u != Opcode::Store) {
    arity(1);
    return emit(xs[0].tier, u, xs[0].reg);
  }
  if (const Opcode b = binary_opcode(n.op); b != Opcode::Store) {
    arity(2);
    const Tier t = tier_of(0, 2);
    // x^2 as x*x: one correctly rounded product instead of a libm call (glibc's pow is within
    // 1 ulp, so the two may differ in the last bit; the oracle keeps pow). Squares are the
    // commonest power in chemistry (HO2 + HO2) and pow cost a third of SuperFast's RHS.
    if (n.op == Op::Pow && pool.node(args[1]).op == Op::Number && pool.node(args[1]).number == 2.0)
      return binary(t, Opcode::Mul, xs[0], xs[0]);
    return binary(t, b, xs[0], xs[1]);
  }
  fail("unsupported_operator",
       "'" + op_spelling(id) + "' cannot be compiled (only scalar operators and closed functions)");
}

void Lowering::bind_names(const std::vector<std::string>& forcing,
                          const std::vector<std::string>& cell_inputs, bool bind_states) {
  auto bind = [&](const std::string& name, Source s) { names[pool.find_string(name)] = s; };
  if (bind_states) {
    sys.states.for_each_stored([&](std::size_t i, const esm::FlatVariable& v) {
      bind(v.name, {SourceKind::State, static_cast<std::uint32_t>(i)});
    });
    // A cell of a lazy state run (a grid's state array) is bound only where some expression
    // names it: the interned names are few, the cells may be millions.
    for (expr::StrId id = 1; sys.states.has_lazy_runs() && id < pool.string_count(); ++id)
      if (const std::int64_t i = sys.states.find_lazy_cell(pool.str(id)); i >= 0)
        names[id] = {SourceKind::State, static_cast<std::uint32_t>(i)};
  }
  for (std::size_t i = 0; i < sys.parameters.size(); ++i)
    bind(sys.parameters[i].name, {SourceKind::Param, static_cast<std::uint32_t>(i)});
  for (std::size_t i = 0; i < sys.observed.size(); ++i)
    bind(sys.observed[i].name, {SourceKind::Observed, static_cast<std::uint32_t>(i)});
  for (std::size_t i = 0; i < sys.algebraic.size(); ++i)
    bind(sys.algebraic[i].name, {SourceKind::Algebraic, static_cast<std::uint32_t>(i)});
  bind("t", {SourceKind::Time, 0});
  for (std::size_t k = 0; k < forcing.size(); ++k) {
    if (sys.parameter_index(forcing[k]) < 0)
      fail("undefined_variable", "forcing '" + forcing[k] + "' is not a parameter of the system");
    bind(forcing[k], {SourceKind::Forcing, static_cast<std::uint32_t>(k)});
  }
  for (std::size_t k = 0; k < cell_inputs.size(); ++k)
    bind(cell_inputs[k], {SourceKind::Forcing, static_cast<std::uint32_t>(forcing.size() + k)});
  names.erase(0);  // names never interned (never referenced) map to the empty string
}

}  // namespace

namespace {

/// Allocates the three tapes and moves them into `tape`: setup first (values imported by the
/// other tapes stay live to its end), then time (values the lane tape loads stay live), then
/// lane; finally the cross-tape references are rewritten to physical registers.
void finish(Lowering& low, detail::Tape& tape) {
  TierCode& st = low.at(Tier::Setup);
  TierCode& tm = low.at(Tier::Time);
  TierCode& ln = low.at(Tier::Lane);
  std::vector<std::uint32_t> keep = tm.pinned_from;
  keep.insert(keep.end(), ln.pinned_from.begin(), ln.pinned_from.end());
  keep.insert(keep.end(), low.scalar_from.begin(), low.scalar_from.end());
  const auto sa = detail::allocate_registers(st.code, st.vregs, {}, keep);
  std::vector<std::uint32_t> time_keep;
  for (const auto& [t, l] : low.time_in_lane) time_keep.push_back(t);
  const auto ta = detail::allocate_registers(tm.code, tm.vregs, tm.pinned, time_keep);
  const auto la = detail::allocate_registers(ln.code, ln.vregs, ln.pinned, {});
  for (Instr& ins : ln.code)
    if (ins.op == Opcode::LoadTimeValue) ins.a = ta.phys[ins.a];
  auto store = [&](TierCode& tc, const detail::Allocation& a, detail::Code& out) {
    out.code = std::move(tc.code);
    out.registers = a.registers;
    out.pinned = static_cast<std::uint32_t>(tc.pinned.size());
    for (std::uint32_t k = 0; k < tc.pinned_from.size(); ++k)
      out.imports.emplace_back(sa.phys[tc.pinned_from[k]], k);
  };
  for (std::uint32_t v : low.scalar_from) tape.lane_scalars.push_back(sa.phys[v]);
  store(st, sa, tape.setup);
  store(tm, ta, tape.time);
  store(ln, la, tape.lane);
}

Program lower(const esm::System& system, std::span<const NodeId> outputs,
              const CompileOptions& options, std::vector<int> dofs,
              std::span<const std::size_t> order = {}) {
  auto tape = std::make_shared<detail::Tape>();
  tape->target = options.target;
  tape->states = system.states.size();
  tape->parameters = system.parameters.size();
  tape->outputs = outputs.size();
  tape->forcing = options.forcing;
  tape->forcing.insert(tape->forcing.end(), options.cell_inputs.begin(), options.cell_inputs.end());
  tape->dofs = std::move(dofs);
  Lowering low{system, system.pool, *tape, {}, {}, {}, {}, {}, {}};
  low.bind_names(options.forcing, options.cell_inputs, !options.states_through_cell_inputs);
  low.lower_reachable_observeds(outputs);
  // Each output is stored as soon as it is computed, which ends its register's life early.
  for (std::size_t q = 0; q < outputs.size(); ++q) {
    const std::size_t k = order.empty() ? q : order[q];
    const std::uint32_t r = low.reg_in(Tier::Lane, low.value(outputs[k]));
    low.at(Tier::Lane).code.push_back(
        Instr{Opcode::Store, ClosedFn::Year, static_cast<std::uint32_t>(k), r, 0, 0});
  }
  finish(low, *tape);
  return Program(std::move(tape));
}

}  // namespace

Program compile_outputs(const esm::System& system, std::span<const NodeId> outputs,
                        const CompileOptions& options, std::span<const std::size_t> order) {
  if (!order.empty()) {
    std::vector<bool> seen(outputs.size(), false);
    bool permutation = order.size() == outputs.size();
    for (std::size_t k : order) {
      permutation = permutation && k < outputs.size() && !seen[k];
      if (k < outputs.size()) seen[k] = true;
    }
    if (!permutation)
      throw Error("invalid_order", "", "",
                  "the evaluation order is not a permutation of the " +
                      std::to_string(outputs.size()) + " outputs");
  }
  return lower(system, outputs, options, {}, order);
}

Program compile(const esm::System& system, const CompileOptions& options) {
  std::vector<int> dofs = options.dofs;
  if (dofs.empty())
    for (std::size_t i = 0; i < system.states.size(); ++i) dofs.push_back(static_cast<int>(i));
  std::vector<NodeId> roots;
  for (int i : dofs) {
    if (i < 0 || static_cast<std::size_t>(i) >= system.states.size())
      throw Error("invalid_dof", "", "", "state index " + std::to_string(i) + " is out of range");
    if (system.state_rhs[i] == expr::kNoNode)
      throw Error("region_program_state", system.states[i].file, system.states[i].pointer,
                  "'" + system.states[i].name + "' is a cell of an array whose equation is a "
                  "per-region program (FlattenOptions::grid); compile it with compile_grid");
    roots.push_back(system.state_rhs[i]);
  }
  return lower(system, roots, options, std::move(dofs));
}

}  // namespace esi::kernel
