#include "superfast_handwritten.hpp"

#include <cmath>

namespace esi::bench {
namespace {

// arrh_per_molecule(A, B) of the document: A * P * exp(B / T) / (8314000 * T).
double arrh(const SuperFastHand::Parameters& p, double A, double B) {
  return A * p.P * std::exp(B / p.T) / (8314000.0 * p.T);
}

// The falloff factor 0.6^(1 / (1 + log10(x)^2)) / (1 + x) shared by R8 and R10.
double falloff(double x) { return std::pow(0.6, 1.0 / (1.0 + std::pow(std::log10(x), 2))) / (1.0 + x); }

}  // namespace

std::array<double, 27> SuperFastHand::rate_constants(const Parameters& p) {
  const double T = p.T, P = p.P;
  std::array<double, 27> k{};
  k[0] = arrh(p, 1023.4, -940);
  k[1] = arrh(p, 6.02, -490);
  k[2] = arrh(p, 28896, 250);
  k[3] = (180.6 * P * std::exp(460 / T) / (8314000.0 * T) +
          761048.4 * P * P * std::exp(920 / T) / (69122596000000.0 * T * T)) *
         (1 + 8.428e-07 * P * p.H2O * p.H2O * std::exp(2200 / T) / (8314000.0 * T));
  k[4] = 1083.6 * P / (8314000.0 * T);
  k[5] = arrh(p, 1806, -1500);
  k[6] = arrh(p, 1986.6, 270);
  const double t3 = std::pow(300 / T, 3);
  const double x8 = 5423448340800000.0 * P * t3 / (1165130478176000000.0 * T);
  k[7] = 652327200.0 * P * P * t3 * falloff(x8) / (69122596000000.0 * T * T);
  k[8] = arrh(p, 1474.9, -1775) * p.CH4;  // CH4 is a constant species: folded into k
  const double y = 5333057535120000.0 * P * std::pow(300 / T, 1.3) / (45772983071199992.0 * T * T);
  const double z = 4.5195402839999995e+32 * P * std::pow(300 / T, 6.1) / (8.738478586320001e+37 * T);
  k[9] = 641455080.0 * P * P * falloff(y) / (69122596000000.0 * T * T * T) +
         90.3 * P * falloff(z) / (8314000.0 * T);
  k[10] = arrh(p, 3311.0, 125);
  k[11] = arrh(p, 246.82, 750);
  k[12] = arrh(p, 1601.32, 200);
  k[13] = arrh(p, 686.28, 200);
  k[14] = arrh(p, 1685.6, 300);
  k[15] = arrh(p, 57.19, 390);
  k[16] = 2.408e-09 * P / (8314000.0 * T) * p.H2O;  // H2O constant: folded into k
  k[17] = k[18] = k[19] = arrh(p, 16254, 390);
  k[20] = arrh(p, 3.36518, -1814);
  k[21] = p.jO32OH;
  k[22] = p.jH2O2;
  k[23] = p.jNO2;
  k[24] = p.jH2COa;
  k[25] = p.jH2COb;
  k[26] = p.jCH3OOH;
  return k;
}

template <class T>
void SuperFastHand::rhs(const std::array<double, 27>& kd, const T* u, T* du, std::size_t cells,
                        std::size_t stride) {
  T k[27];
  for (int i = 0; i < 27; ++i) k[i] = static_cast<T>(kd[i]);
  // restrict: the rows never overlap, which lets the compiler keep inputs in registers and
  // vectorize across cells, as anyone tuning this loop by hand would make sure of.
  const T* __restrict O3 = u;
  const T* __restrict OH = u + stride;
  const T* __restrict HO2 = u + 2 * stride;
  const T* __restrict H2O2 = u + 3 * stride;
  const T* __restrict NO = u + 4 * stride;
  const T* __restrict NO2 = u + 5 * stride;
  const T* __restrict CH3O2 = u + 7 * stride;
  const T* __restrict CH3OOH = u + 8 * stride;
  const T* __restrict CH2O = u + 9 * stride;
  const T* __restrict CO = u + 10 * stride;
  const T* __restrict ISOP = u + 11 * stride;
  T* __restrict dO3 = du;
  T* __restrict dOH = du + stride;
  T* __restrict dHO2 = du + 2 * stride;
  T* __restrict dH2O2 = du + 3 * stride;
  T* __restrict dNO = du + 4 * stride;
  T* __restrict dNO2 = du + 5 * stride;
  T* __restrict dHNO3 = du + 6 * stride;
  T* __restrict dCH3O2 = du + 7 * stride;
  T* __restrict dCH3OOH = du + 8 * stride;
  T* __restrict dCH2O = du + 9 * stride;
  T* __restrict dCO = du + 10 * stride;
  T* __restrict dISOP = du + 11 * stride;
  for (std::size_t c = 0; c < cells; ++c) {
    const T r1 = k[0] * O3[c] * OH[c], r2 = k[1] * O3[c] * HO2[c], r3 = k[2] * HO2[c] * OH[c];
    const T r4 = k[3] * HO2[c] * HO2[c], r5 = k[4] * H2O2[c] * OH[c], r6 = k[5] * NO[c] * O3[c];
    const T r7 = k[6] * NO[c] * HO2[c], r8 = k[7] * NO2[c] * OH[c], r9 = k[8] * OH[c];
    const T r10 = k[9] * CO[c] * OH[c], r11 = k[10] * OH[c] * CH2O[c];
    const T r12 = k[11] * HO2[c] * CH3O2[c], r13 = k[12] * CH3OOH[c] * OH[c];
    const T r14 = k[13] * CH3OOH[c] * OH[c], r15 = k[14] * NO[c] * CH3O2[c];
    const T r16 = k[15] * CH3O2[c] * CH3O2[c], r17 = k[16] * NO2[c];
    const T r18 = k[17] * ISOP[c] * OH[c], r19 = k[18] * ISOP[c] * OH[c];
    const T r20 = k[19] * ISOP[c] * OH[c], r21 = k[20] * O3[c] * ISOP[c];
    const T r22 = k[21] * O3[c], r23 = k[22] * H2O2[c], r24 = k[23] * NO2[c];
    const T r25 = k[24] * CH2O[c], r26 = k[25] * CH2O[c], r27 = k[26] * CH3OOH[c];
    dO3[c] = -r1 - r2 - r6 - r21 - r22 + r24;
    dOH[c] = -r1 + r2 - r3 - r5 + r7 - r8 - r9 - r10 - r11 - r13 - r18 - r19 - T(0.5) * r20 +
              2 * r22 + 2 * r23 + r27;
    dHO2[c] = r1 - r2 - r3 - 2 * r4 + r5 - r7 + r10 + r11 - r12 + r15 + T(0.8) * r16 +
              T(0.06) * r21 + 2 * r25 + r27;
    dH2O2[c] = r4 - r5 - r23;
    dNO[c] = -r6 - r7 - r15 + r24;
    dNO2[c] = r6 + r7 - r8 + r15 - r17 - r24;
    dHNO3[c] = r8 + T(0.5) * r17;
    dCH3O2[c] = r9 - r12 + r13 - r15 - 2 * r16 + 2 * r18 + T(1.86) * r21;
    dCH3OOH[c] = r12 - r13 - r14 - r27;
    dCH2O[c] = -r11 + r14 + r15 + 2 * r16 + T(0.87) * r21 - r25 - r26 + r27;
    dCO[c] = -r10 + r11 + T(0.05) * r21 + r25 + r26;
    dISOP[c] = -r18 - r21;
  }
}

template void SuperFastHand::rhs<double>(const std::array<double, 27>&, const double*, double*,
                                         std::size_t, std::size_t);
template void SuperFastHand::rhs<float>(const std::array<double, 27>&, const float*, float*,
                                        std::size_t, std::size_t);

}  // namespace esi::bench
