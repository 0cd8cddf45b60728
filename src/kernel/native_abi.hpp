// The binary interface between run() and a native lane function (private to the kernel).
//
// native_emit.cpp writes a textual copy of NativeBlock into every generated source; the symbol
// names carry kNativeAbiVersion so a shared object from an older layout is never called with a
// newer block (the version is also part of the cache key).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "esi/kernel/program.hpp"

namespace esi::kernel::detail {

inline constexpr int kNativeAbiVersion = 5;

/// Native code computes the lanes of a block in chunks of one 64-byte vector (8 doubles, 16
/// floats); its spill area holds that many entries per value, whatever the block width.
inline constexpr std::size_t kNativeVectorBytes = 64;

/// Closed functions stay in the library: the native code calls back through this pointer.
using NativeClosedFn = double (*)(unsigned fn, const void* tables, unsigned table, double x0,
                                  double x1);

/// One block of `lanes` real lanes; the same fields the interpreter reads (run.cpp).
template <class T>
struct NativeBlock {
  const T* u;
  std::size_t u_stride;
  const std::int64_t* col;      // column of each lane
  const double* time;           // time of each lane
  const double* time_regs;      // the block's time registers, register r at [r * width]
  std::size_t width;
  const ForcingField<T>* forcing;
  T* du;                        // offset to the block's first output column
  std::size_t du_stride;
  std::size_t lanes;            // real lanes (native code needs no padding)
  const T* scalars;             // scalar operands of AddS ... SDiv
  const T* pinned;              // lane register file: pinned register r at [r * width]
  const void* tables;           // ClosedTable array
  NativeClosedFn closed;
  T* spill;                     // long-lived values of one chunk, value r - pinned at
                                // [(r - pinned) * V] (V = kNativeVectorBytes / sizeof(T)),
                                // then room for V lanes of every state, forcing and output
};

template <class T>
using NativeLaneFn = void (*)(const NativeBlock<T>*);

/// A loaded shared object; unloaded when the last Program sharing it goes away.
struct NativeCode {
  void* handle = nullptr;
  NativeLaneFn<double> f64 = nullptr;
  NativeLaneFn<float> f32 = nullptr;
  std::string path;
  NativeCode() = default;
  NativeCode(const NativeCode&) = delete;
  NativeCode& operator=(const NativeCode&) = delete;
  ~NativeCode();
};

/// The callback behind NativeBlock::closed.
double native_closed(unsigned fn, const void* tables, unsigned table, double x0, double x1);

std::string emit_native_source(const struct Tape& tape, std::span<const std::size_t> f64_strides = {});

}  // namespace esi::kernel::detail
