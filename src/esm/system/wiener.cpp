// Wiener parameters used only linearly, and only in state equations (wiener.hpp).
#include "esi/esm/wiener.hpp"

#include <set>
#include <unordered_map>

#include "esi/core/error.hpp"
#include "esi/core/json.hpp"

namespace esi::esm {
namespace {

using expr::NodeId;
using expr::Op;

enum class Use : std::uint8_t { Free, Linear, Nonlinear };

class LinearityTest {
 public:
  LinearityTest(const expr::Pool& pool, const std::set<expr::StrId>& noise) : pool_(pool), noise_(noise) {}

  Use use(NodeId id) {
    if (auto m = memo_.find(id); m != memo_.end()) return m->second;
    const expr::Node& n = pool_.node(id);
    const auto kids = pool_.children(id);
    Use result = Use::Free;
    switch (n.op) {
      case Op::Symbol: result = noise_.count(n.name) ? Use::Linear : Use::Free; break;
      case Op::Add: case Op::Sub: case Op::Neg:
        for (NodeId c : kids) result = std::max(result, use(c));
        break;
      case Op::Mul: {
        int used = 0;
        for (NodeId c : kids) {
          const Use u = use(c);
          used += u != Use::Free;
          result = std::max(result, u);
        }
        if (used > 1) result = Use::Nonlinear;
        break;
      }
      case Op::Div:
        result = kids.size() == 2 ? use(kids[0]) : Use::Nonlinear;
        if (kids.size() == 2 && use(kids[1]) != Use::Free) result = Use::Nonlinear;
        break;
      default:
        for (NodeId c : kids)
          if (use(c) != Use::Free) result = Use::Nonlinear;
    }
    memo_[id] = result;
    return result;
  }

 private:
  const expr::Pool& pool_;
  const std::set<expr::StrId>& noise_;
  std::unordered_map<NodeId, Use> memo_;
};

}  // namespace

void check_wiener_use(const System& sys) {
  std::set<expr::StrId> noise;
  for (const FlatVariable& v : sys.parameters)
    if (v.cadence == Cadence::Brownian)
      // A name the pool never interned is read by no expression.
      if (const expr::StrId id = sys.pool.find_string(v.name); id != 0) noise.insert(id);
  if (noise.empty()) return;
  LinearityTest test(sys.pool, noise);
  auto misplaced = [&](NodeId e, const FlatVariable& where, const std::string& what, const std::string& pointer) {
    if (e == expr::kNoNode || test.use(e) == Use::Free) return;
    throw Error("unsupported_sde_noise", where.file, pointer,
                what + " '" + where.name + "' reads a Wiener parameter; white noise has a meaning only as a "
                "term g * W of a state equation D(x) ~ ...");
  };
  for (std::size_t o = 0; o < sys.observed.size(); ++o)
    misplaced(sys.observed_rhs[o], sys.observed[o], "observed", sys.observed[o].pointer);
  for (const FlatVariable& s : sys.states) misplaced(s.initial, s, "the initial value of", s.pointer);
  for (const FlatVariable& p : sys.parameters)
    misplaced(p.initial, p, "the default of", pointer_join(p.pointer, "default"));
  for (std::size_t i = 0; i < sys.states.size(); ++i)
    if (test.use(sys.state_rhs[i]) == Use::Nonlinear)
      throw Error("wiener_nonlinear", sys.states[i].file, sys.states[i].pointer,
                  "the equation of '" + sys.states[i].name + "' uses a Wiener parameter non-linearly; white "
                  "noise may enter a state equation only as a term g * W, with g free of every Wiener "
                  "parameter");
}

}  // namespace esi::esm
