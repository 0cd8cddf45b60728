// Stochastic runs (stochastic.hpp): SDE members stepped in lane blocks on threads, ODE members
// with sampled parameters through exec::simulate, statistics folded in member-id order.
#include "esi/core/text.hpp"
#include "esi/exec/stochastic.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "esi/core/error.hpp"
#include "esi/core/json.hpp"
#include "esi/exec/simulate.hpp"
#include "esi/kernel/native.hpp"
#include "exec/parallel.hpp"
#include "exec/sde_model.hpp"

namespace esi::exec {
namespace {

using detail::SdeModel;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
using detail::kBlockLanes;

[[noreturn]] void invalid(const std::string& message) { throw Error("invalid_ensemble", "", "", message); }

std::vector<double> output_times(const StochasticOptions& o) {
  std::vector<double> times{o.t0};
  if (o.saveat > 0)
    for (std::size_t k = 1;; ++k) {
      const double t = o.t0 + static_cast<double>(k) * o.saveat;
      if (!(t < o.t1)) break;
      times.push_back(t);
      if (static_cast<double>(times.size()) > kMaxOutputRows)
        throw Error("too_many_outputs", "", "", "the output grid has more than 1e7 times; use a larger saveat");
    }
  if (o.t1 > times.back()) times.push_back(o.t1);
  return times;
}

/// The member handed out at position `pos`.
std::uint32_t member_at(const StochasticOptions& o, std::size_t pos) {
  return o.member_order.empty() ? static_cast<std::uint32_t>(pos) : o.member_order[pos];
}

// ---- SDE members ----

void drift(void* c, double t, std::size_t, const double* u, double* out) {
  auto& b = *static_cast<detail::LaneBlock*>(c);
  b.run(*b.model->drift, t, u, out);
}
void diffusion(void* c, double t, std::size_t, const double* u, double* out) {
  auto& b = *static_cast<detail::LaneBlock*>(c);
  b.run(*b.model->diffusion, t, u, out);
}
void milstein(void* c, double t, std::size_t, const double* u, double* out) {
  auto& b = *static_cast<detail::LaneBlock*>(c);
  b.run(*b.model->milstein, t, u, out);
}

method::SdeMethod choose_sde_method(const SdeModel& m, const StochasticOptions& o) {
  if (!o.method) {
    if (m.additive) return method::SdeMethod::SRA1;
    return m.commutative ? method::SdeMethod::Milstein : method::SdeMethod::EulerMaruyama;
  }
  if (*o.method == method::SdeMethod::SRA1 && !m.additive)
    throw Error("invalid_sde_method", "", "", "SRA1 needs additive noise (a diffusion that reads no state); "
                "this model's does: use EulerMaruyama or Milstein");
  if (*o.method == method::SdeMethod::Milstein && !m.commutative)
    throw Error("invalid_sde_method", "", "", "Milstein needs commutative noise: " + m.milstein_unavailable);
  return *o.method;
}

/// The fixed step grid: steps per output interval.
std::vector<std::uint64_t> steps_per_interval(const std::vector<double>& times, double dt) {
  std::vector<std::uint64_t> out;
  for (std::size_t k = 1; k < times.size(); ++k) {
    const double n = std::ceil((times[k] - times[k - 1]) / dt * (1 - 1e-12));
    if (!(n < 1e12)) throw Error("too_many_steps", "", "", "--dt " + number_text(dt) + " makes more than 1e12 steps");
    out.push_back(std::max<std::uint64_t>(1, static_cast<std::uint64_t>(n)));
  }
  return out;
}

void run_sde(const esm::System& system, const StochasticOptions& o, EnsembleResult& r) {
  const auto model = detail::build_sde_model(system, *o.document);
  if (o.native)
    for (auto* program : {&model->drift, &model->diffusion, &model->milstein})
      if (*program) *program = kernel::with_native(**program);
  const SdeModel& m = *model;
  r.sde = true;
  r.method = choose_sde_method(m, o);
  const double dt = o.dt > 0 ? o.dt : (o.t1 - o.t0) / 1000;
  const std::vector<std::uint64_t> steps = dt > 0 ? steps_per_interval(r.times, dt)
                                                  : std::vector<std::uint64_t>(r.times.size() - 1, 1);
  for (auto s : steps) r.steps += s;
  if (r.steps > 1000000000u)
    throw Error("too_many_steps", "", "", "the fixed step " + number_text(dt) + " makes " + std::to_string(r.steps) +
                " steps per member; the limit is 1e9 (use a larger --dt)");
  const std::size_t n = m.system.states.size(), nm = m.noise_names.size(), C = r.names.size(), T = r.times.size();
  const bool second_normal = method::sde_method_info(r.method).needs_second_normal;
  const std::size_t blocks = (o.members + kBlockLanes - 1) / kBlockLanes;

  std::vector<std::unique_ptr<detail::LaneBlock>> per_worker(detail::worker_count(blocks, o.threads));  // reused
  detail::parallel_for(blocks, o.threads, [&](std::size_t b, unsigned worker) {
    if (!per_worker[worker]) per_worker[worker] = std::make_unique<detail::LaneBlock>(m);
    detail::LaneBlock& lb = *per_worker[worker];
    const std::size_t first = b * kBlockLanes, L = std::min(kBlockLanes, o.members - first);
    std::vector<std::uint32_t> members(L);
    for (std::size_t l = 0; l < L; ++l) members[l] = member_at(o, first + l);
    lb.set_members(members, o.seed);

    std::vector<double> u = detail::initial_values(lb, o.t0);
    std::vector<double> obs(m.observed ? m.observed->output_count() * L : 0);
    auto record = [&](std::size_t k, double t) {
      if (m.observed) lb.run(*m.observed, t, u.data(), obs.data());
      for (std::size_t l = 0; l < L; ++l) {
        double* row = &r.values[(members[l] * T + k) * C];
        for (std::size_t i = 0; i < n; ++i) row[i] = u[i * L + l];
        for (std::size_t q = 0; q < C - n; ++q) row[n + q] = obs[q * L + l];
      }
    };

    method::SdeProblem problem;
    problem.states = n;
    problem.sources = nm;
    problem.context = &lb;
    problem.drift = &drift;
    problem.diffusion = &diffusion;
    if (m.milstein) problem.milstein = &milstein;
    method::SdeStepper stepper(problem, r.method, L);
    std::vector<double> dW(nm * L), dZ(second_normal ? nm * L : 0);
    std::uint64_t step = 0;
    record(0, r.times[0]);
    for (std::size_t k = 1; k < T; ++k) {
      if (n == 0) {  // nothing to step: observeds of parameters and t only
        record(k, r.times[k]);
        continue;
      }
      const double ta = r.times[k - 1], tb = r.times[k];
      const double h = (tb - ta) / static_cast<double>(steps[k - 1]);
      for (std::uint64_t s = 0; s < steps[k - 1]; ++s, ++step) {
        method::wiener_increments(o.seed, members, step, h, nm, dW.data(), second_normal ? dZ.data() : nullptr);
        stepper.step(ta + static_cast<double>(s) * h, h, u.data(), dW.data(), dZ.data());
      }
      record(k, tb);
    }
  });
}

// ---- ODE members (sampled parameters only) ----

void run_ode_members(const esm::System& system, const StochasticOptions& o, EnsembleResult& r) {
  const std::vector<detail::SampledParameter> draws = detail::sampled_parameters(system, *o.document);
  const std::size_t C = r.names.size(), T = r.times.size();
  std::vector<std::string> failures(o.members);
  detail::parallel_for(o.members, o.threads, [&](std::size_t pos, unsigned) {
    const std::uint32_t member = member_at(o, pos);
    esm::System sys = system;
    for (const detail::SampledParameter& d : draws) {
      sys.parameters[d.parameter].default_value = d.distribution.draw(o.seed, member, static_cast<std::uint32_t>(d.parameter));
      sys.parameters[d.parameter].cadence = esm::Cadence::Constant;
    }
    SimulateOptions so;
    so.t0 = o.t0;
    so.t1 = o.t1;
    so.saveat = o.saveat;
    so.integrator = o.integrator;
    so.document = o.document;
    so.native = o.native;
    const Trajectory traj = simulate(sys, so);
    double* out = &r.values[member * T * C];
    for (std::size_t k = 0; k < T; ++k)
      for (std::size_t j = 0; j < C; ++j)
        out[k * C + j] = k < traj.times.size() && traj.times[k] == r.times[k] ? traj.at(k, j) : kNaN;
    if (!traj.ok()) failures[member] = traj.message;
  });
  for (std::size_t m = 0; m < o.members; ++m)
    if (!failures[m].empty()) {
      r.failure = "member " + std::to_string(m) + ": " + failures[m];
      return;
    }
}

void check_options(const esm::System& system, const StochasticOptions& o) {
  if (o.document == nullptr) invalid("a stochastic run needs the document (for the distributions)");
  if (!(std::isfinite(o.t0) && std::isfinite(o.t1) && o.t1 >= o.t0)) invalid("the time span must be finite with t1 >= t0");
  if (!(o.saveat >= 0) || !(o.dt >= 0) || !std::isfinite(o.dt)) invalid("saveat and dt must not be negative");
  if (o.members < 1 || o.members > std::numeric_limits<std::uint32_t>::max())
    invalid("the ensemble needs between 1 and 4294967295 members");
  if (o.threads < 1 || o.threads > 1024) invalid("threads must be between 1 and 1024");
  if (!o.member_order.empty()) {
    std::vector<bool> seen(o.members, false);
    bool ok = o.member_order.size() == o.members;
    for (std::uint32_t m : o.member_order) {
      if (!ok || m >= o.members || seen[m]) { ok = false; break; }
      seen[m] = true;
    }
    if (!ok) invalid("member_order must be a permutation of the member ids");
  }
  (void)system;
}

}  // namespace

bool is_stochastic(const esm::System& system) {
  for (const esm::FlatVariable& v : system.parameters)
    if (v.cadence == esm::Cadence::Brownian || (v.cadence == esm::Cadence::Sampled && !v.default_value)) return true;
  return false;
}

EnsembleResult simulate_ensemble(const esm::System& system, const StochasticOptions& o) {
  check_options(system, o);
  EnsembleResult r;
  for (const auto& s : system.states) r.names.push_back(s.name);
  r.state_count = system.states.size();
  for (const auto& v : system.observed) r.names.push_back(v.name);
  r.times = output_times(o);
  r.members = o.members;
  const std::size_t C = r.names.size(), T = r.times.size();
  if (static_cast<double>(o.members) * static_cast<double>(T) * static_cast<double>(C) > kMaxEnsembleValues)
    throw Error("too_many_outputs", "", "", std::to_string(o.members) + " members x " + std::to_string(T) +
                " output times x " + std::to_string(C) + " columns is more than 1e8 stored values; use fewer "
                "members, a larger saveat or a shorter span");
  r.values.assign(o.members * T * C, kNaN);

  bool sde = false;
  for (const esm::FlatVariable& v : system.parameters) sde |= v.cadence == esm::Cadence::Brownian;
  if (sde) run_sde(system, o, r);
  else run_ode_members(system, o, r);

  // Statistics in member-id order (two passes), whatever order the members ran in.
  r.mean.assign(T * C, 0.0);
  r.variance.assign(T * C, 0.0);
  const double N = static_cast<double>(o.members);
  for (std::size_t m = 0; m < o.members; ++m)
    for (std::size_t q = 0; q < T * C; ++q) r.mean[q] += r.values[m * T * C + q];
  for (double& x : r.mean) x /= N;
  for (std::size_t m = 0; m < o.members; ++m)
    for (std::size_t q = 0; q < T * C; ++q) {
      const double d = r.values[m * T * C + q] - r.mean[q];
      r.variance[q] += d * d;
    }
  for (double& x : r.variance) x = o.members > 1 ? x / (N - 1) : kNaN;

  if (r.failure.empty())
    for (std::size_t m = 0; m < o.members && r.failure.empty(); ++m)
      for (std::size_t k = 0; k < T && r.failure.empty(); ++k)
        for (std::size_t j = 0; j < C; ++j)
          if (!std::isfinite(r.value(m, k, j))) {
            r.failure = "member " + std::to_string(m) + ": '" + r.names[j] + "' is not finite at t = " +
                        number_text(r.times[k]);
            break;
          }
  return r;
}

}  // namespace esi::exec
