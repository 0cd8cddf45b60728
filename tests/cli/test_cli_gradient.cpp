// `esi simulate --loss NAME --gradient OUT.json`: the gradient against the closed-form
// derivative of x' = -k x, the check it prints, and refusals (a located error and no file).
#include <cmath>
#include <cstdio>
#include <fstream>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/run_esi.hpp"
#include "support/temp_dir.hpp"

namespace {

using esi::testing::CliResult;
using esi::testing::TempDir;

CliResult run(const TempDir& dir, const std::vector<std::string>& args) {
  return esi::testing::run_esi(ESI_BINARY, args, dir.path() / "stderr.txt");
}

// x' = -k x (x0 = 2, k = 0.5) with an observed y = 3 x; `extra` adds variables or events.
std::string decay(const std::string& extra_models = "") {
  return R"({"esm": "1.0.0", "metadata": {"name": "d"}, "models": {"M": {
    "variables": {"x": {"type": "unknown", "units": "mol/m^3", "default": 2.0},
                  "k": {"type": "parameter", "units": "1/s", "default": 0.5},
                  "y": {"type": "unknown", "units": "mol/m^3"}},
    "equations": [{"lhs": {"op": "D", "args": ["x"], "wrt": "t"},
                   "rhs": {"op": "*", "args": [{"op": "-", "args": ["k"]}, "x"]}},
                  {"lhs": "y", "rhs": {"op": "*", "args": [3, "x"]}}])" +
         extra_models + R"(}}})";
}

nlohmann::json read_json(const std::filesystem::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

/// --gradient-check's entries in OUT.json: at least one, each within the two bounds.
void expect_checks(const nlohmann::json& j, double dot_product, double difference) {
  ASSERT_FALSE(j["checks"].empty());
  for (const auto& c : j["checks"]) {
    EXPECT_LE(c["dot_product_relative_error"].get<double>(), dot_product);
    EXPECT_LE(c["difference_relative_error"].get<double>(), difference);
  }
}

TEST(CliGradient, DecayGradientEqualsTheClosedForm) {
  TempDir dir;
  const auto doc = dir.write("d.esm", decay()).string();
  const auto out = dir.path() / "g.json";
  CliResult r = run(dir, {"simulate", doc, "--tspan", "0", "2", "--method", "Rodas5P", "--rtol", "1e-11",
                          "--atol", "1e-14", "--loss", "M.x", "--gradient", out.string(), "--gradient-check"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = read_json(out);
  // x(T) = x0 e^{-kT}: dx/dk = -T x(T), dx/dx0 = e^{-kT}.
  const double xT = 2 * std::exp(-1.0);
  EXPECT_NEAR(j["loss"].get<double>(), xT, 1e-9);
  EXPECT_NEAR(j["gradient"]["M.k"].get<double>(), -2 * xT, 1e-8);
  EXPECT_NEAR(j["gradient"]["M.x"].get<double>(), std::exp(-1.0), 1e-9);
  EXPECT_EQ(j["units"]["M.k"], "mol/m^3 / (1/s)");
  EXPECT_EQ(j["initial_values"], nlohmann::json::array({"M.x"}));
  EXPECT_EQ(j["run"]["method"], "Rodas5P");
  ASSERT_EQ(j["checks"].size(), 3u);
  expect_checks(j, 1e-13, 1e-7);
  EXPECT_NE(r.err.find("check: <lambda, TLM v>"), std::string::npos) << r.err;

  // --wrt narrows the gradient to the names given, and an explicit method gives the same
  // derivative of its own discrete map (close to the ODE's at this tolerance).
  r = run(dir, {"simulate", doc, "--tspan", "0", "2", "--method", "Tsit5", "--rtol", "1e-10", "--atol", "1e-14",
                "--loss", "M.x", "--gradient", out.string(), "--wrt", "M.k", "-q"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto narrowed = read_json(out);
  EXPECT_EQ(narrowed["gradient"].size(), 1u);
  EXPECT_NEAR(narrowed["gradient"]["M.k"].get<double>(), -2 * xT, 1e-7);
}

// Observeds as the loss: y = 3 x (the states' chain only) and z = k x, which reads the
// parameter itself: z(T) = k x0 e^{-kT}, dz/dk = x0 e^{-kT} (1 - kT), dz/dx0 = k e^{-kT}.
TEST(CliGradient, ObservedLossesMatchTheClosedForm) {
  TempDir dir;
  const auto doc = dir.write("z.esm", R"({"esm": "1.0.0", "metadata": {"name": "z"}, "models": {"M": {
    "variables": {"x": {"type": "unknown", "units": "mol/m^3", "default": 2.0},
                  "k": {"type": "parameter", "units": "1/s", "default": 0.5},
                  "y": {"type": "unknown", "units": "mol/m^3"},
                  "z": {"type": "unknown", "units": "mol/m^3/s"}},
    "equations": [{"lhs": {"op": "D", "args": ["x"], "wrt": "t"},
                   "rhs": {"op": "*", "args": [{"op": "-", "args": ["k"]}, "x"]}},
                  {"lhs": "y", "rhs": {"op": "*", "args": [3, "x"]}},
                  {"lhs": "z", "rhs": {"op": "*", "args": ["k", "x"]}}]}}})").string();
  const auto out = dir.path() / "g.json";
  const double T = 2, e = std::exp(-0.5 * T);
  CliResult r = run(dir, {"simulate", doc, "--tspan", "0", "2", "--method", "Rodas5P", "--rtol", "1e-11",
                          "--atol", "1e-14", "--loss", "M.z", "--gradient", out.string(), "--gradient-check"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto j = read_json(out);
  EXPECT_NEAR(j["loss"].get<double>(), 0.5 * 2 * e, 1e-9);
  EXPECT_NEAR(j["gradient"]["M.k"].get<double>(), 2 * e * (1 - 0.5 * T), 1e-8);
  EXPECT_NEAR(j["gradient"]["M.x"].get<double>(), 0.5 * e, 1e-9);
  EXPECT_EQ(j["units"]["M.k"], "mol/m^3/s / (1/s)");
  expect_checks(j, 1e-13, 1e-7);

  r = run(dir, {"simulate", doc, "--tspan", "0", "2", "--method", "Rodas5P", "--rtol", "1e-11", "--atol", "1e-14",
                "--loss", "M.y", "--gradient", out.string(), "-q"});
  ASSERT_EQ(r.status, 0) << r.err;
  j = read_json(out);
  EXPECT_NEAR(j["gradient"]["M.k"].get<double>(), 3 * -T * 2 * e, 1e-8);
  EXPECT_NEAR(j["gradient"]["M.x"].get<double>(), 3 * e, 1e-9);

  // An integral of z over [0.5, 1.5]: the trapezoid's own derivative, checked by the tangent
  // and central differences of the frozen steps (z's direct k term in both).
  const auto integral = dir.write("int.json", R"({"terms": [{"variable": "M.z", "integral": [0.5, 1.5]}]})").string();
  r = run(dir, {"simulate", doc, "--tspan", "0", "2", "--method", "Kvaerno3", "--rtol", "1e-8", "--loss-file",
                integral, "--gradient", out.string(), "--gradient-check", "-q"});
  ASSERT_EQ(r.status, 0) << r.err;
  j = read_json(out);
  expect_checks(j, 1e-13, 1e-7);
  // int_a^b k x0 e^{-kt} dt = x0 (e^{-ka} - e^{-kb}); by k: x0 (b e^{-kb} - a e^{-ka}).
  const double a = 0.5, b = 1.5;
  EXPECT_NEAR(j["gradient"]["M.k"].get<double>(), 2 * (b * std::exp(-0.5 * b) - a * std::exp(-0.5 * a)), 1e-5);
}

// A dose at t_e = 0.5 held fixed: x+ = 1.5 x- + d (d a parameter), so
// x(T) = 1.5 x0 e^{-kT} + d e^{-k(T - t_e)}; a value at t_e reads the state after the dose
// (what esi simulate writes there): 1.5 x0 e^{-k t_e} + d. A second dose at t = 0 applies
// before the run (x0 becomes 1.5 x0 + d there).
TEST(CliGradient, PresetEventsAreDifferentiatedWithTheirFiringHeldFixed) {
  TempDir dir;
  const auto doc = [](const std::string& times) {
    return R"({"esm": "1.0.0", "metadata": {"name": "dose"}, "models": {"M": {
    "variables": {"x": {"type": "unknown", "units": "mol/m^3", "default": 2.0},
                  "k": {"type": "parameter", "units": "1/s", "default": 0.5},
                  "d": {"type": "parameter", "units": "mol/m^3", "default": 1.0}},
    "equations": [{"lhs": {"op": "D", "args": ["x"], "wrt": "t"},
                   "rhs": {"op": "*", "args": [{"op": "-", "args": ["k"]}, "x"]}}],
    "discrete_events": [{"name": "dose", "trigger": {"type": "preset_times", "times": [)" + times + R"(]},
      "affects": [{"lhs": "x", "rhs": {"op": "+", "args": [{"op": "*", "args": [1.5, "x"]}, "d"]}}]}]}}})";
  };
  const auto file = dir.write("dose.esm", doc("0.5")).string();
  const auto out = dir.path() / "g.json";
  const double k = 0.5, x0 = 2, d = 1, te = 0.5, T = 2;
  CliResult r = run(dir, {"simulate", file, "--tspan", "0", "2", "--method", "Rodas5P", "--rtol", "1e-11", "--atol",
                          "1e-14", "--loss", "M.x", "--gradient", out.string(), "--gradient-check"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto j = read_json(out);
  EXPECT_NEAR(j["loss"].get<double>(), 1.5 * x0 * std::exp(-k * T) + d * std::exp(-k * (T - te)), 1e-9);
  EXPECT_NEAR(j["gradient"]["M.x"].get<double>(), 1.5 * std::exp(-k * T), 1e-9);
  EXPECT_NEAR(j["gradient"]["M.d"].get<double>(), std::exp(-k * (T - te)), 1e-9);
  EXPECT_NEAR(j["gradient"]["M.k"].get<double>(),
              -T * 1.5 * x0 * std::exp(-k * T) - (T - te) * d * std::exp(-k * (T - te)), 1e-8);
  // The identity is relative to sum |lambda_i t_i| at the end, which does not see the terms
  // the dose's 1.5 x + d sums: measured 1.1e-13 here.
  expect_checks(j, 1e-12, 1e-7);

  // Under a memory budget the tape thins (K doubles) and the gradient keeps every bit.
  r = run(dir, {"simulate", file, "--tspan", "0", "2", "--method", "Rodas5P", "--rtol", "1e-11", "--atol", "1e-14",
                "--loss", "M.x", "--gradient", (dir.path() / "thin.json").string(), "--checkpoint-memory", "3k", "-q"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto thin = read_json(dir.path() / "thin.json");
  EXPECT_GT(thin["run"]["checkpoint_every"].get<int>(), 1);
  EXPECT_LT(thin["run"]["tape_bytes"].get<double>(), j["run"]["tape_bytes"].get<double>());
  EXPECT_EQ(thin["gradient"], j["gradient"]);
  EXPECT_EQ(run(dir, {"simulate", file, "--tspan", "0", "2", "--loss", "M.x", "--gradient", out.string(),
                      "--checkpoint-memory", "0"}).status, 2);
  EXPECT_EQ(run(dir, {"simulate", file, "--tspan", "0", "2", "--checkpoint-memory", "6k", "--output", "o.csv"}).status, 2);

  // The value at the dose's time, after it; an integral across it by the checks.
  const auto at = dir.write("at.json", R"({"terms": [{"variable": "M.x", "at": [0.5]}]})").string();
  r = run(dir, {"simulate", file, "--tspan", "0", "2", "--method", "Tsit5", "--rtol", "1e-11", "--atol", "1e-14",
                "--loss-file", at, "--gradient", out.string(), "-q"});
  ASSERT_EQ(r.status, 0) << r.err;
  j = read_json(out);
  EXPECT_NEAR(j["loss"].get<double>(), 1.5 * x0 * std::exp(-k * te) + d, 1e-9);
  EXPECT_NEAR(j["gradient"]["M.d"].get<double>(), 1.0, 1e-12);
  EXPECT_NEAR(j["gradient"]["M.x"].get<double>(), 1.5 * std::exp(-k * te), 1e-9);
  EXPECT_NEAR(j["gradient"]["M.k"].get<double>(), -te * 1.5 * x0 * std::exp(-k * te), 1e-9);
  const auto integral = dir.write("int.json", R"({"terms": [{"variable": "M.x", "integral": [0, 2]}]})").string();
  r = run(dir, {"simulate", file, "--tspan", "0", "2", "--method", "Kvaerno3", "--rtol", "1e-8", "--loss-file",
                integral, "--gradient", out.string(), "--gradient-check", "-q", "--checkpoint-every", "3"});
  ASSERT_EQ(r.status, 0) << r.err;
  j = read_json(out);
  expect_checks(j, 1e-12, 1e-7);

  // --sensitivities through the dose: d x(t) / d d is 0 before t_e and e^{-k (t - t_e)} from
  // it on (the row at t_e shows the state after the dose); d x(t) / d x0 is e^{-kt}, then 1.5
  // e^{-kt}.
  const auto csv = dir.path() / "s.csv";
  r = run(dir, {"simulate", file, "--tspan", "0", "2", "--saveat", "0.25", "--method", "Rodas5P", "--rtol", "1e-11",
                "--atol", "1e-14", "--sensitivities", "M.d,M.x", "--output", csv.string(), "-q"});
  ASSERT_EQ(r.status, 0) << r.err;
  std::ifstream in(csv);
  std::string header, line;
  std::getline(in, header);
  EXPECT_EQ(header, "t,M.x,d(M.x)/d(M.d),d(M.x)/d(M.x)");
  int rows = 0;
  while (std::getline(in, line)) {
    double t = 0, x = 0, by_d = 0, by_x0 = 0;
    ASSERT_EQ(std::sscanf(line.c_str(), "%lf,%lf,%lf,%lf", &t, &x, &by_d, &by_x0), 4) << line;
    const bool after = t >= te;
    EXPECT_NEAR(x, after ? 1.5 * x0 * std::exp(-k * t) + d * std::exp(-k * (t - te)) : x0 * std::exp(-k * t), 1e-9) << t;
    EXPECT_NEAR(by_d, after ? std::exp(-k * (t - te)) : 0.0, 1e-9) << t;
    EXPECT_NEAR(by_x0, (after ? 1.5 : 1.0) * std::exp(-k * t), 1e-9) << t;
    ++rows;
  }
  EXPECT_EQ(rows, 9);

  // Doses at t = 0 and t = T too: x0 -> 1.5 x0 + d before the first step, and the end value
  // read after the last dose.
  const auto three = dir.write("three.esm", doc("0, 0.5, 2")).string();
  r = run(dir, {"simulate", three, "--tspan", "0", "2", "--method", "Rodas5P", "--rtol", "1e-11", "--atol", "1e-14",
                "--loss", "M.x", "--gradient", out.string(), "-q"});
  ASSERT_EQ(r.status, 0) << r.err;
  j = read_json(out);
  const double start = 1.5 * x0 + d, before_last = 1.5 * start * std::exp(-k * T) + d * std::exp(-k * (T - te));
  EXPECT_NEAR(j["loss"].get<double>(), 1.5 * before_last + d, 1e-9);
  EXPECT_NEAR(j["gradient"]["M.x"].get<double>(), 1.5 * 1.5 * 1.5 * std::exp(-k * T), 1e-9);
  EXPECT_NEAR(j["gradient"]["M.d"].get<double>(), 1.5 * (1.5 * std::exp(-k * T) + std::exp(-k * (T - te))) + 1, 1e-9);
}

// A §5.4 schedule update held fixed: at t_e = 0.5, k <- k / 2 + c x (it reads its own old value,
// a state and a fixed parameter c). With x_e = x0 e^{-k t_e}, k+ = k / 2 + c x_e and
// tau = T - t_e: x(T) = x_e e^{-k+ tau}, so dx(T)/dx0 = x(T) (1 / x0 - tau c e^{-k t_e}) and
// dx(T)/dc = -x(T) tau x_e. k itself changes during the run, so it has no reported entry.
TEST(CliGradient, ParameterUpdatesAreDifferentiatedWithTheirFiringHeldFixed) {
  TempDir dir;
  const auto file = dir.write("u.esm", R"({"esm": "1.0.0", "metadata": {"name": "u"}, "models": {"M": {
    "variables": {"x": {"type": "unknown", "units": "mol/m^3", "default": 2.0},
                  "c": {"type": "parameter", "units": "m^3/mol/s", "default": 0.1},
                  "k": {"type": "parameter", "units": "1/s", "default": 0.5, "shape": [],
                        "update": {"kind": "schedule", "times": [0.5], "expression":
                          {"op": "+", "args": [{"op": "*", "args": [0.5, "k"]}, {"op": "*", "args": ["c", "x"]}]}}}},
    "equations": [{"lhs": {"op": "D", "args": ["x"], "wrt": "t"},
                   "rhs": {"op": "*", "args": [{"op": "-", "args": ["k"]}, "x"]}}]}}})").string();
  const auto out = dir.path() / "g.json";
  const double x0 = 2, k = 0.5, c = 0.1, te = 0.5, T = 2, tau = T - te;
  const double xe = x0 * std::exp(-k * te), kp = k / 2 + c * xe, xT = xe * std::exp(-kp * tau);
  for (const char* method : {"Rodas5P", "Tsit5", "Kvaerno3"}) {
    SCOPED_TRACE(method);
    const CliResult r = run(dir, {"simulate", file, "--tspan", "0", "2", "--method", method, "--rtol", "1e-11",
                                  "--atol", "1e-14", "--loss", "M.x", "--gradient", out.string(), "--gradient-check", "-q"});
    ASSERT_EQ(r.status, 0) << r.err;
    const auto j = read_json(out);
    EXPECT_NEAR(j["loss"].get<double>(), xT, 1e-8);
    EXPECT_NEAR(j["gradient"]["M.x"].get<double>(), xT * (1 / x0 - tau * c * std::exp(-k * te)), 1e-8);
    EXPECT_NEAR(j["gradient"]["M.c"].get<double>(), -xT * tau * xe, 1e-8);
    EXPECT_FALSE(j["gradient"].contains("M.k"));
    expect_checks(j, 1e-12, 1e-7);
  }
}

// A loss file: values at two output times plus a misfit against an observation, against the
// closed form; an integral and a mean checked by the tangent and central differences.
TEST(CliGradient, LossFileTermsMatchTheClosedForm) {
  TempDir dir;
  const auto doc = dir.write("d.esm", decay()).string();
  dir.write("obs.csv", "time,name,value,sigma\n1.0,M.x,1.1,0.2\n");
  const auto loss = dir.write("loss.json", R"({"terms": [
      {"variable": "M.x", "at": [0.5, 1.5], "weight": 2},
      {"observations": "obs.csv"}]})").string();
  const auto out = dir.path() / "g.json";
  CliResult r = run(dir, {"simulate", doc, "--tspan", "0", "2", "--method", "Rodas5P", "--rtol", "1e-11",
                          "--atol", "1e-14", "--loss-file", loss, "--gradient", out.string()});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = read_json(out);
  const auto x = [](double t) { return 2 * std::exp(-0.5 * t); };
  const double miss = x(1) - 1.1;
  EXPECT_NEAR(j["loss"].get<double>(), 2 * (x(0.5) + x(1.5)) + 0.5 * (miss / 0.2) * (miss / 0.2), 1e-8);
  // dx(t)/dk = -t x(t), dx(t)/dx0 = x(t) / x0.
  const double dk = 2 * (-0.5 * x(0.5) - 1.5 * x(1.5)) + miss / 0.04 * (-1 * x(1));
  const double dx0 = 2 * (x(0.5) + x(1.5)) / 2 + miss / 0.04 * x(1) / 2;
  EXPECT_NEAR(j["gradient"]["M.k"].get<double>(), dk, 1e-7 * std::abs(dk));
  EXPECT_NEAR(j["gradient"]["M.x"].get<double>(), dx0, 1e-7 * std::abs(dx0));

  const auto integral = dir.write("int.json", R"({"terms": [{"variable": "M.x", "integral": [0.25, 1.75]},
      {"variable": "M.x", "mean": [0, 2], "weight": -3}]})").string();
  r = run(dir, {"simulate", doc, "--tspan", "0", "2", "--method", "Kvaerno3", "--rtol", "1e-8", "--loss-file", integral,
                "--gradient", out.string(), "--gradient-check"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto checked = read_json(out);
  expect_checks(checked, 1e-13, 1e-7);
  // A bad term is located in the loss file.
  const auto bad = dir.write("bad.json", R"({"terms": [{"variable": "M.x", "at": [5]}]})").string();
  r = run(dir, {"simulate", doc, "--tspan", "0", "2", "--loss-file", bad, "--gradient", out.string()});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("bad.json:/terms/0"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("invalid_loss"), std::string::npos) << r.err;
}

// --sensitivities: columns d(x)/d(k) and d(x)/d(x0) at every output time against the closed form.
TEST(CliGradient, SensitivityColumnsMatchTheClosedForm) {
  TempDir dir;
  const auto doc = dir.write("d.esm", decay()).string();
  const auto out = dir.path() / "s.csv";
  const CliResult r = run(dir, {"simulate", doc, "--tspan", "0", "2", "--saveat", "0.5", "--method", "Rodas5P",
                                "--rtol", "1e-11", "--atol", "1e-14", "--sensitivities", "M.k,M.x",
                                "--output", out.string(), "-q"});
  ASSERT_EQ(r.status, 0) << r.err;
  std::ifstream in(out);
  std::string header;
  std::getline(in, header);
  EXPECT_EQ(header, "t,M.x,d(M.x)/d(M.k),d(M.x)/d(M.x)");
  int rows = 0;
  for (std::string line; std::getline(in, line); ++rows) {
    double t = 0, x = 0, dk = 0, dx0 = 0;
    ASSERT_EQ(std::sscanf(line.c_str(), "%lf,%lf,%lf,%lf", &t, &x, &dk, &dx0), 4) << line;
    EXPECT_NEAR(t, 0.5 * rows, 1e-15);
    EXPECT_NEAR(x, 2 * std::exp(-0.5 * t), 1e-9);
    EXPECT_NEAR(dk, -t * 2 * std::exp(-0.5 * t), 1e-8);
    EXPECT_NEAR(dx0, std::exp(-0.5 * t), 1e-9);
  }
  EXPECT_EQ(rows, 5);
}

// Each refusal names its code and where, exits 1 and writes no file.
TEST(CliGradient, RefusalsAreLocatedAndWriteNothing) {
  TempDir dir;
  const auto doc = dir.write("d.esm", decay()).string();
  const auto out = dir.path() / "g.json";
  struct Case {
    std::vector<std::string> extra;
    std::string code;
  };
  const std::vector<Case> cases = {
      {{"--loss", "M.nothing"}, "unknown_gradient_variable"},
      {{"--loss", "M.x", "--wrt", "M.y"}, "adjoint_unsupported_parameter"},
      {{"--loss", "M.x", "--wrt", "M.zz"}, "unknown_gradient_variable"},
      {{"--loss", "M.x", "--method", "KenCarp4"}, "adjoint_unsupported_method"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"simulate", doc, "--tspan", "0", "1", "--gradient", out.string()};
    args.insert(args.end(), c.extra.begin(), c.extra.end());
    const CliResult r = run(dir, args);
    EXPECT_EQ(r.status, 1) << c.code << ": " << r.err;
    EXPECT_NE(r.err.find(c.code), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(out)) << c.code;
  }

  // An event a gradient cannot hold fixed: a crossing (its time moves with the parameters).
  const auto crossing = dir.write("c.esm", decay(R"(, "continuous_events": [{"name": "floor",
      "conditions": [{"op": "-", "args": ["x", 1]}], "affects": [{"lhs": "x", "rhs": 2}]}])")).string();
  const CliResult event = run(dir, {"simulate", crossing, "--tspan", "0", "1", "--loss", "M.x", "--gradient", out.string()});
  EXPECT_EQ(event.status, 1) << event.err;
  EXPECT_NE(event.err.find("adjoint_unsupported_event"), std::string::npos) << event.err;
  EXPECT_NE(event.err.find("floor"), std::string::npos) << event.err;
  EXPECT_FALSE(std::filesystem::exists(out));
  // Usage errors: the options go together, and not with --output.
  EXPECT_EQ(run(dir, {"simulate", doc, "--tspan", "0", "1", "--gradient", out.string()}).status, 2);
  EXPECT_EQ(run(dir, {"simulate", doc, "--tspan", "0", "1", "--loss", "M.x", "--output", "o.csv"}).status, 2);
  EXPECT_EQ(run(dir, {"simulate", doc, "--tspan", "0", "1", "--loss", "M.x", "--gradient", out.string(),
                      "--output", "o.csv"}).status, 2);
}

}  // namespace
