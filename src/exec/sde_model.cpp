// The SDE form of a System with Wiener parameters (spec §5.4, §6.3.1: a parameter with
// `update: {"kind": "wiener"}` is white noise, so the model is an SDE).
//
// A Wiener parameter W_k stands for dW_k / dt in a state equation D(x) = rhs. It must appear
// linearly, so that rhs = f + sum_k g_k W_k with f and g_k free of every W (esm/wiener.hpp
// checks that, for `esi validate` too). Then g_k = d rhs / d W_k symbolically
// (expr::differentiate) and f = rhs with every W_k replaced by the mean of its distribution
// (a normal(mean, std) Wiener parameter is mean + std * white noise, so the drift picks up
// mean * g_k and the diffusion is std * g_k). Milstein's terms L^k G_ik = sum_j G_jk dG_ik/du_j
// are derived symbolically too, with observeds substituted so the derivative sees through them;
// the cross terms L^k G_l (k != l) must vanish structurally, else Milstein is unavailable.
#include "exec/sde_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <unordered_map>

#include "esi/core/error.hpp"
#include "esi/core/json.hpp"
#include "esi/core/noise.hpp"
#include "esi/esm/wiener.hpp"
#include "esi/expr/differentiate.hpp"
#include "esi/expr/simplify.hpp"
#include "esi/expr/substitute.hpp"
#include "exec/model.hpp"

namespace esi::exec::detail {
namespace {

using expr::substitute;

using expr::NodeId;
using expr::Op;
using nlohmann::json;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double number_field(const json& d, const char* key, const std::string& file, const std::string& pointer) {
  const auto it = d.find(key);
  if (it == d.end()) throw Error("invalid_distribution", file, pointer, std::string("the distribution has no '") + key + "'");
  if (it->is_array())
    throw Error("unsupported_distribution", file, pointer_join(pointer, key),
                "multivariate distributions (an array '" + std::string(key) + "') are not supported yet");
  if (!it->is_number())
    throw Error("invalid_distribution", file, pointer_join(pointer, key), std::string("'") + key + "' must be a number");
  return it->get<double>();
}

/// `root` with symbols replaced per `map` (name -> node), memoized.
bool reads_any(const expr::Pool& pool, NodeId e, const std::set<expr::StrId>& names) {
  for (expr::StrId s : names)
    if (expr::depends_on(pool, e, s)) return true;
  return false;
}

struct NoiseSource {
  std::size_t parameter;
  double mean = 0, std = 1;
};

NoiseSource read_noise(const esm::System& sys, std::size_t index, const esm::ResolvedDocument& doc) {
  const esm::FlatVariable& v = sys.parameters[index];
  NoiseSource s{index};
  const json* decl = json_at(doc.doc, v.pointer);
  if (decl == nullptr || !decl->is_object() || !decl->contains("distribution")) return s;  // standard
  const json& d = (*decl)["distribution"];
  const std::string pointer = pointer_join(v.pointer, "distribution");
  const std::string kind = d.is_object() ? d.value("kind", std::string()) : std::string();
  if (kind != "normal")
    throw Error("unsupported_sde_noise", v.file, pointer,
                "Wiener parameter '" + v.name + "' has a '" + kind +
                    "' distribution; Wiener increments are Gaussian, so only 'normal' is supported");
  if (d.contains("cov"))
    throw Error("unsupported_sde_noise", v.file, pointer_join(pointer, "cov"),
                "correlated (covariance) Wiener noise is not supported yet");
  s.mean = number_field(d, "mean", v.file, pointer);
  s.std = number_field(d, "std", v.file, pointer);
  if (!(s.std > 0) || !std::isfinite(s.std) || !std::isfinite(s.mean))
    throw Error("invalid_distribution", v.file, pointer_join(pointer, "std"),
                "the Wiener parameter's 'std' must be positive and finite");
  return s;
}

}  // namespace

double Distribution::draw(std::uint64_t seed, std::uint32_t member, std::uint32_t slot) const {
  switch (kind) {
    case Kind::Normal: return a + b * noise::normals(seed, member, noise::kSetupStep, slot).first;
    case Kind::LogNormal: return std::exp(a + b * noise::normals(seed, member, noise::kSetupStep, slot).first);
    case Kind::Uniform: return a + (b - a) * noise::uniform01(seed, member, noise::kSetupStep, slot);
  }
  return kNaN;
}

Distribution read_distribution(const json& declaration, const std::string& file, const std::string& pointer) {
  const std::string at = pointer_join(pointer, "distribution");
  const auto it = declaration.find("distribution");
  if (it == declaration.end() || !it->is_object())
    throw Error("invalid_distribution", file, at, "the distribution must be an object with a 'kind'");
  const json& d = *it;
  const std::string kind = d.value("kind", std::string());
  if (d.contains("cov"))
    throw Error("unsupported_distribution", file, pointer_join(at, "cov"),
                "distributions with a covariance matrix are not supported yet");
  Distribution out;
  if (kind == "normal") {
    out = {Distribution::Kind::Normal, number_field(d, "mean", file, at), number_field(d, "std", file, at)};
    if (!(out.b > 0)) throw Error("invalid_distribution", file, pointer_join(at, "std"), "'std' must be positive");
  } else if (kind == "lognormal") {
    out = {Distribution::Kind::LogNormal, number_field(d, "mu", file, at), number_field(d, "sigma", file, at)};
    if (!(out.b > 0)) throw Error("invalid_distribution", file, pointer_join(at, "sigma"), "'sigma' must be positive");
  } else if (kind == "uniform") {
    out = {Distribution::Kind::Uniform, number_field(d, "low", file, at), number_field(d, "high", file, at)};
    if (!(out.a < out.b)) throw Error("invalid_distribution", file, at, "'low' must be below 'high'");
  } else {
    throw Error("unknown_distribution", file, pointer_join(at, "kind"),
                "unknown distribution kind '" + kind + "'; the closed set is normal, lognormal and uniform");
  }
  return out;
}

LaneBlock::LaneBlock(const SdeModel& m) : model(&m) {
  forcing_values_.resize(m.sampled.size() * kBlockLanes);
  forcing_.resize(m.sampled.size());
}

void LaneBlock::set_members(std::span<const std::uint32_t> members, std::uint64_t seed) {
  lanes = members.size();
  for (std::size_t s = 0; s < model->sampled.size(); ++s) {
    for (std::size_t l = 0; l < lanes; ++l)
      forcing_values_[s * lanes + l] = model->sampled[s].draw(seed, members[l], model->sampled_slot[s]);
    forcing_[s] = {forcing_values_.data() + s * lanes, 1};
  }
}

void LaneBlock::run(const kernel::Program& program, double t, const double* u, double* out) {
  kernel::Workspace* ws = nullptr;
  for (auto& [p, w] : workspaces_)
    if (p == &program) ws = &w;
  if (ws == nullptr) {
    workspaces_.emplace_back(&program, program.make_workspace(kBlockLanes));
    ws = &workspaces_.back().second;
    program.prepare(*ws, model->p);
  }
  kernel::RunArgs<double> args;
  args.u = {u, model->system.states.size(), lanes, lanes};
  args.t = std::span<const double>(&t, 1);
  args.forcing = forcing_;
  args.du = {out, program.output_count(), lanes, lanes};
  kernel::run(program, *ws, args);
}

std::vector<double> initial_values(LaneBlock& block, double t0) {
  const SdeModel& m = *block.model;
  const std::size_t n = m.system.states.size(), L = block.lanes;
  std::vector<double> u(n * L, kNaN);
  for (std::size_t i = 0; i < n; ++i)
    if (m.system.states[i].default_value && m.system.states[i].initial == expr::kNoNode)
      std::fill_n(u.begin() + i * L, L, *m.system.states[i].default_value);
  if (m.initial) {
    std::vector<double> init(m.initial_states.size() * L);
    for (std::size_t pass = 0; pass <= m.initial_states.size(); ++pass) {
      block.run(*m.initial, t0, u.data(), init.data());
      for (std::size_t q = 0; q < m.initial_states.size(); ++q)
        std::copy_n(init.begin() + q * L, L, u.begin() + m.initial_states[q] * L);
    }
  }
  for (std::size_t i = 0; i < n; ++i)
    if (L > 0 && std::isnan(u[i * L]))
      throw Error("missing_initial_value", m.system.states[i].file, m.system.states[i].pointer,
                  "state '" + m.system.states[i].name + "' has no initial value: give it a default, an ic "
                  "equation or an initial condition");
  return u;
}

kernel::Program compile_lanes(const esm::System& system, const std::vector<NodeId>& outputs,
                              const std::vector<std::string>& forcing) {
  kernel::CompileOptions options;
  options.forcing = forcing;
  return kernel::compile_outputs(system, outputs, options);
}

std::unique_ptr<SdeModel> build_sde_model(const esm::System& input, const esm::ResolvedDocument& doc) {
  auto model = std::make_unique<SdeModel>();
  SdeModel& m = *model;
  m.system = input;
  esm::System& sys = m.system;
  expr::Pool& pool = sys.pool;

  if (!sys.algebraic.empty())
    throw Error("unsupported_algebraic", sys.algebraic[0].file, sys.algebraic[0].pointer,
                "algebraic unknowns in stochastic models are not supported yet");
  if (!sys.events.empty())
    throw Error("unsupported_event", doc.file, sys.events[0].value("$pointer", std::string()),
                "events in stochastic models are not supported yet");

  // Parameters: Wiener sources, setup-time draws, plain values.
  std::vector<NoiseSource> sources;
  std::set<expr::StrId> noise, sampled_ids;
  m.p.assign(sys.parameters.size(), kNaN);
  for (std::size_t i = 0; i < sys.parameters.size(); ++i) {
    const esm::FlatVariable& v = sys.parameters[i];
    if (v.cadence == esm::Cadence::Discrete)
      throw Error("unsupported_event", v.file, pointer_join(v.pointer, "update"),
                  "parameter updates in stochastic models are not supported yet ('" + v.name + "')");
    if (v.cadence == esm::Cadence::Brownian) {
      sources.push_back(read_noise(sys, i, doc));
      noise.insert(pool.intern(v.name));
      m.noise_names.push_back(v.name);
    } else if (v.cadence == esm::Cadence::Sampled && !v.default_value) {  // an override wins
      const json* decl = json_at(doc.doc, v.pointer);
      m.sampled.push_back(read_distribution(decl != nullptr ? *decl : json::object(), v.file, v.pointer));
      m.sampled_names.push_back(v.name);
      m.sampled_slot.push_back(static_cast<std::uint32_t>(i));
      sampled_ids.insert(pool.intern(v.name));
    } else if (v.default_value) {
      m.p[i] = *v.default_value;
    }
  }

  // Where white noise may not go (the same check as `esi validate`'s trial flatten).
  esm::check_wiener_use(sys);
  for (const esm::FlatVariable& v : sys.parameters)
    if (v.initial != expr::kNoNode && !v.default_value && reads_any(pool, v.initial, sampled_ids))
      throw Error("unsupported_distribution", v.file, pointer_join(v.pointer, "default"),
                  "the default of '" + v.name + "' reads a sampled parameter; this is not supported yet");

  // Expression defaults of plain parameters (they may read one another: iterate to a fixpoint).
  {
    std::vector<NodeId> exprs;
    std::vector<std::size_t> where;
    for (std::size_t i = 0; i < sys.parameters.size(); ++i)
      if (std::isnan(m.p[i]) && sys.parameters[i].initial != expr::kNoNode &&
          sys.parameters[i].cadence != esm::Cadence::Brownian && !sampled_ids.count(pool.intern(sys.parameters[i].name))) {
        exprs.push_back(sys.parameters[i].initial);
        where.push_back(i);
      }
    if (!exprs.empty()) {
      Evaluator eval(sys, exprs);
      const std::vector<double> no_state(sys.states.size(), kNaN);
      for (std::size_t pass = 0; pass <= exprs.size(); ++pass) {
        eval.prepare(m.p);
        const auto values = eval.evaluate(0.0, no_state);
        for (std::size_t k = 0; k < where.size(); ++k) m.p[where[k]] = values[k];
      }
    }
  }

  // Drift and diffusion.
  const std::size_t n = sys.states.size(), nm = sources.size();
  std::unordered_map<expr::StrId, NodeId> at_mean;
  for (const NoiseSource& s : sources) at_mean[pool.intern(sys.parameters[s.parameter].name)] = pool.number(s.mean);
  std::vector<NodeId> drift(n), diffusion(n * nm);
  std::unordered_map<NodeId, NodeId> mean_memo;
  for (std::size_t i = 0; i < n; ++i) {
    const NodeId rhs = sys.state_rhs[i];
    drift[i] = expr::simplify(pool, substitute(pool, rhs, at_mean, mean_memo));
    for (std::size_t k = 0; k < nm; ++k) {
      const esm::FlatVariable& w = sys.parameters[sources[k].parameter];
      NodeId g = expr::differentiate(pool, rhs, pool.intern(w.name));
      if (sources[k].std != 1.0 && g != pool.number(0.0))
        g = pool.make(Op::Mul, std::vector<NodeId>{pool.number(sources[k].std), g});
      diffusion[i * nm + k] = g;
    }
  }

  // Observeds substituted (dependency order), so derivatives w.r.t. states see through them.
  std::unordered_map<expr::StrId, NodeId> inline_map;
  {
    std::unordered_map<NodeId, NodeId> memo;
    for (std::size_t o = 0; o < sys.observed.size(); ++o) {
      memo.clear();
      inline_map[pool.intern(sys.observed[o].name)] = substitute(pool, sys.observed_rhs[o], inline_map, memo);
    }
  }
  std::vector<NodeId> g_inline(n * nm);
  std::unordered_map<NodeId, NodeId> inline_memo;
  for (std::size_t r = 0; r < n * nm; ++r) g_inline[r] = substitute(pool, diffusion[r], inline_map, inline_memo);
  std::vector<expr::StrId> state_ids(n);
  for (std::size_t j = 0; j < n; ++j) state_ids[j] = pool.intern(sys.states[j].name);
  m.additive = true;
  for (NodeId g : g_inline)
    for (expr::StrId s : state_ids)
      if (expr::depends_on(pool, g, s)) m.additive = false;

  // Milstein: L^k G_ik = sum_j G_jk dG_ik/du_j; cross terms L^k G_il (k != l) must vanish.
  std::vector<NodeId> milstein(n * nm, pool.number(0.0));
  m.commutative = true;
  try {
    const NodeId zero = pool.number(0.0);
    for (std::size_t i = 0; i < n && m.commutative; ++i)
      for (std::size_t l = 0; l < nm && m.commutative; ++l) {
        const NodeId g = g_inline[i * nm + l];
        for (std::size_t j = 0; j < n && m.commutative; ++j) {
          if (!expr::depends_on(pool, g, state_ids[j])) continue;
          const NodeId dg = expr::differentiate(pool, g, state_ids[j]);
          if (dg == zero) continue;
          for (std::size_t k = 0; k < nm; ++k) {
            if (g_inline[j * nm + k] == zero) continue;
            if (k != l) {
              m.commutative = false;
              m.milstein_unavailable = "noise source '" + m.noise_names[k] + "' drives '" + sys.states[j].name +
                                       "', which the coefficient of '" + m.noise_names[l] + "' in the equation of '" +
                                       sys.states[i].name + "' reads (the noise is not diagonal)";
              break;
            }
            const NodeId term = pool.make(Op::Mul, std::vector<NodeId>{g_inline[j * nm + k], dg});
            NodeId& acc = milstein[i * nm + l];
            acc = acc == zero ? term : pool.make(Op::Add, std::vector<NodeId>{acc, term});
          }
        }
      }
  } catch (const Error& e) {
    m.commutative = false;
    m.milstein_unavailable = "the diffusion cannot be differentiated symbolically: " + e.diagnostic().message;
  }

  // Every plain parameter the run reads must have a value.
  {
    std::vector<std::string> names;
    for (NodeId e : drift) collect_symbols(pool, e, names);
    for (NodeId e : g_inline) collect_symbols(pool, e, names);
    for (std::size_t o = 0; o < sys.observed.size(); ++o) collect_symbols(pool, inline_map[pool.intern(sys.observed[o].name)], names);
    for (const esm::FlatVariable& s : sys.states)
      if (s.initial != expr::kNoNode) collect_symbols(pool, s.initial, names);
    const std::set<std::string> read(names.begin(), names.end());
    for (std::size_t i = 0; i < sys.parameters.size(); ++i) {
      const esm::FlatVariable& v = sys.parameters[i];
      if (std::isnan(m.p[i]) && v.cadence != esm::Cadence::Brownian && !sampled_ids.count(pool.intern(v.name)) &&
          read.count(v.name))
        throw Error("missing_parameter_value", v.file, v.pointer,
                    "parameter '" + v.name + "' has no value: give it a default or an override");
    }
  }

  if (n > 0) {
    m.drift = compile_lanes(sys, drift, m.sampled_names);
    if (nm > 0) m.diffusion = compile_lanes(sys, diffusion, m.sampled_names);
    if (nm > 0 && m.commutative) m.milstein = compile_lanes(sys, milstein, m.sampled_names);
  }
  if (!sys.observed_rhs.empty()) m.observed = compile_lanes(sys, sys.observed_rhs, m.sampled_names);
  std::vector<NodeId> initial;
  for (std::size_t i = 0; i < n; ++i)
    if (sys.states[i].initial != expr::kNoNode) {
      initial.push_back(sys.states[i].initial);
      m.initial_states.push_back(i);
    }
  if (!initial.empty()) m.initial = compile_lanes(sys, initial, m.sampled_names);
  return model;
}

}  // namespace esi::exec::detail
