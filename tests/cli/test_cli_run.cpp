// `esi run`: a run configuration's schedule from the command line, its refusals before any
// output exists, and a run killed (SIGKILL) at a random moment that resumes from its last
// restart file and ends with the same records as the uninterrupted run (compared as text,
// numbers in shortest round-trip form, so bit for bit).
#include <algorithm>
#include <filesystem>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/run_esi.hpp"
#include "support/decay_diffusion.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using esi::testing::read_all;
using esi::testing::run_esi;
using nlohmann::json;

// Six cells: a pointwise decay (rate 1e-5 i) plus diffusion between neighbours.
const std::string kModel = esi::testing::decay_diffusion_model("0.00001");

json config(double stop, double dt, double every) {
  return {{"time", {{"stop", stop}}},
          {"operators", {{"transport", {{"select", {{"locality", {"stencil", "column"}}}}}},
                         {"chemistry", {{"select", {{"locality", "pointwise"}}}}}}},
          {"schedule", {{"lie", {{{"leaf", "transport"}, {"alg", "SSPRK43"}, {"control", {{"reltol", 1e-8}, {"abstol", 1e-10}}}},
                                 {{"leaf", "chemistry"}, {"alg", "Rodas3"}, {"control", {{"reltol", 1e-8}, {"abstol", 1e-10}}}}}}}},
          {"step", {{"dt", dt}}},
          {"partition", {{"lanes", 4}}},
          {"output", {{"every", every}}}};
}

struct Fixture {
  esi::testing::TempDir dir;
  fs::path model = dir.write("m.esm", kModel);
  fs::path err = dir.path() / "err.txt";
  fs::path write_config(const json& c, const std::string& name = "run.json") { return dir.write(name, c.dump(1)); }
};

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(CliRun, WritesTheRecordsEsiSimulateWritesForTheSameSplit) {
  Fixture f;
  const auto cfg = f.write_config(config(200, 20, 50));
  const auto out = f.dir.path() / "run.csv";
  auto r = run_esi(ESI_BINARY, {"run", f.model.string(), "--config", cfg.string(), "--output", out.string()}, f.err);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(fs::exists(out.string() + ".partial"));
  EXPECT_NE(r.err.find("chemistry: pointwise terms on lane pools"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("record 5 written"), std::string::npos) << r.err;  // one log line per record
  const auto sim = f.dir.path() / "sim.csv";
  r = run_esi(ESI_BINARY, {"simulate", f.model.string(), "--tspan", "0", "200", "--saveat", "50", "--method", "Rodas3",
                           "--rtol", "1e-8", "--atol", "1e-10", "--split-step", "20", "--lanes", "4", "--output",
                           sim.string(), "--quiet"},
              f.err);
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string a = read_all(out), b = read_all(sim);
  EXPECT_EQ(lines_of(a).size(), 6u);  // header + t = 0, 50, ..., 200
  EXPECT_EQ(a, b);
}

TEST(CliRun, AnExpressionForcingOfTheDefaultValueChangesNothing) {
  // M.K's default is 0.002: forcing it with the expression 0.001 * 2, refreshed every 30 s,
  // must give the same file as no forcing at all; 0.004 must not.
  Fixture f;
  auto csv_of = [&](const json& c, const std::string& name) {
    const auto cfg = f.write_config(c, name + ".json");
    const auto out = f.dir.path() / (name + ".csv");
    const auto r = run_esi(ESI_BINARY, {"run", f.model.string(), "-c", cfg.string(), "-o", out.string(), "--quiet"}, f.err);
    EXPECT_EQ(r.status, 0) << r.err;
    return read_all(out);
  };
  json c = config(100, 10, 50);
  const std::string plain = csv_of(c, "plain");
  c["forcing"] = {{"M.K", {{"expression", {{"op", "*"}, {"args", {0.001, 2}}}}, {"every", 30}}}};
  EXPECT_EQ(csv_of(c, "same"), plain);
  c["forcing"]["M.K"]["expression"] = 0.004;
  EXPECT_NE(csv_of(c, "other"), plain);
}

TEST(CliRun, BadConfigurationsFailBeforeTheRunAndLeaveNoOutput) {
  Fixture f;
  const auto out = f.dir.path() / "out.csv";
  auto expect_refused = [&](const json& c, const std::string& code, const std::string& pointer) {
    const auto cfg = f.write_config(c);
    const auto r = run_esi(ESI_BINARY, {"run", f.model.string(), "-c", cfg.string(), "-o", out.string()}, f.err);
    EXPECT_EQ(r.status, 1) << code << ": " << r.err;
    EXPECT_NE(r.err.find("error[" + code + "]"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(cfg.string() + ":" + pointer + ":"), std::string::npos) << "file and pointer: " << r.err;
    EXPECT_FALSE(fs::exists(out)) << code;
    EXPECT_FALSE(fs::exists(out.string() + ".partial")) << code;
  };
  json c = config(100, 10, 50);
  c["shedule"] = c["schedule"];
  expect_refused(c, "run_config_unknown_key", "/");
  c = config(100, 10, 50);
  c["operators"]["transport"]["select"]["locality"] = "global";
  expect_refused(c, "selector_matches_nothing", "/operators/transport/select");
  c = config(100, 10, 50);
  c["forcing"] = {{"M.K", {{"netcdf", "missing.nc"}, {"variable", "K"}}}};
  expect_refused(c, "forcing_file_missing", "/forcing/M.K");
  c = config(100, 10, 50);
  c["forcing"] = {{"M.Q", {{"constant", 1.0}}}};
  expect_refused(c, "forcing_target_unknown", "/forcing/M.Q");
  c = config(100, 10, 50);
  c["forcing"] = {{"M.K", {{"expression", {{"op", "*"}, {"args", {"q", 2}}}}}}};
  expect_refused(c, "forcing_expression_invalid", "/forcing/M.K/expression");
  // A NetCDF file (written with ncgen, from netcdf-bin) that lacks the variable, or holds it in
  // units of another dimension than the parameter's.
  if (std::system("command -v ncgen >/dev/null 2>&1") == 0) {
    const auto cdl = f.dir.write("k.cdl", R"(netcdf k {
dimensions: time = UNLIMITED ;
variables:
  double time(time) ; time:units = "seconds since 1970-01-01 00:00:00" ;
  double K(time) ; K:units = "m" ;
data: time = 0, 100 ; K = 0.002, 0.003 ;
})");
    ASSERT_EQ(std::system(("ncgen -4 -o " + (f.dir.path() / "k.nc").string() + " " + cdl.string()).c_str()), 0);
    f.model = f.dir.write("m.esm", esi::testing::decay_diffusion_model("0.00001")
                                       .replace(std::string(kModel).find("\"default\": 0.002}"), 17,
                                                "\"default\": 0.002, \"units\": \"1/s\"}"));
    c = config(100, 10, 50);
    c["forcing"] = {{"M.K", {{"netcdf", "k.nc"}, {"variable", "Kz"}}}};
    expect_refused(c, "forcing_variable_missing", "/forcing/M.K");
    c["forcing"]["M.K"]["variable"] = "K";
    expect_refused(c, "forcing_units_mismatch", "/forcing/M.K");
  }
  // Usage: no configuration.
  const auto r = run_esi(ESI_BINARY, {"run", f.model.string(), "-o", out.string()}, f.err);
  EXPECT_EQ(r.status, 2);
}

TEST(CliRun, AKilledRunResumesFromItsLastRestartFileBitForBit) {
  if (std::system("command -v timeout >/dev/null 2>&1") != 0) GTEST_SKIP() << "no timeout(1)";
  Fixture f;
  // 400,000 macro steps of 0.5 s: a few seconds, long enough to be killed in the middle.
  const auto cfg = f.write_config(config(200000, 0.5, 10000));
  const auto full = f.dir.path() / "full.csv";
  auto r = run_esi(ESI_BINARY, {"run", f.model.string(), "-c", cfg.string(), "-o", full.string(), "--quiet"}, f.err);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto reference = lines_of(read_all(full));
  ASSERT_EQ(reference.size(), 22u);

  std::random_device rd;
  const double delay = 0.4 + 2.0 * std::uniform_real_distribution<double>(0, 1)(rd);
  const auto killed = f.dir.path() / "killed.csv";
  const auto restarts = f.dir.path() / "restarts";
  r = run_esi("timeout", {"-s", "KILL", std::to_string(delay), ESI_BINARY, "run", f.model.string(), "-c", cfg.string(),
                          "-o", killed.string(), "--restart-every", "5000", "--restart-dir", restarts.string(), "--quiet"},
              f.err);
  if (r.status == 0) GTEST_SKIP() << "the run finished within " << delay << " s; nothing was killed";
  EXPECT_NE(r.status, 1) << r.err;
  EXPECT_FALSE(fs::exists(killed)) << "a killed run leaves no output under the final name";
  std::vector<fs::path> files;
  if (fs::exists(restarts))
    for (const auto& e : fs::directory_iterator(restarts))
      if (e.path().extension() == ".esr") files.push_back(e.path());
  if (files.empty()) GTEST_SKIP() << "killed after " << delay << " s, before the first restart point";
  std::sort(files.begin(), files.end());
  const auto resumed = f.dir.path() / "resumed.csv";
  r = run_esi(ESI_BINARY, {"run", f.model.string(), "-c", cfg.string(), "-o", resumed.string(), "--restart",
                           files.back().string(), "--quiet"},
              f.err);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto tail = lines_of(read_all(resumed));
  ASSERT_GE(tail.size(), 2u);
  EXPECT_EQ(tail.front(), reference.front());  // the header
  // The resumed records are the reference's last ones, bit for bit.
  ASSERT_LE(tail.size(), reference.size());
  const std::vector<std::string> expected(reference.end() - static_cast<std::ptrdiff_t>(tail.size() - 1), reference.end());
  EXPECT_EQ(std::vector<std::string>(tail.begin() + 1, tail.end()), expected)
      << "killed after " << delay << " s, resumed from " << files.back();
}

// --native without a compiler runs the interpreter and says so, as esi simulate does.
TEST(CliRun, NativeWithoutACompilerSaysItUsedTheInterpreter) {
  Fixture f;
  const auto cfg = f.write_config(config(10, 0.5, 5));
  const auto r = run_esi("env", {"CXX=/nonexistent/c++", ESI_BINARY, "run", f.model.string(), "-c", cfg.string(), "-o",
                                 (f.dir.path() / "n.csv").string(), "--native", "--quiet"},
                         f.err);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("esi run: warning: --native was requested, but the run used the interpreter"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("no working C++ compiler '/nonexistent/c++'"), std::string::npos) << r.err;
}

// A resumed run's summary counts its own macro steps from the restart point and says that the
// totals include the steps before it.
TEST(CliRun, AResumedRunCountsItsOwnStepsFromTheRestart) {
  Fixture f;
  const auto cfg = f.write_config(config(100, 0.5, 50));  // 200 macro steps, restart at 60 s
  const auto restarts = f.dir.path() / "restarts";
  auto r = run_esi(ESI_BINARY, {"run", f.model.string(), "-c", cfg.string(), "-o", (f.dir.path() / "a.csv").string(),
                                "--restart-every", "60", "--restart-dir", restarts.string(), "--quiet"},
                   f.err);
  ASSERT_EQ(r.status, 0) << r.err;
  const fs::path at60 = restarts / "restart-000000000000060.esr";
  ASSERT_TRUE(fs::exists(at60));
  r = run_esi(ESI_BINARY, {"run", f.model.string(), "-c", cfg.string(), "-o", (f.dir.path() / "b.csv").string(),
                           "--restart", at60.string()},
              f.err);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("80 macro steps from the restart at t = 60 s (200 since t0)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("count from t0, the restarted run's included"), std::string::npos) << r.err;
}

}  // namespace

namespace {

/// A python3 with netCDF4 and xarray (Debian's live in /usr/bin/python3), or "".
std::string python_with_netcdf() {
  for (const char* py : {"/usr/bin/python3", "python3"})
    if (std::system((std::string(py) + " -c 'import netCDF4, xarray' >/dev/null 2>&1").c_str()) == 0) return py;
  return "";
}

TEST(CliRun, TheBundledPlumeExampleRunsOnNetcdfWindsAndWritesCfNetcdf) {
  const std::string py = python_with_netcdf();
  if (py.empty()) GTEST_SKIP() << "no python3 with netCDF4 and xarray";
  esi::testing::TempDir dir;
  const fs::path src = fs::path(ESI_SOURCE_DIR) / "examples/plume";
  for (const char* f : {"plume_3d.esm", "plume_3d.run.json", "make_winds.py"}) fs::copy_file(src / f, dir.path() / f);
  const fs::path err = dir.path() / "err.txt";
  auto r = run_esi(py, {(dir.path() / "make_winds.py").string(), (dir.path() / "plume_winds.nc").string()}, err);
  ASSERT_EQ(r.status, 0) << r.err;
  const fs::path out = dir.path() / "out.nc";
  r = run_esi(ESI_BINARY, {"run", "--config", (dir.path() / "plume_3d.run.json").string(), "-o", out.string()}, err);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("25 records"), std::string::npos) << r.err;
  // Read as a user would: xarray decodes the CF time axis; dims, coordinates and units as the
  // document declares them; the plume is where the source is.
  const fs::path check = dir.write("check.py", R"(
import sys, numpy as np, xarray as xr
ds = xr.open_dataset(sys.argv[1])
assert dict(ds["Plume_NO"].sizes) == {"time": 25, "z": 6, "y": 16, "x": 24}, dict(ds["Plume_NO"].sizes)
assert str(ds["time"].values[0])[:19] == "1970-01-01T06:00:00", ds["time"].values[0]
assert str(ds["time"].values[-1])[:19] == "1970-01-01T18:00:00", ds["time"].values[-1]
assert ds["Plume_O3"].attrs["units"] == "ppb"
assert ds["x"].attrs["units"] == "m" and abs(float(ds["x"][0]) - 2000.0) < 1e-9
no = ds["Plume_NO"].isel(time=12, z=0).values
j, i = np.unravel_index(np.argmax(no), no.shape)
assert (i, j) == (3, 7), (i, j)   # cell (4, 8, 1), 1-based: the source
assert ds.attrs["esi_return_code"] == "Success"
print("ok")
)");
  r = run_esi(py, {check.string(), out.string()}, err);
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "ok\n");
  r = run_esi("ncdump", {"-h", out.string()}, err);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("Plume_O3:units = \"ppb\""), std::string::npos);
}

}  // namespace
