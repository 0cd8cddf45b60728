// Scalar semantics shared by the oracle and the tape, where the spec leaves a choice: min/max
// propagate NaN (as Julia's do), sign keeps ±0 and NaN, truth is "!= 0". Written as
// compare-and-select so the lane loops vectorize and give the same bits at every lane width.
#pragma once

namespace esi::kernel::detail {

template <class T>
inline T op_min(T a, T b) {
  return (a < b || a != a) ? a : b;
}
template <class T>
inline T op_max(T a, T b) {
  return (a > b || a != a) ? a : b;
}
template <class T>
inline T op_sign(T a) {
  return a > T(0) ? T(1) : (a < T(0) ? T(-1) : a);
}
template <class T>
inline T truth(bool b) {
  return b ? T(1) : T(0);
}

}  // namespace esi::kernel::detail
