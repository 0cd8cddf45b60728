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
//
// Correlated noise (spec §6.3: one vector-valued Wiener parameter W whose distribution has a
// `cov`): W = mean + L dZ/dt with L the Cholesky factor of cov (esm/distribution.hpp) and Z a
// vector of K independent standard Wiener processes. The sources of the SDE form are the
// independent processes (one per scalar or independently distributed Wiener parameter, K per
// correlated vector), so the diffusion column of source z_j is sum_c L_cj d rhs / d W_c and
// the steppers and the noise keying see independent sources only: dW_c = sqrt(h) (L z)_c.
#include "exec/sde_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <unordered_map>

#include "esi/core/error.hpp"
#include "esi/core/json.hpp"
#include "esi/core/noise.hpp"
#include "esi/esm/distribution.hpp"
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

/// True when `e` reads any of `names`.
bool reads_any(const expr::Pool& pool, NodeId e, const std::set<expr::StrId>& names) {
  for (expr::StrId s : names)
    if (expr::depends_on(pool, e, s)) return true;
  return false;
}

/// One Wiener parameter (a scalar or a cell of a vector) as a combination of the model's
/// independent standard Wiener processes: W = mean + sum_k coefficient_k dZ_k / dt.
struct NoiseCell {
  std::size_t parameter;
  double mean = 0;
  std::vector<std::pair<std::size_t, double>> terms;  // (source k, coefficient)
};

/// The Wiener parameters of `sys` as NoiseCells over sources appended to `names`: one source
/// per scalar or independent cell, K per correlated vector of K components (all K, even those
/// of cells no equation reads: L z needs every z_j).
std::vector<NoiseCell> read_noise(const esm::System& sys, const esm::ResolvedDocument& doc,
                                  std::vector<std::string>& names, bool& correlated) {
  std::vector<NoiseCell> cells;
  std::unordered_map<std::string, std::size_t> first_source;  // correlated array -> its z_1
  for (std::size_t i = 0; i < sys.parameters.size(); ++i) {
    const esm::FlatVariable& v = sys.parameters[i];
    if (v.cadence != esm::Cadence::Brownian) continue;
    const esm::DistributionSpec spec = esm::parameter_distribution(sys, i, doc.doc);
    if (spec.kind != esm::DistributionSpec::Kind::Normal)
      throw Error("unsupported_sde_noise", v.file, spec.pointer,
                  "Wiener parameter '" + v.name + "' has a non-normal distribution; Wiener increments are "
                  "Gaussian, so only 'normal' is supported");
    const std::size_t c = spec.multivariate ? static_cast<std::size_t>(v.cell.at(0) - 1) : 0;
    NoiseCell cell{i, spec.location[c], {}};
    if (!spec.correlated()) {
      cell.terms.emplace_back(names.size(), spec.spread[c]);
      names.push_back(v.name);
    } else {
      const std::size_t K = spec.components;
      auto [it, fresh] = first_source.emplace(v.array, names.size());
      if (fresh)
        for (std::size_t j = 0; j < K; ++j)
          names.push_back(v.array + " (independent component " + std::to_string(j + 1) + ")");
      for (std::size_t j = 0; j <= c; ++j)
        if (spec.factor[c * K + j] != 0.0) cell.terms.emplace_back(it->second + j, spec.factor[c * K + j]);
      correlated |= cell.terms.size() > 1;
    }
    cells.push_back(std::move(cell));
  }
  return cells;
}

}  // namespace

double Distribution::draw(std::uint64_t seed, std::uint32_t member, std::uint32_t slot) const {
  if (kind == Kind::Uniform) return a + (b - a) * noise::uniform01(seed, member, noise::kSetupStep, slot);
  double x = a;
  if (row.empty()) {
    x += b * noise::normals(seed, member, noise::kSetupStep, slot).first;
  } else {
    for (std::size_t j = 0; j < row.size(); ++j)
      if (row[j] != 0.0)
        x += row[j] * noise::normals(seed, member, noise::kSetupStep, first_slot + static_cast<std::uint32_t>(j)).first;
  }
  return kind == Kind::LogNormal ? std::exp(x) : x;
}

std::vector<SampledParameter> sampled_parameters(const esm::System& sys, const esm::ResolvedDocument& doc) {
  std::vector<SampledParameter> out;
  std::unordered_map<std::string, std::uint32_t> first_slot;  // correlated array -> slot of z_1
  std::size_t next_slot = sys.parameters.size();
  for (std::size_t i = 0; i < sys.parameters.size(); ++i) {
    const esm::FlatVariable& v = sys.parameters[i];
    if (v.cadence != esm::Cadence::Sampled || v.default_value) continue;  // an override wins
    const esm::DistributionSpec spec = esm::parameter_distribution(sys, i, doc.doc);
    const std::size_t c = spec.multivariate ? static_cast<std::size_t>(v.cell.at(0) - 1) : 0;
    Distribution d;
    d.kind = spec.kind == esm::DistributionSpec::Kind::Normal      ? Distribution::Kind::Normal
             : spec.kind == esm::DistributionSpec::Kind::LogNormal ? Distribution::Kind::LogNormal
                                                                   : Distribution::Kind::Uniform;
    d.a = spec.location[c];
    if (!spec.correlated()) {
      d.b = spec.spread[c];
    } else {
      const std::size_t K = spec.components;
      auto [it, fresh] = first_slot.emplace(v.array, static_cast<std::uint32_t>(next_slot));
      if (fresh) next_slot += K;
      if (next_slot > std::numeric_limits<std::uint32_t>::max())
        throw Error("too_many_outputs", v.file, spec.pointer, "more than 2^32 random components at setup");
      d.row.assign(spec.factor.begin() + static_cast<std::ptrdiff_t>(c * K),
                   spec.factor.begin() + static_cast<std::ptrdiff_t>(c * K + c + 1));
      d.first_slot = it->second;
    }
    out.push_back({i, std::move(d)});
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
  std::set<expr::StrId> sampled_ids;
  m.p.assign(sys.parameters.size(), kNaN);
  for (std::size_t i = 0; i < sys.parameters.size(); ++i) {
    const esm::FlatVariable& v = sys.parameters[i];
    if (v.cadence == esm::Cadence::Discrete)
      throw Error("unsupported_event", v.file, pointer_join(v.pointer, "update"),
                  "parameter updates in stochastic models are not supported yet ('" + v.name + "')");
    if (v.cadence != esm::Cadence::Brownian && v.default_value) m.p[i] = *v.default_value;  // an override wins
  }
  const std::vector<NoiseCell> noise_cells = read_noise(sys, doc, m.noise_names, m.correlated);
  for (SampledParameter& s : sampled_parameters(sys, doc)) {
    const std::string& name = sys.parameters[s.parameter].name;
    m.sampled.push_back(std::move(s.distribution));
    m.sampled_names.push_back(name);
    m.sampled_slot.push_back(static_cast<std::uint32_t>(s.parameter));
    sampled_ids.insert(pool.intern(name));
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

  // Drift and diffusion: rhs = f + sum_w (d rhs / d w) w with w = mean_w + sum_k c_wk dZ_k/dt,
  // so the drift is rhs at the means and column k of the diffusion is sum_w c_wk d rhs / d w.
  const std::size_t n = sys.states.size(), nm = m.noise_names.size();
  std::unordered_map<expr::StrId, NodeId> at_mean;
  for (const NoiseCell& w : noise_cells) at_mean[pool.intern(sys.parameters[w.parameter].name)] = pool.number(w.mean);
  const NodeId zero = pool.number(0.0);
  std::vector<NodeId> drift(n), diffusion(n * nm, zero);
  std::unordered_map<NodeId, NodeId> mean_memo;
  for (std::size_t i = 0; i < n; ++i) {
    const NodeId rhs = sys.state_rhs[i];
    drift[i] = expr::simplify(pool, substitute(pool, rhs, at_mean, mean_memo));
    for (const NoiseCell& w : noise_cells) {
      const NodeId g = expr::differentiate(pool, rhs, pool.intern(sys.parameters[w.parameter].name));
      if (g == zero) continue;
      for (const auto& [k, coefficient] : w.terms) {
        const NodeId term = coefficient == 1.0 ? g : pool.make(Op::Mul, std::vector<NodeId>{pool.number(coefficient), g});
        NodeId& acc = diffusion[i * nm + k];
        acc = acc == zero ? term : pool.make(Op::Add, std::vector<NodeId>{acc, term});
      }
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
  std::vector<NodeId> milstein(n * nm, zero);
  m.commutative = true;
  try {
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
                                       sys.states[i].name + "' reads (the noise is not diagonal" +
                                       (m.correlated ? "; a 'cov' mixes the sources of a correlated Wiener "
                                                       "vector, so use EulerMaruyama" : "") + ")";
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
