// Dense-output (continuous extension) coefficients of the methods that have their own
// interpolant. Numbers only, copied from OrdinaryDiffEq.jl (each table cites its file); the
// other methods keep the Integrator's cubic Hermite, as OrdinaryDiffEq does for BS3.
//
// Why: cubic Hermite from (u0, f0, u1, f1) is only O(h^4) locally, so at tight tolerances its
// mid-step error exceeds what the 4th/5th-order methods deliver at step ends (saveat output
// would be less accurate than rtol promises). These interpolants reuse the stage slopes.
#include "method/tableau.hpp"

namespace esi::method::detail {
namespace {

// SciML/OrdinaryDiffEq.jl:lib/OrdinaryDiffEqTsit5/src/tsit_tableaus.jl (Tsit5Interp, the
// Float64 branch): b_i(theta) = r_i1 theta + r_i2 theta^2 + r_i3 theta^3 + r_i4 theta^4
// (Tsitouras 2011); r_i1 = 0 for i > 1. Order 4.
constexpr ErkDense kTsit5Dense{
    .order = 4,
    .r = {{1.0, -2.763706197274826, 2.9132554618219126, -1.0530884977290216},
          {0, 0.13169999999999998, -0.2234, 0.1017},
          {0, 3.9302962368947516, -5.941033872131505, 2.490627285651253},
          {0, -12.411077166933676, 30.33818863028232, -16.548102889244902},
          {0, 37.50931341651104, -88.1789048947664, 47.37952196281928},
          {0, -27.896526289197286, 65.09189467479366, -34.87065786149661},
          {0, 1.5, -4, 2.5}}};

// Dormand-Prince dense output (Hairer-Norsett-Wanner I, p. 192), in OrdinaryDiffEq's form:
// SciML/OrdinaryDiffEq.jl:lib/OrdinaryDiffEqLowOrderRK/src/low_order_rk_tableaus.jl
// (DP5_dense_ds: d1, d3..d7) with lib/OrdinaryDiffEqLowOrderRK/src/interpolants.jl and the DP5
// perform_step (y0 + h(K1 th + K2 th(1-th) + K3 th^2(1-th) + K4 th^2(1-th)^2) with K1 = sum b k,
// K2 = k1 - K1, K3 = K1 - k7 - K2, K4 = sum d k). `expand_dp5` turns that into per-stage
// monomial coefficients at compile time. Order 4.
constexpr double kDp5B[7] = {35.0 / 384, 0, 500.0 / 1113, 125.0 / 192, -2187.0 / 6784,
                             11.0 / 84, 0};
constexpr double kDp5D[7] = {-1.1270175653862835, 0, 2.675424484351598, -5.685526961588504,
                             3.5219323679207912, -1.7672812570757455, 2.382468931778144};

constexpr ErkDense expand_dp5() {
  ErkDense dense{};
  dense.order = 4;
  for (int i = 0; i < 7; ++i) {
    const double b = kDp5B[i], d = kDp5D[i];
    const double e = (i == 0 ? 1.0 : 0.0) - b;      // weight of K2 = k1 - K1
    const double g = b - (i == 6 ? 1.0 : 0.0) - e;  // weight of K3 = K1 - k7 - K2
    // th(1-th) = th - th^2; th^2(1-th) = th^2 - th^3; th^2(1-th)^2 = th^2 - 2th^3 + th^4.
    dense.r[i][0] = b + e;
    dense.r[i][1] = -e + g + d;
    dense.r[i][2] = -g - 2 * d;
    dense.r[i][3] = d;
  }
  return dense;
}
constexpr ErkDense kDp5Dense = expand_dp5();

// SciML/OrdinaryDiffEq.jl:lib/OrdinaryDiffEqRosenbrock/src/rosenbrock_tableaus.jl
// (Rodas4Tableau, H), used by rosenbrock_interpolants.jl in the two-row Rodas form. Order 3.
constexpr RosenbrockDense kRodas4Dense{
    .order = 3,
    .rows = 2,
    .H = {{10.12623508344586, -7.487995877610167, -34.80091861555747, -7.992771707568823,
           1.025137723295662, 0},
          {-0.6762803392801253, 6.087714651680015, 16.43084320892478, 24.76722511418386,
           -6.594389125716872, 0}}};

// SciML/OrdinaryDiffEq.jl:lib/OrdinaryDiffEqRosenbrock/src/rosenbrock_tableaus.jl
// (Rodas5PTableau, H; Steinebach 2023), the three-row Rodas form of rosenbrock_interpolants.jl.
// Order 4.
constexpr RosenbrockDense kRodas5PDense{
    .order = 4,
    .rows = 3,
    .H = {{25.948786856663858, -2.5579724845846235, 10.433815404888879, -2.3679251022685204,
           0.524948541321073, 1.1241088310450404, 0.4272876194431874, -0.17202221070155493},
          {-9.91568850695171, -0.9689944594115154, 3.0438037242978453, -24.495224566215796,
           20.176138334709044, 15.98066361424651, -6.789040303419874, -6.710236069923372},
          {11.419903575922262, 2.8879645146136994, 72.92137995996029, 80.12511834622643,
           -52.072871366152654, -59.78993625266729, -0.15582684282751913, 4.883087185713722}}};

// Shampine-Reichelt ode23s interpolant, SciML/OrdinaryDiffEq.jl:
// lib/OrdinaryDiffEqRosenbrock/src/rosenbrock_interpolants.jl (Rosenbrock23):
//   u = y0 + h (c1 k1 + c2 k2), c1 = th(1-th)/(1-2d), c2 = th(th-2d)/(1-2d), d = 1/(2+sqrt 2),
// with ode23s slopes k1, k2. In the transformed stages of tableaus_implicit.cpp,
// h k1 = k'_1/d and h k2 = (k'_1 + k'_2)/d, and u1 = y0 + h k2, so the same polynomial is the
// one-row Rodas form with K_0 = h (k1 - k2)/(1-2d) = -k'_2 / (d (1-2d)). Order 2.
constexpr double kOde23sD = 1.0 / (2.0 + 1.41421356237309504880);
constexpr RosenbrockDense kRosenbrock23Dense{
    .order = 2, .rows = 1, .H = {{0, -1.0 / (kOde23sD * (1.0 - 2.0 * kOde23sD)), 0}}};

}  // namespace

const ErkDense* erk_dense(MethodId id) {
  switch (id) {
    case MethodId::Tsit5: return &kTsit5Dense;
    case MethodId::DP5: return &kDp5Dense;
    default: return nullptr;
  }
}

const RosenbrockDense* rosenbrock_dense(MethodId id) {
  switch (id) {
    case MethodId::Rosenbrock23: return &kRosenbrock23Dense;
    case MethodId::Rodas4: return &kRodas4Dense;
    case MethodId::Rodas5P: return &kRodas5PDense;
    default: return nullptr;
  }
}

}  // namespace esi::method::detail
