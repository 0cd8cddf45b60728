// Restart files (schedule.hpp): esi's own binary format, written to a temporary name and
// renamed, so a crash while writing leaves the previous restart file intact; and the
// fingerprint that ties a restart file to the model and configuration it was written by.
//
// Layout (little-endian, as the machines esi runs on are): "ESIRST02", fingerprint (u64),
// t (f64), macro steps (u64), the state and the parameters (each a u64 count, f64 values),
// the leaves (u64 count; per leaf: has_integrator (u8), dt (f64), started (u8), attempts and
// six statistics (i64), the cells' carried steps (u64 count, f64 values), the cells'
// statistics (two u64, eight i64)), then "ESIEND01".
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "esi/core/error.hpp"
#include "esi/core/json.hpp"
#include "esi/exec/schedule.hpp"
#include "exec/schedule/runner.hpp"

namespace esi::exec {
namespace {

// 02: the model's parameter values follow the state (events may change them).
// 03: each leaf's automatic-method state follows its statistics (Integrator::Carry); 02 files
// are still read (their leaves had not switched: switching came with 03).
constexpr char kMagic[8] = {'E', 'S', 'I', 'R', 'S', 'T', '0', '3'};
constexpr char kMagic02[8] = {'E', 'S', 'I', 'R', 'S', 'T', '0', '2'};
constexpr char kEnd[8] = {'E', 'S', 'I', 'E', 'N', 'D', '0', '1'};

class Writer {
 public:
  template <class T>
  void put(T v) {
    const auto* p = reinterpret_cast<const char*>(&v);
    bytes_.append(p, sizeof v);
  }
  void put_doubles(const std::vector<double>& v) {
    put<std::uint64_t>(v.size());
    bytes_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(double));
  }
  void raw(const char (&m)[8]) { bytes_.append(m, 8); }
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
};

class Reader {
 public:
  Reader(std::string bytes, std::string path) : bytes_(std::move(bytes)), path_(std::move(path)) {}
  template <class T>
  T get() {
    T v;
    need(sizeof v);
    std::memcpy(&v, bytes_.data() + at_, sizeof v);
    at_ += sizeof v;
    return v;
  }
  std::vector<double> get_doubles() {
    const auto n = get<std::uint64_t>();
    if (n > (bytes_.size() - at_) / sizeof(double)) fail("a count runs past the end of the file");
    std::vector<double> v(n);
    if (n > 0) std::memcpy(v.data(), bytes_.data() + at_, n * sizeof(double));  // data() may be null
    at_ += n * sizeof(double);
    return v;
  }
  /// Consumes the 8-byte marker m when it comes next.
  bool matches(const char (&m)[8]) {
    if (bytes_.size() - at_ < 8 || std::memcmp(bytes_.data() + at_, m, 8) != 0) return false;
    at_ += 8;
    return true;
  }
  void expect(const char (&m)[8], const char* what) {
    need(8);
    if (std::memcmp(bytes_.data() + at_, m, 8) != 0) fail(what);
    at_ += 8;
  }
  [[noreturn]] void fail(const std::string& why) const {
    throw Error("restart_unreadable", path_, "", "not a usable esi restart file: " + why);
  }

 private:
  void need(std::size_t n) const {
    if (bytes_.size() - at_ < n) fail("it ends early (truncated?)");
  }
  std::string bytes_, path_;
  std::size_t at_ = 0;
};

}  // namespace

void write_restart(const std::string& path, const RestartState& s) {
  Writer w;
  w.raw(kMagic);
  w.put<std::uint64_t>(s.fingerprint);
  w.put<double>(s.t);
  w.put<std::uint64_t>(s.macro_steps);
  w.put_doubles(s.u);
  w.put_doubles(s.p);
  w.put<std::uint64_t>(s.leaves.size());
  for (const auto& l : s.leaves) {
    w.put<std::uint8_t>(l.has_integrator ? 1 : 0);
    w.put<double>(l.carry.dt);
    w.put<std::uint8_t>(l.carry.started ? 1 : 0);
    const auto& st = l.carry.stats;
    for (long v : {l.carry.attempts, st.accepted, st.rejected, st.rhs_evaluations, st.jacobian_evaluations,
                   st.factorizations, st.linear_solves})
      w.put<std::int64_t>(v);
    w.put<std::int32_t>(static_cast<std::int32_t>(l.carry.automatic_method));
    w.put<std::int32_t>(l.carry.stiff_tests);
    w.put<std::int32_t>(l.carry.calm_tests);
    w.put<std::int64_t>(l.carry.switches);
    w.put_doubles(l.step_size);
    const auto& c = l.cells;
    w.put<std::uint64_t>(c.cells);
    w.put<std::uint64_t>(c.failed_cells);
    for (long v : {c.accepted, c.rejected, c.rhs_evaluations, c.jacobian_evaluations, c.factorizations,
                   c.linear_solves, c.lane_slots, c.max_cell_steps})
      w.put<std::int64_t>(v);
  }
  w.raw(kEnd);
  const std::string tmp = path + ".partial";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f.write(w.bytes().data(), static_cast<std::streamsize>(w.bytes().size()));
    f.flush();
    if (!f) {
      std::remove(tmp.c_str());
      throw Error("restart_write_failed", path, "", "could not write the restart file (disk full or no permission?)");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    throw Error("restart_write_failed", path, "", "could not rename the restart file into place: " + ec.message());
  }
}

RestartState read_restart(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("restart_unreadable", path, "", "the restart file cannot be opened (does it exist?)");
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  Reader r(std::move(bytes), path);
  const bool format02 = r.matches(kMagic02);
  if (!format02) r.expect(kMagic, "it does not start with esi's restart header");
  RestartState s;
  s.fingerprint = r.get<std::uint64_t>();
  s.t = r.get<double>();
  s.macro_steps = r.get<std::uint64_t>();
  s.u = r.get_doubles();
  s.p = r.get_doubles();
  const auto leaves = r.get<std::uint64_t>();
  if (leaves > 1u << 20) r.fail("implausible leaf count");
  for (std::uint64_t k = 0; k < leaves; ++k) {
    RestartState::Leaf l;
    l.has_integrator = r.get<std::uint8_t>() != 0;
    l.carry.dt = r.get<double>();
    l.carry.started = r.get<std::uint8_t>() != 0;
    auto& st = l.carry.stats;
    for (long* v : {&l.carry.attempts, &st.accepted, &st.rejected, &st.rhs_evaluations, &st.jacobian_evaluations,
                    &st.factorizations, &st.linear_solves})
      *v = static_cast<long>(r.get<std::int64_t>());
    if (!format02) {
      const auto method = r.get<std::int32_t>();
      if (method < 0 || method > static_cast<std::int32_t>(method::MethodId::Auto)) r.fail("a leaf names an unknown method");
      l.carry.automatic_method = static_cast<method::MethodId>(method);
      l.carry.stiff_tests = r.get<std::int32_t>();
      l.carry.calm_tests = r.get<std::int32_t>();
      l.carry.switches = static_cast<long>(r.get<std::int64_t>());
    }
    l.step_size = r.get_doubles();
    auto& c = l.cells;
    c.cells = static_cast<std::size_t>(r.get<std::uint64_t>());
    c.failed_cells = static_cast<std::size_t>(r.get<std::uint64_t>());
    for (long* v : {&c.accepted, &c.rejected, &c.rhs_evaluations, &c.jacobian_evaluations, &c.factorizations,
                    &c.linear_solves, &c.lane_slots, &c.max_cell_steps})
      *v = static_cast<long>(r.get<std::int64_t>());
    s.leaves.push_back(std::move(l));
  }
  r.expect(kEnd, "its end marker is missing (truncated?)");
  return s;
}

namespace detail {
namespace {

std::uint64_t fnv1a(std::uint64_t h, std::string_view bytes) {
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

}  // namespace

std::uint64_t run_fingerprint(const esm::System& system, const RunConfig& config,
                              std::uint64_t salt) {
  nlohmann::json key = config.source.is_object() ? config.source : nlohmann::json::object();
  for (const char* k : {"time", "output", "partition", "description"}) key.erase(k);
  std::uint64_t h = fnv1a(14695981039346656037ULL, canonical_json(key));
  h = fnv1a(h, canonical_json(config.inputs));
  for (std::size_t i = 0; i < system.states.size(); ++i) h = fnv1a(h, system.states.name(i) + "\n");
  h = fnv1a(h, std::to_string(config.start));
  return h ^ (salt * 0x9E3779B97F4A7C15ULL);
}

}  // namespace detail
}  // namespace esi::exec
