// The Langevin sampler (sample.hpp): the energy's symbolic gradient over 64-chain blocks.
#include "esi/exec/sample.hpp"

#include <cmath>
#include <optional>
#include <span>
#include <unordered_map>

#include "esi/core/error.hpp"
#include "esi/core/noise.hpp"
#include "esi/core/text.hpp"
#include "esi/expr/differentiate.hpp"
#include "esi/kernel/native.hpp"
#include "esi/expr/substitute.hpp"
#include "exec/parallel.hpp"
#include "exec/sde_model.hpp"

namespace esi::exec {
namespace {

using expr::NodeId;
using expr::substitute;

[[noreturn]] void invalid(const std::string& message) { throw Error("invalid_sample", "", "", message); }

/// The observed named `name` (flat, or the one whose flat name ends in ".name").
int find_energy(const esm::System& sys, const std::string& name, const std::string& file) {
  if (const int o = sys.observed_index(name); o >= 0) return o;
  int found = -1;
  for (std::size_t o = 0; o < sys.observed.size(); ++o) {
    const std::string& flat = sys.observed[o].name;
    if (flat.size() > name.size() && flat.compare(flat.size() - name.size(), name.size(), name) == 0 &&
        flat[flat.size() - name.size() - 1] == '.') {
      if (found >= 0) throw Error("unknown_energy", file, "", "--energy " + name + " matches several observeds; use the full name");
      found = static_cast<int>(o);
    }
  }
  if (found >= 0) return found;
  std::string message = "--energy " + name + ": no observed quantity of the system has this name";
  std::string best;
  std::size_t best_distance = name.size() / 3 + 1;
  for (const esm::FlatVariable& v : sys.observed)
    if (const std::size_t d = edit_distance(name, v.name); d < best_distance) best_distance = d, best = v.name;
  if (!best.empty()) message += "; did you mean '" + best + "'?";
  else if (sys.observed.empty()) message += " (it has no observeds: the energy must be one, E ~ ...)";
  throw Error("unknown_energy", file, "", message);
}

/// K Langevin steps of one block of chains in precision T: x[i * L + l] (lane-major), the
/// gradient written by grad(x, g) in the same layout; xi per sample.hpp.
template <class T, class Gradient>
void langevin_steps(std::vector<T>& x, std::size_t n, std::span<const std::uint32_t> rows, const SampleOptions& o,
                    Gradient&& grad) {
  const T eta = static_cast<T>(o.step_size), scale = static_cast<T>(std::sqrt(2 * o.step_size * o.temperature));
  const std::size_t L = rows.size();
  std::vector<T> g(x.size());
  for (std::uint64_t k = 0; k < o.steps; ++k) {
    grad(x.data(), g.data());
    for (std::size_t l = 0; l < L; ++l)
      for (std::size_t i = 0; i < n; i += 2) {
        const noise::Normals z = noise::normals(o.seed, rows[l], k, static_cast<std::uint32_t>(i / 2));
        T& a = x[i * L + l];
        a = a - eta * g[i * L + l] + scale * static_cast<T>(z.first);
        if (i + 1 < n) {
          T& c = x[(i + 1) * L + l];
          c = c - eta * g[(i + 1) * L + l] + scale * static_cast<T>(z.second);
        }
      }
  }
}

}  // namespace

SampleResult sample(const esm::System& system, const SampleOptions& o) {
  if (o.document == nullptr) invalid("the sampler needs the document (for the distributions)");
  if (o.rows < 1 || o.rows > 4294967295u) invalid("--rows must be between 1 and 4294967295");
  if (!(o.step_size > 0) || !std::isfinite(o.step_size)) invalid("--step-size must be positive and finite");
  if (o.steps > 1000000000u) invalid("--steps must be at most 1e9");
  if (!(o.temperature >= 0) || !std::isfinite(o.temperature)) invalid("--temperature must be finite and not negative");
  if (o.threads < 1 || o.threads > 1024) invalid("--threads must be between 1 and 1024");
  if (system.states.empty()) invalid("the system has no states, so there is nothing to sample");
  if (static_cast<double>(o.rows) * static_cast<double>(system.states.size()) > 1e8)
    invalid("rows x features is more than 1e8 values");
  const int energy = find_energy(system, o.energy, o.document->file);
  for (const esm::FlatVariable& v : system.parameters)
    if (v.cadence == esm::Cadence::Brownian)
      throw Error("unsupported_sde_noise", v.file, v.pointer,
                  "the sampler runs its own Langevin noise; Wiener parameter '" + v.name + "' has no meaning here");

  const auto model = detail::build_sde_model(system, *o.document);
  detail::SdeModel& m = *model;
  expr::Pool& pool = m.system.pool;
  std::unordered_map<expr::StrId, NodeId> inline_map;
  std::unordered_map<NodeId, NodeId> memo;
  for (std::size_t k = 0; k <= static_cast<std::size_t>(energy); ++k) {
    memo.clear();
    inline_map[pool.intern(m.system.observed[k].name)] = substitute(pool, m.system.observed_rhs[k], inline_map, memo);
  }
  const NodeId e = inline_map[pool.intern(m.system.observed[energy].name)];
  const std::size_t n = m.system.states.size();
  std::vector<NodeId> gradient(n);
  for (std::size_t i = 0; i < n; ++i) {
    try {
      gradient[i] = expr::differentiate(pool, e, pool.intern(m.system.states[i].name));
    } catch (const Error& err) {
      const esm::FlatVariable& v = m.system.observed[energy];
      throw Error("not_differentiable", v.file, v.pointer,
                  "the energy '" + v.name + "' cannot be differentiated with respect to '" +
                      m.system.states[i].name + "': " + err.diagnostic().message);
    }
  }
  kernel::Program program = detail::compile_lanes(m.system, gradient, m.sampled_names);
  if (o.native) program = kernel::with_native(program);

  SampleResult r;
  for (const auto& s : m.system.states) r.features.push_back(s.name);
  r.rows = o.rows;
  r.values.assign(o.rows * n, 0.0);
  r.gradient_status = program.native_status();
  const std::size_t blocks = (o.rows + detail::kBlockLanes - 1) / detail::kBlockLanes;
  const unsigned workers = detail::worker_count(blocks, o.threads);
  std::vector<std::unique_ptr<detail::LaneBlock>> per_worker(workers);
  std::vector<std::optional<kernel::Workspace>> float_ws(workers);
  detail::parallel_for(blocks, o.threads, [&](std::size_t b, unsigned worker) {
    if (!per_worker[worker]) per_worker[worker] = std::make_unique<detail::LaneBlock>(m);
    detail::LaneBlock& lb = *per_worker[worker];
    const std::size_t first = b * detail::kBlockLanes, L = std::min(detail::kBlockLanes, o.rows - first);
    std::vector<std::uint32_t> rows(L);
    for (std::size_t l = 0; l < L; ++l) rows[l] = static_cast<std::uint32_t>(first + l);
    lb.set_members(rows, o.seed);
    std::vector<double> x = detail::initial_values(lb, 0.0);
    if (!o.single_precision) {
      langevin_steps<double>(x, n, rows, o, [&](const double* u, double* g) { lb.run(program, 0.0, u, g); });
    } else {
      if (!float_ws[worker]) {
        float_ws[worker] = program.make_workspace(detail::kBlockLanes, kernel::DType::F32);
        program.prepare(*float_ws[worker], m.p);
      }
      const std::span<const double> drawn = lb.sampled_values();
      std::vector<float> forcing_values(drawn.begin(), drawn.end());
      std::vector<kernel::ForcingField<float>> forcing(m.sampled.size());
      for (std::size_t s = 0; s < forcing.size(); ++s) forcing[s] = {forcing_values.data() + s * L, 1};
      std::vector<float> xf(x.begin(), x.end());
      const double t0 = 0.0;
      langevin_steps<float>(xf, n, rows, o, [&](const float* u, float* g) {
        kernel::RunArgs<float> args;
        args.u = {u, n, L, L};
        args.t = std::span<const double>(&t0, 1);
        args.forcing = forcing;
        args.du = {g, n, L, L};
        kernel::run(program, *float_ws[worker], args);
      });
      std::copy(xf.begin(), xf.end(), x.begin());
    }
    for (std::size_t l = 0; l < L; ++l)
      for (std::size_t i = 0; i < n; ++i) r.values[rows[l] * n + i] = x[i * L + l];
  });
  for (std::size_t q = 0; q < r.values.size(); ++q)
    if (!std::isfinite(r.values[q])) {
      r.failure = "chain " + std::to_string(q / n) + ": '" + r.features[q % n] + "' is not finite after " +
                  std::to_string(o.steps) + " steps (is --step-size too large for the energy?)";
      break;
    }
  return r;
}

}  // namespace esi::exec
