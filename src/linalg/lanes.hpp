// Shared by the lane-batched LU's numeric files: ISA clones, the lane-loop pragma and the
// switch from a run-time lane count to the compile-time widths of kLuLaneWidths.
#pragma once

#include "esi/core/error.hpp"

// x86-64 builds keep the baseline ISA for the library but give the hot kernels AVX2 and
// AVX-512 clones picked at load time (GCC ifunc). Sanitizer builds and other compilers get the
// plain function. The module is compiled with -ffp-contract=off, so every clone computes the
// same IEEE-754 operations in the same order: the same bits.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && \
    !defined(__SANITIZE_ADDRESS__) && !defined(ESI_LU_NO_CLONES)
#define ESI_LU_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define ESI_LU_CLONES
#endif

// Every lane loop is independent per lane: tell the vectorizer so (GCC's cost model otherwise
// leaves some 2-lane loops scalar; CMake adds -fopenmp-simd, which enables only this pragma).
#if defined(__clang__)
#define ESI_LANES _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__)
#define ESI_LANES _Pragma("omp simd")
#else
#define ESI_LANES
#endif

// One out-of-line kernel per element type and width, named fn_T_L; `kernel(T, L)` defines one.
#define ESI_LU_ALL_WIDTHS(kernel, T) \
  kernel(T, 1) kernel(T, 2) kernel(T, 4) kernel(T, 8) kernel(T, 16) kernel(T, 32) kernel(T, 64)

#define ESI_LU_DISPATCH(fn, T, lanes, ...)                 \
  switch (lanes) {                                         \
    case 1: return fn##_##T##_1(__VA_ARGS__);              \
    case 2: return fn##_##T##_2(__VA_ARGS__);              \
    case 4: return fn##_##T##_4(__VA_ARGS__);              \
    case 8: return fn##_##T##_8(__VA_ARGS__);              \
    case 16: return fn##_##T##_16(__VA_ARGS__);            \
    case 32: return fn##_##T##_32(__VA_ARGS__);            \
    case 64: return fn##_##T##_64(__VA_ARGS__);            \
    default: ESI_ASSERT(!"lanes is one of kLuLaneWidths"); \
  }

namespace esi::linalg {
/// Rows lu_factor eliminates together: each U entry of a pivot row is loaded once for every
/// row of the group that needs it (lu_factor.cpp; the plan's operation list is grouped so).
inline constexpr int kFactorRowGroup = 4;
}  // namespace esi::linalg
