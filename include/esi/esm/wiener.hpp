// Where a Wiener parameter may appear (spec §5.4, §6.3.1): a parameter with
// `update: {"kind": "wiener"}` is white noise dW/dt, so it has a meaning only as a term of a
// state equation, D(x) ~ f + g * W with f and g free of every Wiener parameter.
//
// `check_wiener_use` is run by the trial flatten of `esi validate` and by the SDE driver, so
// both refuse the same documents:
//   - `wiener_nonlinear`: a state equation that uses a Wiener parameter other than linearly.
//     Linear means, structurally: under +, -, unary -, as one factor of a product whose other
//     factors are free of Wiener parameters, or as the numerator of a division by such a
//     denominator. Anything else that reads one (W * W, exp(W), sign(W), W in a condition) is
//     not linear; this test is exact for these ops and needs no algebra.
//   - `unsupported_sde_noise`: a Wiener parameter read by an observed, an initial value or a
//     parameter's default expression (esi has no meaning for white noise there yet).
#pragma once

#include "esi/esm/system.hpp"

namespace esi::esm {

/// Throws esi::Error for the first misplaced Wiener parameter (file and pointer of the state,
/// observed or parameter that reads it). A system without Wiener parameters always passes.
void check_wiener_use(const System& system);

}  // namespace esi::esm
