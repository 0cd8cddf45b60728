// Discrete sensitivities on hand-written problems whose derivatives are written out below
// (independent of the kernel's symbolic ones): the tangent and the adjoint are transposes of
// each other (dot-product identity), the tangent matches central differences of the frozen
// step sequence, and on u' = -p u the gradient equals the closed-form derivative of the
// discrete map, prod_n R(-p h_n), with R evaluated from the tableau in complex arithmetic.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <random>
#include <string>
#include <vector>

#include "esi/method/integrator.hpp"
#include "esi/method/sensitivity.hpp"
#include "support/vectors.hpp"
#include "method/tableau.hpp"

namespace esi::method {
namespace {

using esi::testing::dot;
using esi::testing::dot_magnitude;
using esi::testing::random_vector;

using detail::Family;
using detail::family_of;

// f0 = -p0 u0 u1 + sin(t) u0 / 4,  f1 = p1 u0^2 - p0 u1: nonlinear, non-autonomous, with
// parameters in J, so every term of the Rosenbrock adjoint (second derivatives, f_t) is used.
struct Coupled {
  double p[2] = {2.0, 0.7};
  bool autonomous = false;
  double s(double t) const { return autonomous ? 0.0 : std::sin(t) / 4; }

  static Coupled& of(void* c) { return *static_cast<Coupled*>(c); }
  static void rhs(void* c, double t, const double* u, double* du) {
    const Coupled& m = of(c);
    du[0] = -m.p[0] * u[0] * u[1] + m.s(t) * u[0];
    du[1] = m.p[1] * u[0] * u[0] - m.p[0] * u[1];
  }
  static void jac(void* c, double t, const double* u, double* v) {  // CSR: all four entries
    const Coupled& m = of(c);
    v[0] = -m.p[0] * u[1] + m.s(t), v[1] = -m.p[0] * u[0], v[2] = 2 * m.p[1] * u[0], v[3] = -m.p[0];
  }
  static void pjac(void*, double, const double* u, double* v) {
    v[0] = -u[0] * u[1];  // df0/dp0
    v[1] = -u[1];         // df1/dp0
    v[2] = u[0] * u[0];   // df1/dp1
  }
  static void second(void* c, double, const double* u, double* hu, double* hp) {
    const Coupled& m = of(c);
    hu[0] = -m.p[0], hu[1] = -m.p[0], hu[2] = 2 * m.p[1];
    hp[0] = -u[1], hp[1] = -u[0], hp[2] = 2 * u[0], hp[3] = -1;
  }
  OdeProblem problem() {
    OdeProblem q;
    q.size = 2;
    q.context = this;
    q.rhs = rhs;
    q.jac_row_ptr = {0, 2, 4};
    q.jac_col = {0, 1, 0, 1};
    q.jacobian = jac;
    q.parameter_count = 2;
    q.param_row_ptr = {0, 1, 3};
    q.param_col = {0, 0, 1};
    q.parameter_jacobian = pjac;
    q.hess_u_entry = {0, 1, 2};
    q.hess_u_state = {1, 0, 0};
    q.hess_p_entry = {0, 1, 2, 3};
    q.hess_p_param = {0, 0, 1, 0};
    q.second_derivatives = second;
    q.autonomous = autonomous;
    return q;
  }
};

// u_i' = -p_i u_i, three independent components.
struct Decay {
  double p[3] = {0.5, 3.0, 40.0};
  static void rhs(void* c, double, const double* u, double* du) {
    const double* p = static_cast<Decay*>(c)->p;
    for (int i = 0; i < 3; ++i) du[i] = -p[i] * u[i];
  }
  static void jac(void* c, double, const double*, double* v) {
    const double* p = static_cast<Decay*>(c)->p;
    for (int i = 0; i < 3; ++i) v[i] = -p[i];
  }
  static void pjac(void*, double, const double* u, double* v) {
    for (int i = 0; i < 3; ++i) v[i] = -u[i];
  }
  static void second(void*, double, const double*, double*, double* hp) {
    for (int i = 0; i < 3; ++i) hp[i] = -1;
  }
  OdeProblem problem() {
    OdeProblem q;
    q.size = 3;
    q.context = this;
    q.rhs = rhs;
    q.jac_row_ptr = {0, 1, 2, 3};
    q.jac_col = {0, 1, 2};
    q.jacobian = jac;
    q.parameter_count = 3;
    q.param_row_ptr = {0, 1, 2, 3};
    q.param_col = {0, 1, 2};
    q.parameter_jacobian = pjac;
    q.hess_p_entry = {0, 1, 2};
    q.hess_p_param = {0, 1, 2};
    q.second_derivatives = second;
    q.autonomous = true;
    return q;
  }
};

// u_0' = -p u_0, u_i' = p (u_{i-1} - u_i) (i > 0) on 80 states: past the dense limit, so the
// steps solve with linalg's planned sparse LU (whose factors a kept step stores).
struct Chain {
  static constexpr std::size_t kN = 80;
  double p = 3.0;
  static void rhs(void* c, double, const double* u, double* du) {
    const double p = static_cast<Chain*>(c)->p;
    du[0] = -p * u[0];
    for (std::size_t i = 1; i < kN; ++i) du[i] = p * (u[i - 1] - u[i]);
  }
  static void jac(void* c, double, const double*, double* v) {  // row i: (i, i-1), (i, i)
    const double p = static_cast<Chain*>(c)->p;
    v[0] = -p;
    for (std::size_t i = 1; i < kN; ++i) v[2 * i - 1] = p, v[2 * i] = -p;
  }
  static void pjac(void*, double, const double* u, double* v) {
    v[0] = -u[0];
    for (std::size_t i = 1; i < kN; ++i) v[i] = u[i - 1] - u[i];
  }
  static void second(void*, double, const double*, double*, double* hp) {
    hp[0] = -1;
    for (std::size_t i = 1; i < kN; ++i) hp[2 * i - 1] = 1, hp[2 * i] = -1;
  }
  OdeProblem problem() {
    OdeProblem q;
    q.size = kN;
    q.context = this;
    q.rhs = rhs;
    q.jac_row_ptr = {0, 1};
    q.jac_col = {0};
    for (std::size_t i = 1; i < kN; ++i) {
      q.jac_col.push_back(int(i) - 1), q.jac_col.push_back(int(i));
      q.jac_row_ptr.push_back(int(q.jac_col.size()));
    }
    q.jacobian = jac;
    q.parameter_count = 1;
    for (std::size_t i = 0; i <= kN; ++i) q.param_row_ptr.push_back(int(i));
    q.param_col.assign(kN, 0);
    q.parameter_jacobian = pjac;
    for (std::size_t e = 0; e < q.jac_col.size(); ++e) q.hess_p_entry.push_back(int(e)), q.hess_p_param.push_back(0);
    q.second_derivatives = second;
    q.autonomous = true;
    return q;
  }
};

std::vector<MethodId> sensitivity_methods() {
  std::vector<MethodId> out;
  for (MethodId id : all_methods())
    if (sensitivity_unsupported(id).empty() && method_available(id)) out.push_back(id);
  return out;
}

IntegratorOptions options_for(MethodId id) {
  IntegratorOptions o;
  o.method = id;
  o.rtol = 1e-6, o.atol = 1e-9;
  if (method_info(id).embedded_order == 0) o.dt_initial = 0.01;
  return o;
}

ForwardTape record(const OdeProblem& q, const IntegratorOptions& o, std::vector<double> u0,
                   double t1, std::size_t every = 1) {
  Integrator integ(q, o, 0.0, u0);
  ForwardTape tape;
  tape.checkpoint_every = every;
  integ.record(&tape);
  while (integ.t() < t1) {
    const ReturnCode rc = integ.step(t1);
    EXPECT_EQ(rc, ReturnCode::Success) << integ.message();
    if (rc != ReturnCode::Success) break;
  }
  EXPECT_EQ(tape.final_state, std::vector<double>(integ.u().begin(), integ.u().end()));
  return tape;
}

struct Identity {
  double tangent_side = 0, adjoint_side = 0;
  double relative() const {
    return std::abs(tangent_side - adjoint_side) / std::max(std::abs(tangent_side), 1e-300);
  }
};

// <lambda, TLM (du0, dp)> against <ADJ lambda, (du0, dp)> over the whole tape.
Identity dot_product_identity(const OdeProblem& q, const IntegratorOptions& o,
                              const ForwardTape& tape, std::mt19937& rng) {
  const auto du0 = random_vector(rng, q.size), dp = random_vector(rng, q.parameter_count),
             lambda = random_vector(rng, q.size);
  std::vector<double> du = du0;
  const SweepResult t = tangent(q, o, tape, du, dp);
  EXPECT_TRUE(t.ok()) << t.message;
  std::vector<double> l = lambda, mu(q.parameter_count, 0.0);
  const SweepResult a = adjoint(q, o, tape, l, mu);
  EXPECT_TRUE(a.ok()) << a.message;
  return {dot(lambda, du), dot(l, du0) + dot(mu, dp)};
}

TEST(Sensitivity, DotProductIdentityForEverySupportedMethod) {
  for (bool autonomous : {false, true})
    for (MethodId id : sensitivity_methods()) {
      SCOPED_TRACE(std::string(method_info(id).name) + (autonomous ? " autonomous" : ""));
      Coupled model;
      model.autonomous = autonomous;
      const OdeProblem q = model.problem();
      const IntegratorOptions o = options_for(id);
      const ForwardTape tape = record(q, o, {1.0, 0.5}, 2.0);
      ASSERT_TRUE(tape.unsupported.empty()) << tape.unsupported;
      ASSERT_GT(tape.steps.size(), 3u);
      // A non-autonomous Rosenbrock step's f_t is a difference quotient over d ~ 6e-6 |t|:
      // its derivative cancels like the quotient does, so rounding grows by ~1/d there.
      const bool quotient = !autonomous && family_of(id) == Family::Rosenbrock;
      std::mt19937 rng(7);
      for (int trial = 0; trial < 3; ++trial) {
        const Identity id_ = dot_product_identity(q, o, tape, rng);
        EXPECT_LE(id_.relative(), quotient ? 1e-11 : 1e-13)
            << id_.tangent_side << " vs " << id_.adjoint_side;
      }
    }
}

// The frozen step sequence as a function of (u0, p), differenced centrally.
TEST(Sensitivity, TangentMatchesCentralDifferencesOfTheFrozenSteps) {
  for (MethodId id : sensitivity_methods()) {
    SCOPED_TRACE(method_info(id).name);
    Coupled model;
    OdeProblem q = model.problem();
    IntegratorOptions o = options_for(id);
    o.rtol = 1e-9, o.atol = 1e-12;  // SDIRK stages then converge far below the difference error
    const ForwardTape tape = record(q, o, {1.0, 0.5}, 1.0);
    std::mt19937 rng(11);
    const auto du0 = random_vector(rng, 2), dp = random_vector(rng, 2);
    std::vector<double> du = du0;
    ASSERT_TRUE(tangent(q, o, tape, du, dp).ok());
    const double eps = 1e-6;
    std::vector<double> ends[2];
    for (int side = 0; side < 2; ++side) {
      const double sign = side == 0 ? 1 : -1;
      std::vector<double> u0 = {1.0 + sign * eps * du0[0], 0.5 + sign * eps * du0[1]};
      model.p[0] = 2.0 + sign * eps * dp[0], model.p[1] = 0.7 + sign * eps * dp[1];
      ends[side] = replay(q, o, tape, u0);
    }
    for (int i = 0; i < 2; ++i) {
      const double fd = (ends[0][i] - ends[1][i]) / (2 * eps);
      EXPECT_NEAR(du[i], fd, 1e-7 * std::max(1.0, std::abs(fd))) << "component " << i;
    }
  }
}

// R(z) of one step of the method on u' = lambda u (z = h lambda), evaluated from its tableau
// in complex arithmetic: an implementation of the step independent of the steppers.
std::complex<double> stability(MethodId id, std::complex<double> z) {
  using C = std::complex<double>;
  C k[detail::kMaxStages];
  C u1 = 1;
  switch (family_of(id)) {
    case Family::Explicit: {  // k_i = z (1 + sum a_ij k_j) in units of h
      const auto& t = detail::erk_tableau(id);
      for (int i = 0; i < t.stages; ++i) {
        C y = 1;
        for (int j = 0; j < i; ++j) y += t.a[i][j] * k[j];
        k[i] = z * y;
        u1 += t.b[i] * k[i];
      }
      return u1;
    }
    case Family::Rosenbrock: {  // (1/gamma - z) k_i = z U_i + sum C_ij k_j  (h = 1 units)
      const auto& t = detail::rosenbrock_tableau(id);
      for (int i = 0; i < t.stages; ++i) {
        C y = 1, rhs = 0;
        for (int j = 0; j < i; ++j) y += t.a[i][j] * k[j], rhs += t.C[i][j] * k[j];
        k[i] = (z * y + rhs) / (1.0 / t.gamma - z);
        u1 += t.b[i] * k[i];
      }
      return u1;
    }
    case Family::Sdirk: {  // Y_i = psi_i + gamma z Y_i, slope z Y_i
      const auto& t = detail::sdirk_tableau(id);
      for (int i = 0; i < t.stages; ++i) {
        C psi = 1;
        for (int j = 0; j < i; ++j) psi += t.a[i][j] * k[j];
        const bool explicit_first = i == 0 && t.a[0][0] == 0.0;
        k[i] = explicit_first ? z : z * psi / (1.0 - t.gamma * z);
        u1 += t.b[i] * k[i];
      }
      return u1;
    }
    default: return 0;
  }
}

TEST(Sensitivity, DecayGradientEqualsTheClosedFormOfTheDiscreteMap) {
  for (MethodId id : sensitivity_methods()) {
    SCOPED_TRACE(method_info(id).name);
    Decay model;
    const OdeProblem q = model.problem();
    IntegratorOptions o = options_for(id);
    o.rtol = 1e-10, o.atol = 1e-14;  // linear stages: Newton's error is below 1e-13 relative
    const std::vector<double> u0 = {1.0, 2.0, 0.5};
    const ForwardTape tape = record(q, o, u0, 0.5);
    // L = sum_i u_i(T): dL/du0_i = prod R(z_n), dL/dp_i = u_i(T) sum_n R'(z_n)(-h_n) / R(z_n).
    std::vector<double> lambda(3, 1.0), mu(3, 0.0);
    const SweepResult r = adjoint(q, o, tape, lambda, mu);
    ASSERT_TRUE(r.ok()) << r.message;
    for (int i = 0; i < 3; ++i) {
      double prod = 1, log_derivative = 0;
      for (const StepRecord& s : tape.steps) {
        const double z = -model.p[i] * s.h, dz = 1e-20;
        const std::complex<double> R = stability(id, z);
        const double dR = stability(id, {z, dz}).imag() / dz;  // complex step: exact to rounding
        prod *= R.real();
        log_derivative += dR * (-s.h) / R.real();
      }
      EXPECT_NEAR(lambda[i], prod, 1e-12 * std::abs(prod)) << "component " << i;
      const double expected_p = tape.final_state[i] * log_derivative;
      EXPECT_NEAR(mu[i], expected_p, 1e-10 * std::abs(expected_p) + 1e-300) << "component " << i;
    }
  }
}

TEST(Sensitivity, CheckpointIntervalsGiveTheSameBits) {
  Coupled model;
  const OdeProblem q = model.problem();
  const IntegratorOptions o = options_for(MethodId::Rodas5P);
  const ForwardTape all = record(q, o, {1.0, 0.5}, 2.0, 1), sparse = record(q, o, {1.0, 0.5}, 2.0, 4);
  EXPECT_LT(sparse.checkpoints.size(), all.checkpoints.size());
  std::vector<double> l1 = {0.3, -0.8}, l2 = l1, m1(2, 0.0), m2(2, 0.0);
  ASSERT_TRUE(adjoint(q, o, all, l1, m1).ok());
  ASSERT_TRUE(adjoint(q, o, sparse, l2, m2).ok());
  EXPECT_EQ(l1, l2);
  EXPECT_EQ(m1, m2);
}

// A memory budget thins the tape as the run goes (the kept stages first, then every other
// checkpoint): it ends within the budget with K a power of 2, and sweeps to the same bits.
TEST(Sensitivity, AMemoryBudgetThinsTheTapeAndKeepsEveryBit) {
  for (MethodId id : {MethodId::Rodas5P, MethodId::Kvaerno3, MethodId::Tsit5}) {
    SCOPED_TRACE(method_info(id).name);
    Coupled model;
    const OdeProblem q = model.problem();
    const IntegratorOptions o = options_for(id);
    const auto run = [&](std::size_t budget) {
      ForwardTape tape;
      tape.keep_stages = true;
      tape.memory_budget = budget;
      Integrator integ(q, o, 0.0, std::vector<double>{1.0, 0.5});
      integ.record(&tape);
      while (integ.t() < 2.0) EXPECT_EQ(integ.step(2.0), ReturnCode::Success);
      return tape;
    };
    const ForwardTape all = run(0);
    ASSERT_GT(all.steps.size(), 12u);
    const std::size_t records = all.steps.size() * sizeof(StepRecord) + all.final_state.size() * sizeof(double);
    const std::size_t budget = records + 4 * q.size * sizeof(double);  // room for about 4 checkpoints
    const ForwardTape thin = run(budget);
    EXPECT_LE(thin.bytes(), budget);
    EXPECT_FALSE(thin.has_kept(0));
    EXPECT_GE(thin.checkpoint_every, 4u);
    EXPECT_EQ(thin.checkpoint_every & (thin.checkpoint_every - 1), 0u);  // a power of 2
    EXPECT_EQ(thin.checkpoints.size(), ((thin.steps.size() - 1) / thin.checkpoint_every + 1) * q.size);
    EXPECT_EQ(thin.final_state, all.final_state);
    std::vector<double> l1 = {0.3, -0.8}, l2 = l1, m1(2, 0.0), m2(2, 0.0);
    ASSERT_TRUE(adjoint(q, o, all, l1, m1).ok());
    ASSERT_TRUE(adjoint(q, o, thin, l2, m2).ok());
    EXPECT_EQ(l1, l2);
    EXPECT_EQ(m1, m2);
  }
}

// A tape that kept every step's stages sweeps without replays, to the same bits.
TEST(Sensitivity, KeptStagesGiveTheBitsOfReplays) {
  for (MethodId id : {MethodId::Rodas5P, MethodId::Rodas3, MethodId::Kvaerno3, MethodId::Tsit5}) {
    SCOPED_TRACE(method_info(id).name);
    Coupled model;
    const OdeProblem q = model.problem();
    const IntegratorOptions o = options_for(id);
    const ForwardTape replayed = record(q, o, {1.0, 0.5}, 2.0);
    ForwardTape kept;
    kept.keep_stages = true;
    Integrator integ(q, o, 0.0, std::vector<double>{1.0, 0.5});
    integ.record(&kept);
    while (integ.t() < 2.0) ASSERT_EQ(integ.step(2.0), ReturnCode::Success);
    ASSERT_TRUE(kept.has_kept(kept.steps.size() - 1));
    EXPECT_EQ(kept.final_state, replayed.final_state);
    std::vector<double> l1 = {0.3, -0.8}, l2 = l1, m1(2, 0.0), m2(2, 0.0);
    ASSERT_TRUE(adjoint(q, o, replayed, l1, m1).ok());
    ASSERT_TRUE(adjoint(q, o, kept, l2, m2).ok());
    EXPECT_EQ(l1, l2);
    EXPECT_EQ(m1, m2);
    std::vector<double> t1 = {0.1, 0.2}, t2 = t1, dp = {0.5, -0.25};
    ASSERT_TRUE(tangent(q, o, replayed, t1, dp).ok());
    ASSERT_TRUE(tangent(q, o, kept, t2, dp).ok());
    EXPECT_EQ(t1, t2);
  }
}

// The same on a sparse system, whose kept steps store the planned LU's factors.
TEST(Sensitivity, KeptSparseFactorsGiveTheBitsOfReplays) {
  for (MethodId id : {MethodId::Rodas5P, MethodId::Rosenbrock23}) {
    SCOPED_TRACE(method_info(id).name);
    Chain model;
    const OdeProblem q = model.problem();
    const IntegratorOptions o = options_for(id);
    std::vector<double> u0(Chain::kN, 0.0);
    u0[0] = 1;
    const ForwardTape replayed = record(q, o, u0, 3.0);
    ForwardTape kept;
    kept.keep_stages = true;
    Integrator integ(q, o, 0.0, u0);
    integ.record(&kept);
    while (integ.t() < 3.0) ASSERT_EQ(integ.step(3.0), ReturnCode::Success);
    ASSERT_GT(kept.steps.size(), 5u);
    std::mt19937 rng(1);
    const auto lambda = random_vector(rng, Chain::kN);
    std::vector<double> l1 = lambda, l2 = lambda, m1(1, 0.0), m2(1, 0.0);
    ASSERT_TRUE(adjoint(q, o, replayed, l1, m1).ok());
    ASSERT_TRUE(adjoint(q, o, kept, l2, m2).ok());
    EXPECT_EQ(l1, l2);
    EXPECT_EQ(m1, m2);
    EXPECT_LE(dot_product_identity(q, o, kept, rng).relative(), 1e-13);
  }
}

TEST(Sensitivity, ClippedComponentsCarryNoSensitivity) {
  Decay model;
  model.p[0] = 400;  // stiff: Euler's factor 1 - 400 h < 0 and the clip sets it back
  const OdeProblem q = model.problem();
  IntegratorOptions o = options_for(MethodId::Euler);
  o.nonnegative = DomainPolicy::Clip;
  o.adaptive = false, o.dt_initial = 0.01;
  const ForwardTape tape = record(q, o, {1.0, 1.0, 1.0}, 0.1);
  ASSERT_FALSE(tape.clipped.empty());
  std::vector<double> lambda(3, 1.0), mu(3, 0.0);
  ASSERT_TRUE(adjoint(q, o, tape, lambda, mu).ok());
  EXPECT_EQ(lambda[0], 0.0);
  EXPECT_EQ(mu[0], 0.0);
  EXPECT_NE(lambda[1], 0.0);
  std::mt19937 rng(3);
  EXPECT_LE(dot_product_identity(q, o, tape, rng).relative(), 1e-13);
}

TEST(Sensitivity, RefusesWhatItCannotDifferentiate) {
  Coupled model;
  OdeProblem q = model.problem();
  const ForwardTape imex_like = [&] {
    ForwardTape t;
    t.size = 2;
    t.method = MethodId::KenCarp4;
    return t;
  }();
  std::vector<double> l(2, 1.0), mu(2, 0.0);
  SweepResult r = adjoint(q, options_for(MethodId::Rodas4), imex_like, l, mu);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.message.find("IMEX"), std::string::npos) << r.message;

  q.second_derivatives = nullptr;  // a Rosenbrock sweep needs them
  const ForwardTape tape = record(q, options_for(MethodId::Rodas4), {1.0, 0.5}, 0.5);
  r = adjoint(q, options_for(MethodId::Rodas4), tape, l, mu);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.message.find("second derivatives"), std::string::npos) << r.message;

  // A tape replayed against a changed problem no longer reproduces the forward run.
  q = model.problem();
  const ForwardTape good = record(q, options_for(MethodId::Rodas4), {1.0, 0.5}, 0.5);
  model.p[0] = 2.5;
  r = adjoint(q, options_for(MethodId::Rodas4), good, l, mu);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.message.find("bit for bit"), std::string::npos) << r.message;
}

}  // namespace
}  // namespace esi::method
