// Lane pools (lane_pool.hpp): one Rosenbrock controller per lane, every stage run for all
// lanes of a block at once.
//
// A lane follows the scalar Integrator's step logic (method/integrator.cpp) step for step:
// landing slack, rejection factors, dt_min and max_steps, the PI/I/PID controllers, Hairer's
// starting step and the one-sided f_t difference of the scalar Rosenbrock stepper. What
// differs is the linear algebra (a planned lane-batched LU without pivoting instead of Eigen's
// partial pivoting), so a cell's result is close to, not bitwise equal to, a scalar run.
//
// Lanes never read each other: every per-lane loop below writes lane l from lane l only, and
// the kernel programs and the LU are lane-independent by construction, so when the block
// recomputes f(t, u0) or J for lanes whose (t, u0) did not change, those lanes get the same
// bits again. That is what makes results independent of lane position and shard composition.
#include "esi/exec/lane_pool.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "esi/core/error.hpp"
#include "esi/kernel/jacobian.hpp"
#include "esi/kernel/native.hpp"
#include "esi/kernel/program.hpp"
#include "esi/linalg/lane_ops.hpp"
#include "esi/linalg/sparse_lu.hpp"
#include "esi/plan/jacobian_assembly.hpp"
#include "exec/model.hpp"
#include "exec/parallel.hpp"
#include "method/controller.hpp"
#include "method/tableau.hpp"

namespace esi::exec {

using method::ReturnCode;

struct CellModel::Impl {
  esm::System system;
  std::vector<double> p;  // defaults, System::parameters order
  std::vector<std::size_t> cell_parameter_index;
  /// Subexpressions that depend on the cell's parameters but not on its state or t (rate
  /// constants of T and P, photolysis scalings): computed once per cell per call by
  /// `cell_setup` and read by the RHS and Jacobian as further per-cell inputs "$cell<k>", as
  /// KPP and GEOS-Chem compute rates once per chemistry step.
  std::optional<kernel::Program> cell_setup;
  std::size_t hoisted = 0;
  std::optional<kernel::Program> rhs;
  std::optional<plan::OperatorJacobian> jacobian;
  linalg::SparseLuPlan lu;
  /// The Jacobian's layout in the LU's factor storage (plan's Jacobian-assembly API): its
  /// value program writes J straight where lu_factor_shifted forms and factors s I - J.
  std::optional<plan::ScatterPlan> jacobian_layout;
  bool autonomous = true;
  std::size_t n = 0;
};

CellModel::CellModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CellModel::~CellModel() = default;

std::size_t CellModel::state_count() const {
  return impl_->n;
}
std::size_t CellModel::cell_parameter_count() const {
  return impl_->cell_parameter_index.size();
}
std::size_t CellModel::jacobian_nonzeros() const {
  return impl_->jacobian->nonzeros();
}
std::size_t CellModel::lu_nonzeros() const {
  return impl_->lu.nonzeros();
}

const std::string& CellModel::native_status() const {
  return impl_->rhs->native_status();
}

std::string CellModel::describe() const {
  const auto rhs = impl_->rhs->stats();
  const auto jac = impl_->jacobian_layout->direct->stats();
  return std::to_string(impl_->n) + " states, " + std::to_string(jacobian_nonzeros()) +
         " Jacobian nonzeros, LU " + linalg::describe(impl_->lu) + ", " +
         std::to_string(impl_->hoisted) + " cell constants, lane instructions RHS " +
         std::to_string(rhs.lane_instructions) + " / J " + std::to_string(jac.lane_instructions) +
         (impl_->rhs->is_native() ? ", native" : ", tape");
}

namespace {

std::string hoisted_name(std::size_t k) {
  return "$cell" + std::to_string(k);
}

/// Rewrites the state equations of `sys` so that every largest subexpression reading cell
/// parameters but no state, no t and no observed becomes a symbol "$cell<k>"; returns those
/// subexpressions (k order). Observeds are inlined first and dropped (a cell reports none).
std::vector<expr::NodeId> hoist_cell_constants(esm::System& sys,
                                               const std::vector<std::string>& cell_parameters) {
  expr::Pool& pool = sys.pool;
  {
    kernel::DefinitionInliner inline_observed(sys, /*tendencies=*/false);
    for (auto& r : sys.state_rhs) r = inline_observed(r);
  }
  sys.observed.clear();
  sys.observed_rhs.clear();
  enum : std::uint8_t { kVarying = 1, kCell = 2 };
  std::unordered_set<std::string> cell(cell_parameters.begin(), cell_parameters.end());
  std::unordered_set<std::string> varying{"t"};
  for (const auto& v : sys.states) varying.insert(v.name);
  std::unordered_map<expr::NodeId, std::uint8_t> flags;
  std::function<std::uint8_t(expr::NodeId)> classify = [&](expr::NodeId id) -> std::uint8_t {
    if (auto it = flags.find(id); it != flags.end()) return it->second;
    const auto& n = pool.node(id);
    std::uint8_t f = 0;
    if (n.op == expr::Op::Symbol) {
      const std::string name(pool.str(n.name));
      if (varying.count(name))
        f = kVarying;
      else if (cell.count(name))
        f = kCell;
      else if (sys.parameter_index(name) < 0)
        f = kVarying;  // unknown: never hoisted
    } else if (n.op == expr::Op::D || n.op == expr::Op::Pre) {
      f = kVarying;
    } else {
      for (expr::NodeId c : pool.children(id)) f |= classify(c);
    }
    flags[id] = f;
    return f;
  };
  std::vector<expr::NodeId> hoisted;
  std::unordered_map<expr::NodeId, expr::NodeId> rewritten;
  std::function<expr::NodeId(expr::NodeId)> rewrite = [&](expr::NodeId id) -> expr::NodeId {
    if (auto it = rewritten.find(id); it != rewritten.end()) return it->second;
    const auto& n = pool.node(id);
    expr::NodeId out = id;
    const auto kids = pool.children(id);
    if (classify(id) == kCell && n.op != expr::Op::Symbol && !kids.empty()) {
      out = pool.symbol(hoisted_name(hoisted.size()));
      hoisted.push_back(id);
    } else if (!kids.empty()) {
      std::vector<expr::NodeId> nk(kids.begin(), kids.end());
      bool changed = false;
      for (auto& c : nk) {
        const expr::NodeId r = rewrite(c);
        changed = changed || r != c;
        c = r;
      }
      if (changed) {
        const auto& m = pool.node(id);  // `n` may dangle once the pool grew
        out = pool.make(m.op, nk, m.arg_count, m.name, m.attrs);
      }
    }
    rewritten[id] = out;
    return out;
  };
  for (auto& r : sys.state_rhs) r = rewrite(r);
  return hoisted;
}

}  // namespace

std::shared_ptr<const CellModel> CellModel::build(const esm::System& system,
                                                  const CellModelOptions& options) {
  auto m = std::make_unique<Impl>();
  m->system = system;
  if (!m->system.grid.empty())
    throw Error("unsupported_cell_model", "", "",
                "lane pools integrate one cell's equations; this system is in the per-region grid "
                "form (flatten it without FlattenOptions::grid, or pass the pointwise operator)");
  detail::eliminate_algebraics(m->system);
  if (m->system.states.empty())
    throw Error("unsupported_cell_model", "", "", "the system has no state to integrate");
  for (const std::string& name : options.cell_parameters) {
    auto it = std::find_if(m->system.parameters.begin(), m->system.parameters.end(),
                           [&](const esm::FlatVariable& v) { return v.name == name; });
    if (it == m->system.parameters.end())
      throw Error("unknown_parameter", "", "",
                  "'" + name + "' is not a parameter of the model, so it cannot vary per cell");
    // A per-cell value needs no default; give it one so the defaults of the others resolve.
    if (!it->default_value && it->initial == expr::kNoNode) it->default_value = 0.0;
    m->cell_parameter_index.push_back(static_cast<std::size_t>(it - m->system.parameters.begin()));
  }
  m->p = detail::default_parameter_values(m->system);
  m->n = m->system.states.size();
  kernel::CompileOptions co;
  co.forcing = options.cell_parameters;
  const std::vector<expr::NodeId> hoisted =
      hoist_cell_constants(m->system, options.cell_parameters);
  m->hoisted = hoisted.size();
  if (!hoisted.empty()) {
    m->cell_setup = kernel::compile_outputs(m->system, hoisted, co);
    for (std::size_t k = 0; k < hoisted.size(); ++k) co.cell_inputs.push_back(hoisted_name(k));
  }
  m->rhs = kernel::compile(m->system, co);
  m->jacobian = plan::scalar_operator_jacobian("cell model", kernel::compile_jacobian(m->system, co), co);
  const kernel::JacobianProgram& jp = m->jacobian->program;
  linalg::Pattern pattern{static_cast<int>(m->n), jp.row_ptr, jp.col};
  m->lu = linalg::plan_sparse_lu(pattern);
  m->jacobian_layout = plan::plan_lane_sparse(*m->jacobian, m->lu);
  if (options.native) {
    const kernel::NativeToolchain toolchain = kernel::resolve_native_toolchain();
    std::vector<std::size_t> strides;
    // Narrower blocks than one vector (8 doubles) always run through the kernel's scratch.
    if (options.native_lanes >= 8) strides.push_back(static_cast<std::size_t>(options.native_lanes));
    m->rhs = kernel::with_native(*m->rhs, toolchain, strides);
    m->jacobian_layout->direct = kernel::with_native(*m->jacobian_layout->direct, toolchain, strides);
  }
  m->autonomous = !m->rhs->reads_time();
  return std::make_shared<const CellModel>(std::move(m));
}

namespace {

// The scalar Integrator's constants (method/integrator.cpp), so a lane steps as it would.
constexpr double kNonFiniteFactor = 0.1;
constexpr double kSolverFailFactor = 0.5;
constexpr double kLandingSlack = 0.01;
// A shard's tail narrows its block no further than this: the native kernels compute 8 double
// lanes per statement (one 64-byte vector) and the LU one vector per entry at 8 lanes, so a
// narrower block costs about as much per call as 8 lanes.
constexpr std::size_t kNarrowestBlock = 8;

enum class Cause : std::uint8_t { None, ErrorTest, NonFinite, LinearSolve };

double default_dt_min(double t) {
  return 16 * std::numeric_limits<double>::epsilon() *
         std::max(std::abs(t), std::numeric_limits<double>::min());
}

struct LaneState {
  std::int64_t cell = -1;  // real cell this lane integrates; -1 = idle
  bool padding = false;    // a duplicate whose results are dropped
  bool fresh = false;      // needs a starting step
  bool needs_f0 = true;    // f(t, u0) not known (a new cell, or a method without FSAL)
  bool done = false;
  long attempts = 0, rejected = 0;
  Cause cause = Cause::None;
};

struct ShardResult {
  long accepted = 0, rejected = 0, rhs = 0, jac = 0, lu = 0, solves = 0, slots = 0;
  long max_cell_steps = 0;
  std::size_t failed = 0;
  std::int64_t first_failed = -1;
  ReturnCode code = ReturnCode::Success;
  std::string message;
};

/// Scratch of one worker: every buffer lane-SoA (entry i of lane l at [i * L + l]).
class Block {
 public:
  Block(const CellModel::Impl& model, const LanePoolOptions& opt, std::span<const double> p)
      : m_(model),
        opt_(opt),
        tab_(method::detail::rosenbrock_tableau(opt.method)),
        L_(static_cast<std::size_t>(opt.lanes)),
        widest_(L_),
        n_(model.n),
        rhs_ws_(model.rhs->make_workspace(L_)),
        jac_ws_(plan::make_workspace(*model.jacobian, *model.jacobian_layout, L_)) {
    model.rhs->prepare(rhs_ws_, p);
    plan::prepare(*model.jacobian, *model.jacobian_layout, jac_ws_, p);
    // Every lane buffer sized (zeros, End::None, idle lanes, fresh controllers) by set_width.
    const std::size_t fields = model.cell_parameter_index.size() + model.hoisted;
    par_.assign(std::max<std::size_t>(1, fields) * L_, 0);
    fields_.resize(fields);
    set_width(L_);
    const auto& info = method::method_info(opt.method);
    order_ = info.order;
    control_order_ = std::max(1, std::min(info.order, info.embedded_order + 1));
    fsal_ = is_fsal();
    for (std::size_t i = 0; i < n_; ++i)
      atol_.push_back(opt.atol.size() == 1 ? opt.atol[0] : opt.atol[i]);
  }

  ShardResult run(CellData& data, double t0, double t1, std::size_t begin, std::size_t end,
                  std::span<std::int32_t> cell_steps);
  const double* hoisted_ = nullptr;  // the model's cell constants, [cell * hoisted + k]

 private:
  bool is_fsal() const {
    const int last = tab_.stages - 1;
    if (tab_.c[last] != 1.0 || tab_.b[last] != 0.0) return false;
    for (int j = 0; j < last; ++j)
      if (tab_.a[last][j] != tab_.b[j]) return false;
    return true;
  }

  void load(std::size_t l, const CellData& data, std::size_t cell, double t0) {
    const std::size_t C = data.cells;
    const double* staged = shard_states_.data() + (cell - shard_begin_) * n_;
    for (std::size_t s = 0; s < n_; ++s) u0_[s * L_ + l] = staged[s];
    const std::size_t Q = m_.cell_parameter_index.size();
    for (std::size_t q = 0; q < Q; ++q) par_[q * L_ + l] = data.cell_parameters[q * C + cell];
    const double* constants = hoisted_ + cell * m_.hoisted;
    for (std::size_t k = 0; k < m_.hoisted; ++k) par_[(Q + k) * L_ + l] = constants[k];
    t_[l] = t0;
    double h = opt_.dt_initial;
    if (!(h > 0) && !data.step_size.empty() && data.step_size[cell] > 0) h = data.step_size[cell];
    h_[l] = h;
    LaneState& lane = lanes_[l];
    lane = {};
    lane.cell = static_cast<std::int64_t>(cell);
    lane.fresh = !(h > 0);
    lane.needs_f0 = true;
    ctl_[l]->reset();
  }

  /// The lanes' times as the programs take them: one for all lanes when the model does not
  /// read t (the kernel then skips its per-call time code and per-lane time copy).
  std::span<const double> times(const double* t) const {
    return m_.autonomous ? std::span<const double>(&kNoTime, 1) : std::span<const double>(t, L_);
  }
  static constexpr double kNoTime = 0;

  void rhs(const double* t, const double* u, double* du) {
    kernel::RunArgs<double> a;
    a.u = {u, n_, L_, L_};
    a.t = times(t);
    a.forcing = fields_;
    a.du = {du, n_, L_, L_};
    kernel::run(*m_.rhs, rhs_ws_, a);
    rhs_calls_ += long(L_);
  }

  /// J(t, u) of every lane into lu_, in the LU's factor storage (0 at fill).
  void jacobian(const double* t, const double* u) {
    plan::eval_into<double>(*m_.jacobian, *m_.jacobian_layout, jac_ws_, {u, n_, L_, L_}, times(t),
                            lu_.data(), fields_);
    jac_calls_ += long(L_);
  }

  /// Hairer's weighted RMS for lane l of `v` against u0 and (optionally) u1.
  double norm(const double* v, const double* u1, std::size_t l) const {
    double sum = 0;
    for (std::size_t i = 0; i < n_; ++i) {
      const double a = std::abs(u0_[i * L_ + l]);
      const double b = u1 ? std::abs(u1[i * L_ + l]) : a;
      const double w = v[i * L_ + l] / (atol_[i] + opt_.rtol * std::max(a, b));
      sum += w * w;
    }
    return std::sqrt(sum / double(n_));
  }

  void starting_steps();
  void time_derivative();
  void attempt();
  void narrow(std::size_t width);
  void set_width(std::size_t width);
  /// out = base + sum_{j < count} w_j k_j over all lanes (zero weights skipped, stage order;
  /// base null = 0 + the sum): linalg::lane_combination.
  void combine(const double* base, const double* w, int count, double* out) const {
    linalg::lane_combination(n_, int(L_), base, k_.data(), n_ * L_, w, count, out);
  }

  const CellModel::Impl& m_;
  const LanePoolOptions& opt_;
  const method::detail::RosenbrockTableau& tab_;
  std::size_t L_, widest_, n_;  // L_: lanes now (narrow() halves it in a shard's tail)
  // The shard's states, cell-major: cell c of the shard at [(c - shard_begin_) * n_].
  std::vector<double> shard_states_;
  std::size_t shard_begin_ = 0;
  kernel::Workspace rhs_ws_;
  plan::JacWorkspace jac_ws_;
  // 64-byte aligned: the LU runs about 1.6x slower on buffers off a cache line.
  linalg::LaneVector<double> u0_, f0_, u1_, us_, fs_, ft_, k_, lu_, par_;
  std::vector<double> t_, h_, hh_, tt_, shift_, scale_;
  std::vector<std::uint8_t> lands_, failed_, take_;
  enum class End : std::uint8_t { None, Landed, BelowMin };
  std::vector<End> end_;
  std::vector<LaneState> lanes_;
  std::vector<std::unique_ptr<method::detail::StepController>> ctl_;
  std::vector<kernel::ForcingField<double>> fields_;
  std::vector<double> atol_, enorm_, coef_;  // atol_: one per state
  std::vector<std::uint8_t> nonfinite_;
  int order_ = 1, control_order_ = 1;
  bool fsal_ = false;

 public:
  // Lane-weighted: what a cell-by-cell solver would have counted for the same lane slots.
  long rhs_calls_ = 0, jac_calls_ = 0, lu_calls_ = 0, solve_calls_ = 0;
};

// Continues in a block `width` lanes wide: the lanes holding real cells (not padding, not
// done; at most `width` of them) move, in lane order, to lanes 0, 1, ... with everything that
// outlives an attempt (u0, f0, cell parameters and constants, t, h, lane state, controller);
// the other lanes are left idle for the caller to pad. A lane's arithmetic does not depend on
// the block's width or its position in it (kernels, LU and lane operations are per lane), so
// its cell gets the same bits.
void Block::narrow(std::size_t width) {
  std::vector<std::size_t> real;
  for (std::size_t l = 0; l < L_; ++l)
    if (!lanes_[l].padding && !lanes_[l].done && lanes_[l].cell >= 0) real.push_back(l);
  ESI_ASSERT(real.size() <= width && width < L_);
  auto restride = [&](linalg::LaneVector<double>& v, std::size_t rows) {
    for (std::size_t i = 0; i < rows; ++i)  // row i moves down to i * width: never overtakes
      for (std::size_t j = 0; j < real.size(); ++j) v[i * width + j] = v[i * L_ + real[j]];
  };
  restride(u0_, n_);
  restride(f0_, n_);
  restride(par_, par_.size() / L_);
  for (std::size_t j = 0; j < real.size(); ++j) {
    t_[j] = t_[real[j]];
    h_[j] = h_[real[j]];
    lanes_[j] = lanes_[real[j]];
    std::swap(ctl_[j], ctl_[real[j]]);
  }
  for (std::size_t j = real.size(); j < width; ++j) lanes_[j] = {};
  set_width(width);
}

// Every lane-SoA buffer sized for `width` lanes (within the capacity of the widest, so no
// allocation but the controllers of lanes added back; at construction, the first sizing).
void Block::set_width(std::size_t width) {
  const std::size_t rows = par_.size() / L_;
  L_ = width;
  const std::size_t nl = n_ * L_;
  u0_.resize(nl), f0_.resize(nl), u1_.resize(nl), us_.resize(nl), fs_.resize(nl), ft_.resize(nl);
  k_.resize(nl * std::size_t(tab_.stages));
  lu_.resize(m_.lu.nonzeros() * L_);
  par_.resize(rows * L_);
  for (std::size_t q = 0; q < fields_.size(); ++q) fields_[q] = {par_.data() + q * L_, 1};
  t_.resize(L_), h_.resize(L_), hh_.resize(L_), tt_.resize(L_), shift_.resize(L_);
  scale_.resize(L_), lands_.resize(L_), failed_.resize(L_), take_.resize(L_), end_.resize(L_);
  lanes_.resize(L_), enorm_.resize(L_), nonfinite_.resize(L_);
  coef_.resize(std::size_t(tab_.stages) * L_);
  ctl_.resize(L_);
  for (auto& c : ctl_)
    if (!c) c = method::detail::make_controller(opt_.controller, opt_.method);
}

// Hairer, Nørsett & Wanner I, II.4, per lane, as method/support.cpp hairer_initial_step.
void Block::starting_steps() {
  for (std::size_t l = 0; l < L_; ++l) {
    // A lane past its start evaluates the trial point too (one call for the block), at its own
    // state; what it yields is never read. Its two norms are skipped: a refill starts one lane
    // at a time, and the norms of every lane (272 divisions each) were ~3 % of a fullchem run.
    if (!lanes_[l].fresh) {
      scale_[l] = 0;
      tt_[l] = t_[l];
      continue;
    }
    const double d0 = norm(u0_.data(), nullptr, l), d1 = norm(f0_.data(), nullptr, l);
    scale_[l] = (d0 < 1e-5 || d1 < 1e-5) ? 1e-6 : 0.01 * d0 / d1;  // h0 per lane
    tt_[l] = t_[l] + scale_[l];
  }
  for (std::size_t i = 0; i < n_; ++i)
    for (std::size_t l = 0; l < L_; ++l)
      us_[i * L_ + l] = u0_[i * L_ + l] + scale_[l] * f0_[i * L_ + l];
  rhs(tt_.data(), us_.data(), fs_.data());
  for (std::size_t i = 0; i < n_ * L_; ++i) fs_[i] -= f0_[i];
  for (std::size_t l = 0; l < L_; ++l) {
    if (!lanes_[l].fresh) continue;
    const double h0 = scale_[l];
    const double d1 = norm(f0_.data(), nullptr, l);
    const double d2 = norm(fs_.data(), nullptr, l) / h0;
    const double dmax = std::max(d1, d2);
    const double h1 =
        dmax <= 1e-15 ? std::max(1e-6, h0 * 1e-3) : std::pow(0.01 / dmax, 1.0 / (order_ + 1));
    const double h = std::min(100 * h0, h1);
    h_[l] = std::isfinite(h) ? h : 1e-6;
    lanes_[l].fresh = false;
  }
}

// f_t by the scalar stepper's second-order one-sided difference, per lane (stencil inside
// [t, t + hh]).
void Block::time_derivative() {
  const double cbrt_eps = std::cbrt(std::numeric_limits<double>::epsilon());
  for (std::size_t l = 0; l < L_; ++l) {
    const double d = std::min(cbrt_eps * std::max(std::abs(t_[l]), std::abs(hh_[l])), 0.5 * hh_[l]);
    tt_[l] = t_[l] + d;
    shift_[l] = t_[l] + 2 * d;  // borrowed as the second time
  }
  rhs(tt_.data(), u0_.data(), ft_.data());
  rhs(shift_.data(), u0_.data(), fs_.data());
  for (std::size_t l = 0; l < L_; ++l) scale_[l] = 2 * (tt_[l] - t_[l]);
  for (std::size_t i = 0; i < n_; ++i)
    for (std::size_t l = 0; l < L_; ++l) {
      const std::size_t x = i * L_ + l;
      ft_[x] = (4 * ft_[x] - fs_[x] - 3 * f0_[x]) / scale_[l];
    }
}

// One Rosenbrock attempt for every lane with its own hh_[l]; u1_ and the error norms enorm_
// out, failed_ set for lanes whose iteration matrix had a tiny pivot. The lane loops over
// whole vectors are linalg's lane operations (lane_ops.hpp: compile-time width, AVX2/AVX-512
// clones).
void Block::attempt() {
  // J at (t, u0) again for every attempt (the factorisation overwrites it; a lane whose (t,
  // u0) did not change gets the same bits), formed into s I - J and factored in place.
  jacobian(t_.data(), u0_.data());
  for (std::size_t l = 0; l < L_; ++l) shift_[l] = 1.0 / (tab_.gamma * hh_[l]);
  std::fill(failed_.begin(), failed_.end(), 0);
  linalg::lu_factor_shifted(m_.lu, lu_.data(), shift_.data(), int(L_),
                            std::span<std::uint8_t>(failed_));
  lu_calls_ += long(L_);
  const std::size_t nl = n_ * L_;
  const double* f = nullptr;  // f at stage i's point
  bool stage_at_u0 = true;    // stage i's point is u0 itself (us_ not formed)
  for (int i = 0; i < tab_.stages; ++i) {
    // U_i = u0 + sum_j a_ij k_j (zero weights skipped, sums in stage order); stage 0 reads
    // f0 = f(u0) and no U_0.
    // A stage at the previous stage's point reuses its f (and, from stage 0, f0 and u0).
    if (i == 0) {
      f = f0_.data();
      stage_at_u0 = true;
    } else if (!method::detail::rosenbrock_stage_repeats_previous(tab_, i)) {
      combine(u0_.data(), tab_.a[i], i, us_.data());
      for (std::size_t l = 0; l < L_; ++l) tt_[l] = t_[l] + tab_.c[i] * hh_[l];
      rhs(tt_.data(), us_.data(), fs_.data());
      f = fs_.data();
      stage_at_u0 = false;
    }
    if (fsal_ && i == tab_.stages - 1)
      std::copy((stage_at_u0 ? u0_ : us_).begin(), (stage_at_u0 ? u0_ : us_).end(), u1_.begin());
    double* k = k_.data() + std::size_t(i) * nl;
    // k_i = f + sum_j (C_ij / h) k_j + (h d_i) f_t, per lane with its own h.
    for (int j = 0; j < i; ++j)
      for (std::size_t l = 0; l < L_; ++l) coef_[std::size_t(j) * L_ + l] = tab_.C[i][j] / hh_[l];
    for (std::size_t l = 0; l < L_; ++l) scale_[l] = hh_[l] * tab_.d[i];
    // An autonomous model's f_t is +0 throughout: no term to read (the same bits).
    linalg::lane_stage_rhs(n_, int(L_), f, m_.autonomous ? nullptr : ft_.data(), k_.data(), nl,
                           tab_.C[i], i, coef_.data(), scale_.data(), k);
    linalg::lu_solve(m_.lu, lu_.data(), k, int(L_));
    solve_calls_ += long(L_);
  }
  // u1 (unless FSAL gave it), the error estimate and its norm per lane in one pass.
  linalg::lane_step_end(n_, int(L_), u0_.data(), k_.data(), nl, fsal_ ? nullptr : tab_.b,
                        tab_.btilde, tab_.stages, atol_.data(), opt_.rtol, u1_.data(),
                        enorm_.data(), nonfinite_.data());
}

ShardResult Block::run(CellData& data, double t0, double t1, std::size_t begin, std::size_t end,
                       std::span<std::int32_t> cell_steps) {
  ShardResult r;
  rhs_calls_ = jac_calls_ = lu_calls_ = solve_calls_ = 0;
  if (L_ != widest_) set_width(widest_);  // the previous shard's tail narrowed the block
  // The shard's states cell by cell: a lane loads and writes back one contiguous run instead
  // of one value per state row of the whole grid (each in its own cache line and page: 3 % of
  // a fullchem run with 272 states); rows of data.states are read and written in runs.
  const std::size_t C = data.cells, count = end - begin;
  shard_begin_ = begin;
  shard_states_.resize(count * n_);
  for (std::size_t s = 0; s < n_; ++s)
    for (std::size_t c = 0; c < count; ++c)
      shard_states_[c * n_ + s] = data.states[s * C + begin + c];
  std::size_t next = begin;
  std::size_t live = 0;
  for (std::size_t l = 0; l < L_; ++l)
    if (next < end) {
      load(l, data, next++, t0);
      ++live;
    }
  if (live == 0) return r;
  auto pad = [&](std::size_t l) {
    // Copy a live real cell from scratch; its results are dropped.
    for (std::size_t s = 0; s < L_; ++s)
      if (!lanes_[s].padding && !lanes_[s].done && lanes_[s].cell >= 0) {
        load(l, data, std::size_t(lanes_[s].cell), t0);
        lanes_[l].padding = true;
        return;
      }
  };
  for (std::size_t l = live; l < L_; ++l) pad(l);

  auto finish = [&](std::size_t l, ReturnCode code, const std::string& why) {
    LaneState& lane = lanes_[l];
    if (!lane.padding) {
      const std::size_t c = std::size_t(lane.cell);
      double* staged = shard_states_.data() + (c - begin) * n_;
      for (std::size_t s = 0; s < n_; ++s) staged[s] = u0_[s * L_ + l];
      if (!data.step_size.empty()) data.step_size[c] = h_[l];
      if (!cell_steps.empty()) cell_steps[c] = static_cast<std::int32_t>(lane.attempts);
      r.accepted += lane.attempts - lane.rejected;
      r.rejected += lane.rejected;
      r.max_cell_steps = std::max(r.max_cell_steps, lane.attempts);
      if (code != ReturnCode::Success) {
        ++r.failed;
        if (r.first_failed < 0 || lane.cell < r.first_failed) {
          r.first_failed = lane.cell;
          r.code = code;
          r.message = "cell " + std::to_string(c) + ": " +
                      std::string(method::return_code_name(code)) +
                      " at t = " + std::to_string(t_[l]) + ": " + why;
        }
      }
      --live;
    }
    lane.done = true;
    if (next < end) {
      load(l, data, next++, t0);
      ++live;
    } else if (live > 0) {
      pad(l);
    }
  };

  bool dirty = true;  // some lane's (t, u0) changed since f0 was computed
  while (live > 0) {
    // The queue is empty and at most half the lanes hold real cells: go on in a block half as
    // wide (down to kNarrowestBlock), so that the shard's tail steps fewer padding lanes.
    while (next >= end && L_ / 2 >= kNarrowestBlock && live <= L_ / 2) {
      narrow(L_ / 2);
      for (std::size_t l = live; l < L_; ++l) pad(l);
      dirty = true;
    }
    if (dirty) {
      // f(t, u0) only for lanes that lack it, written into those lanes only: an FSAL lane
      // keeps the f its last stage computed (what the scalar Integrator does too).
      bool any_f0 = false;
      for (std::size_t l = 0; l < L_; ++l) {
        take_[l] = lanes_[l].needs_f0;
        any_f0 = any_f0 || lanes_[l].needs_f0;
        lanes_[l].needs_f0 = false;
      }
      if (any_f0) {
        rhs(t_.data(), u0_.data(), fs_.data());
        linalg::lane_select(n_, int(L_), take_.data(), fs_.data(), f0_.data());
      }
      bool any_fresh = false;
      for (const LaneState& lane : lanes_) any_fresh = any_fresh || lane.fresh;
      if (any_fresh) starting_steps();
      dirty = false;
    }
    // Plan each lane's step as the scalar Integrator does (landing slack, dt_max, dt_min).
    bool stop_lane = false;
    for (std::size_t l = 0; l < L_; ++l) {
      double h = opt_.dt_max > 0 ? std::min(h_[l], opt_.dt_max) : h_[l];
      lands_[l] = t_[l] + (1 + kLandingSlack) * h >= t1;
      hh_[l] = lands_[l] ? t1 - t_[l] : h;
      const double dt_min = opt_.dt_min > 0 ? opt_.dt_min : default_dt_min(t_[l]);
      if (lanes_[l].attempts >= opt_.max_steps || (!(hh_[l] >= dt_min) && !lands_[l]))
        stop_lane = true;
    }
    if (stop_lane) {
      for (std::size_t l = 0; l < L_; ++l) {
        const double dt_min = opt_.dt_min > 0 ? opt_.dt_min : default_dt_min(t_[l]);
        if (lanes_[l].attempts >= opt_.max_steps) {
          finish(l, ReturnCode::MaxSteps, std::to_string(opt_.max_steps) + " attempts used");
          dirty = true;
        } else if (!(hh_[l] >= dt_min) && !lands_[l]) {
          const Cause c = lanes_[l].cause;
          finish(l,
                 c == Cause::NonFinite     ? ReturnCode::NonFinite
                 : c == Cause::LinearSolve ? ReturnCode::LinearSolveFailed
                                           : ReturnCode::DtBelowMin,
                 "step below dt_min");
          dirty = true;
        }
      }
      continue;  // refilled lanes need their derivatives
    }
    if (!m_.autonomous) time_derivative();
    attempt();
    r.slots += static_cast<long>(L_);
    // Each lane's verdict first, then the accepted lanes' states all at once, then the lanes
    // that end (in lane order, as they refill from the queue).
    bool any_accepted = false, any_end = false;
    for (std::size_t l = 0; l < L_; ++l) {
      take_[l] = 0;
      end_[l] = End::None;
      LaneState& lane = lanes_[l];
      ++lane.attempts;
      double h_next = hh_[l];
      bool accept = false;
      const bool finite = nonfinite_[l] == 0;
      if (failed_[l]) {
        // A pivot that is not finite usually comes from a state or rate that is not: say so.
        bool inputs_finite = true;
        for (std::size_t i = 0; i < n_ && inputs_finite; ++i)
          inputs_finite = std::isfinite(u0_[i * L_ + l]) && std::isfinite(f0_[i * L_ + l]);
        lane.cause = inputs_finite ? Cause::LinearSolve : Cause::NonFinite;
        h_next = hh_[l] * (inputs_finite ? kSolverFailFactor : kNonFiniteFactor);
      } else if (!finite) {
        lane.cause = Cause::NonFinite, h_next = hh_[l] * kNonFiniteFactor;
      } else {
        const double e = enorm_[l];
        if (!std::isfinite(e)) {
          lane.cause = Cause::NonFinite, h_next = hh_[l] * kNonFiniteFactor;
        } else {
          const method::detail::Proposal p = ctl_[l]->propose(hh_[l], e, control_order_);
          accept = p.accept;
          h_next = p.h_next;
          lane.cause = accept ? Cause::None : Cause::ErrorTest;
        }
      }
      if (!accept) {
        ++lane.rejected;
        h_[l] = h_next;
        const double dt_min = opt_.dt_min > 0 ? opt_.dt_min : default_dt_min(t_[l]);
        if (lands_[l] && !(h_[l] >= dt_min)) {
          end_[l] = End::BelowMin;
          any_end = true;
        }
        continue;
      }
      t_[l] = lands_[l] ? t1 : t_[l] + hh_[l];
      take_[l] = 1;
      any_accepted = true;
      // With FSAL the last stage evaluated f at (t + h, u1): the next step's f0.
      lane.needs_f0 = !fsal_;
      if (lands_[l] && hh_[l] < h_[l] && h_next > hh_[l]) h_next = std::max(h_next, h_[l]);
      h_[l] = opt_.dt_max > 0 ? std::min(h_next, opt_.dt_max) : h_next;
      if (lands_[l]) {
        end_[l] = End::Landed;
        any_end = true;
      }
    }
    if (any_accepted) {
      // Every lane accepted (the usual case): the buffers trade places instead of a copy; u1_
      // and fs_ are written afresh by the next attempt before they are read.
      if (std::all_of(take_.begin(), take_.end(), [](std::uint8_t t) { return t != 0; })) {
        std::swap(u0_, u1_);
        if (fsal_) std::swap(f0_, fs_);
      } else {
        linalg::lane_select(n_, int(L_), take_.data(), u1_.data(), u0_.data());
        if (fsal_) linalg::lane_select(n_, int(L_), take_.data(), fs_.data(), f0_.data());
      }
      dirty = true;
    }
    if (any_end) {
      for (std::size_t l = 0; l < L_; ++l)
        if (end_[l] != End::None)
          finish(l, end_[l] == End::Landed ? ReturnCode::Success : ReturnCode::DtBelowMin,
                 end_[l] == End::Landed ? "" : "step below dt_min");
      dirty = true;
    }
  }
  // Every cell of the shard ended (done or failed) and left its state in the stage.
  for (std::size_t s = 0; s < n_; ++s)
    for (std::size_t c = 0; c < count; ++c)
      data.states[s * C + begin + c] = shard_states_[c * n_ + s];
  r.rhs = rhs_calls_;
  r.jac = jac_calls_;
  r.lu = lu_calls_;
  r.solves = solve_calls_;
  return r;
}

}  // namespace

LanePoolStats integrate_cells(const CellModel& model, CellData& data, double t0, double t1,
                              const LanePoolOptions& options, std::span<std::int32_t> cell_steps) {
  const CellModel::Impl& m = model.impl();
  const std::size_t C = data.cells;
  auto invalid = [](const std::string& why) {
    throw Error("invalid_lane_pool_options", "", "", why);
  };
  if (method::detail::family_of(options.method) != method::detail::Family::Rosenbrock)
    invalid("lane pools run Rosenbrock methods; " +
            std::string(method::method_info(options.method).name) + " is not one");
  if (std::find(std::begin(linalg::kLuLaneWidths), std::end(linalg::kLuLaneWidths),
                options.lanes) == std::end(linalg::kLuLaneWidths))
    invalid("lanes must be one of 1, 2, 4, 8, 16, 32, 64");
  if (!(t1 > t0)) invalid("the end time must be after the start time");
  if (options.atol.size() != 1 && options.atol.size() != m.n)
    invalid("atol needs one value or one per state (" + std::to_string(m.n) + ")");
  if (!(options.rtol > 0) || options.threads < 1 || options.shard_cells < 1 ||
      options.max_steps < 1)
    invalid("rtol must be > 0 and threads, shard_cells, max_steps >= 1");
  if (data.states.size() != m.n * C ||
      data.cell_parameters.size() != m.cell_parameter_index.size() * C ||
      (!data.step_size.empty() && data.step_size.size() != C) ||
      (!cell_steps.empty() && cell_steps.size() != C) ||
      (!data.parameters.empty() && data.parameters.size() != m.system.parameters.size()))
    invalid("cell data sizes do not match the model and the cell count");

  LanePoolStats stats;
  stats.cells = C;
  if (C == 0) return stats;
  const std::span<const double> p =
      data.parameters.empty() ? std::span<const double>(m.p) : data.parameters;
  // Fewer cells than lanes: a narrower block (the bits do not depend on the width).
  LanePoolOptions narrowed = options;
  const std::size_t most = std::min(C, options.shard_cells);
  while (narrowed.lanes > 1 && std::size_t(narrowed.lanes / 2) >= most) narrowed.lanes /= 2;
  const std::size_t shards = (C + options.shard_cells - 1) / options.shard_cells;
  const unsigned workers = detail::worker_count(shards, static_cast<unsigned>(options.threads));
  // One block per worker, built by the worker itself on its first shard: its small per-lane
  // objects (step controllers) then come from that thread's malloc arena, never from a cache
  // line another worker writes (built together on one thread they shared lines, and every
  // controller update stalled the other core: SuperFast's CPU time 20 % higher on two threads).
  std::vector<std::unique_ptr<Block>> blocks(workers);
  // Cell constants once per cell for the whole call (they read no state and no t), stored
  // cell-major: a lane's load then reads one contiguous run of them (fullchem has about 500;
  // strided by the cell count they cost a cache line and a page each). The setup program writes
  // one row per constant, so it runs over chunks of cells whose rows are transposed in place:
  // no second copy of all the constants.
  std::vector<double> by_cell(m.hoisted * C);
  if (m.cell_setup) {
    constexpr std::size_t kChunk = 64;
    kernel::Workspace ws = m.cell_setup->make_workspace(kChunk);
    m.cell_setup->prepare(ws, p);
    std::vector<double> rows(m.hoisted * kChunk);
    std::vector<kernel::ForcingField<double>> fields(m.cell_parameter_index.size());
    for (std::size_t c0 = 0; c0 < C; c0 += kChunk) {
      const std::size_t count = std::min(kChunk, C - c0);
      for (std::size_t q = 0; q < fields.size(); ++q)
        fields[q] = {data.cell_parameters.data() + q * C + c0, 1};
      kernel::RunArgs<double> a;
      a.u = {data.states.data() + c0, m.n, count, C};
      a.t = {&t0, 1};
      a.forcing = fields;
      a.du = {rows.data(), m.hoisted, count, count};
      kernel::run(*m.cell_setup, ws, a);
      for (std::size_t c = 0; c < count; ++c)
        for (std::size_t k = 0; k < m.hoisted; ++k) by_cell[(c0 + c) * m.hoisted + k] = rows[k * count + c];
    }
  }
  std::vector<ShardResult> results(shards);
  detail::parallel_for(shards, workers, [&](std::size_t s, unsigned worker) {
    const std::size_t begin = s * options.shard_cells;
    const std::size_t end = std::min(C, begin + options.shard_cells);
    std::unique_ptr<Block>& block = blocks[worker];
    if (!block) {
      block = std::make_unique<Block>(m, narrowed, p);
      block->hoisted_ = by_cell.data();
    }
    results[s] = block->run(data, t0, t1, begin, end, cell_steps);
  });
  for (const ShardResult& r : results) {  // shard order: the same sums for any thread count
    stats.accepted += r.accepted;
    stats.rejected += r.rejected;
    stats.rhs_evaluations += r.rhs;
    stats.jacobian_evaluations += r.jac;
    stats.factorizations += r.lu;
    stats.linear_solves += r.solves;
    stats.lane_slots += r.slots;
    stats.max_cell_steps = std::max(stats.max_cell_steps, r.max_cell_steps);
    stats.failed_cells += r.failed;
    if (r.code != ReturnCode::Success && stats.worst == ReturnCode::Success) {
      stats.worst = r.code;
      stats.message = r.message;
    }
  }
  return stats;
}

}  // namespace esi::exec
