// Compiled programs against the oracle: every scalar op and closed function, hoisting of
// parameter-only work, register reuse, DOF subsets, forcing, f32, NaN poisoning, errors.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "esi/core/error.hpp"
#include "esi/kernel/oracle.hpp"
#include "esi/kernel/program.hpp"
#include "kernel/kernel_cases.hpp"

using nlohmann::json;
using namespace esi::kernel;
using esi::testing::run_whole;
using esi::testing::op;
using esi::testing::eq;
using esi::testing::ddt;
using esi::testing::ulp_distance;

namespace {

const esi::esm::System& all_ops() {
  static const esi::esm::System s = esi::testing::system_from(esi::testing::all_ops_model());
  return s;
}

struct Case {
  std::vector<double> u_soa;  // u[s * lanes + l]
  std::vector<double> t;      // per lane
  std::vector<double> p;
};

Case make_case(const esi::esm::System& s, std::size_t lanes, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Case c;
  c.p = esi::testing::defaults(s.parameters);
  c.u_soa.assign(s.states.size() * lanes, 0);
  for (std::size_t l = 0; l < lanes; ++l) {
    const auto u = esi::testing::perturbed(s.states, rng);
    for (std::size_t i = 0; i < u.size(); ++i) c.u_soa[i * lanes + l] = u[i];
    c.t.push_back(1.7e9 + 3600.0 * static_cast<double>(l));
  }
  return c;
}

std::vector<double> column(const std::vector<double>& soa, std::size_t rows, std::size_t lanes,
                           std::size_t l) {
  std::vector<double> out(rows);
  for (std::size_t i = 0; i < rows; ++i) out[i] = soa[i * lanes + l];
  return out;
}

}  // namespace

TEST(Program, EveryOperatorMatchesTheOracleBitwiseInF64) {
  const auto& s = all_ops();
  const Program prog = compile(s);
  for (std::size_t lanes : {1u, 5u, 13u, 128u}) {
    const Case c = make_case(s, lanes, 7 + lanes);
    Workspace ws = prog.make_workspace(lanes);
    prog.prepare(ws, c.p);
    const auto du = run_whole(prog, ws, c.u_soa, lanes, c.t);
    for (std::size_t l = 0; l < lanes; ++l) {
      const auto u = column(c.u_soa, s.states.size(), lanes, l);
      std::vector<double> want(s.states.size());
      oracle_rhs(s, u.data(), c.p.data(), c.t[l], want.data());
      for (std::size_t i = 0; i < want.size(); ++i)
        EXPECT_EQ(ulp_distance(du[i * lanes + l], want[i]), 0u)
            << s.states[i].name << " lane " << l << ": " << du[i * lanes + l] << " vs " << want[i];
    }
  }
}

TEST(Program, F32MatchesTheOracleToFloatPrecision) {
  const auto& s = all_ops();
  const Program prog = compile(s);
  const std::size_t lanes = 13;
  const Case c = make_case(s, lanes, 99);
  Workspace ws = prog.make_workspace(lanes, DType::F32);
  prog.prepare(ws, c.p);
  std::vector<float> u32(c.u_soa.begin(), c.u_soa.end());
  const auto du = run_whole(prog, ws, u32, lanes, c.t);
  for (std::size_t l = 0; l < lanes; ++l) {
    // The oracle at the float-rounded state, so only the arithmetic's rounding differs.
    std::vector<double> u(s.states.size()), want(s.states.size());
    for (std::size_t i = 0; i < u.size(); ++i) u[i] = u32[i * lanes + l];
    oracle_rhs(s, u.data(), c.p.data(), c.t[l], want.data());
    for (std::size_t i = 0; i < want.size(); ++i)
      EXPECT_NEAR(du[i * lanes + l], want[i], 2e-5 * (1 + std::fabs(want[i]))) << s.states[i].name;
  }
}

TEST(Program, WorkIsHoistedIntoSetupAndTimeTapes) {
  const auto& s = all_ops();
  const Program prog = compile(s);
  const std::string tape = prog.disassemble();
  const auto time_at = tape.find("time ("), lane_at = tape.find("lane (");
  const std::string setup_part = tape.substr(0, time_at);
  const std::string time_part = tape.substr(time_at, lane_at - time_at);
  const std::string lane_part = tape.substr(lane_at);
  // exp(-T/300) * k and julian_day(tutc) read only parameters: computed by prepare.
  EXPECT_NE(setup_part.find("exp"), std::string::npos);
  EXPECT_NE(setup_part.find("julian_day"), std::string::npos);
  // datetime of t: per block, in double.
  EXPECT_NE(time_part.find("datetime.hour"), std::string::npos);
  EXPECT_NE(time_part.find("load_time"), std::string::npos);
  for (const char* absent : {"julian_day", "datetime", "load_param", "const", "load_time "})
    EXPECT_EQ(lane_part.find(absent), std::string::npos) << absent << "\n" << tape;
  EXPECT_NE(lane_part.find("load_time_value"), std::string::npos);
}

TEST(Program, LossTermsSubtractWithTheOraclesBits) {
  // dx = x + -1*y + y*-1 + -1*(x*y): three loss terms, and dy = -1*x: a negation. They compile
  // to two subtractions and a negation, with no multiply by -1, and give the oracle's bits
  // (a + (-1 * b) is a - b in IEEE 754), signed zeros and infinities included.
  json doc = {{"models",
               {{"M",
                 {{"variables",
                   {{"x", {{"type", "unknown"}, {"default", 0.5}}},
                    {"y", {{"type", "unknown"}, {"default", 0.9}}}}},
                  {"equations",
                   {eq(ddt("x"), op("+", {"x", op("*", {-1, "y"}), op("*", {"y", -1}),
                                          op("*", {-1, op("*", {"x", "y"})})})),
                    eq(ddt("y"), op("*", {-1, "x"}))}}}}}}};
  const auto s = esi::testing::system_from_json(doc);
  const Program prog = compile(s);
  const std::string tape = prog.disassemble();
  const std::string lane_part = tape.substr(tape.find("lane ("));
  EXPECT_EQ(lane_part.find("mul_s"), std::string::npos) << tape;
  EXPECT_NE(lane_part.find("sub"), std::string::npos) << tape;
  EXPECT_NE(lane_part.find("neg"), std::string::npos) << tape;
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<std::array<double, 2>> points{
      {0.5, 0.9},      {0.0, 0.0}, {-0.0, 0.0}, {0.0, -0.0}, {-0.0, -0.0},
      {1e308, -1e308}, {inf, 1.0}, {-inf, 2.0}, {3.0, inf},  {5e-324, -5e-324}};
  const std::size_t lanes = points.size();
  std::vector<double> u(2 * lanes);
  for (std::size_t l = 0; l < lanes; ++l) u[l] = points[l][0], u[lanes + l] = points[l][1];
  Workspace ws = prog.make_workspace(lanes);
  prog.prepare(ws, {});
  const auto du = run_whole<double>(prog, ws, u, lanes, std::vector<double>(lanes, 0.0));
  for (std::size_t l = 0; l < lanes; ++l) {
    std::vector<double> want(2);
    oracle_rhs(s, points[l].data(), nullptr, 0.0, want.data());
    for (std::size_t i = 0; i < 2; ++i) {
      if (std::isnan(want[i])) {
        EXPECT_TRUE(std::isnan(du[i * lanes + l])) << "lane " << l;
        continue;
      }
      EXPECT_EQ(std::signbit(du[i * lanes + l]), std::signbit(want[i]))
          << "lane " << l << " row " << i;
      EXPECT_EQ(du[i * lanes + l], want[i]) << "lane " << l << " row " << i;
    }
  }
}

TEST(Program, RegistersAreReusedAfterTheirLastRead) {
  // A long chain: x1 = x, x_{k+1} = sin(x_k) * y; live values stay O(1). (100 links nest 400
  // JSON levels, within kMaxJsonDepth.)
  json e = "x";
  for (int k = 0; k < 100; ++k) e = op("*", {op("sin", {e}), "y"});
  json doc = {{"models", {{"M", {{"variables", {{"x", {{"type", "unknown"}, {"default", 0.5}}},
                                                {"y", {{"type", "unknown"}, {"default", 0.9}}}}},
                                 {"equations", {eq(ddt("x"), e), eq(ddt("y"), 0)}}}}}}};
  const auto s = esi::testing::system_from_json(doc);
  const Program prog = compile(s);
  const auto st = prog.stats();
  EXPECT_GT(st.lane_instructions, 200u);
  EXPECT_LE(st.lane_registers, 6u);
  Workspace ws = prog.make_workspace(1);
  prog.prepare(ws, {});
  const auto du = run_whole<double>(prog, ws, {0.5, 0.9}, 1, {0.0});
  std::vector<double> want(2);
  const double u[2] = {0.5, 0.9};
  oracle_rhs(s, u, nullptr, 0.0, want.data());
  EXPECT_EQ(du[0], want[0]);
  EXPECT_EQ(du[1], 0.0);
}

TEST(Program, DofSubsetWritesOnlyTheSelectedRowsInOrder) {
  const auto& s = all_ops();
  const int ix = s.state_index("M.x"), iw = s.state_index("M.w");
  CompileOptions o;
  o.dofs = {iw, ix};
  const Program prog = compile(s, o);
  EXPECT_EQ(prog.output_count(), 2u);
  ASSERT_EQ(prog.dofs().size(), 2u);
  const Case c = make_case(s, 1, 3);
  Workspace ws = prog.make_workspace(1);
  prog.prepare(ws, c.p);
  const auto du = run_whole(prog, ws, c.u_soa, 1, c.t);
  std::vector<double> want(s.states.size());
  oracle_rhs(s, c.u_soa.data(), c.p.data(), c.t[0], want.data());
  EXPECT_EQ(du[0], want[iw]);
  EXPECT_EQ(du[1], want[ix]);
  // Fewer instructions than the whole system.
  EXPECT_LT(prog.stats().lane_instructions, compile(s).stats().lane_instructions);
}

TEST(Program, ForcingIsReadPerCellAndSwappedWithoutRecompiling) {
  const auto& s = all_ops();
  CompileOptions o;
  o.forcing = {"M.F"};
  const Program prog = compile(s, o);
  ASSERT_EQ(prog.forcing_names().size(), 1u);
  const std::size_t lanes = 5;
  Case c = make_case(s, lanes, 11);
  Workspace ws = prog.make_workspace(lanes);
  prog.prepare(ws, c.p);
  const int iF = s.parameter_index("M.F");
  for (double scale : {1.0, 3.0}) {
    std::vector<double> field(lanes);
    for (std::size_t l = 0; l < lanes; ++l) field[l] = scale * (0.5 + 0.25 * static_cast<double>(l));
    const ForcingField<double> f{field.data(), 1};
    const auto du = run_whole<double>(prog, ws, c.u_soa, lanes, c.t, std::span(&f, 1));
    for (std::size_t l = 0; l < lanes; ++l) {
      auto p = c.p;
      p[iF] = field[l];
      const auto u = column(c.u_soa, s.states.size(), lanes, l);
      std::vector<double> want(s.states.size());
      oracle_rhs(s, u.data(), p.data(), c.t[l], want.data());
      for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(du[i * lanes + l], want[i]);
    }
  }
  // Stride 0: one value for every cell.
  const double one = 0.75;
  const ForcingField<double> uniform{&one, 0};
  const auto du = run_whole<double>(prog, ws, c.u_soa, lanes, c.t, std::span(&uniform, 1));
  auto p = c.p;
  p[iF] = one;
  std::vector<double> want(s.states.size());
  const auto u = column(c.u_soa, s.states.size(), lanes, 4);
  oracle_rhs(s, u.data(), p.data(), c.t[4], want.data());
  EXPECT_EQ(du[s.state_index("M.x") * lanes + 4], want[s.state_index("M.x")]);
}

TEST(Program, WorkspaceIsNaNPoisonedUntilPrepared) {
  const auto& s = all_ops();
  const Program prog = compile(s);
  const Case c = make_case(s, 4, 5);
  Workspace ws = prog.make_workspace(4);
  EXPECT_FALSE(ws.prepared());
  // D(x) reads the hoisted observed `a`: unset before prepare, so NaN, not a stale number.
  const auto before = run_whole(prog, ws, c.u_soa, 4, c.t);
  EXPECT_TRUE(std::isnan(before[s.state_index("M.x") * 4]));
  prog.prepare(ws, c.p);
  const auto after = run_whole(prog, ws, c.u_soa, 4, c.t);
  for (double v : after) EXPECT_TRUE(std::isfinite(v));
}

TEST(Program, CompileErrorsAreCoded) {
  const std::string body = R"("models": {"M": {"variables": {
      "x": {"type": "unknown", "default": 1}, "k": {"type": "parameter", "default": 2}},
      "equations": [{"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": {"op": "*", "args": ["k", "x"]}}]}})";
  auto s = esi::testing::system_from(body);
  CompileOptions o;
  o.forcing = {"M.nope"};
  EXPECT_THROW(compile(s, o), esi::Error);
  o.forcing.clear();
  o.dofs = {3};
  EXPECT_THROW(compile(s, o), esi::Error);
  // An expression the system cannot bind, and a non-scalar op.
  const auto bad = s.pool.symbol("M.unknown_name");
  try {
    compile_outputs(s, std::span(&bad, 1));
    FAIL();
  } catch (const esi::Error& e) {
    EXPECT_EQ(e.code(), "undefined_variable");
  }
  const esi::expr::NodeId ix[2] = {s.pool.symbol("M.x"), s.pool.number(1)};
  const auto d = s.pool.make(esi::expr::Op::Index, ix);
  try {
    compile_outputs(s, std::span(&d, 1));
    FAIL();
  } catch (const esi::Error& e) {
    EXPECT_EQ(e.code(), "unsupported_operator");
  }
}

TEST(Program, EvaluationOrderChangesWhenOutputsAreStoredNotWhatTheyHold) {
  // compile_outputs with an order computes and stores the outputs in that order; output k
  // still holds outputs[k], with the same bits as the natural order.
  const auto& s = all_ops();
  std::vector<esi::expr::NodeId> outputs(s.state_rhs.begin(), s.state_rhs.end());
  std::vector<std::size_t> reversed(outputs.size());
  for (std::size_t k = 0; k < reversed.size(); ++k) reversed[k] = reversed.size() - 1 - k;
  const Program natural = compile_outputs(s, outputs);
  const Program backwards = compile_outputs(s, outputs, {}, reversed);
  const std::string tape = backwards.disassemble();
  const std::string first_store = "out" + std::to_string(outputs.size() - 1) + " = store";
  EXPECT_LT(tape.find(first_store), tape.find("out0 = store")) << tape;
  const std::size_t lanes = 13;
  const Case c = make_case(s, lanes, 5);
  Workspace a = natural.make_workspace(lanes), b = backwards.make_workspace(lanes);
  natural.prepare(a, c.p);
  backwards.prepare(b, c.p);
  const auto want = run_whole(natural, a, c.u_soa, lanes, c.t);
  const auto got = run_whole(backwards, b, c.u_soa, lanes, c.t);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(ulp_distance(got[i], want[i]), 0u) << i;
  // Not a permutation: refused, located by code.
  for (std::vector<std::size_t> bad :
       {std::vector<std::size_t>{0}, std::vector<std::size_t>(outputs.size(), 0)}) {
    try {
      compile_outputs(s, outputs, {}, bad);
      FAIL();
    } catch (const esi::Error& e) {
      EXPECT_EQ(e.code(), "invalid_order");
    }
  }
}

TEST(Program, TimeDerivativeOfAStateIsItsTendency) {
  using esi::testing::sum;
  // D(y) = 2 * D(x): as written in a real corpus document (scoped_refs_nested.esm).
  json doc = {{"models", {{"M", {{"variables", {{"x", {{"type", "unknown"}, {"default", 0.5}}},
                                                {"y", {{"type", "unknown"}, {"default", 0.9}}},
                                                {"k", {{"type", "parameter"}, {"default", 3.0}}}}},
                                 {"equations", {eq(ddt("x"), op("*", {"k", "x"})),
                                                eq(ddt("y"), op("*", {2, ddt("x")}))}}}}}}};
  const auto s = esi::testing::system_from_json(doc);
  const Program prog = compile(s);
  Workspace ws = prog.make_workspace(1);
  prog.prepare(ws, std::vector<double>{3.0});
  const auto du = run_whole<double>(prog, ws, {0.5, 0.9}, 1, {0.0});
  std::vector<double> want(2);
  const double u[2] = {0.5, 0.9}, p[1] = {3.0};
  oracle_rhs(s, u, p, 0.0, want.data());
  EXPECT_EQ(du[s.state_index("M.y")], 2 * 1.5);
  EXPECT_EQ(du[0], want[0]);
  EXPECT_EQ(du[1], want[1]);
}

TEST(Program, ReadsTimeOnlyWhenAnOutputDependsOnT) {
  const auto autonomous = esi::testing::system_from(R"("models": {"M": {"variables": {
      "x": {"type": "unknown", "default": 1.0}, "k": {"type": "parameter", "default": 2.0}},
      "equations": [{"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": {"op": "*", "args": ["k", "x"]}}]}})");
  EXPECT_FALSE(esi::kernel::compile(autonomous).reads_time());
  const auto forced = esi::testing::system_from(R"("models": {"M": {"variables": {
      "x": {"type": "unknown", "default": 1.0}},
      "equations": [{"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": {"op": "sin", "args": ["t"]}}]}})");
  EXPECT_TRUE(esi::kernel::compile(forced).reads_time());
}
