// Explicit Runge-Kutta tableaus (Butcher form). Numbers only, copied from OrdinaryDiffEq.jl;
// the SSP methods are written there in Shu-Osher form and are converted here by hand (the
// conversion is shown beside each table). btilde = b - bhat (its sign does not matter).
#include "esi/core/error.hpp"
#include "method/tableau.hpp"

namespace esi::method::detail {
namespace {

constexpr ErkTableau kEuler{.stages = 1, .a = {}, .b = {1}, .btilde = {}, .c = {0}};

// Heun with explicit Euler embedded (order 2(1)).
constexpr ErkTableau kHeun{
    .stages = 2, .a = {{0}, {1}}, .b = {0.5, 0.5}, .btilde = {-0.5, 0.5}, .c = {0, 1}};

// Classical RK4; fixed step (no embedded estimate here).
constexpr ErkTableau kRk4{.stages = 4,
                          .a = {{0}, {0.5}, {0, 0.5}, {0, 0, 1}},
                          .b = {1.0 / 6, 1.0 / 3, 1.0 / 3, 1.0 / 6},
                          .btilde = {},
                          .c = {0, 0.5, 0.5, 1}};

// SciML/OrdinaryDiffEq.jl:lib/OrdinaryDiffEqSSPRK/src/ssprk_perform_step.jl (SSPRK33,
// Shu-Osher): u1 = u0 + h f0; u2 = (3u0 + u1 + h f(u1))/4; u = (u0 + 2u2 + 2h f(u2))/3.
constexpr ErkTableau kSsprk33{.stages = 3,
                              .a = {{0}, {1}, {0.25, 0.25}},
                              .b = {1.0 / 6, 1.0 / 6, 2.0 / 3},
                              .btilde = {},
                              .c = {0, 1, 0.5}};

// SciML/OrdinaryDiffEq.jl:lib/OrdinaryDiffEqSSPRK/src/ssprk_perform_step.jl (SSPRK43):
// b = (1/6, 1/6, 1/6, 1/2), error = (bhat' - b)/2 with bhat' = (1/3, 1/3, 1/3, 0).
constexpr ErkTableau kSsprk43{.stages = 4,
                              .a = {{0}, {0.5}, {0.5, 0.5}, {1.0 / 6, 1.0 / 6, 1.0 / 6}},
                              .b = {1.0 / 6, 1.0 / 6, 1.0 / 6, 0.5},
                              .btilde = {1.0 / 12, 1.0 / 12, 1.0 / 12, -0.25},
                              .c = {0, 0.5, 1, 0.5}};

// SciML/OrdinaryDiffEq.jl:lib/OrdinaryDiffEqSSPRK/src/ssprk_perform_step.jl (SSPRK104,
// Ketcheson 2008). Shu-Osher stages Y2..Y5 add h/6 each; Y6 = (3u0 + 2Y5 + (h/3) k5)/5 gives
// a[i][0..4] = 1/15; Y7..Y10 add h/6; u = (u0 + 9(Y5 + h k5/6) + 15(Y10 + h k10/6))/25 gives
// b = 1/10 for every stage.
constexpr double k6 = 1.0 / 6, k15 = 1.0 / 15;
constexpr ErkTableau kSsprk104{
    .stages = 10,
    .a = {{0},
          {k6},
          {k6, k6},
          {k6, k6, k6},
          {k6, k6, k6, k6},
          {k15, k15, k15, k15, k15},
          {k15, k15, k15, k15, k15, k6},
          {k15, k15, k15, k15, k15, k6, k6},
          {k15, k15, k15, k15, k15, k6, k6, k6},
          {k15, k15, k15, k15, k15, k6, k6, k6, k6}},
    .b = {0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1},
    .btilde = {},
    .c = {0, k6, 2 * k6, 3 * k6, 4 * k6, 5 * k15, 5 * k15 + k6, 5 * k15 + 2 * k6,
          5 * k15 + 3 * k6, 1}};

// SciML/OrdinaryDiffEq.jl:lib/OrdinaryDiffEqLowOrderRK/src/low_order_rk_tableaus.jl (BS3).
constexpr ErkTableau kBs3{.stages = 4,
                          .a = {{0}, {0.5}, {0, 0.75}, {2.0 / 9, 1.0 / 3, 4.0 / 9}},
                          .b = {2.0 / 9, 1.0 / 3, 4.0 / 9, 0},
                          .btilde = {5.0 / 72, -1.0 / 12, -1.0 / 9, 1.0 / 8},
                          .c = {0, 0.5, 0.75, 1}};

// SciML/OrdinaryDiffEq.jl:lib/OrdinaryDiffEqTsit5/src/tsit_tableaus.jl (Tsit5).
constexpr ErkTableau kTsit5{
    .stages = 7,
    .a = {{0},
          {0.161},
          {-0.008480655492356989, 0.335480655492357},
          {2.8971530571054935, -6.359448489975075, 4.3622954328695815},
          {5.325864828439257, -11.748883564062828, 7.4955393428898365, -0.09249506636175525},
          {5.86145544294642, -12.92096931784711, 8.159367898576159, -0.071584973281401,
           -0.028269050394068383},
          {0.09646076681806523, 0.01, 0.4798896504144996, 1.379008574103742, -3.290069515436081,
           2.324710524099774}},
    .b = {0.09646076681806523, 0.01, 0.4798896504144996, 1.379008574103742, -3.290069515436081,
          2.324710524099774, 0},
    .btilde = {-0.00178001105222577714, -0.0008164344596567469, 0.007880878010261995,
               -0.1447110071732629, 0.5823571654525552, -0.45808210592918697,
               0.015151515151515152},
    .c = {0, 0.161, 0.327, 0.9, 0.9800255409045097, 1, 1}};

// SciML/OrdinaryDiffEq.jl:lib/OrdinaryDiffEqLowOrderRK/src/low_order_rk_tableaus.jl (DP5).
constexpr ErkTableau kDp5{
    .stages = 7,
    .a = {{0},
          {0.2},
          {0.075, 0.225},
          {44.0 / 45, -56.0 / 15, 32.0 / 9},
          {19372.0 / 6561, -25360.0 / 2187, 64448.0 / 6561, -212.0 / 729},
          {9017.0 / 3168, -355.0 / 33, 46732.0 / 5247, 49.0 / 176, -5103.0 / 18656},
          {35.0 / 384, 0, 500.0 / 1113, 125.0 / 192, -2187.0 / 6784, 11.0 / 84}},
    .b = {35.0 / 384, 0, 500.0 / 1113, 125.0 / 192, -2187.0 / 6784, 11.0 / 84, 0},
    .btilde = {-71.0 / 57600, 0, 71.0 / 16695, -71.0 / 1920, 17253.0 / 339200, -22.0 / 525,
               1.0 / 40},
    .c = {0, 0.2, 0.3, 0.8, 8.0 / 9, 1, 1}};

}  // namespace

const ErkTableau& erk_tableau(MethodId id) {
  switch (id) {
    case MethodId::Euler: return kEuler;
    case MethodId::Heun: return kHeun;
    case MethodId::RK4: return kRk4;
    case MethodId::SSPRK33: return kSsprk33;
    case MethodId::SSPRK43: return kSsprk43;
    case MethodId::SSPRK104: return kSsprk104;
    case MethodId::BS3: return kBs3;
    case MethodId::Tsit5: return kTsit5;
    case MethodId::DP5: return kDp5;
    default: break;
  }
  ESI_ASSERT(false && "not an explicit method");
  return kEuler;
}

}  // namespace esi::method::detail
