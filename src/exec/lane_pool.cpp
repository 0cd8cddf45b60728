// Lane pools (lane_pool.hpp): cells of a pointwise model integrated side by side, many per
// SIMD block, each with its own step size and controller, shards of cells spread over threads.
//
// exec owns the cell model (the RHS, Jacobian and cell-constant programs compiled from the
// system, the planned LU) and the sharding: which cell each lane holds, refilling lanes from a
// shard's queue as cells end, narrowing a shard's tail, writing states back. The stepping
// itself (stages, controllers, starting steps, landing) is method's LaneRosenbrock, which sees
// the programs through the LaneProblem seam.
//
// Lanes never read each other: the kernel programs and the LU are lane-independent by
// construction, so when the block recomputes f(t, u0) or J for lanes whose (t, u0) did not
// change, those lanes get the same bits again. That is what makes results independent of lane
// position and shard composition.
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
#include "esi/method/lane_rosenbrock.hpp"
#include "esi/plan/jacobian_assembly.hpp"
#include "exec/model.hpp"
#include "exec/parallel.hpp"

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

// A shard's tail narrows its block no further than this: the native kernels compute 8 double
// lanes per statement (one 64-byte vector) and the LU one vector per entry at 8 lanes, so a
// narrower block costs about as much per call as 8 lanes.
constexpr std::size_t kNarrowestBlock = 8;

/// Which cell a lane holds (the stepping state of the lane is method's).
struct LaneSlot {
  std::int64_t cell = -1;  // real cell this lane integrates; -1 = idle
  bool padding = false;    // a duplicate whose results are dropped
  bool done = false;
};

struct ShardResult {
  long accepted = 0, rejected = 0, rhs = 0, jac = 0, lu = 0, solves = 0, slots = 0;
  long max_cell_steps = 0;
  std::size_t failed = 0;
  std::int64_t first_failed = -1;
  ReturnCode code = ReturnCode::Success;
  std::string message;
};

method::LaneStepOptions step_options(const LanePoolOptions& opt, std::size_t n) {
  method::LaneStepOptions so;
  so.method = opt.method;
  so.controller = opt.controller;
  so.rtol = opt.rtol;
  for (std::size_t i = 0; i < n; ++i) so.atol.push_back(opt.atol.size() == 1 ? opt.atol[0] : opt.atol[i]);
  so.dt_min = opt.dt_min;
  so.dt_max = opt.dt_max;
  so.max_steps = opt.max_steps;
  return so;
}

/// One worker's block: the cell model's programs over lanes (the method's LaneProblem), the
/// cells' parameters and constants per lane, and the queue of a shard's cells that refill
/// lanes as they end. Every buffer lane-SoA (entry i of lane l at [i * L + l]).
class Block final : public method::LaneProblem {
 public:
  Block(const CellModel::Impl& model, const LanePoolOptions& opt, std::span<const double> p,
        const double* hoisted)
      : m_(model),
        opt_(opt),
        hoisted_(hoisted),
        n_(model.n),
        rhs_ws_(model.rhs->make_workspace(std::size_t(opt.lanes))),
        jac_ws_(plan::make_workspace(*model.jacobian, *model.jacobian_layout, std::size_t(opt.lanes))),
        step_(*this, model.lu, model.n, with_time(step_options(opt, model.n)), std::size_t(opt.lanes)) {
    model.rhs->prepare(rhs_ws_, p);
    plan::prepare(*model.jacobian, *model.jacobian_layout, jac_ws_, p);
    const std::size_t fields = model.cell_parameter_index.size() + model.hoisted;
    par_rows_ = std::max<std::size_t>(1, fields);
    par_.assign(par_rows_ * step_.width(), 0);
    fields_.resize(fields);
    set_width(step_.width());
  }

  ShardResult run(CellData& data, double t0, double t1, std::size_t begin, std::size_t end,
                  std::span<std::int32_t> cell_steps);

  void rhs(std::size_t lanes, const double* t, const double* u, double* du) override {
    kernel::RunArgs<double> a;
    a.u = {u, n_, lanes, lanes};
    a.t = times(t, lanes);
    a.forcing = fields_;
    a.du = {du, n_, lanes, lanes};
    kernel::run(*m_.rhs, rhs_ws_, a);
  }

  /// J(t, u) of every lane into the LU's factor storage (0 at fill).
  void jacobian(std::size_t lanes, const double* t, const double* u, double* values) override {
    plan::eval_into<double>(*m_.jacobian, *m_.jacobian_layout, jac_ws_, {u, n_, lanes, lanes},
                            times(t, lanes), values, fields_);
  }

 private:
  method::LaneStepOptions with_time(method::LaneStepOptions so) const {
    so.autonomous = m_.autonomous;
    return so;
  }

  /// The lanes' times as the programs take them: one for all lanes when the model does not
  /// read t (the kernel then skips its per-call time code and per-lane time copy).
  std::span<const double> times(const double* t, std::size_t lanes) const {
    return m_.autonomous ? std::span<const double>(&kNoTime, 1) : std::span<const double>(t, lanes);
  }
  static constexpr double kNoTime = 0;

  void load(std::size_t l, const CellData& data, std::size_t cell, double t0) {
    const std::size_t C = data.cells, L = step_.width();
    const double* staged = shard_states_.data() + (cell - shard_begin_) * n_;
    double* u0 = step_.u0();
    for (std::size_t s = 0; s < n_; ++s) u0[s * L + l] = staged[s];
    const std::size_t Q = m_.cell_parameter_index.size();
    for (std::size_t q = 0; q < Q; ++q) par_[q * L + l] = data.cell_parameters[q * C + cell];
    const double* constants = hoisted_ + cell * m_.hoisted;
    for (std::size_t k = 0; k < m_.hoisted; ++k) par_[(Q + k) * L + l] = constants[k];
    double h = opt_.dt_initial;
    if (!(h > 0) && !data.step_size.empty() && data.step_size[cell] > 0) h = data.step_size[cell];
    slots_[l] = {};
    slots_[l].cell = static_cast<std::int64_t>(cell);
    step_.start_lane(l, t0, h);
  }

  void narrow(std::size_t width);
  void set_width(std::size_t width);

  const CellModel::Impl& m_;
  const LanePoolOptions& opt_;
  const double* hoisted_;  // the model's cell constants, [cell * hoisted + k]
  std::size_t n_;
  // The shard's states, cell-major: cell c of the shard at [(c - shard_begin_) * n_].
  std::vector<double> shard_states_;
  std::size_t shard_begin_ = 0;
  kernel::Workspace rhs_ws_;
  plan::JacWorkspace jac_ws_;
  method::LaneRosenbrock step_;
  linalg::LaneVector<double> par_;  // cell parameters, then cell constants, one row each
  std::size_t par_rows_ = 1;
  std::vector<kernel::ForcingField<double>> fields_;
  std::vector<LaneSlot> slots_;
};

// Continues in a block `width` lanes wide: the lanes holding real cells (not padding, not
// done; at most `width` of them) move, in lane order, to lanes 0, 1, ... with their cell
// parameters and constants here and their stepping state in method; the other lanes are left
// idle for the caller to pad. A lane's arithmetic does not depend on the block's width or its
// position in it (kernels, LU and lane operations are per lane), so its cell gets the same bits.
void Block::narrow(std::size_t width) {
  const std::size_t L = step_.width();
  std::vector<std::size_t> real;
  for (std::size_t l = 0; l < L; ++l)
    if (!slots_[l].padding && !slots_[l].done && slots_[l].cell >= 0) real.push_back(l);
  ESI_ASSERT(real.size() <= width && width < L);
  for (std::size_t i = 0; i < par_rows_; ++i)  // row i moves down to i * width: never overtakes
    for (std::size_t j = 0; j < real.size(); ++j) par_[i * width + j] = par_[i * L + real[j]];
  for (std::size_t j = 0; j < real.size(); ++j) slots_[j] = slots_[real[j]];
  for (std::size_t j = real.size(); j < width; ++j) slots_[j] = {};
  step_.narrow(real, width);
  set_width(width);
}

// The lane buffers of this block sized for `width` lanes (within the capacity of the widest,
// so no allocation), and the method's.
void Block::set_width(std::size_t width) {
  if (step_.width() != width) step_.set_width(width);
  par_.resize(par_rows_ * width);
  for (std::size_t q = 0; q < fields_.size(); ++q) fields_[q] = {par_.data() + q * width, 1};
  slots_.resize(width);
}

ShardResult Block::run(CellData& data, double t0, double t1, std::size_t begin, std::size_t end,
                       std::span<std::int32_t> cell_steps) {
  ShardResult r;
  step_.reset_counts();
  if (step_.width() != step_.widest()) set_width(step_.widest());  // the last shard narrowed it
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
  for (std::size_t l = 0; l < step_.width(); ++l)
    if (next < end) {
      load(l, data, next++, t0);
      ++live;
    }
  if (live == 0) return r;
  auto pad = [&](std::size_t l) {
    // Copy a live real cell from scratch; its results are dropped.
    for (std::size_t s = 0; s < step_.width(); ++s)
      if (!slots_[s].padding && !slots_[s].done && slots_[s].cell >= 0) {
        load(l, data, std::size_t(slots_[s].cell), t0);
        slots_[l].padding = true;
        return;
      }
  };
  for (std::size_t l = live; l < step_.width(); ++l) pad(l);

  auto finish = [&](std::size_t l, ReturnCode code, const std::string& why) {
    LaneSlot& lane = slots_[l];
    if (!lane.padding) {
      const std::size_t c = std::size_t(lane.cell), L = step_.width();
      double* staged = shard_states_.data() + (c - begin) * n_;
      const double* u0 = step_.u0();
      for (std::size_t s = 0; s < n_; ++s) staged[s] = u0[s * L + l];
      const long attempts = step_.attempts(l), rejected = step_.rejected(l);
      if (!data.step_size.empty()) data.step_size[c] = step_.h(l);
      if (!data.codes.empty()) data.codes[c] = code;
      if (!cell_steps.empty()) cell_steps[c] = static_cast<std::int32_t>(attempts);
      r.accepted += attempts - rejected;
      r.rejected += rejected;
      r.max_cell_steps = std::max(r.max_cell_steps, attempts);
      if (code != ReturnCode::Success) {
        ++r.failed;
        if (r.first_failed < 0 || lane.cell < r.first_failed) {
          r.first_failed = lane.cell;
          r.code = code;
          r.message = "cell " + std::to_string(c) + ": " +
                      std::string(method::return_code_name(code)) +
                      " at t = " + std::to_string(step_.t(l)) + ": " + why;
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

  while (live > 0) {
    // The queue is empty and at most half the lanes hold real cells: go on in a block half as
    // wide (down to kNarrowestBlock), so that the shard's tail steps fewer padding lanes.
    while (next >= end && step_.width() / 2 >= kNarrowestBlock && live <= step_.width() / 2) {
      narrow(step_.width() / 2);
      for (std::size_t l = live; l < step_.width(); ++l) pad(l);
    }
    bool attempted = false;
    const std::size_t width = step_.width();
    // Lanes that end refill from the queue in lane order (or become padding).
    for (const method::LaneEnd& e : step_.round(t1, attempted)) finish(e.lane, e.code, e.why);
    if (attempted) r.slots += static_cast<long>(width);
  }
  // Every cell of the shard ended (done or failed) and left its state in the stage.
  for (std::size_t s = 0; s < n_; ++s)
    for (std::size_t c = 0; c < count; ++c)
      data.states[s * C + begin + c] = shard_states_[c * n_ + s];
  r.rhs = step_.rhs_calls;
  r.jac = step_.jacobian_calls;
  r.lu = step_.factorizations;
  r.solves = step_.solves;
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
  if (!method::LaneRosenbrock::supports(options.method))
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
      (!data.codes.empty() && data.codes.size() != C) ||
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
    if (!block) block = std::make_unique<Block>(m, narrowed, p, by_cell.data());
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
