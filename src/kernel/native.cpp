// Compiling, caching and loading native lane code (see native.hpp).
//
// Cache key: FNV-1a (two 64-bit streams) over the generated source, the ABI version, the
// compiler command, its flags, the compiler's own version string and, for -march=native, the
// target options it expands to here, so a new compiler, a different flag or another CPU never
// reuses an old object. Each object is written to a unique temporary name
// and renamed into place, so concurrent processes compiling the same program do not collide.
//
// The key only names an object; anyone can recompute it. What makes an object safe to load is
// where it is and who wrote it: the cache folder must be the modeller's own and writable by
// no one else (else a private folder is used), the object too, and its SHA-256 (nettle), written
// beside it when esi compiled it, must match. Anything else is compiled again, never loaded.
#include <dlfcn.h>
#include <nettle/sha2.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
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

/// The folder the temporary one holds for this user alone.
fs::path private_folder() {
  return fs::temp_directory_path() / ("esi-native-" + std::to_string(::geteuid()));
}

fs::path cache_folder(const NativeOptions& o) {
  if (!o.cache_dir.empty()) return o.cache_dir;
  if (auto d = env("ESI_CACHE_DIR"); !d.empty()) return d;
  if (auto d = env("XDG_CACHE_HOME"); !d.empty()) return fs::path(d) / "esi" / "native";
  if (auto d = env("HOME"); !d.empty()) return fs::path(d) / ".cache" / "esi" / "native";
  return private_folder();
}

/// Why code under `path` (a folder or an object) must not be trusted, or "": it must be this
/// user's and writable by no one else.
std::string not_own(const fs::path& path, bool folder) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return "cannot read its status: " + std::string(std::strerror(errno));
  if (folder && S_ISLNK(st.st_mode) && ::stat(path.c_str(), &st) != 0)
    return "cannot read its status: " + std::string(std::strerror(errno));
  if (folder ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))
    return folder ? "it is not a folder" : "it is not a regular file";
  if (st.st_uid != ::geteuid()) return "it belongs to another user (uid " + std::to_string(st.st_uid) + ")";
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%03o", static_cast<unsigned>(st.st_mode & 0777));
    return std::string("others can write to it (mode ") + mode + ")";
  }
  return {};
}

/// Creates `folder` (0700, the parents as the umask says) and checks it; "" when it can hold
/// the cache.
std::string make_own_folder(const fs::path& folder) {
  std::error_code ec;
  if (!fs::exists(folder, ec)) {
    if (folder.has_parent_path()) fs::create_directories(folder.parent_path(), ec);
    if (::mkdir(folder.c_str(), 0700) != 0 && errno != EEXIST)
      return "cannot create it: " + std::string(std::strerror(errno));
  }
  return not_own(folder, true);
}

/// SHA-256 of a file's bytes in hex, or "" when it cannot be read.
std::string sha256_of(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  sha256_ctx ctx;
  sha256_init(&ctx);
  std::array<char, 1 << 16> buf{};
  while (in) {
    in.read(buf.data(), buf.size());
    sha256_update(&ctx, static_cast<std::size_t>(in.gcount()), reinterpret_cast<const std::uint8_t*>(buf.data()));
  }
  if (in.bad()) return {};
  std::array<std::uint8_t, SHA256_DIGEST_SIZE> digest{};
  sha256_digest(&ctx, digest.size(), digest.data());
  std::string hex;
  for (std::uint8_t b : digest) {
    char two[3];
    std::snprintf(two, sizeof two, "%02x", b);
    hex += two;
  }
  return hex;
}

fs::path digest_path(const fs::path& so) { return fs::path(so.string() + ".sha256"); }

/// Whether `so` is an object esi compiled here: the user's own, writable by no one else, its
/// recorded digest (equally the user's own) matching its bytes.
bool trusted_object(const fs::path& so) {
  const fs::path digest = digest_path(so);
  if (!not_own(so, false).empty() || !not_own(digest, false).empty()) return false;
  std::ifstream in(digest);
  std::string recorded;
  in >> recorded;
  return !recorded.empty() && recorded == sha256_of(so);
}

/// Removes an object that cannot be trusted (and its digest), so it is compiled again.
void discard_object(const fs::path& so) {
  std::error_code ec;
  fs::remove(so, ec);
  fs::remove(digest_path(so), ec);
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
  // Readable by this user alone, its digest beside it before it takes its name.
  const std::string digest = sha256_of(tmp);
  const fs::path digest_tmp = so.parent_path() / (so.stem().string() + "." + tag + ".sha256");
  bool recorded = false;
  if (::chmod(tmp.c_str(), 0700) == 0 && !digest.empty()) {
    if (FILE* f = std::fopen(digest_tmp.c_str(), "w")) {
      recorded = std::fprintf(f, "%s\n", digest.c_str()) > 0;
      recorded = std::fclose(f) == 0 && recorded && ::chmod(digest_tmp.c_str(), 0600) == 0;
    }
  }
  if (recorded) fs::rename(digest_tmp, digest_path(so), ec);
  if (!recorded || ec) {
    fs::remove(tmp, ec);
    fs::remove(digest_tmp, ec);
    return "cannot record the digest of " + so.string();
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
  const fs::path wanted = cache_folder(options);
  tc.cache_dir = wanted.string();
  const std::string why = make_own_folder(wanted);
  if (why.empty()) return tc;
  // Not that folder: this user's own in the temporary folder, or a fresh one when someone
  // else holds that name.
  fs::path fallback = private_folder();
  if (!make_own_folder(fallback).empty()) {
    std::string pattern = (fs::temp_directory_path() / "esi-native-XXXXXX").string();
    fallback = ::mkdtemp(pattern.data()) ? fs::path(pattern) : fs::path();
  }
  if (fallback.empty()) {
    tc.unavailable = "the cache folder " + wanted.string() + " cannot be used (" + why +
                     ") and no private one could be made";
    return tc;
  }
  tc.cache_dir = fallback.string();
  tc.warning = "the native-code cache folder " + wanted.string() + " was not used: " + why +
               ", so objects found there could be someone else's; native code is cached in " +
               tc.cache_dir + " instead";
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
  if (!trusted_object(so)) {
    discard_object(so);
    if (std::string why = compile_to(toolchain.compiler, toolchain.flags, source, so); !why.empty())
      return keep(why);
    if (!trusted_object(so)) return keep("the object compiled as " + so.string() + " changed before it was loaded");
  }
  std::string why;
  auto code = load(so, why);
  if (!code) return keep(why);
  std::string status = "native " + so.string();
  if (!toolchain.warning.empty()) status += "; warning: " + toolchain.warning;
  return Program(program.tape_ptr(), std::move(code), status);
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
      if (!trusted_object(so)) missing.emplace(std::move(so), std::move(source));
    }
    std::vector<const std::pair<const fs::path, std::string>*> work;
    for (const auto& m : missing) work.push_back(&m);
    if (jobs == 0) jobs = std::max(1u, std::thread::hardware_concurrency());
    jobs = static_cast<unsigned>(std::min<std::size_t>(jobs, work.size()));
    std::atomic<std::size_t> next{0};
    auto compile_some = [&] {
      for (std::size_t k = next++; k < work.size(); k = next++) {
        discard_object(work[k]->first);
        compile_to(toolchain.compiler, toolchain.flags, work[k]->second, work[k]->first);
      }
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
