// The native backend equals the tape bit for bit (f64 and f32, several lane widths, both
// targets) on every operator, on SuperFast, GEOS-Chem fullchem, POLLU and twenty more corpus
// documents; the tape in turn equals the oracle (test_corpus_kernel.cpp), so native does too.
// Without a compiler the program falls back to the tape and says why. Compiled objects are
// cached across runs in $ESI_CACHE_DIR or <tmp>/esi-test-native-cache.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <limits>

#include "esi/core/error.hpp"
#include "esi/esm/flatten.hpp"
#include "esi/kernel/jacobian.hpp"
#include "esi/kernel/native.hpp"
#include "kernel/kernel_cases.hpp"

namespace fs = std::filesystem;
using namespace esi::kernel;

namespace {

NativeOptions test_options() {
  NativeOptions o;
  const char* env = std::getenv("ESI_CACHE_DIR");
  o.cache_dir = (env && *env) ? fs::path(env) : fs::temp_directory_path() / "esi-test-native-cache";
  return o;
}

/// Same bits, NaN payloads aside (two NaNs count as equal).
template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i] || (a[i] != a[i] && b[i] != b[i])) ||
        std::signbit(a[i]) != std::signbit(b[i]))
      return false;
  return true;
}

/// Runs tape and native over `lanes` perturbed instances at width `width`; "" or a failure.
template <class T>
std::string compare_whole(const Program& tape, const Program& native, const esi::esm::System& s,
                          std::size_t lanes, std::size_t width, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<T> u(s.states.size() * lanes);
  std::vector<double> t;
  for (std::size_t l = 0; l < lanes; ++l) {
    const auto x = esi::testing::perturbed(s.states, rng);
    for (std::size_t i = 0; i < x.size(); ++i) u[i * lanes + l] = static_cast<T>(x[i]);
    t.push_back(1800.0 * static_cast<double>(l + 1));
  }
  const auto p = esi::testing::defaults(s.parameters);
  const DType dt = std::is_same_v<T, double> ? DType::F64 : DType::F32;
  Workspace wt = tape.make_workspace(width, dt), wn = native.make_workspace(width, dt);
  tape.prepare(wt, p);
  native.prepare(wn, p);
  const auto a = esi::testing::run_whole(tape, wt, u, lanes, t);
  const auto b = esi::testing::run_whole(native, wn, u, lanes, t);
  if (same_bits(a, b)) return "";
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!same_bits(std::vector<T>{a[i]}, std::vector<T>{b[i]}))
      return "output " + std::to_string(i / lanes) + " lane " + std::to_string(i % lanes) +
             ": tape " + std::to_string(a[i]) + " native " + std::to_string(b[i]);
  return "?";
}

std::string compare_all(const Program& tape, const esi::esm::System& s) {
  const Program native = with_native(tape, test_options());
  if (!native.is_native()) return "not native: " + native.native_status();
  for (std::size_t width : {1, 4, 32}) {
    if (auto f = compare_whole<double>(tape, native, s, 13, width, 7 + width); !f.empty())
      return "f64 L=" + std::to_string(width) + ": " + f;
    if (auto f = compare_whole<float>(tape, native, s, 13, width, 9 + width); !f.empty())
      return "f32 L=" + std::to_string(width) + ": " + f;
  }
  return "";
}

}  // namespace

TEST(Native, EveryOperatorEqualsTheTapeBitwise) {
  const auto s = esi::testing::system_from(esi::testing::all_ops_model());
  const Program tape = compile(s);
  EXPECT_EQ(compare_all(tape, s), "");
  const Program native = with_native(tape, test_options());
  ASSERT_TRUE(native.is_native()) << native.native_status();
  EXPECT_NE(native.native_status().find("native "), std::string::npos);
}

TEST(Native, SecondRequestLoadsTheCachedObject) {
  const auto s = esi::testing::system_from(esi::testing::all_ops_model());
  const Program a = with_native(compile(s), test_options());
  ASSERT_TRUE(a.is_native()) << a.native_status();
  const std::string path = a.native_status().substr(7);
  ASSERT_TRUE(fs::exists(path));
  const auto stamp = fs::last_write_time(path);
  const Program b = with_native(compile(s), test_options());
  EXPECT_EQ(b.native_status(), a.native_status());
  EXPECT_EQ(fs::last_write_time(path), stamp);  // not recompiled
}

TEST(Native, MissingCompilerFallsBackToTheTapeAndSaysWhy) {
  const auto s = esi::testing::system_from(esi::testing::all_ops_model());
  const Program tape = compile(s);
  NativeOptions o = test_options();
  o.compiler = "/nonexistent/c++";
  const Program p = with_native(tape, o);
  EXPECT_FALSE(p.is_native());
  EXPECT_NE(p.native_status().find("no working C++ compiler '/nonexistent/c++'"), std::string::npos)
      << p.native_status();
  // Still runs: the tape behind it.
  EXPECT_EQ(compare_whole<double>(tape, p, s, 5, 4, 1), "");
}

TEST(Native, CompilerFailureFallsBackAndNamesTheLog) {
  const auto s = esi::testing::system_from(esi::testing::all_ops_model());
  NativeOptions o = test_options();
  o.flags = "-O2 --no-such-flag-for-esi";
  const Program p = with_native(compile(s), o);
  EXPECT_FALSE(p.is_native());
  EXPECT_NE(p.native_status().find("the compiler failed"), std::string::npos) << p.native_status();
}

TEST(Native, MakeNativeCompilesEachDistinctSourceOnce) {
  const auto s = esi::testing::system_from(esi::testing::all_ops_model());
  const Program tape = compile(s);
  const Program jacobian_tape = compile_jacobian(s).values;
  // A fresh cache folder: every object is compiled here, two compiler runs at a time.
  NativeOptions o = test_options();
  o.cache_dir = (fs::path(o.cache_dir) / ("make-native-" + std::to_string(::getpid()))).string();
  fs::remove_all(o.cache_dir);
  std::vector<Program> programs{tape, jacobian_tape, tape};
  std::vector<Program*> pointers{&programs[0], &programs[1], &programs[2]};
  make_native(pointers, resolve_native_toolchain(o), 2);
  std::size_t objects = 0;
  for (const auto& e : fs::directory_iterator(o.cache_dir))
    objects += e.path().extension() == ".so";
  EXPECT_EQ(objects, 2u);  // the two copies of the RHS share one object
  for (const Program& p : programs) ASSERT_TRUE(p.is_native()) << p.native_status();
  EXPECT_EQ(programs[0].native_status(), programs[2].native_status());
  EXPECT_NE(programs[0].native_status(), programs[1].native_status());
  EXPECT_EQ(compare_whole<double>(tape, programs[0], s, 13, 4, 3), "");
  EXPECT_EQ(compare_whole<double>(jacobian_tape, programs[1], s, 13, 4, 5), "");
  fs::remove_all(o.cache_dir);

  // Without a compiler every program stays a tape and says why.
  o.compiler = "/nonexistent/c++";
  std::vector<Program> kept{tape};
  std::vector<Program*> kept_pointers{&kept[0]};
  make_native(kept_pointers, resolve_native_toolchain(o));
  EXPECT_FALSE(kept[0].is_native());
  EXPECT_NE(kept[0].native_status().find("no working C++ compiler"), std::string::npos)
      << kept[0].native_status();
}

/// A shared object whose constructor, should anything load it, creates `marker`.
fs::path planted_object(const fs::path& dir, const fs::path& marker) {
  const fs::path src = dir / "planted.cpp", so = dir / "planted.so";
  FILE* f = std::fopen(src.c_str(), "w");
  std::fprintf(f, "#include <cstdio>\n__attribute__((constructor)) static void planted() {\n"
                  "  if (FILE* m = std::fopen(\"%s\", \"w\")) std::fclose(m);\n}\n",
               marker.c_str());
  std::fclose(f);
  const std::string cmd = "c++ -shared -fPIC -o '" + so.string() + "' '" + src.string() + "' 2>/dev/null";
  return std::system(cmd.c_str()) == 0 ? so : fs::path();
}

unsigned mode_of(const fs::path& p) {
  return static_cast<unsigned>(fs::status(p).permissions() & fs::perms::mask);
}

// The cache is the modeller's own: created 0700, every object checked against the SHA-256
// recorded when esi compiled it. An object planted under an object's name, or one cut short,
// is compiled again and never loaded; a folder others can write to is not used at all.
TEST(Native, ObjectsEsiDidNotCompileAreNeverLoaded) {
  const auto s = esi::testing::system_from(esi::testing::all_ops_model());
  const Program tape = compile(s);
  NativeOptions o = test_options();
  const fs::path dir = fs::path(o.cache_dir) / ("trust-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  o.cache_dir = (dir / "cache").string();
  const fs::path marker = dir / "planted-code-ran";
  const fs::path evil = planted_object(dir, marker);
  if (evil.empty()) GTEST_SKIP() << "no C++ compiler to build the planted object";

  // (Each program is dropped before its object is touched: writing over a loaded object would
  // change this process's own code.)
  std::string status;
  {
    const Program first = with_native(tape, o);
    ASSERT_TRUE(first.is_native()) << first.native_status();
    status = first.native_status();
  }
  EXPECT_EQ(mode_of(o.cache_dir), 0700u);
  const fs::path object = status.substr(7);
  ASSERT_TRUE(fs::exists(object.string() + ".sha256"));
  EXPECT_EQ(mode_of(object) & 022u, 0u);

  // Planted under the object's name; then the object cut to half its size.
  for (int kind = 0; kind < 2; ++kind) {
    SCOPED_TRACE(kind == 0 ? "planted" : "truncated");
    if (kind == 0) fs::copy_file(evil, object, fs::copy_options::overwrite_existing);
    else fs::resize_file(object, fs::file_size(object) / 2);
    const Program again = with_native(tape, o);
    ASSERT_TRUE(again.is_native()) << again.native_status();
    EXPECT_EQ(again.native_status(), status);
    EXPECT_FALSE(fs::exists(marker));
    EXPECT_EQ(compare_whole<double>(tape, again, s, 5, 4, 7), "");
  }

  // A folder group members can write to: not used, even with a digest beside the object.
  fs::permissions(o.cache_dir, fs::perms::owner_all | fs::perms::group_all);
  fs::copy_file(evil, object, fs::copy_options::overwrite_existing);
  const std::string digest_cmd = "sha256sum '" + object.string() + "' | cut -d' ' -f1 > '" + object.string() + ".sha256'";
  ASSERT_EQ(std::system(digest_cmd.c_str()), 0);
  const NativeToolchain tc = resolve_native_toolchain(o);
  EXPECT_NE(tc.warning.find("others can write to it (mode 770)"), std::string::npos) << tc.warning;
  EXPECT_NE(tc.cache_dir, o.cache_dir);
  const Program elsewhere = with_native(tape, tc);
  ASSERT_TRUE(elsewhere.is_native()) << elsewhere.native_status();
  EXPECT_NE(elsewhere.native_status().find("; warning: the native-code cache folder"), std::string::npos)
      << elsewhere.native_status();
  EXPECT_FALSE(fs::exists(marker));
  EXPECT_EQ(compare_whole<double>(tape, elsewhere, s, 5, 4, 9), "");
  fs::remove_all(dir);
}

TEST(Native, LanesTargetGathersTheSameCells) {
  const auto s = esi::testing::system_from(esi::testing::all_ops_model());
  CompileOptions co;
  co.target = Target::Lanes;
  const Program tape = compile(s, co);
  const Program native = with_native(tape, test_options());
  ASSERT_TRUE(native.is_native()) << native.native_status();
  const std::size_t columns = 40;
  std::mt19937_64 rng(3);
  std::vector<double> u(s.states.size() * columns);
  for (std::size_t c = 0; c < columns; ++c) {
    const auto x = esi::testing::perturbed(s.states, rng);
    for (std::size_t i = 0; i < x.size(); ++i) u[i * columns + c] = x[i];
  }
  const std::vector<std::int32_t> cells{39, 2, 17, 17, 5, 0, 21, 33, 8};
  const auto p = esi::testing::defaults(s.parameters);
  const std::vector<double> t{7200.0};
  auto eval = [&](const Program& prog) {
    Workspace ws = prog.make_workspace(4);
    prog.prepare(ws, p);
    std::vector<double> du(prog.output_count() * cells.size());
    RunArgs<double> a;
    a.u = {u.data(), s.states.size(), columns, columns};
    a.cells = cells;
    a.t = t;
    a.du = {du.data(), prog.output_count(), cells.size(), cells.size()};
    run(prog, ws, a);
    return du;
  };
  EXPECT_TRUE(same_bits(eval(tape), eval(native)));
}

TEST(Native, JacobianProgramsGoNativeToo) {
  const auto s = esi::testing::system_from(esi::testing::all_ops_model());
  const JacobianProgram jac = compile_jacobian(s);
  EXPECT_EQ(compare_all(jac.values, s), "");
}

// The sample of issue 3: SuperFast, fullchem, POLLU and every 3rd other valid corpus document that
// compiles (at least twenty), in sorted order so the sample is the same on every machine.
TEST(Native, CorpusSampleEqualsTheTapeBitwise) {
  const fs::path corpus = esi::testing::corpus_dir();
  if (corpus.empty()) GTEST_SKIP() << "corpus not found: set ESI_CORPUS";
  const std::vector<fs::path> files = esi::testing::corpus_documents(corpus);
  const fs::path pollu = fs::path(ESI_SOURCE_DIR) / "tests/problems/pollu.esm";
  std::vector<fs::path> required{
      corpus / "EarthSciModels/components/gaschem/superfast.esm",
      corpus / "EarthSciModels/components/gaschem/geoschem_fullchem.esm"};
  if (fs::exists(pollu)) required.push_back(pollu);
  int compiled = 0, others = 0;
  std::vector<std::string> checked;
  // The stride counts only documents that flatten to a system with states, so documents that
  // could never be checked do not thin the sample.
  auto check = [&](const fs::path& f, bool must) {
    esi::esm::System s;
    try {
      const auto doc = esi::esm::load_resolved(f);
      if (doc.library_only) return false;
      s = esi::esm::flatten(doc);
    } catch (const esi::Error& e) {
      EXPECT_FALSE(must) << f << ": " << esi::format_diagnostic(e.diagnostic());
      return false;
    }
    if (s.states.empty()) return false;
    // Gridded documents (a thousand cells and more) would dominate the suite's time here: the
    // tape and native code of one per-cell program are the same for every cell.
    if (!must && s.states.size() > 400) return false;
    if (!must && compiled++ % 3 != 0) return false;
    const Program tape = compile(s);
    EXPECT_EQ(compare_all(tape, s), "") << f;
    checked.push_back(f.filename().string());
    return true;
  };
  for (const auto& f : required) EXPECT_TRUE(check(f, true)) << f;
  for (const auto& f : files) {
    if (std::find(required.begin(), required.end(), f) != required.end()) continue;
    if (!esi::esm::validate_file(f).valid()) continue;
    if (check(f, false)) ++others;
  }
  EXPECT_GE(others, 20);
  std::cout << "[native] checked " << checked.size() << " documents bitwise against the tape\n";
}

namespace {

/// Lane l's state i: cycles through values that exercise every IEEE corner the operators
/// branch on (signed zeros, infinities, NaN, negatives under log and sqrt, ties in min and max).
double corner_value(std::size_t i, std::size_t l) {
  static const double values[] = {0.7,
                                  -0.0,
                                  0.0,
                                  1.3,
                                  -2.5,
                                  std::numeric_limits<double>::infinity(),
                                  0.4,
                                  std::numeric_limits<double>::quiet_NaN(),
                                  2.0,
                                  -1.0,
                                  -std::numeric_limits<double>::infinity(),
                                  0.5,
                                  1e-300,
                                  3.0};
  constexpr std::size_t count = sizeof values / sizeof values[0];
  return values[(i * 5 + l * 3 + (l / count)) % count];
}

/// Runs tape and native on `lanes` cells (every state from corner_value, or perturbed
/// defaults when `corners` is false) through a workspace of `width` lanes, with two forcing
/// fields: in one buffer at equal distances with unit stride (`packed`: the layout the native
/// code reads in place, as the lane pools pass them) or at column stride 2 in separate buffers
/// (the layout it gathers first).
template <class T>
std::string compare_lanes(const Program& tape, const Program& native, const esi::esm::System& s,
                          std::size_t lanes, std::size_t width, bool corners, bool packed) {
  std::mt19937_64 rng(lanes * 31 + width);
  std::vector<T> u(s.states.size() * lanes);
  std::vector<double> t;
  for (std::size_t l = 0; l < lanes; ++l) {
    const auto x = esi::testing::perturbed(s.states, rng);
    for (std::size_t i = 0; i < x.size(); ++i)
      u[i * lanes + l] = static_cast<T>(corners ? corner_value(i, l) : x[i]);
    t.push_back(900.0 * static_cast<double>(l) - 3600.0);
  }
  std::vector<T> field(4 * lanes);
  std::vector<ForcingField<T>> forcing;
  for (std::size_t q = 0; q < 2; ++q) {
    const std::size_t stride = packed ? 1 : 2;
    T* base = field.data() + (packed ? q * lanes : 2 * q * lanes);
    for (std::size_t l = 0; l < lanes; ++l)
      base[l * stride] = static_cast<T>(q == 0 ? corner_value(7, l + 1) : 2.5 + 0.25 * double(l));
    forcing.push_back({base, stride});
  }
  const auto p = esi::testing::defaults(s.parameters);
  const DType dt = std::is_same_v<T, double> ? DType::F64 : DType::F32;
  Workspace wt = tape.make_workspace(width, dt), wn = native.make_workspace(width, dt);
  tape.prepare(wt, p);
  native.prepare(wn, p);
  const auto a = esi::testing::run_whole<T>(tape, wt, u, lanes, t, forcing);
  const auto b = esi::testing::run_whole<T>(native, wn, u, lanes, t, forcing);
  // NaNs count as equal whatever their sign: which operand's NaN an IEEE addition of two NaNs
  // returns depends on the operand order the compiler picked for a commutative instruction
  // (the corners make sqrt(-2.5) + log(-inf) and the like); every other value must match in
  // every bit, signed zeros included.
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!(a[i] != a[i] && b[i] != b[i]) && !same_bits(std::vector<T>{a[i]}, std::vector<T>{b[i]}))
      return "output " + std::to_string(i / lanes) + " lane " + std::to_string(i % lanes) +
             ": tape " + std::to_string(a[i]) + " native " + std::to_string(b[i]);
  // Every output row was written for every real lane (the poison value is gone).
  for (std::size_t i = 0; i < a.size(); ++i)
    if (b[i] == T(-12345)) return "output " + std::to_string(i) + " not written";
  return "";
}

/// compare_lanes in f64 and f32, at ordinary values and at IEEE corners, with packed and with
/// strided forcing.
void expect_tape_bits(const Program& tape, const Program& native, const esi::esm::System& s,
                      std::size_t lanes, std::size_t width) {
  for (bool corners : {false, true})
    for (bool packed : {false, true}) {
      const std::string at = " at " + std::to_string(lanes) + " lanes, width " +
                             std::to_string(width) + (corners ? ", corners" : "") +
                             (packed ? ", packed forcing" : ", strided forcing");
      EXPECT_EQ(compare_lanes<double>(tape, native, s, lanes, width, corners, packed), "") << "f64" << at;
      EXPECT_EQ(compare_lanes<float>(tape, native, s, lanes, width, corners, packed), "") << "f32" << at;
    }
}

}  // namespace

// The native code runs lanes in chunks of one vector (8 doubles, 16 floats): every lane count
// from 1 to 64, multiples of the vector width or not, in blocks as wide as the lanes or 64 wide,
// gives the tape's bits on every operator (transcendental functions, piecewise ops, closed
// functions, comparisons and logic) at ordinary values and at IEEE corners (NaN, infinities,
// signed zeros, log and sqrt of negatives).
TEST(Native, VectorChunksEqualTheTapeForEveryLaneCount) {
  const auto s = esi::testing::system_from(esi::testing::all_ops_model());
  CompileOptions co;
  co.forcing = {"M.F", "M.k"};
  const Program tape = compile(s, co);
  const Program native = with_native(tape, test_options());
  ASSERT_TRUE(native.is_native()) << native.native_status();
  for (std::size_t lanes = 1; lanes <= 64; ++lanes)
    for (std::size_t width : {lanes, std::size_t(64)}) expect_tape_bits(tape, native, s, lanes, width);
}

// A copy compiled with its stride as a constant (with_native's f64_strides, what the lane pools
// ask for at their block width) gives the tape's bits where it runs (16 cells, forcing packed:
// every stride 16) and leaves every other layout to the general code (other lane counts,
// strided forcing, float).
TEST(Native, FixedStrideCopyEqualsTheTape) {
  const auto s = esi::testing::system_from(esi::testing::all_ops_model());
  CompileOptions co;
  co.forcing = {"M.F", "M.k"};
  const Program tape = compile(s, co);
  const std::size_t strides[] = {16};
  const Program native = with_native(tape, resolve_native_toolchain(test_options()), strides);
  ASSERT_TRUE(native.is_native()) << native.native_status();
  EXPECT_NE(native_source(tape, strides).find("run_chunks<double, 16u>"), std::string::npos);
  EXPECT_EQ(native_source(tape).find("run_chunks<double, 16u>"), std::string::npos);
  for (std::size_t lanes : {8u, 15u, 16u, 17u, 32u})
    for (std::size_t width : {std::size_t(16), std::size_t(64)}) expect_tape_bits(tape, native, s, lanes, width);
}

// Gathered cells (Target::Lanes): consecutive cells take the vector load, scattered and
// repeated ones the gather, a chunk straddling both, and a final partial chunk.
TEST(Native, LanesTargetContiguousAndScatteredChunks) {
  const auto s = esi::testing::system_from(esi::testing::all_ops_model());
  CompileOptions co;
  co.target = Target::Lanes;
  const Program tape = compile(s, co);
  const Program native = with_native(tape, test_options());
  ASSERT_TRUE(native.is_native()) << native.native_status();
  const std::size_t columns = 48;
  std::mt19937_64 rng(5);
  std::vector<double> u(s.states.size() * columns);
  for (std::size_t c = 0; c < columns; ++c) {
    const auto x = esi::testing::perturbed(s.states, rng);
    for (std::size_t i = 0; i < x.size(); ++i) u[i * columns + c] = x[i];
  }
  std::vector<std::int32_t> cells;
  for (int c = 8; c < 24; ++c) cells.push_back(c);                     // two contiguous chunks
  for (int c : {40, 3, 3, 17, 9, 10, 11, 12, 13}) cells.push_back(c);  // scattered, then partial
  const auto p = esi::testing::defaults(s.parameters);
  const std::vector<double> t{7200.0};
  for (std::size_t width : {8, 16, 64}) {
    auto eval = [&](const Program& prog) {
      Workspace ws = prog.make_workspace(width);
      prog.prepare(ws, p);
      std::vector<double> du(prog.output_count() * cells.size());
      RunArgs<double> a;
      a.u = {u.data(), s.states.size(), columns, columns};
      a.cells = cells;
      a.t = t;
      a.du = {du.data(), prog.output_count(), cells.size(), cells.size()};
      run(prog, ws, a);
      return du;
    };
    EXPECT_TRUE(same_bits(eval(tape), eval(native))) << "width " << width;
  }
}

// The native source computes whole vectors of lanes and calls functions per lane with the
// interpreter's scalar libm functions (no vector math library, which would round differently).
TEST(Native, SourceIsVectorizedAcrossLanesWithScalarFunctions) {
  const auto s = esi::testing::system_from(esi::testing::all_ops_model());
  const std::string src = native_source(compile(s));
  EXPECT_NE(src.find("vector_size(64)"), std::string::npos);
  EXPECT_NE(src.find("map1<T>("), std::string::npos);
  EXPECT_NE(src.find("return std::exp(x);"), std::string::npos);
  EXPECT_NE(src.find("return std::pow(x, y);"), std::string::npos);
  EXPECT_EQ(src.find("_ZGV"), std::string::npos);
}
