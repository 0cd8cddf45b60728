// Per-region programs: compile_grid, the grid workspace and the Whole and Tile runners.
//
// A region program is an ordinary Program (Whole target) whose inputs are all forcing fields:
// for one row of a box (consecutive cells along output axis 0, the others fixed) input k of
// lane l is field_k.data[l * field_k.column_stride], so the runner only has to point each
// field at the cell the row's first lane reads and give the step along the row (1 for an array
// read that moves with axis 0, 0 for one that does not). Nothing is gathered or copied; the
// tape (or its native code) reads the arrays in place.
#include "esi/kernel/grid.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "esi/core/error.hpp"
#include "esi/esm/relative_read.hpp"
#include "esi/kernel/native.hpp"
#include "kernel/thread_team.hpp"

namespace esi::kernel {

namespace {

using esm::System;
using expr::NodeId;
using Kind = System::GridEquation::Kind;

constexpr std::int64_t kIotaMargin = 64;  // |offset| allowed on an index used as a number

std::vector<std::int64_t> strides_of(const std::vector<std::int64_t>& extents) {
  std::vector<std::int64_t> s(extents.size(), 1);
  for (std::size_t d = 1; d < extents.size(); ++d) s[d] = s[d - 1] * extents[d - 1];
  return s;
}

std::int64_t cells_of(const std::vector<std::int64_t>& lo, const std::vector<std::int64_t>& hi) {
  std::int64_t n = 1;
  for (std::size_t d = 0; d < lo.size(); ++d) n *= std::max<std::int64_t>(0, hi[d] - lo[d] + 1);
  return n;
}


/// Symbols a set of expressions reads, through the scalar observeds it reads.
std::vector<NodeId> symbols_read(const System& sys, std::span<const NodeId> roots,
                                 const std::unordered_map<std::string, int>& observed_index) {
  std::vector<NodeId> out;
  std::unordered_set<NodeId> seen;
  std::vector<NodeId> stack(roots.begin(), roots.end());
  while (!stack.empty()) {
    const NodeId id = stack.back();
    stack.pop_back();
    if (!seen.insert(id).second) continue;
    const expr::Node& n = sys.pool.node(id);
    if (n.op == expr::Op::Symbol) {
      const std::string name(sys.pool.str(n.name));
      if (auto o = observed_index.find(name); o != observed_index.end())
        stack.push_back(sys.observed_rhs[static_cast<std::size_t>(o->second)]);
      else
        out.push_back(id);
      continue;
    }
    for (NodeId k : sys.pool.children(id)) stack.push_back(k);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

GridProgram::Stats GridProgram::stats() const {
  Stats s;
  for (const auto& st : stages)
    for (const auto& b : st.blocks) {
      ++s.programs;
      s.boxes += b.boxes.size();
      const auto ps = b.program.stats();
      s.lane_instructions += ps.lane_instructions + ps.time_instructions;
      s.setup_instructions += ps.setup_instructions;
    }
  return s;
}

GridProgram compile_grid(const System& sys, const GridCompileOptions& options) {
  GridProgram gp;
  gp.state_count = sys.states.size();
  gp.parameter_count = sys.parameters.size();
  std::unordered_map<std::string, std::size_t> array_index;
  std::unordered_map<std::string, std::size_t> observed_stage_of;
  std::size_t buffers = 0;
  std::vector<Program*> to_native;  // into the stages' block buffers, which moving a stage keeps
  for (std::size_t k = 0; k < sys.arrays.size(); ++k) {
    const auto& a = sys.arrays[k];
    GridArray g{a.name, GridArray::Kind::State, a.extents, strides_of(a.extents), a.first_state, 0};
    if (a.parameter) {
      g.kind = GridArray::Kind::Parameter;
      g.slot = k;
    } else if (a.first_state < 0) {
      g.kind = GridArray::Kind::Observed;
      g.slot = buffers++;
    }
    array_index.emplace(a.name, gp.arrays.size());
    gp.arrays.push_back(std::move(g));
  }
  std::unordered_map<std::string, int> state_index, observed_index;
  sys.states.for_each_stored([&](std::size_t i, const esm::FlatVariable& v) {
    if (v.array.empty()) state_index.emplace(v.name, static_cast<int>(i));
  });
  for (std::size_t i = 0; i < sys.observed.size(); ++i)
    observed_index.emplace(sys.observed[i].name, static_cast<int>(i));

  std::vector<GridStage> stages;
  std::vector<std::vector<std::size_t>> reads_observed;  // per stage: observed arrays read
  std::vector<bool> reads_state_direct;
  for (const auto& eq : sys.grid) {
    GridStage stage;
    stage.kind = eq.kind;
    stage.extents = eq.extents;
    for (const auto& t : eq.targets) stage.targets.push_back(array_index.at(t));
    std::map<std::vector<NodeId>, std::size_t> block_of;
    std::set<std::size_t> observed_reads;
    bool state_direct = false;
    for (const auto& region : eq.regions) {
      auto [it, fresh] = block_of.emplace(region.rhs, stage.blocks.size());
      if (!fresh) {
        stage.blocks[it->second].boxes.push_back({region.lo, region.hi});
        continue;
      }
      std::vector<GridInput> inputs;
      CompileOptions co;
      co.states_through_cell_inputs = true;
      for (NodeId sym : symbols_read(sys, region.rhs, observed_index)) {
        const std::string name(sys.pool.str(sys.pool.node(sym).name));
        GridInput in;
        esm::RelativeRead read;
        if (auto s = state_index.find(name); s != state_index.end()) {
          in.kind = GridInput::Kind::ScalarState;
          in.state = s->second;
          state_direct = true;
        } else if (esm::parse_relative_read(name, read)) {
          const std::string& base = read.array;
          in.axis = std::move(read.axis);
          in.offset = std::move(read.offset);
          if (base == "$index") {
            in.kind = GridInput::Kind::Index;
            if (in.axis.size() != 1 || in.axis[0] < 0 || std::abs(in.offset[0]) > kIotaMargin)
              throw Error("grid_input_unknown", eq.file, eq.pointer,
                          "'" + name + "' is not a position this runtime can read");
          } else {
            auto a = array_index.find(base);
            if (a == array_index.end() || in.axis.size() != gp.arrays[a->second].extents.size())
              throw Error(
                  "grid_input_unknown", eq.file, eq.pointer,
                  "'" + name + "' is read by an array equation but is not an array of the system");
            in.array = a->second;
            const GridArray& ga = gp.arrays[a->second];
            if (ga.kind == GridArray::Kind::State) state_direct = true;
            if (ga.kind == GridArray::Kind::Observed) observed_reads.insert(a->second);
          }
        } else {
          continue;  // a scalar parameter or t: the program reads it itself
        }
        co.cell_inputs.push_back(name);
        inputs.push_back(std::move(in));
      }
      Program program = compile_outputs(sys, region.rhs, co);
      if (program.reads_time()) state_direct = true;  // recomputed every call
      stage.blocks.push_back(
          GridBlock{std::move(program), std::move(inputs), {GridBox{region.lo, region.hi}}});
    }
    if (options.native) {
      // Native code where the cells are: a compiler run per program costs about a second,
      // and most programs are boundary cases of a few cells each.
      const std::int64_t all =
          cells_of(std::vector<std::int64_t>(eq.extents.size(), 1), eq.extents);
      for (auto& b : stage.blocks) {
        std::int64_t cells = 0;
        for (const auto& box : b.boxes) cells += cells_of(box.lo, box.hi);
        if (cells * options.native_share >= all) to_native.push_back(&b.program);
      }
    }
    if (eq.kind == Kind::Observed) observed_stage_of.emplace(eq.targets[0], stages.size());
    reads_observed.emplace_back(observed_reads.begin(), observed_reads.end());
    reads_state_direct.push_back(state_direct);
    stages.push_back(std::move(stage));
  }

  // Observed stages in dependency order (a stable topological sort), then the others.
  std::vector<int> done(stages.size(), 0);  // 0 new, 1 in progress, 2 placed
  std::vector<std::size_t> order;
  std::function<void(std::size_t)> place = [&](std::size_t s) {
    if (done[s] == 2) return;
    if (done[s] == 1)
      throw Error("observed_cycle", sys.grid[s].file, sys.grid[s].pointer,
                  "array '" + sys.grid[s].targets[0] + "' depends on itself");
    done[s] = 1;
    for (std::size_t a : reads_observed[s]) {
      auto o = observed_stage_of.find(gp.arrays[a].name);
      if (o != observed_stage_of.end()) place(o->second);
    }
    done[s] = 2;
    if (stages[s].kind == Kind::Observed) {
      bool dynamic = reads_state_direct[s];
      for (std::size_t a : reads_observed[s])
        if (auto o = observed_stage_of.find(gp.arrays[a].name); o != observed_stage_of.end())
          dynamic = dynamic || stages[o->second].reads_state;
      stages[s].reads_state = dynamic;
      order.push_back(s);
    }
  };
  for (std::size_t s = 0; s < stages.size(); ++s)
    if (stages[s].kind == Kind::Observed) place(s);
  for (std::size_t s = 0; s < stages.size(); ++s)
    if (stages[s].kind != Kind::Observed) {
      for (std::size_t a : reads_observed[s])
        if (auto o = observed_stage_of.find(gp.arrays[a].name); o != observed_stage_of.end())
          place(o->second);
      order.push_back(s);
    }
  if (!to_native.empty()) make_native(to_native, resolve_native_toolchain());
  for (std::size_t s : order) gp.stages.push_back(std::move(stages[s]));
  return gp;
}

// ---- workspace and runners ----

/// Where an array is read from or written to: cell c (1-based) at data[sum (c_d - origin_d) *
/// stride_d].
struct View {
  double* data = nullptr;
  std::vector<std::int64_t> origin, stride;
};

/// One thread's scratch: its own kernel workspaces (registers, time registers) and row buffers.
struct GridScratch {
  std::vector<std::vector<Workspace>> ws;  // [stage][block]
  std::vector<ForcingField<double>> fields;
  std::vector<double> staging;
  std::vector<std::int64_t> lo, hi, x;  // run_block's box and row (reused)
};

/// Where the inputs of one block read, as an affine function of the row's first cell x when
/// every view is a whole-grid one (origin 1, the array's strides): input k reads
/// base_k + offset[k] + sum_d coef[k * dims + d] * x[d], and moves coef[k * dims + r] per lane
/// along row axis r. Worked out once per workspace, so a row costs a few multiply-adds per input.
struct FieldPlan {
  std::vector<std::int64_t> offset, coef;
};

struct GridWorkspace::Impl {
  std::vector<GridScratch> scratch;           // [member of the team]
  std::unique_ptr<detail::ThreadTeam> team;   // none with one thread
  std::vector<std::vector<FieldPlan>> plans;  // [stage][block]
  /// grid_rhs's stages (observed arrays that read states, then tendencies) in groups that
  /// read nothing another stage of the group writes: one dispatch to the team per group.
  std::vector<std::vector<std::size_t>> rhs_groups;
  std::vector<std::vector<double>> observed;    // observed array buffers (whole grid)
  std::vector<std::vector<double>> parameters;  // by GridArray index (Parameter kind)
  std::vector<double> iota;                     // iota[k] = k + iota_first
  std::int64_t iota_first = 0;
  std::vector<View> views;                         // by GridArray index, for the current call
  std::vector<View> outputs;                       // by GridArray index
  bool whole = false;                              // every view is a whole-grid view (plans apply)
  const double* y = nullptr;                       // scalar states of the current call
  std::vector<std::vector<double>> tile_observed;  // observed buffers of the current tile
  std::vector<std::int64_t> halo;                  // the Tile target's, once per workspace
  std::vector<std::vector<std::int64_t>> margins;
};

GridWorkspace::GridWorkspace() = default;
GridWorkspace::GridWorkspace(GridWorkspace&&) noexcept = default;
GridWorkspace& GridWorkspace::operator=(GridWorkspace&&) noexcept = default;
GridWorkspace::~GridWorkspace() = default;

namespace {

constexpr std::size_t kRowLanes = 64;
constexpr std::int64_t kUnitStrideRowMin = 16;  // cells

View whole_view(double* data, const GridArray& a) {
  return View{data, std::vector<std::int64_t>(a.extents.size(), 1), a.strides};
}

FieldPlan plan_fields(const GridProgram& gp, const GridBlock& block, std::size_t dims) {
  FieldPlan plan;
  plan.offset.assign(block.inputs.size(), 0);
  plan.coef.assign(block.inputs.size() * dims, 0);
  for (std::size_t k = 0; k < block.inputs.size(); ++k) {
    const GridInput& in = block.inputs[k];
    std::int64_t* coef = plan.coef.data() + k * dims;
    if (in.kind ==
        GridInput::Kind::Index) {  // iota[x + offset - iota_first]: base iota - iota_first
      plan.offset[k] = in.offset[0];
      coef[in.axis[0]] = 1;
    } else if (in.kind == GridInput::Kind::Array) {
      const GridArray& a = gp.arrays[in.array];
      for (std::size_t ax = 0; ax < in.axis.size(); ++ax) {
        // whole views: origin 1, the array's strides
        plan.offset[k] += (in.offset[ax] - 1) * a.strides[ax];
        if (in.axis[ax] >= 0) coef[in.axis[ax]] += a.strides[ax];
      }
    }
  }
  return plan;
}

/// Whether every field `block` reads and every output of `stage` (whole-grid views) steps
/// n0 times as far along axis 1 as along axis 0, so the cells of a plane of axes 0 and 1 lie
/// at one step apart in each: true for arrays whose first axis the box spans whole.
bool spans_planes(const GridStage& stage, const GridBlock& block, const FieldPlan& plan,
                  const GridWorkspace::Impl& im, std::size_t dims, std::int64_t n0) {
  for (std::size_t k = 0; k < block.inputs.size(); ++k) {
    if (block.inputs[k].kind == GridInput::Kind::ScalarState) continue;
    const std::int64_t* coef = plan.coef.data() + k * dims;
    if (coef[1] != n0 * coef[0]) return false;
  }
  for (std::size_t a : stage.targets) {
    const View& o = im.outputs[a];
    if (o.stride[1] != n0 * o.stride[0]) return false;
  }
  return true;
}

/// Runs `block` on the cells of box ∩ `within`, row by row along its first axis or, where that
/// is short, its planes of axes 0 and 1 or its longest axis (a boundary box of a 7-cell zonal
/// class is one cell wide along lon but 66 along lev). Reads the
/// shared state of `im` only; writes the cells of box ∩ within of the stage's outputs and `sc`.
void run_block(const GridStage& stage, const GridBlock& block, const FieldPlan& plan, Workspace& ws,
               GridScratch& sc, const GridWorkspace::Impl& im, double t, const GridBox& box,
               const GridBox& within) {
  const std::size_t dims = box.lo.size();
  std::vector<std::int64_t>& lo = sc.lo;
  std::vector<std::int64_t>& hi = sc.hi;
  lo.resize(dims);
  hi.resize(dims);
  for (std::size_t d = 0; d < dims; ++d) {
    lo[d] = std::max(box.lo[d], within.lo[d]);
    hi[d] = std::min(box.hi[d], within.hi[d]);
    if (lo[d] > hi[d]) return;
  }
  // The row axis: the first, along which whole arrays are contiguous, so native code reads
  // each field of a row straight from its array instead of gathering it lane by lane (that
  // gather was a third of a PPM program's time), unless it is too short to fill a few
  // vectors; then the longest (a 7 x 7 x 72 grid runs its rows along the 72 levels).
  // A box too narrow for that but spanning whole planes of everything it reads and writes
  // (every field's step along axis 1 is n0 times its step along axis 0, as in the state
  // arrays of a 7 x 7 x 72 grid) runs each plane of axes 0 and 1 as one row: the cells and
  // every address are those of the rows along axis 0, now n0 x n1 of them in one run.
  std::size_t r = 0;
  bool planes = false;
  const std::int64_t n0 = hi[0] - lo[0] + 1, plane = dims >= 2 ? n0 * (hi[1] - lo[1] + 1) : n0;
  if (n0 < kUnitStrideRowMin) {
    planes =
        im.whole && plane >= kUnitStrideRowMin && spans_planes(stage, block, plan, im, dims, n0);
    if (!planes)
      for (std::size_t d = 1; d < dims; ++d)
        if (hi[d] - lo[d] > hi[r] - lo[r]) r = d;
  }
  const std::size_t n = static_cast<std::size_t>(planes ? plane : hi[r] - lo[r] + 1);
  const std::size_t targets = stage.targets.size();
  if (sc.staging.size() < targets * n) sc.staging.resize(targets * n);
  const std::size_t inputs = block.inputs.size();
  if (sc.fields.size() < inputs) sc.fields.resize(inputs);
  std::vector<std::int64_t>& x = sc.x;
  x = lo;
  const double time[1] = {t};
  RunArgs<double> args;
  args.u = LaneView<const double>{nullptr, block.program.state_count(), n, n};
  args.t = std::span<const double>(time, 1);
  args.forcing = std::span<const ForcingField<double>>(sc.fields.data(), inputs);
  args.du = LaneView<double>{sc.staging.data(), targets, n, n};
  while (true) {
    if (im.whole) {
      const std::int64_t* coef = plan.coef.data();
      for (std::size_t k = 0; k < inputs; ++k, coef += dims) {
        const GridInput& in = block.inputs[k];
        ForcingField<double>& f = sc.fields[k];
        if (in.kind == GridInput::Kind::ScalarState) {
          f = {im.y + in.state, 0};
          continue;
        }
        std::int64_t at = plan.offset[k];
        for (std::size_t d = 0; d < dims; ++d) at += coef[d] * x[d];
        const double* base = in.kind == GridInput::Kind::Index ? im.iota.data() - im.iota_first
                                                               : im.views[in.array].data;
        f = {base + at, static_cast<std::size_t>(coef[r])};
      }
    } else {
      for (std::size_t k = 0; k < inputs; ++k) {
        const GridInput& in = block.inputs[k];
        ForcingField<double>& f = sc.fields[k];
        switch (in.kind) {
          case GridInput::Kind::ScalarState:
            f = {im.y + in.state, 0};
            break;
          case GridInput::Kind::Index:
            f = {im.iota.data() + (x[in.axis[0]] + in.offset[0] - im.iota_first),
                 in.axis[0] == static_cast<int>(r) ? std::size_t{1} : std::size_t{0}};
            break;
          case GridInput::Kind::Array: {
            const View& v = im.views[in.array];
            std::int64_t at = 0, step = 0;
            for (std::size_t a = 0; a < in.axis.size(); ++a) {
              const std::int64_t pos =
                  in.axis[a] >= 0 ? x[in.axis[a]] + in.offset[a] : in.offset[a];
              at += (pos - v.origin[a]) * v.stride[a];
              if (in.axis[a] == static_cast<int>(r)) step += v.stride[a];
            }
            f = {v.data + at, static_cast<std::size_t>(step)};
            break;
          }
        }
      }
    }
    run(block.program, ws, args);
    for (std::size_t k = 0; k < targets; ++k) {
      const View& o = im.outputs[stage.targets[k]];
      std::int64_t at = 0;
      for (std::size_t d = 0; d < dims; ++d) at += (x[d] - o.origin[d]) * o.stride[d];
      double* dst = o.data + at;
      const double* src = sc.staging.data() + k * n;
      const std::int64_t step = o.stride[r];
      if (step == 1)
        std::copy(src, src + n, dst);
      else
        for (std::size_t l = 0; l < n; ++l) dst[static_cast<std::int64_t>(l) * step] = src[l];
    }
    // Next row: every axis but r (and axis 1 when rows are planes), first fastest.
    std::size_t d = 0;
    while (d < dims && (d == r || (planes && d == 1) || x[d] == hi[d])) {
      if (d != r) x[d] = lo[d];
      ++d;
    }
    if (d >= dims) break;
    ++x[d];
  }
}

/// Stage s over box ∩ within on one member's scratch.
void run_stage(const GridStage& stage, std::size_t s, GridScratch& sc,
               const GridWorkspace::Impl& im, double t, const GridBox& within) {
  for (std::size_t b = 0; b < stage.blocks.size(); ++b)
    for (const GridBox& box : stage.blocks[b].boxes)
      run_block(stage, stage.blocks[b], im.plans[s][b], sc.ws[s][b], sc, im, t, box, within);
}

/// Stage s over the whole grid, split into one slab per member of the team along the stage's
/// longest axis (7 x 7 x 72: along the 72 levels). Every cell is computed by the same program
/// from the same inputs whichever slab holds it, so the bits do not depend on the team's size.
/// The caller's next stage starts after every slab is done (the stages read each other's
/// outputs at neighbouring cells).
/// Member `member`'s slab of a stage's grid (of `members` slabs along its longest axis), or
/// false when the axis has fewer cells than members and this one has none.
bool slab_of(const GridStage& stage, unsigned member, unsigned members, GridBox& slab) {
  slab = GridBox{std::vector<std::int64_t>(stage.extents.size(), 1), stage.extents};
  if (stage.extents.empty()) return member == 0;
  std::size_t axis = 0;
  for (std::size_t d = 1; d < stage.extents.size(); ++d)
    if (stage.extents[d] > stage.extents[axis]) axis = d;
  const std::int64_t length = stage.extents[axis];
  const std::int64_t slabs = std::min<std::int64_t>(members, length);
  if (member >= slabs) return false;
  slab.lo[axis] = 1 + member * length / slabs;
  slab.hi[axis] = (member + 1) * length / slabs;
  return true;
}

/// The stages `group` over the whole grid, each split into one slab per member of the team.
/// Every cell is computed by the same program from the same inputs whichever slab holds it,
/// so the bits do not depend on the team's size. Returns after every slab is done: the next
/// group reads this one's outputs at neighbouring cells.
void run_group(const GridProgram& gp, std::span<const std::size_t> group, GridWorkspace::Impl& im,
               double t) {
  const unsigned members = im.team ? im.team->size() : 1;
  const GridWorkspace::Impl& shared = im;
  auto work = [&](unsigned member) {
    GridBox slab;
    for (std::size_t s : group)
      if (slab_of(gp.stages[s], member, members, slab))
        run_stage(gp.stages[s], s, im.scratch[member], shared, t, slab);
  };
  if (members == 1)
    work(0);
  else
    im.team->run(work);
}

void run_stage_whole(const GridProgram& gp, std::size_t s, GridWorkspace::Impl& im, double t) {
  const std::size_t one[1] = {s};
  run_group(gp, one, im, t);
}

/// grid_rhs's stages by dependency level: a stage's level is one more than the highest level
/// of the per-call observed stages whose arrays it reads (0 when it reads none).
std::vector<std::vector<std::size_t>> group_rhs_stages(const GridProgram& gp) {
  std::vector<int> producer_level(gp.arrays.size(), -1);  // per-call observed array -> level
  std::vector<std::vector<std::size_t>> groups;
  for (std::size_t s = 0; s < gp.stages.size(); ++s) {
    const GridStage& st = gp.stages[s];
    const bool per_call =
        (st.kind == Kind::Observed && st.reads_state) || st.kind == Kind::Tendency;
    if (!per_call) continue;
    int level = 0;
    for (const auto& b : st.blocks)
      for (const auto& in : b.inputs)
        if (in.kind == GridInput::Kind::Array && producer_level[in.array] >= 0)
          level = std::max(level, producer_level[in.array] + 1);
    if (st.kind == Kind::Observed)
      for (std::size_t a : st.targets) producer_level[a] = level;
    if (groups.size() <= static_cast<std::size_t>(level))
      groups.resize(static_cast<std::size_t>(level) + 1);
    groups[static_cast<std::size_t>(level)].push_back(s);
  }
  return groups;
}

}  // namespace

GridWorkspace make_grid_workspace(const GridProgram& gp, const System& sys,
                                  std::span<const double> p, unsigned threads) {
  ESI_ASSERT(p.size() == gp.parameter_count);
  GridWorkspace out;
  out.impl = std::make_unique<GridWorkspace::Impl>();
  auto& im = *out.impl;
  std::int64_t longest = 1;
  for (const auto& a : gp.arrays) {
    for (auto e : a.extents) longest = std::max(longest, e);
    if (a.kind == GridArray::Kind::Observed) {
      if (im.observed.size() <= a.slot) im.observed.resize(a.slot + 1);
      im.observed[a.slot].assign(static_cast<std::size_t>(cells_of(
                                     std::vector<std::int64_t>(a.extents.size(), 1), a.extents)),
                                 std::numeric_limits<double>::quiet_NaN());
    }
  }
  im.parameters.resize(gp.arrays.size());
  im.views.resize(gp.arrays.size());
  im.outputs.resize(gp.arrays.size());
  // Parameter arrays a program reads must have every value.
  std::vector<bool> read(gp.arrays.size(), false);
  for (const auto& st : gp.stages)
    for (const auto& b : st.blocks)
      for (const auto& in : b.inputs)
        if (in.kind == GridInput::Kind::Array) read[in.array] = true;
  for (std::size_t k = 0; k < gp.arrays.size(); ++k) {
    const GridArray& a = gp.arrays[k];
    if (a.kind != GridArray::Kind::Parameter) continue;
    im.parameters[k] = sys.arrays[a.slot].values;
    if (!read[k]) continue;
    for (double v : im.parameters[k])
      if (std::isnan(v))
        throw Error("grid_parameter_missing", "", "",
                    "parameter array '" + a.name +
                        "' has cells without a value; give it a default or "
                        "set it with --inputs");
  }
  im.iota_first = -kIotaMargin;
  for (std::int64_t v = -kIotaMargin; v <= longest + kIotaMargin; ++v)
    im.iota.push_back(static_cast<double>(v));
  // A member of the team per slab of the longest axis; more members than cells along it
  // would have nothing to do.
  std::int64_t most = 1;
  for (const auto& st : gp.stages)
    for (auto e : st.extents) most = std::max(most, e);
  const unsigned members = static_cast<unsigned>(std::clamp<std::int64_t>(threads, 1, most));
  im.scratch.resize(members);
  for (GridScratch& sc : im.scratch) {
    sc.ws.resize(gp.stages.size());
    for (std::size_t s = 0; s < gp.stages.size(); ++s)
      for (const auto& b : gp.stages[s].blocks) {
        sc.ws[s].push_back(b.program.make_workspace(kRowLanes));
        b.program.prepare(sc.ws[s].back(), p);
      }
  }
  if (members > 1) im.team = std::make_unique<detail::ThreadTeam>(members);
  im.plans.resize(gp.stages.size());
  for (std::size_t s = 0; s < gp.stages.size(); ++s)
    for (const auto& b : gp.stages[s].blocks)
      im.plans[s].push_back(plan_fields(gp, b, gp.stages[s].extents.size()));
  im.whole = true;
  im.rhs_groups = group_rhs_stages(gp);
  // Observed arrays that read no state: once, now.
  for (std::size_t k = 0; k < gp.arrays.size(); ++k) {
    const GridArray& a = gp.arrays[k];
    if (a.kind == GridArray::Kind::Parameter) im.views[k] = whole_view(im.parameters[k].data(), a);
    if (a.kind == GridArray::Kind::Observed) {
      im.views[k] = whole_view(im.observed[a.slot].data(), a);
      im.outputs[k] = im.views[k];
    }
  }
  for (std::size_t s = 0; s < gp.stages.size(); ++s)
    if (gp.stages[s].kind == Kind::Observed && !gp.stages[s].reads_state)
      run_stage_whole(gp, s, im, 0.0);
  return out;
}

namespace {

/// Points the state arrays' views at `y` and their outputs at `dy` (whole grid).
void bind_whole(const GridProgram& gp, GridWorkspace::Impl& im, const double* y, double* dy) {
  im.y = y;
  im.whole = true;
  for (std::size_t k = 0; k < gp.arrays.size(); ++k) {
    const GridArray& a = gp.arrays[k];
    if (a.kind == GridArray::Kind::State) {
      im.views[k] = whole_view(const_cast<double*>(y) + a.first_state, a);
      im.outputs[k] = whole_view(dy + a.first_state, a);
    } else if (a.kind == GridArray::Kind::Observed) {
      im.views[k] = whole_view(im.observed[a.slot].data(), a);
      im.outputs[k] = im.views[k];
    }
  }
}

}  // namespace

void grid_initial(const GridProgram& gp, GridWorkspace& ws, std::span<double> y) {
  auto& im = *ws.impl;
  ESI_ASSERT(y.size() == gp.state_count);
  bind_whole(gp, im, y.data(), y.data());
  for (std::size_t s = 0; s < gp.stages.size(); ++s) {
    const GridStage& st = gp.stages[s];
    if ((st.kind == Kind::Observed && st.reads_state) || st.kind == Kind::Initial)
      run_stage_whole(gp, s, im, 0.0);
  }
}

void grid_rhs(const GridProgram& gp, GridWorkspace& ws, double t, std::span<const double> y,
              std::span<double> dy) {
  auto& im = *ws.impl;
  ESI_ASSERT(y.size() == gp.state_count && dy.size() == gp.state_count);
  bind_whole(gp, im, y.data(), dy.data());
  for (const auto& group : im.rhs_groups) run_group(gp, group, im, t);
}

std::span<const double> grid_array_values(const GridProgram& gp, GridWorkspace& ws, double t,
                                          std::span<const double> y, std::size_t array) {
  std::span<const double> out;
  grid_array_values(gp, ws, t, y, std::span<const std::size_t>(&array, 1),
                    std::span<std::span<const double>>(&out, 1));
  return out;
}

void grid_array_values(const GridProgram& gp, GridWorkspace& ws, double t,
                       std::span<const double> y, std::span<const std::size_t> arrays,
                       std::span<std::span<const double>> out) {
  auto& im = *ws.impl;
  ESI_ASSERT(y.size() == gp.state_count && out.size() == arrays.size());
  bool observed = false;
  for (std::size_t k = 0; k < arrays.size(); ++k) {
    ESI_ASSERT(arrays[k] < gp.arrays.size() && gp.arrays[arrays[k]].kind != GridArray::Kind::State);
    observed = observed || gp.arrays[arrays[k]].kind == GridArray::Kind::Observed;
  }
  if (observed) {
    // Observed stages write only their observed buffers, so dy is never touched here.
    bind_whole(gp, im, y.data(), const_cast<double*>(y.data()));
    for (std::size_t s = 0; s < gp.stages.size(); ++s) {
      const GridStage& st = gp.stages[s];
      if (st.kind == Kind::Observed && st.reads_state) run_stage_whole(gp, s, im, t);
    }
  }
  for (std::size_t k = 0; k < arrays.size(); ++k) {
    const GridArray& a = gp.arrays[arrays[k]];
    out[k] = a.kind == GridArray::Kind::Parameter
                 ? std::span<const double>(im.parameters[arrays[k]])
                 : std::span<const double>(im.observed[a.slot]);
  }
}

namespace {

/// Per array (per axis of the array), how far beyond a tile it is read by the stages that
/// run every call, following them backwards from the tendencies (which write the tile
/// itself); -1 where the array is not read per call.
std::vector<std::vector<std::int64_t>> tile_margins(const GridProgram& gp) {
  std::vector<std::vector<std::int64_t>> m(gp.arrays.size());
  for (std::size_t k = 0; k < gp.arrays.size(); ++k) m[k].assign(gp.arrays[k].extents.size(), -1);
  std::vector<bool> per_call_observed(gp.arrays.size(), false);
  for (const auto& st : gp.stages)
    if (st.kind == Kind::Observed && st.reads_state) per_call_observed[st.targets[0]] = true;
  for (std::size_t s = gp.stages.size(); s-- > 0;) {
    const GridStage& st = gp.stages[s];
    std::vector<std::int64_t> out(st.extents.size(), 0);
    if (st.kind == Kind::Observed && st.reads_state) {
      out = m[st.targets[0]];
      if (std::all_of(out.begin(), out.end(), [](std::int64_t v) { return v < 0; })) continue;
      for (auto& v : out) v = std::max<std::int64_t>(v, 0);
    } else if (st.kind != Kind::Tendency) {
      continue;
    }
    for (const auto& b : st.blocks)
      for (const auto& in : b.inputs) {
        if (in.kind != GridInput::Kind::Array) continue;
        const GridArray& a = gp.arrays[in.array];
        if (a.kind != GridArray::Kind::State && !per_call_observed[in.array]) continue;
        for (std::size_t ax = 0; ax < in.axis.size(); ++ax) {
          const std::int64_t reach =
              in.axis[ax] >= 0 && static_cast<std::size_t>(in.axis[ax]) < out.size()
                  ? out[static_cast<std::size_t>(in.axis[ax])] + std::abs(in.offset[ax])
                  : 0;
          m[in.array][ax] = std::max(m[in.array][ax], reach);
        }
      }
  }
  return m;
}

}  // namespace

std::vector<std::int64_t> grid_tile_halo(const GridProgram& gp) {
  const auto m = tile_margins(gp);
  std::vector<std::int64_t> halo;
  for (std::size_t k = 0; k < gp.arrays.size(); ++k) {
    if (gp.arrays[k].kind != GridArray::Kind::State) continue;
    if (halo.size() < m[k].size()) halo.resize(m[k].size(), 0);
    for (std::size_t d = 0; d < m[k].size(); ++d) halo[d] = std::max(halo[d], m[k][d]);
  }
  return halo;
}

namespace {

/// The box `tile` widened by `halo` and clipped to `extents`.
GridBox widen(const GridBox& tile, const std::vector<std::int64_t>& halo,
              const std::vector<std::int64_t>& extents) {
  GridBox b = tile;
  for (std::size_t d = 0; d < b.lo.size(); ++d) {
    const std::int64_t h = d < halo.size() ? halo[d] : 0;
    b.lo[d] = std::max<std::int64_t>(1, b.lo[d] - h);
    b.hi[d] = std::min<std::int64_t>(extents[d], b.hi[d] + h);
  }
  return b;
}

View box_view(double* data, const GridBox& b) {
  View v{data, b.lo, std::vector<std::int64_t>(b.lo.size(), 1)};
  for (std::size_t d = 1; d < b.lo.size(); ++d)
    v.stride[d] = v.stride[d - 1] * (b.hi[d - 1] - b.lo[d - 1] + 1);
  return v;
}

/// Calls f(cell, k) for every cell of box b, first index fastest (k counts from 0).
template <class F>
void for_cells(const GridBox& b, F&& f) {
  if (cells_of(b.lo, b.hi) == 0) return;
  std::vector<std::int64_t> x = b.lo;
  for (std::int64_t k = 0;; ++k) {
    f(x, k);
    std::size_t d = 0;
    while (d < x.size() && x[d] == b.hi[d]) x[d] = b.lo[d], ++d;
    if (d == x.size()) break;
    ++x[d];
  }
}

}  // namespace

std::vector<double> grid_tile_states(const GridProgram& gp, const GridBox& tile,
                                     std::span<const double> y) {
  const auto halo = grid_tile_halo(gp);
  std::vector<double> out;
  for (const auto& a : gp.arrays) {
    if (a.kind != GridArray::Kind::State) continue;
    const GridBox b = widen(tile, halo, a.extents);
    for_cells(b, [&](const std::vector<std::int64_t>& x, std::int64_t) {
      std::int64_t at = a.first_state;
      for (std::size_t d = 0; d < x.size(); ++d) at += (x[d] - 1) * a.strides[d];
      out.push_back(y[static_cast<std::size_t>(at)]);
    });
  }
  return out;
}

void grid_rhs_tile(const GridProgram& gp, GridWorkspace& ws, double t, const GridBox& tile,
                   std::span<const double> tile_states, std::span<double> tile_dy) {
  auto& im = *ws.impl;
  if (im.margins.empty()) {  // properties of the program: worked out on the first tile
    im.margins = tile_margins(gp);
    im.halo = grid_tile_halo(gp);
  }
  const auto& halo = im.halo;
  for (const auto& st : gp.stages)
    for (const auto& b : st.blocks)
      for (const auto& in : b.inputs)
        if (in.kind == GridInput::Kind::ScalarState)
          throw Error(
              "grid_tile_scalar_state", "", "",
              "an array equation reads a scalar state; the Tile target does not hold scalars yet");
  im.y = nullptr;
  im.whole = false;  // box views: the plans (whole-grid views) do not apply
  // States: the tile plus halo; outputs: the tile.
  std::size_t in_at = 0, out_at = 0;
  for (std::size_t k = 0; k < gp.arrays.size(); ++k) {
    const GridArray& a = gp.arrays[k];
    if (a.kind != GridArray::Kind::State) continue;
    const GridBox b = widen(tile, halo, a.extents);
    im.views[k] = box_view(const_cast<double*>(tile_states.data()) + in_at, b);
    in_at += static_cast<std::size_t>(cells_of(b.lo, b.hi));
    im.outputs[k] = box_view(tile_dy.data() + out_at, tile);
    out_at += static_cast<std::size_t>(cells_of(tile.lo, tile.hi));
  }
  if (in_at != tile_states.size() || out_at != tile_dy.size())
    throw Error("grid_tile_shape", "", "",
                "tile storage holds " + std::to_string(tile_states.size()) + " state values and " +
                    std::to_string(tile_dy.size()) + " derivatives; the tile needs " +
                    std::to_string(in_at) + " and " + std::to_string(out_at));
  // Observed arrays that read states: over the cells their readers need, in tile buffers.
  if (im.tile_observed.size() < gp.arrays.size()) im.tile_observed.resize(gp.arrays.size());
  const auto& margin = im.margins;
  for (std::size_t s = 0; s < gp.stages.size(); ++s) {
    const GridStage& st = gp.stages[s];
    if (st.kind == Kind::Observed && st.reads_state) {
      const auto& need = margin[st.targets[0]];
      if (std::all_of(need.begin(), need.end(), [](std::int64_t v) { return v < 0; })) continue;
      std::vector<std::int64_t> grow(need.size());
      for (std::size_t d = 0; d < need.size(); ++d) grow[d] = std::max<std::int64_t>(need[d], 0);
      const GridBox b = widen(tile, grow, st.extents);
      const std::size_t target = st.targets[0];
      auto& buf = im.tile_observed[target];
      buf.assign(static_cast<std::size_t>(cells_of(b.lo, b.hi)),
                 std::numeric_limits<double>::quiet_NaN());
      im.views[target] = box_view(buf.data(), b);
      im.outputs[target] = im.views[target];
      run_stage(st, s, im.scratch[0], im, t, b);
    } else if (st.kind == Kind::Tendency) {
      run_stage(st, s, im.scratch[0], im, t, tile);
    }
  }
  // Observed views back to the whole-grid buffers (static ones never moved).
  for (std::size_t k = 0; k < gp.arrays.size(); ++k)
    if (gp.arrays[k].kind == GridArray::Kind::Observed) {
      im.views[k] = whole_view(im.observed[gp.arrays[k].slot].data(), gp.arrays[k]);
      im.outputs[k] = im.views[k];
    }
}

}  // namespace esi::kernel
