// Compiling, caching and loading native lane code (see native.hpp).
//
// Cache key: FNV-1a (two 64-bit streams) over the generated source, the ABI version, the
// compiler command, its flags, the compiler's own version string and, for -march=native, the
// target options it expands to here, so a new compiler, a different flag or another CPU never
// reuses an old object. Each object is written to a unique temporary name
// and renamed into place, so concurrent processes compiling the same program do not collide.
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

#include "esi/kernel/native.hpp"
#include "kernel/native_abi.hpp"
#include "kernel/tape.hpp"

namespace esi::kernel {
namespace detail {

NativeCode::~NativeCode() {
  if (handle) dlclose(handle);
}

double native_closed(unsigned fn, const void* tables, unsigned table, double x0, double x1) {
  const double x[2] = {x0, x1};
  return eval_closed(static_cast<ClosedFn>(fn), static_cast<const ClosedTable*>(tables)[table], x);
}

}  // namespace detail

namespace {

namespace fs = std::filesystem;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

fs::path cache_folder(const NativeOptions& o) {
  if (!o.cache_dir.empty()) return o.cache_dir;
  if (auto d = env("ESI_CACHE_DIR"); !d.empty()) return d;
  if (auto d = env("XDG_CACHE_HOME"); !d.empty()) return fs::path(d) / "esi" / "native";
  if (auto d = env("HOME"); !d.empty()) return fs::path(d) / ".cache" / "esi" / "native";
  return fs::temp_directory_path() / "esi-native";
}

std::string compiler_of(const NativeOptions& o) {
  if (!o.compiler.empty()) return o.compiler;
  if (auto c = env("CXX"); !c.empty()) return c;
  return "c++";
}

/// Single-quoted for /bin/sh.
std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

/// The first line `compiler --version` prints, or "" when it cannot run.
std::string compiler_version(const std::string& compiler) {
  FILE* f = popen((compiler + " --version 2>/dev/null").c_str(), "r");
  if (!f) return {};
  std::array<char, 256> line{};
  std::string first = fgets(line.data(), line.size(), f) ? line.data() : "";
  while (fgets(line.data(), line.size(), f)) {
  }
  return pclose(f) == 0 ? first : std::string();
}

/// What `flags` mean on this machine for the cache key: when they ask for -march=native or
/// -mtune=native, the target options the compiler expands them to (its driver's cc1 line),
/// so an object built for one CPU is never loaded on another. `flags` loses -march=native when
/// the compiler rejects it.
std::string resolve_native_flags(const std::string& compiler, std::string& flags) {
  if (flags.find("=native") == std::string::npos) return {};
  FILE* f =
      popen((compiler + " " + flags + " -### -x c++ -c /dev/null -o /dev/null 2>&1").c_str(), "r");
  std::string out;
  if (f) {
    std::array<char, 4096> buf{};
    std::string line;
    while (fgets(buf.data(), buf.size(), f)) {
      line += buf.data();
      if (line.back() != '\n') continue;
      // Only the compiler proper's target options: the rest of its line names temporary
      // files. g++ spells them -march=znver3 -mavx512f ..., clang "-target-cpu" "znver3".
      if (line.find("cc1") != std::string::npos) {
        std::istringstream words(line);
        std::string word;
        bool take_next = false;
        while (words >> word) {
          if (!word.empty() && word.front() == '"') word = word.substr(1, word.size() - 2);
          if (take_next || word.rfind("-m", 0) == 0) out += word + " ";
          take_next = word == "-target-cpu" || word == "-target-feature";
        }
      }
      line.clear();
    }
    if (pclose(f) != 0) out.clear();
  }
  if (out.empty()) {  // the compiler does not know it: build for its default target instead
    for (const char* drop : {"-march=native", "-mtune=native", "-mcpu=native"})
      for (auto at = flags.find(drop); at != std::string::npos; at = flags.find(drop))
        flags.erase(at, std::string(drop).size());
  }
  return out;
}

std::string content_hash(const std::string& text) {
  std::uint64_t h1 = 0xcbf29ce484222325ULL, h2 = 0x84222325cbf29ce4ULL;
  for (unsigned char c : text) {
    h1 = (h1 ^ c) * 0x100000001b3ULL;
    h2 = (h2 ^ c) * 0x100000001b3ULL;
    h2 ^= h2 >> 29;
  }
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(h1),
                static_cast<unsigned long long>(h2));
  return buf;
}

std::shared_ptr<const detail::NativeCode> load(const fs::path& so, std::string& why) {
  auto code = std::make_shared<detail::NativeCode>();
  code->handle = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!code->handle) {
    const char* e = dlerror();
    why = "cannot load " + so.string() + ": " + (e ? e : "unknown error");
    return nullptr;
  }
  const std::string v = std::to_string(detail::kNativeAbiVersion);
  code->f64 = reinterpret_cast<detail::NativeLaneFn<double>>(
      dlsym(code->handle, ("esi_native_lane_v" + v + "_f64").c_str()));
  code->f32 = reinterpret_cast<detail::NativeLaneFn<float>>(
      dlsym(code->handle, ("esi_native_lane_v" + v + "_f32").c_str()));
  if (!code->f64 || !code->f32) {
    why = so.string() + " lacks the lane functions of ABI v" + v;
    return nullptr;
  }
  code->path = so.string();
  return code;
}

/// Compiles `source` to `so` through a uniquely named temporary; "" on success, else why.
std::string compile_to(const std::string& compiler, const std::string& flags,
                       const std::string& source, const fs::path& so) {
  std::random_device rd;
  const std::string tag = std::to_string(getpid()) + "-" + std::to_string(rd());
  const fs::path src = so.parent_path() / (so.stem().string() + "." + tag + ".cpp");
  const fs::path tmp = so.parent_path() / (so.stem().string() + "." + tag + ".so");
  const fs::path log = so.parent_path() / (so.stem().string() + ".log");
  if (FILE* f = std::fopen(src.c_str(), "w")) {
    const bool ok = std::fwrite(source.data(), 1, source.size(), f) == source.size();
    if (std::fclose(f) != 0 || !ok) return "cannot write " + src.string();
  } else {
    return "cannot write " + src.string();
  }
  const std::string cmd = compiler + " " + flags +
                          " -std=c++17 -ffp-contract=off -fPIC -shared -o " + quoted(tmp.string()) +
                          " " + quoted(src.string()) + " 2> " + quoted(log.string());
  const int rc = std::system(cmd.c_str());
  std::error_code ec;
  fs::remove(src, ec);
  if (rc != 0) {
    fs::remove(tmp, ec);
    return "the compiler failed (" + compiler + "; messages in " + log.string() + ")";
  }
  fs::rename(tmp, so, ec);
  if (ec) return "cannot move " + tmp.string() + " into the cache: " + ec.message();
  fs::remove(log, ec);
  return {};
}

}  // namespace

std::string native_source(const Program& program, std::span<const std::size_t> f64_strides) {
  return detail::emit_native_source(program.tape(), f64_strides);
}

NativeToolchain resolve_native_toolchain(const NativeOptions& options) {
  NativeToolchain tc;
  tc.compiler = compiler_of(options);
  tc.version = compiler_version(tc.compiler);
  if (tc.version.empty()) {
    tc.unavailable = "no working C++ compiler '" + tc.compiler + "'";
    return tc;
  }
  tc.flags = options.flags;
  tc.target = resolve_native_flags(tc.compiler, tc.flags);
  tc.cache_dir = cache_folder(options).string();
  std::error_code ec;
  fs::create_directories(tc.cache_dir, ec);
  if (ec) tc.unavailable = "cannot create the cache folder " + tc.cache_dir + ": " + ec.message();
  return tc;
}

namespace {

std::string object_key(const std::string& source, const NativeToolchain& toolchain) {
  return content_hash(source + "\n" + std::to_string(detail::kNativeAbiVersion) + "\n" +
                      toolchain.compiler + "\n" + toolchain.flags + "\n" + toolchain.version +
                      "\n" + toolchain.target);
}

fs::path object_path(const std::string& source, const NativeToolchain& toolchain) {
  return fs::path(toolchain.cache_dir) / ("esi-" + object_key(source, toolchain) + ".so");
}

}  // namespace

Program with_native(const Program& program, const NativeToolchain& toolchain,
                    std::span<const std::size_t> f64_strides) {
  auto keep = [&](std::string why) {
    return Program(program.tape_ptr(), nullptr, "tape (native code unavailable: " + why + ")");
  };
  if (!toolchain.unavailable.empty()) return keep(toolchain.unavailable);
  const std::string source = native_source(program, f64_strides);
  const fs::path so = object_path(source, toolchain);
  if (!fs::exists(so)) {
    if (std::string why = compile_to(toolchain.compiler, toolchain.flags, source, so); !why.empty())
      return keep(why);
  }
  std::string why;
  auto code = load(so, why);
  if (!code) return keep(why);
  return Program(program.tape_ptr(), std::move(code), "native " + so.string());
}

void make_native(std::span<Program* const> programs, const NativeToolchain& toolchain,
                 unsigned jobs) {
  if (toolchain.unavailable.empty()) {
    // The distinct sources whose objects are missing; a failed compile is left to with_native
    // below, which compiles it again and records why on the program.
    std::map<fs::path, std::string> missing;
    for (const Program* p : programs) {
      std::string source = native_source(*p);
      fs::path so = object_path(source, toolchain);
      if (!fs::exists(so)) missing.emplace(std::move(so), std::move(source));
    }
    std::vector<const std::pair<const fs::path, std::string>*> work;
    for (const auto& m : missing) work.push_back(&m);
    if (jobs == 0) jobs = std::max(1u, std::thread::hardware_concurrency());
    jobs = static_cast<unsigned>(std::min<std::size_t>(jobs, work.size()));
    std::atomic<std::size_t> next{0};
    auto compile_some = [&] {
      for (std::size_t k = next++; k < work.size(); k = next++)
        compile_to(toolchain.compiler, toolchain.flags, work[k]->second, work[k]->first);
    };
    std::vector<std::thread> threads;
    for (unsigned j = 1; j < jobs; ++j) threads.emplace_back(compile_some);
    compile_some();
    for (auto& t : threads) t.join();
  }
  for (Program* p : programs) *p = with_native(*p, toolchain);
}

Program with_native(const Program& program, const NativeOptions& options) {
  return with_native(program, resolve_native_toolchain(options));
}

}  // namespace esi::kernel
