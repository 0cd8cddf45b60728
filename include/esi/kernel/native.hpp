// The native backend: a Program's lane tape emitted as C++ source, compiled by the system
// compiler into a shared object, loaded at run time and cached on disk by content hash.
//
// Only the lane tape (the per-cell work) goes native; setup and time tapes stay interpreted
// (they run once per parameter set or per block). The emitted code evaluates one lane at a
// time with every value in a local variable, so the compiler keeps them in registers instead
// of the interpreter's register file. Both paths use the same scalar operations in the same
// order and are compiled with -ffp-contract=off, so native results equal the tape's bit for
// bit. Without a working compiler the Program keeps running the tape and says why.
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
  /// Optimisation flags; -ffp-contract=off, -fPIC and -shared are always added.
  std::string flags = "-O2";
};

/// Returns `program` with its lane tape compiled to native code (a cache hit costs one hash
/// and one dlopen). When the compiler is missing or fails, returns the tape program unchanged
/// with Program::native_status() saying why; it never throws for that.
Program with_native(const Program& program, const NativeOptions& options = {});

/// The C++ source with_native compiles for `program` (for inspection and tests).
std::string native_source(const Program& program);

}  // namespace esi::kernel
