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

#include <string>

#include "esi/kernel/program.hpp"

namespace esi::kernel {

struct NativeOptions {
  /// The C++ compiler; "" = $CXX, else "c++".
  std::string compiler;
  /// Where shared objects are cached; "" = $ESI_CACHE_DIR, else $XDG_CACHE_HOME/esi/native,
  /// else $HOME/.cache/esi/native, else <tmp>/esi-native.
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

/// Returns `program` with its lane tape compiled to native code (a cache hit costs one hash
/// and one dlopen). When the compiler is missing or fails, returns the tape program unchanged
/// with Program::native_status() saying why; it never throws for that.
Program with_native(const Program& program, const NativeOptions& options = {});

/// The C++ source with_native compiles for `program` (for inspection and tests).
std::string native_source(const Program& program);

}  // namespace esi::kernel
