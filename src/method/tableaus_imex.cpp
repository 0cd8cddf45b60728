// Additive Runge-Kutta (IMEX) tableaus of Kennedy & Carpenter, "Additive Runge-Kutta schemes
// for convection-diffusion-reaction equations", Appl. Numer. Math. 44 (2003) 139-181:
// ARK3(2)4L[2]SA (OrdinaryDiffEq's KenCarp3) and ARK4(3)6L[2]SA (KenCarp4). The numbers are the
// paper's, as SUNDIALS ARKODE lists them (LLNL/sundials:src/arkode/arkode_butcher_erk.def,
// ARKODE_ARK324L2SA_ERK_4_2_3 / ARKODE_ARK436L2SA_ERK_6_3_4, and arkode_butcher_dirk.def,
// the matching _DIRK_ tables); KenCarp4's are exact rationals there, KenCarp3's 40-digit
// decimals. Both halves share c and b (the pair's coupling conditions need that), the implicit
// half is stiffly accurate (its last row is b), L-stable, and its first stage explicit.
// btilde = b - bhat, bhat the embedded weights (the paper's b-hat, ARKODE's d).
#include "esi/core/error.hpp"
#include "method/tableau.hpp"

namespace esi::method::detail {
namespace {

// --- ARK3(2)4L[2]SA ---
constexpr double kKc3Gamma = 0.4358665215084589994160194511935568425293;
constexpr double kKc3b0 = 0.1876410243467238251612921441668043913795;
constexpr double kKc3b1 = -0.5952974735769549480478230275858851737782;
constexpr double kKc3b2 = 0.9717899277217721234705114322255239398694;
constexpr double kKc3bhat0 = 0.2147402862233891404862383406484193714659;
constexpr double kKc3bhat1 = -0.4851622638849390928209050808398155895845;
constexpr double kKc3bhat2 = 0.86872500252038755116621237682951240796;
constexpr double kKc3bhat3 = 0.4016969751411624011684543633618838101586;

constexpr ArkTableau kKenCarp3{
    .stages = 4,
    .gamma = kKc3Gamma,
    .ae = {{0},
           {0.8717330430169179988320389023871136850586},
           {0.52758901197630041156180797140291790433, 0.07241098802369958843819202859708209566999},
           {0.3990960076760701320627260736092142797856, -0.437557654613519443722846363831022571942,
            1.038461646937449311660120290221808292156}},
    .ai = {{0},
           {kKc3Gamma, kKc3Gamma},
           {0.2576482460664272457999960162840797092643,
            -0.09351476757488624521601546747763655179361, kKc3Gamma},
           {kKc3b0, kKc3b1, kKc3b2, kKc3Gamma}},
    .b = {kKc3b0, kKc3b1, kKc3b2, kKc3Gamma},
    .btilde = {kKc3b0 - kKc3bhat0, kKc3b1 - kKc3bhat1, kKc3b2 - kKc3bhat2, kKc3Gamma - kKc3bhat3},
    .c = {0, 0.8717330430169179988320389023871136850586, 0.6, 1}};

// --- ARK4(3)6L[2]SA ---
constexpr double kKc4b0 = 82889.0 / 524892.0;
constexpr double kKc4b2 = 15625.0 / 83664.0;
constexpr double kKc4b3 = 69875.0 / 102672.0;
constexpr double kKc4b4 = -2260.0 / 8211.0;
constexpr double kKc4b5 = 0.25;

constexpr ArkTableau kKenCarp4{
    .stages = 6,
    .gamma = 0.25,
    .ae = {{0},
           {0.5},
           {13861.0 / 62500.0, 6889.0 / 62500.0},
           {-116923316275.0 / 2393684061468.0, -2731218467317.0 / 15368042101831.0,
            9408046702089.0 / 11113171139209.0},
           {-451086348788.0 / 2902428689909.0, -2682348792572.0 / 7519795681897.0,
            12662868775082.0 / 11960479115383.0, 3355817975965.0 / 11060851509271.0},
           {647845179188.0 / 3216320057751.0, 73281519250.0 / 8382639484533.0,
            552539513391.0 / 3454668386233.0, 3354512671639.0 / 8306763924573.0,
            4040.0 / 17871.0}},
    .ai = {{0},
           {0.25, 0.25},
           {8611.0 / 62500.0, -1743.0 / 31250.0, 0.25},
           {5012029.0 / 34652500.0, -654441.0 / 2922500.0, 174375.0 / 388108.0, 0.25},
           {15267082809.0 / 155376265600.0, -71443401.0 / 120774400.0,
            730878875.0 / 902184768.0, 2285395.0 / 8070912.0, 0.25},
           {kKc4b0, 0, kKc4b2, kKc4b3, kKc4b4, kKc4b5}},
    .b = {kKc4b0, 0, kKc4b2, kKc4b3, kKc4b4, kKc4b5},
    .btilde = {kKc4b0 - 4586570599.0 / 29645900160.0, 0, kKc4b2 - 178811875.0 / 945068544.0,
               kKc4b3 - 814220225.0 / 1159782912.0, kKc4b4 - -3700637.0 / 11593932.0,
               kKc4b5 - 61727.0 / 225920.0},
    .c = {0, 0.5, 83.0 / 250.0, 31.0 / 50.0, 17.0 / 20.0, 1}};

}  // namespace

const ArkTableau& ark_tableau(MethodId id) {
  switch (id) {
    case MethodId::KenCarp3: return kKenCarp3;
    case MethodId::KenCarp4: return kKenCarp4;
    default: break;
  }
  ESI_ASSERT(false && "not an additive Runge-Kutta method");
  return kKenCarp4;
}

}  // namespace esi::method::detail
