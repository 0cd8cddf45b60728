#include "exec/loss.hpp"

#include <algorithm>
#include <cmath>

#include "esi/core/error.hpp"
#include "exec/expression_probe.hpp"
#include "exec/model.hpp"
#include "exec/run_support.hpp"

namespace esi::exec::detail {

namespace {

[[noreturn]] void refuse(const LossTerm& t, const std::string& code, const std::string& message) {
  throw Error(code, t.file, t.pointer, message);
}

/// The cells a loss variable reads: a state (weight 1) or a state array (1 / cells each).
std::vector<std::pair<std::size_t, double>> resolve(const esm::System& sys, const LossTerm& t, std::string& units) {
  if (const int i = sys.state_index(t.variable); i >= 0) {
    units = sys.states[std::size_t(i)].units;
    return {{std::size_t(i), 1.0}};
  }
  std::vector<std::pair<std::size_t, double>> cells;
  for (std::size_t i = 0; i < sys.states.size(); ++i)
    if (sys.states[i].array == t.variable) cells.emplace_back(i, 0.0);
  if (!cells.empty()) {
    for (auto& c : cells) c.second = 1.0 / double(cells.size());
    for (const auto& a : sys.arrays)
      if (a.name == t.variable) units = a.units;
    return cells;
  }
  if (const int o = sys.observed_index(t.variable); o >= 0) {
    units = sys.observed[std::size_t(o)].units;
    return {};  // an observed: Loss::bind compiles it
  }
  refuse(t, "unknown_gradient_variable",
         "the loss reads " + t.variable + ", which names no state, state array or observed of the model");
}

void check_time(const LossTerm& t, double time, double t0, double t1) {
  if (!(time >= t0 && time <= t1))
    refuse(t, "invalid_loss", "the loss reads " + t.variable + " at t = " + number_text(time) +
                                  ", outside the run's span [" + number_text(t0) + ", " + number_text(t1) + "]");
}

}  // namespace

Loss::Loss(const esm::System& system, std::vector<LossTerm> terms, double t0, double t1) : t0_(t0) {
  for (LossTerm& t : terms) {
    Resolved r;
    std::string units;
    r.cells = resolve(system, t, units);
    if (r.cells.empty()) r.observed = t.variable;
    if (units_.empty()) units_ = units;
    if (!std::isfinite(t.weight)) refuse(t, "invalid_loss", "a loss weight must be a finite number");
    if (t.kind == LossTerm::Kind::At || t.kind == LossTerm::Kind::Misfit) {
      if (t.times.empty()) refuse(t, "invalid_loss", "the loss term reads " + t.variable + " at no time");
      for (double time : t.times) check_time(t, time, t0, t1);
    }
    if (t.kind == LossTerm::Kind::Misfit) {
      if (t.values.size() != t.times.size() || t.sigmas.size() != t.times.size())
        refuse(t, "invalid_loss", "a misfit needs one value and one sigma per time");
      for (double s : t.sigmas)
        if (!(s > 0) || !std::isfinite(s)) refuse(t, "invalid_loss", "an observation's sigma must be > 0, got " + number_text(s));
      r.residuals.assign(t.times.size(), 0.0);
    }
    if (t.kind == LossTerm::Kind::Integral || t.kind == LossTerm::Kind::Mean) {
      check_time(t, t.begin, t0, t1);
      check_time(t, t.end, t0, t1);
      if (!(t.end > t.begin))
        refuse(t, "invalid_loss", "the interval [" + number_text(t.begin) + ", " + number_text(t.end) + "] is empty");
      stops_.push_back(t.begin), stops_.push_back(t.end);
    }
    for (double time : t.times) stops_.push_back(time);
    r.term = std::move(t);
    terms_.push_back(std::move(r));
  }
  std::erase_if(stops_, [&](double s) { return !(s > t0 && s < t1); });
  std::sort(stops_.begin(), stops_.end());
  stops_.erase(std::unique(stops_.begin(), stops_.end()), stops_.end());
}

Loss::~Loss() = default;
Loss::Loss(const Loss&) = default;
Loss::Loss(Loss&&) noexcept = default;

void Loss::bind(const Model& model) {
  for (Resolved& r : terms_) {
    if (r.observed.empty()) continue;
    const int o = model.system.observed_index(r.observed);
    if (o < 0)
      refuse(r.term, "unknown_gradient_variable", "the loss reads " + r.observed + ", which the bound model no longer has");
    try {
      r.probe = std::make_shared<ExpressionProbe>(model, model.system.observed_rhs[std::size_t(o)]);
    } catch (const Error& e) {
      const auto& v = model.system.observed[std::size_t(o)];
      throw Error(e.code(), v.file, v.pointer, "the loss reads the observed " + r.observed + ": " + e.what());
    }
    direct_p_.assign(model.derivative_parameters.size(), 0.0);
  }
}

Loss Loss::part(double begin, double end, bool last) const {
  Loss out(*this);
  out.t0_ = begin;
  out.stops_.clear();
  for (Resolved& r : out.terms_) {
    LossTerm& t = r.term;
    LossTerm kept = t;
    kept.times.clear(), kept.values.clear(), kept.sigmas.clear();
    for (std::size_t k = 0; k < t.times.size(); ++k) {
      const double x = t.times[k];
      if (!(x >= begin && (x < end || (last && x == end)))) continue;
      kept.times.push_back(x);
      if (t.kind == LossTerm::Kind::Misfit) kept.values.push_back(t.values[k]), kept.sigmas.push_back(t.sigmas[k]);
    }
    t = std::move(kept);
    if (t.kind == LossTerm::Kind::Misfit) r.residuals.assign(t.times.size(), 0.0);
  }
  return out;
}

void Loss::prepare(const std::vector<double>& p) {
  for (Resolved& r : terms_)
    if (r.probe) r.probe->prepare(p);
}

double Loss::variable(Resolved& r, double t, std::span<const double> u, bool record) {
  if (!r.probe) {
    double x = 0;
    for (const auto& [i, w] : r.cells) x += w * u[i];
    return x;
  }
  ExpressionProbe& probe = *r.probe;
  const double x = probe.evaluate(t, u.data(), record);
  if (record) r.rows.insert(r.rows.end(), probe.values(), probe.values() + probe.nonzeros());
  return x;
}

void Loss::add_variable(const Resolved& r, std::size_t row, double scale, std::span<double> lambda) const {
  if (!r.probe) {
    for (const auto& [i, w] : r.cells) lambda[i] += scale * w;
    return;
  }
  const std::size_t width = r.probe->nonzeros();
  const double* values = r.rows.data() + row * width;
  for (std::size_t j = 0; j < width; ++j) lambda[std::size_t(r.probe->columns()[j])] += scale * values[j];
}

void Loss::add_direct(const std::vector<double>& dp, double scale) {
  for (std::size_t k = 0; k < dp.size(); ++k) direct_p_[k] += scale * dp[k];
}

double Loss::interval_share(const LossTerm& t, double a, double b) {
  if (t.kind != LossTerm::Kind::Integral && t.kind != LossTerm::Kind::Mean) return 0;
  if (a < t.begin || b > t.end) return 0;
  const double share = t.weight * (b - a) / 2;
  return t.kind == LossTerm::Kind::Mean ? share / (t.end - t.begin) : share;
}

// At and Misfit terms read states at their times; at t0 that is u0 itself.
void Loss::start(std::span<const double> u0) {
  value_ = 0;
  std::fill(direct_p_.begin(), direct_p_.end(), 0.0);
  for (Resolved& r : terms_) r.rows.clear();
  step(t0_, u0, t0_, u0);
}

// Called once per step end in order (start() being the first), so an observed is evaluated
// once per step end: its value and derivatives there are the next step's start.
void Loss::step(double t_start, std::span<const double> u_start, double t_end, std::span<const double> u_end) {
  for (Resolved& r : terms_) {
    const LossTerm& t = r.term;
    const double x_start = r.probe ? r.last_x : variable(r, t_start, u_start, false);
    const double x = variable(r, t_end, u_end, true);
    if (r.probe) {  // the step's start values become the previous step end's
      std::swap(r.start_dp, r.last_dp);
      r.last_dp.assign(r.probe->gradient_p().begin(), r.probe->gradient_p().end());
      r.last_x = x;
    }
    const std::vector<double>& dp_start = r.start_dp;
    for (std::size_t k = 0; k < t.times.size(); ++k) {
      if (t.times[k] != t_end) continue;
      if (t.kind == LossTerm::Kind::At) {
        value_ += t.weight * x;
        add_direct(r.last_dp, t.weight);
      } else {
        const double miss = x - t.values[k];
        value_ += t.weight * 0.5 * (miss / t.sigmas[k]) * (miss / t.sigmas[k]);
        r.residuals[k] = t.weight * miss / (t.sigmas[k] * t.sigmas[k]);
        add_direct(r.last_dp, r.residuals[k]);
      }
    }
    if (t_end > t_start) {
      const double share = interval_share(t, t_start, t_end);
      value_ += share * (x_start + x);
      if (share != 0) add_direct(dp_start, share), add_direct(r.last_dp, share);
    }
  }
}

void Loss::add_gradient_at_step_end(const method::ForwardTape& tape, std::size_t k, std::span<double> lambda) const {
  const method::StepRecord& s = tape.steps[k];
  for (const Resolved& r : terms_) {
    const LossTerm& t = r.term;
    for (std::size_t j = 0; j < t.times.size(); ++j)
      if (t.times[j] == s.t_end) add_variable(r, k + 1, t.kind == LossTerm::Kind::At ? t.weight : r.residuals[j], lambda);
    double share = interval_share(t, s.t, s.t_end);
    if (k + 1 < tape.steps.size()) share += interval_share(t, tape.steps[k + 1].t, tape.steps[k + 1].t_end);
    if (share != 0) add_variable(r, k + 1, share, lambda);
  }
}

void Loss::add_gradient_at_start(const method::ForwardTape& tape, std::span<double> lambda) const {
  for (const Resolved& r : terms_) {
    const LossTerm& t = r.term;
    for (std::size_t j = 0; j < t.times.size(); ++j)
      if (t.times[j] == t0_) add_variable(r, 0, t.kind == LossTerm::Kind::At ? t.weight : r.residuals[j], lambda);
    if (!tape.steps.empty()) {
      const double share = interval_share(t, tape.steps[0].t, tape.steps[0].t_end);
      if (share != 0) add_variable(r, 0, share, lambda);
    }
  }
}

}  // namespace esi::exec::detail
