// The native backend: a Program's lane tape emitted as C++ source, compiled by the system
// compiler into a shared object, loaded at run time and cached on disk by content hash.
//
// Only the lane tape (the per-cell work) goes native; setup and time tapes stay interpreted
// (they run once per parameter set or per block). The emitted code evaluates a chunk of lanes
// at a time (one 64-byte vector: 8 doubles, 16 floats), every value a vector in a local
// variable, so the compiler keeps values in vector registers instead of the interpreter's
// register file and one instruction serves the whole chunk. Both paths apply the same scalar
// operations per lane in the same order (functions are the same scalar libm calls per lane)
// and are compiled with -ffp-contract=off, so native results equal the tape's bit for bit.
// Without a working compiler the Program keeps running the tape and says why.
#pragma once

#include <span>
#include <string>

#include "esi/kernel/program.hpp"

namespace esi::kernel {

struct NativeOptions {
  /// The C++ compiler; "" = $CXX, else "c++".
  std::string compiler;
  /// Where shared objects are cached; "" = $ESI_CACHE_DIR, else $XDG_CACHE_HOME/esi/native,
  /// else $HOME/.cache/esi/native, else <tmp>/esi-native-<uid>. Created 0700. A folder owned
  /// by another user or writable by group or others is refused for a private one (0700, in
  /// the temporary folder); every object's SHA-256 is recorded beside it when it is compiled
  /// and checked before it is loaded: an object that is not the modeller's own, is writable by
  /// others, or whose digest differs is compiled again, never loaded.
  std::string cache_dir;
  /// Optimisation flags; -ffp-contract=off, -fPIC and -shared are always added. The object is
  /// built on the machine that runs it, so -march=native is legitimate: it lets the lane vectors
  /// use the widest registers the CPU has (AVX-512: one instruction per 8 doubles) and changes
  /// no bits (contraction stays off; functions are the same libm calls). The cache key holds
  /// what -march=native means on this machine, so a cache folder shared by different CPUs never
  /// hands one an object built for another. A compiler that does not know -march=native gets
  /// the flags without it.
  std::string flags = "-O2 -march=native";
};

/// What with_native works out from NativeOptions before it compiles anything: the compiler and
/// its version, the flags (without -march=native where the compiler rejects it), what
/// -march=native means on this CPU, and the cache folder (created). Working that out starts
/// the compiler twice, about 40 ms; a caller that makes many programs native (compile_grid: one
/// per region program, 60 for reseact_3d_chem) resolves once and passes the result.
struct NativeToolchain {
  std::string compiler, version, flags, target, cache_dir;
  std::string unavailable;  ///< why no program can be made native ("" = usable)
  /// Why the cache folder asked for was not used ("" = it was): a folder another user owns or
  /// can write to could hold objects planted there, which esi would run as the modeller.
  /// cache_dir is then a private folder instead; Program::native_status() carries the warning.
  std::string warning;
};
NativeToolchain resolve_native_toolchain(const NativeOptions& options = {});

/// Returns `program` with its lane tape compiled to native code (a cache hit costs one hash
/// and one dlopen). When the compiler is missing or fails, returns the tape program unchanged
/// with Program::native_status() saying why; it never throws for that.
Program with_native(const Program& program, const NativeOptions& options = {});
/// `f64_strides`: lane strides (of states, forcing fields and outputs alike, in elements) for
/// which the double-precision code is also compiled with the stride as a constant, each state,
/// forcing and output access then one instruction with a fixed offset instead of a multiply by
/// the caller's stride; a call whose strides all equal one of them runs that copy (the lane
/// pools pass their block width). Every other call runs the general code. Each stride adds a
/// copy of the f64 code, about half again the compile time.
Program with_native(const Program& program, const NativeToolchain& toolchain,
                    std::span<const std::size_t> f64_strides = {});

/// with_native on every program in place. Programs whose objects are not cached yet are
/// compiled first, each distinct source once, up to `jobs` compiler runs at a time (0: one per
/// hardware thread): a cold cache for reseact_3d_chem's 60 region programs (20 distinct) is
/// then about a core-count times faster to fill. The programs come out as with_native makes them.
void make_native(std::span<Program* const> programs, const NativeToolchain& toolchain,
                 unsigned jobs = 0);

/// The C++ source with_native compiles for `program` (for inspection and tests).
std::string native_source(const Program& program, std::span<const std::size_t> f64_strides = {});

}  // namespace esi::kernel
