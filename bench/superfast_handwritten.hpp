// A hand-written SuperFast right-hand side (corpus EarthSciModels/components/gaschem/
// superfast.esm, 27 reactions, 12 transported species), the baseline the tape interpreter is
// measured against in bench_kernel.cpp.
//
// Written the way a person would: rate constants once per parameter set (they depend only on
// T, P, the photolysis rates and the constant species), then per cell the mass-action products
// and their stoichiometric sums, with squares as x * x. Layout matches the kernel's lanes:
// species-major, cell index fastest, u[s * stride + c] in SuperFastHand::kSpecies order.
#pragma once

#include <array>
#include <cstddef>

namespace esi::bench {

struct SuperFastHand {
  /// Transported species, in the order of the u / du rows.
  static constexpr std::array<const char*, 12> kSpecies{
      "O3", "OH", "HO2", "H2O2", "NO", "NO2", "HNO3", "CH3O2", "CH3OOH", "CH2O", "CO", "ISOP"};

  struct Parameters {
    double T = 280, P = 101325, jNO2 = 0.0149, jH2COa = 0.00014, jH2COb = 0.00014,
           jH2O2 = 1.0097e-05, jCH3OOH = 8.9573e-06, jO32OH = 0.000227;
    double O2 = 209500000, CH4 = 1700, H2O = 18390000;  // constant species [ppb]
  };

  /// Rate constants of the 27 reactions (R1..R27) for `p`.
  static std::array<double, 27> rate_constants(const Parameters& p);

  /// du for `cells` cells: u and du are species-major with row stride `stride`.
  template <class T>
  static void rhs(const std::array<double, 27>& k, const T* u, T* du, std::size_t cells,
                  std::size_t stride);
};

extern template void SuperFastHand::rhs<double>(const std::array<double, 27>&, const double*,
                                                double*, std::size_t, std::size_t);
extern template void SuperFastHand::rhs<float>(const std::array<double, 27>&, const float*,
                                               float*, std::size_t, std::size_t);

}  // namespace esi::bench
