// The CF NetCDF-4 writer: a real run of a small gridded document written and read back with
// NetCDF-C, every value compared with == against the trajectory; the layout (dims, names,
// units, time axis, coordinates, provenance); the temporary-name contract (no OUT.nc before
// close, the previous OUT.nc untouched, nothing left by a SIGKILLed writer, a valid file after
// an interrupted run); and the errors.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "esi/core/error.hpp"
#include "esi/esm/flatten.hpp"
#include "esi/esm/load.hpp"
#include "esi/exec/simulate.hpp"
#include "esi/io/netcdf_output.hpp"
#include "io/io_support.hpp"
#include "support/run_esi.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using esi::io::NetcdfOutput;
using namespace esi::testing;

struct GridRun {
  TempDir dir;
  esi::esm::ResolvedDocument doc;
  esi::esm::System sys;
  esi::exec::Trajectory traj;
  GridRun() {
    doc = esi::esm::load_resolved(dir.write("grid.esm", gridded_document()));
    esi::esm::FlattenOptions fo;
    fo.inputs = {{"yc", {1.0, 2.5}}, {"kx", {1.0, 2.0, 3.0}}};
    sys = esi::esm::flatten(doc, fo);
    esi::exec::SimulateOptions o;
    o.t0 = 0;
    o.t1 = 100;
    o.saveat = 25;
    o.integrator.method = esi::method::MethodId::Tsit5;
    o.document = &doc;
    traj = esi::exec::simulate(sys, o);
  }
  esi::io::NetcdfOutputOptions options() const {
    esi::io::NetcdfOutputOptions o;
    o.document = &doc.doc;
    o.provenance = {{"esi_model_file", "grid.esm"}, {"esi_method", "Tsit5"}, {"esi_rtol", "1e-06"}};
    return o;
  }
  void write(const fs::path& path) const {
    NetcdfOutput out(path.string(), sys, options());
    out.define(traj.names);
    for (std::size_t k = 0; k < traj.times.size(); ++k)
      out.write(traj.times[k], std::span<const double>(&traj.values[k * traj.names.size()], traj.names.size()));
    out.close();
  }
};

TEST(NetcdfOutput, EveryValueOfAGriddedRunReadsBackEqualWithDimsUnitsAndTimes) {
  GridRun run;
  ASSERT_TRUE(run.traj.ok()) << run.traj.message;
  ASSERT_EQ(run.traj.times.size(), 5u);
  const fs::path path = run.dir.path() / "out.nc";
  run.write(path);
  ASSERT_TRUE(fs::exists(path));
  EXPECT_FALSE(fs::exists(path.string() + ".partial"));

  int nc = -1;
  ASSERT_EQ(nc_open(path.c_str(), NC_NOWRITE, &nc), NC_NOERR);
  int format = 0;
  nc_inq_format(nc, &format);
  EXPECT_EQ(format, NC_FORMAT_NETCDF4);
  EXPECT_EQ(nc_dimlen(nc, "time"), 5);
  EXPECT_EQ(nc_dimlen(nc, "x"), 3);
  EXPECT_EQ(nc_dimlen(nc, "y"), 2);
  int unlimited = -1;
  nc_inq_unlimdim(nc, &unlimited);
  int time_dim = -1;
  nc_inq_dimid(nc, "time", &time_dim);
  EXPECT_EQ(unlimited, time_dim);

  // The time axis: CF attributes and the output times exactly.
  const int t = nc_var(nc, "time");
  EXPECT_EQ(nc_text(nc, t, "units"), "seconds since 1970-01-01 00:00:00");
  EXPECT_EQ(nc_text(nc, t, "calendar"), "proleptic_gregorian");
  EXPECT_EQ(nc_text(nc, t, "standard_name"), "time");
  EXPECT_EQ(nc_text(nc, t, "axis"), "T");
  EXPECT_EQ(nc_all(nc, t, 5), run.traj.times);

  // One variable per array, dims (time, y, x): cell M.u[i,j] at [k][j-1][i-1].
  for (const char* array : {"M.u", "M.w"}) {
    const std::string name = esi::io::netcdf_name(array);
    const int v = nc_var(nc, name.c_str());
    EXPECT_EQ(nc_dims(nc, v), (std::vector<std::string>{"time", "y", "x"})) << array;
    EXPECT_EQ(nc_text(nc, v, "units"), "mol/m^3");
    EXPECT_EQ(nc_text(nc, v, "esm_name"), array);
    const std::vector<double> values = nc_all(nc, v, 5 * 2 * 3);
    std::size_t compared = 0;
    for (std::size_t k = 0; k < 5; ++k)
      for (int j = 1; j <= 2; ++j)
        for (int i = 1; i <= 3; ++i) {
          const int column = run.traj.column(esi::esm::cell_name(array, {i, j}));
          ASSERT_GE(column, 0) << array << "[" << i << "," << j << "]";
          const double expected = run.traj.at(k, static_cast<std::size_t>(column));
          ASSERT_EQ(values[(k * 2 + static_cast<std::size_t>(j - 1)) * 3 + static_cast<std::size_t>(i - 1)], expected)
              << array << "[" << i << "," << j << "] at record " << k;
          ++compared;
        }
    EXPECT_EQ(compared, 30u);
  }
  // The run moved, differently along each axis (so a transposed layout could not pass): u
  // decays faster where yc (y) and kx (x) are larger.
  const int u = nc_var(nc, "M_u");
  const std::vector<double> uv = nc_all(nc, u, 30);
  EXPECT_EQ(uv[0], 1.0);
  EXPECT_LT(uv[4 * 6 + 3], uv[4 * 6 + 0]);  // [y=2][x=1] < [y=1][x=1]
  EXPECT_LT(uv[4 * 6 + 1], uv[4 * 6 + 0]);  // [y=1][x=2] < [y=1][x=1]
  EXPECT_NE(uv[4 * 6 + 3], uv[4 * 6 + 1]);
  EXPECT_EQ(nc_text(nc, u, "long_name"), "tracer concentration");
  EXPECT_EQ(nc_text(nc, u, "esm_kind"), "state");
  EXPECT_EQ(nc_text(nc, nc_var(nc, "M_w"), "esm_kind"), "observed");

  // A scalar state: dims (time), its values and units.
  const int s = nc_var(nc, "M_s");
  EXPECT_EQ(nc_dims(nc, s), (std::vector<std::string>{"time"}));
  EXPECT_EQ(nc_text(nc, s, "units"), "K");
  const std::vector<double> sv = nc_all(nc, s, 5);
  for (std::size_t k = 0; k < 5; ++k) EXPECT_EQ(sv[k], run.traj.at(k, static_cast<std::size_t>(run.traj.column("M.s"))));

  // Coordinates: x from the registry's inline values, y from the parameter yc.
  const int x = nc_var(nc, "x");
  EXPECT_EQ(nc_all(nc, x, 3), (std::vector<double>{10.0, 20.0, 30.0}));
  EXPECT_EQ(nc_text(nc, x, "units"), "km");
  EXPECT_EQ(nc_text(nc, x, "axis"), "X");
  EXPECT_EQ(nc_text(nc, x, "standard_name"), "projection_x_coordinate");
  EXPECT_EQ(nc_text(nc, x, "esm_coordinate"), "grid_x");
  const int y = nc_var(nc, "y");
  EXPECT_EQ(nc_all(nc, y, 2), (std::vector<double>{1.0, 2.5}));
  EXPECT_EQ(nc_text(nc, y, "axis"), "Y");

  // Global attributes: CF conventions, our version, the caller's provenance.
  EXPECT_EQ(nc_text(nc, NC_GLOBAL, "Conventions"), "CF-1.8");
  EXPECT_NE(nc_text(nc, NC_GLOBAL, "source").find("esi"), std::string::npos);
  EXPECT_EQ(nc_text(nc, NC_GLOBAL, "esi_model_file"), "grid.esm");
  EXPECT_EQ(nc_text(nc, NC_GLOBAL, "esi_rtol"), "1e-06");

  // Compressed and chunked one record by the whole slab.
  int shuffle = 0, deflate = 0, level = 0, storage = 0;
  std::size_t chunks[3] = {};
  nc_inq_var_deflate(nc, u, &shuffle, &deflate, &level);
  nc_inq_var_chunking(nc, u, &storage, chunks);
  EXPECT_EQ(shuffle, 1);
  EXPECT_EQ(deflate, 1);
  EXPECT_EQ(level, 1);
  EXPECT_EQ(storage, NC_CHUNKED);
  EXPECT_EQ(chunks[0], 1u);
  EXPECT_EQ(chunks[1], 2u);
  EXPECT_EQ(chunks[2], 3u);
  nc_close(nc);
}

TEST(NetcdfOutput, IndexSetsWithoutCoordinatesGetOneBasedIndicesAndMissingCellsAreNaN) {
  GridRun run;
  esi::io::NetcdfOutputOptions o;  // no document: no registry
  const fs::path path = run.dir.path() / "bare.nc";
  // Only two of u's six cells as columns: the others are written as NaN (with _FillValue NaN).
  const std::vector<std::string> columns = {"M.u[2,1]", "M.u[3,2]"};
  {
    NetcdfOutput out(path.string(), run.sys, o);
    out.define(columns);
    const double row[2] = {0.5, 0.25};
    out.write(7.0, row);
    out.close();
  }
  int nc = -1;
  ASSERT_EQ(nc_open(path.c_str(), NC_NOWRITE, &nc), NC_NOERR);
  const int x = nc_var(nc, "x");
  long long idx[3] = {};
  ASSERT_EQ(nc_get_var_longlong(nc, x, idx), NC_NOERR);
  EXPECT_EQ(idx[0], 1);
  EXPECT_EQ(idx[2], 3);
  EXPECT_EQ(nc_text(nc, x, "long_name"), "x index (1-based)");
  const std::vector<double> u = nc_all(nc, nc_var(nc, "M_u"), 6);
  EXPECT_EQ(u[0 * 3 + 1], 0.5);   // [y=1][x=2]
  EXPECT_EQ(u[1 * 3 + 2], 0.25);  // [y=2][x=3]
  EXPECT_TRUE(std::isnan(u[0]));
  EXPECT_TRUE(std::isnan(u[1 * 3 + 0]));
  nc_close(nc);
}

TEST(NetcdfOutput, NamesAreCfFriendly) {
  EXPECT_EQ(esi::io::netcdf_name("SuperFast.O3"), "SuperFast_O3");
  EXPECT_EQ(esi::io::netcdf_name("A.B.c-d"), "A_B_c_d");
  EXPECT_EQ(esi::io::netcdf_name("1x"), "v_1x");
  EXPECT_EQ(esi::io::netcdf_name("_x"), "v__x");
  // UTF-8 names read as their letters, not as a row of underscores.
  EXPECT_EQ(esi::io::netcdf_name("Scav.\u039b_gas"), "Scav_Lambda_gas");
  EXPECT_EQ(esi::io::netcdf_name("M.\u03b1\u2082"), "M_alpha2");
  EXPECT_EQ(esi::io::netcdf_name("M.x\u00b0"), "M_x_u00b0");
  EXPECT_EQ(esi::io::netcdf_name("M.\xff"), "M__");  // a byte that is not UTF-8
}

// CF's long_name is a title: a paragraph of description goes to `description`.
TEST(NetcdfOutput, LongNamesAreTitlesAndTheDescriptionStaysWhole) {
  EXPECT_EQ(esi::io::netcdf_long_name("tracer concentration", "M.u"), "tracer concentration");
  EXPECT_EQ(esi::io::netcdf_long_name("", "M.u"), "M.u");
  EXPECT_EQ(esi::io::netcdf_long_name("Gas-phase scavenging rate. Computed from the rain rate\nand the\n"
                                      "Henry constant, see Seinfeld and Pandis (2016).", "M.k"),
            "Gas-phase scavenging rate");
  const std::string one_long_sentence(30, 'a');
  const std::string text = one_long_sentence + " " + one_long_sentence + " " + one_long_sentence + " end";
  const std::string title = esi::io::netcdf_long_name(text, "M.k");
  EXPECT_LE(title.size(), 80u);
  EXPECT_EQ(title, one_long_sentence + " " + one_long_sentence + "...");
}

TEST(NetcdfOutput, TheTargetAppearsOnlyAtCloseAndThePreviousFileStaysUntilThen) {
  GridRun run;
  const fs::path path = run.dir.path() / "out.nc";
  std::ofstream(path) << "previous run";
  {
    NetcdfOutput out(path.string(), run.sys, run.options());
    out.define(run.traj.names);
    const std::size_t n = run.traj.names.size();
    for (std::size_t k = 0; k < 3; ++k) {
      out.write(run.traj.times[k], std::span<const double>(&run.traj.values[k * n], n));
      EXPECT_TRUE(fs::exists(out.partial_path()));
      EXPECT_EQ(read_all(path), "previous run") << "the target changed before close()";
    }
    EXPECT_EQ(out.records(), 3u);
    out.close();
    EXPECT_FALSE(fs::exists(out.partial_path()));
  }
  int nc = -1;
  ASSERT_EQ(nc_open(path.c_str(), NC_NOWRITE, &nc), NC_NOERR);
  EXPECT_EQ(nc_dimlen(nc, "time"), 3);
  nc_close(nc);

  // A writer abandoned without close() (an exception unwinding) leaves the target as it was.
  {
    NetcdfOutput out(path.string(), run.sys, run.options());
    out.define(run.traj.names);
    out.write(run.traj.times[0], std::span<const double>(run.traj.values.data(), run.traj.names.size()));
  }
  EXPECT_FALSE(fs::exists(path.string() + ".partial"));
  ASSERT_EQ(nc_open(path.c_str(), NC_NOWRITE, &nc), NC_NOERR);
  EXPECT_EQ(nc_dimlen(nc, "time"), 3);
  nc_close(nc);
}

TEST(NetcdfOutput, AWriterKilledWithSigkillLeavesNoTargetFile) {
  GridRun run;
  const fs::path path = run.dir.path() / "killed.nc";
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // the run: writes records, then dies without any chance to clean up
    NetcdfOutput out(path.string(), run.sys, run.options());
    out.define(run.traj.names);
    const std::size_t n = run.traj.names.size();
    for (std::size_t k = 0; k < run.traj.times.size(); ++k)
      out.write(run.traj.times[k], std::span<const double>(&run.traj.values[k * n], n));
    ::kill(::getpid(), SIGKILL);
    ::_exit(0);  // not reached
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  EXPECT_FALSE(fs::exists(path)) << "a killed run must not leave " << path;
  EXPECT_TRUE(fs::exists(path.string() + ".partial"));  // the stale partial file, overwritten next time
  // The next run overwrites the stale partial file and finishes normally.
  run.write(path);
  EXPECT_TRUE(fs::exists(path));
  EXPECT_FALSE(fs::exists(path.string() + ".partial"));
}

TEST(NetcdfOutput, AnInterruptedRunClosesToAValidFileWithTheRecordsReached) {
  GridRun run;
  const fs::path path = run.dir.path() / "interrupted.nc";
  NetcdfOutput out(path.string(), run.sys, run.options());
  std::atomic<bool> stop{false};
  esi::exec::SimulateOptions o;
  o.t0 = 0;
  o.t1 = 100;
  o.saveat = 1;
  o.integrator.method = esi::method::MethodId::Tsit5;
  o.document = &run.doc;
  o.stop = &stop;
  std::vector<double> times;
  o.on_columns = [&](const std::vector<std::string>& names) { out.define(names); };
  o.on_row = [&](double t, std::span<const double> row) {
    out.write(t, row);
    times.push_back(t);
    if (times.size() == 3) stop.store(true);  // what the SIGINT handler does
  };
  const auto traj = esi::exec::simulate(run.sys, o);
  EXPECT_EQ(traj.code, esi::method::ReturnCode::Interrupted);
  out.close();  // the caller's interrupt path
  int nc = -1;
  ASSERT_EQ(nc_open(path.c_str(), NC_NOWRITE, &nc), NC_NOERR);
  EXPECT_EQ(static_cast<std::size_t>(nc_dimlen(nc, "time")), traj.rows);
  EXPECT_EQ(nc_all(nc, nc_var(nc, "time"), times.size()), times);
  EXPECT_LT(times.back(), 100.0);
  nc_close(nc);
}

TEST(NetcdfOutput, AnUnwritablePathIsOutputNotWritableNamingThePath) {
  GridRun run;
  const std::string path = (run.dir.path() / "no_such_dir" / "out.nc").string();
  try {
    NetcdfOutput out(path, run.sys, run.options());
    FAIL() << "expected output_not_writable";
  } catch (const esi::Error& e) {
    EXPECT_EQ(e.code(), "output_not_writable");
    EXPECT_EQ(e.diagnostic().file, path);
    EXPECT_NE(e.diagnostic().message.find(".partial"), std::string::npos) << e.diagnostic().message;
  }
}

}  // namespace

namespace {

TEST(NetcdfOutput, CategoricalMembersAndAuxiliaryCoordinatesFromTheRegistry) {
  // species is categorical (string members); lat2d over [x, species] is an auxiliary coordinate
  // (two axes), named in the `coordinates` attribute of every variable over both axes.
  const std::string text = R"({"esm": "1.0.0", "metadata": {"name": "Aux"},
    "index_sets": {"x": {"kind": "interval", "size": 2},
                   "species": {"kind": "categorical", "members": ["O3", "NO2", "CO"]}},
    "coordinates": {"lat2d": {"source": "lat2d", "standard_name": "latitude", "units": "degrees_north"}},
    "models": {"M": {
      "variables": {
        "c": {"type": "unknown", "shape": ["x", "species"], "units": "ppb", "default": 1.0},
        "lat2d": {"type": "parameter", "shape": ["x", "species"], "units": "deg", "default": 0.0}},
      "equations": [{"lhs": {"op": "D", "args": ["c"], "wrt": "t"},
                     "rhs": {"op": "*", "args": [-0.001, "c", "lat2d"]}}]}}})";
  esi::testing::TempDir dir;
  const auto doc = esi::esm::load_resolved(dir.write("aux.esm", text));
  esi::esm::FlattenOptions fo;
  fo.inputs = {{"lat2d", {{40.0, 41.0, 42.0}, {50.0, 51.0, 52.0}}}};  // [x][species]
  const auto sys = esi::esm::flatten(doc, fo);
  std::vector<std::string> names;
  for (const auto& s : sys.states) names.push_back(s.name);
  esi::io::NetcdfOutputOptions o;
  o.document = &doc.doc;
  const fs::path path = dir.path() / "aux.nc";
  {
    NetcdfOutput out(path.string(), sys, o);
    out.define(names);
    std::vector<double> row(names.size(), 2.0);
    out.write(0.0, row);
    out.close();
  }
  int nc = -1;
  ASSERT_EQ(nc_open(path.c_str(), NC_NOWRITE, &nc), NC_NOERR);
  const int species = nc_var(nc, "species");
  char* members[3] = {};
  ASSERT_EQ(nc_get_var_string(nc, species, members), NC_NOERR);
  EXPECT_STREQ(members[0], "O3");
  EXPECT_STREQ(members[2], "CO");
  nc_free_string(3, members);
  const int lat = nc_var(nc, "lat2d");
  EXPECT_EQ(nc_dims(nc, lat), (std::vector<std::string>{"species", "x"}));
  // Cell (x, species) at [species-1][x-1]: lat2d[x=2][species=1] = 50.
  EXPECT_EQ(nc_all(nc, lat, 6), (std::vector<double>{40.0, 50.0, 41.0, 51.0, 42.0, 52.0}));
  EXPECT_EQ(nc_text(nc, lat, "standard_name"), "latitude");
  EXPECT_EQ(nc_text(nc, lat, "axis"), "<absent>");
  EXPECT_EQ(nc_text(nc, nc_var(nc, "M_c"), "coordinates"), "lat2d");
  nc_close(nc);
}

}  // namespace
