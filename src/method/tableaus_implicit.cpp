// Rosenbrock and ESDIRK tableaus. Numbers only, copied from OrdinaryDiffEq.jl. Methods that
// OrdinaryDiffEq states in the classical (alpha, Gamma, b, bhat) form are converted to the
// transformed form by `transform` below, the same map as OrdinaryDiffEq's `_transformtab`
// (Hairer-Wanner IV.7: a = alpha Gamma^-1, C = diag(Gamma^-1) - Gamma^-1, b = B Gamma^-1,
// d_i = sum_j Gamma_ij, c_i = sum_j alpha_ij), evaluated at compile time.
#include "esi/core/error.hpp"
#include "method/tableau.hpp"

namespace esi::method::detail {
namespace {

constexpr double kSqrt2 = 1.41421356237309504880;

struct ClassicalRosenbrock {
  int stages;
  double alpha[kMaxStages][kMaxStages];
  double Gamma[kMaxStages][kMaxStages];  // lower triangular, constant diagonal
  double B[kMaxStages];
  double Bhat[kMaxStages];
};

// Inverse of a lower-triangular matrix by forward substitution (compile-time only).
constexpr void invert_lower(int s, const double (&g)[kMaxStages][kMaxStages],
                            double (&inv)[kMaxStages][kMaxStages]) {
  for (int col = 0; col < s; ++col)
    for (int i = col; i < s; ++i) {
      double sum = (i == col) ? 1.0 : 0.0;
      for (int j = col; j < i; ++j) sum -= g[i][j] * inv[j][col];
      inv[i][col] = sum / g[i][i];
    }
}

constexpr RosenbrockTableau transform(const ClassicalRosenbrock& m) {
  RosenbrockTableau t{};
  const int s = m.stages;
  double inv[kMaxStages][kMaxStages] = {};
  invert_lower(s, m.Gamma, inv);
  t.stages = s;
  t.gamma = m.Gamma[0][0];
  for (int i = 0; i < s; ++i) {
    for (int j = 0; j < s; ++j) {
      double aij = 0;
      for (int k = 0; k < s; ++k) aij += m.alpha[i][k] * inv[k][j];
      t.a[i][j] = aij;
      t.C[i][j] = (i == j ? inv[i][i] : 0.0) - inv[i][j];
      t.b[i] += m.B[j] * inv[j][i];
      t.btilde[i] += (m.B[j] - m.Bhat[j]) * inv[j][i];
      t.c[i] += m.alpha[i][j];
      t.d[i] += m.Gamma[i][j];
    }
  }
  return t;
}

// Shampine-Reichelt ode23s, as in SciML/OrdinaryDiffEq.jl:
// lib/OrdinaryDiffEqRosenbrock/src/rosenbrock_perform_step.jl (Rosenbrock23/32: d = 1/(2+√2),
// e32 = 6+√2; k1 = W\(F0 + hd T), k2 = W\(F1 - k1) + k1, k3 = W\(F2 - e32(k2-F1) - 2(k1-F0)
// + hd T)). Eliminating F0, F1 with the stage equations gives the classical form below; the
// time-derivative weight of stage 3 is -d, i.e. the k3 right-hand side carries hd·T (ode23s).
constexpr double kD = 1.0 / (2.0 + kSqrt2), kE32 = 6.0 + kSqrt2;
constexpr ClassicalRosenbrock kOde23sBase{
    .stages = 3,
    .alpha = {{0}, {0.5}, {0, 1}},
    .Gamma = {{kD}, {-kD, kD}, {kD * (kE32 - 2), -kE32 * kD, kD}},
    .B = {},
    .Bhat = {}};
constexpr ClassicalRosenbrock with_weights(ClassicalRosenbrock m, double b0, double b1,
                                           double b2, double e0, double e1, double e2) {
  // e = B - Bhat = (h/6)(k1 - 2k2 + k3) scaled into B units.
  m.B[0] = b0, m.B[1] = b1, m.B[2] = b2;
  m.Bhat[0] = b0 - e0, m.Bhat[1] = b1 - e1, m.Bhat[2] = b2 - e2;
  return m;
}
constexpr RosenbrockTableau kRosenbrock23 =
    transform(with_weights(kOde23sBase, 0, 1, 0, 1.0 / 6, -2.0 / 6, 1.0 / 6));
constexpr RosenbrockTableau kRosenbrock32 =
    transform(with_weights(kOde23sBase, 1.0 / 6, 4.0 / 6, 1.0 / 6, 1.0 / 6, -2.0 / 6, 1.0 / 6));

// SciML/OrdinaryDiffEq.jl:lib/OrdinaryDiffEqRosenbrock/src/rosenbrock_tableaus.jl (ROS3P,
// Lang-Verwer 2001), written there as formulas in gamma = 1/2 + √3/6.
constexpr double kRos3pGamma = 0.788675134594812882254574390251;
constexpr double kRos3pInv = 1.0 / kRos3pGamma;
constexpr double kRos3pT1 = -kRos3pInv * (2.0 - 0.5 * kRos3pInv);
constexpr double kRos3pT2 = kRos3pInv * (2.0 / 3 - kRos3pInv / 6);
constexpr double kRos3pB1 = kRos3pInv * (1.0 + kRos3pT2), kRos3pB3 = kRos3pInv / 3;
constexpr RosenbrockTableau kRos3p{
    .stages = 3,
    .gamma = kRos3pGamma,
    .a = {{0}, {kRos3pInv}, {kRos3pInv, 0}},
    .C = {{0}, {-kRos3pInv * kRos3pInv}, {-kRos3pInv * (1.0 - kRos3pT1), kRos3pT1}},
    .b = {kRos3pB1, kRos3pT2, kRos3pB3},
    .btilde = {kRos3pB1 - 2.113248654051871, kRos3pT2 - 1.0, kRos3pB3 - 0.4226497308103742},
    .c = {0, 1, 1},
    .d = {0.7886751345948129, -0.2113248654051871, -1.077350269189626}};

// SciML/OrdinaryDiffEq.jl:lib/OrdinaryDiffEqRosenbrock/src/rosenbrock_tableaus.jl (Rodas3,
// Sandu et al. 1997). u1 = u0 + 2k1 + k3 + k4, error k4.
constexpr RosenbrockTableau kRodas3{
    .stages = 4,
    .gamma = 0.5,
    .a = {{0}, {0}, {2, 0}, {2, 0, 1}},
    .C = {{0}, {4}, {1, -1}, {1, -1, -8.0 / 3}},
    .b = {2, 0, 1, 1},
    .btilde = {0, 0, 0, 1},
    .c = {0, 0, 1, 1},
    .d = {0.5, 1.5, 0, 0}};

// SciML/OrdinaryDiffEq.jl:lib/OrdinaryDiffEqRosenbrock/src/rosenbrock_tableaus.jl (Rodas4,
// Hairer-Wanner). Stiffly accurate: u1 = U6 + k6, error k6.
constexpr RosenbrockTableau kRodas4{
    .stages = 6,
    .gamma = 0.25,
    .a = {{0},
          {1.544},
          {0.9466785280815826, 0.2557011698983284},
          {3.314825187068521, 2.896124015972201, 0.9986419139977817},
          {1.221224509226641, 6.019134481288629, 12.53708332932087, -0.6878860361058950},
          {1.221224509226641, 6.019134481288629, 12.53708332932087, -0.6878860361058950, 1}},
    .C = {{0},
          {-5.6688},
          {-2.430093356833875, -0.2063599157091915},
          {-0.1073529058151375, -9.594562251023355, -20.47028614809616},
          {7.496443313967647, -10.24680431464352, -33.99990352819905, 11.70890893206160},
          {8.083246795921522, -7.981132988064893, -31.52159432874371, 16.31930543123136,
           -6.058818238834054}},
    .b = {1.221224509226641, 6.019134481288629, 12.53708332932087, -0.6878860361058950, 1, 1},
    .btilde = {0, 0, 0, 0, 0, 1},
    .c = {0, 0.386, 0.21, 0.63, 1, 1},
    .d = {0.25, -0.1043, 0.1035, -0.0362, 0, 0}};

// SciML/OrdinaryDiffEq.jl:lib/OrdinaryDiffEqRosenbrock/src/rosenbrock_tableaus.jl (Rodas5P,
// Steinebach 2023). Stiffly accurate: u1 = U8 + k8, error k8. (OrdinaryDiffEq passes c and d
// to its struct in swapped positions; here c are the stage times, d the f_t weights.)
constexpr double kR5a61 = -7.502846399306121, kR5a62 = 2.561846144803919,
                 kR5a63 = -11.627539656261098, kR5a64 = -0.18268767659942256,
                 kR5a65 = 0.030198172008377946;
constexpr RosenbrockTableau kRodas5P{
    .stages = 8,
    .gamma = 0.21193756319429014,
    .a = {{0},
          {3.0},
          {2.849394379747939, 0.45842242204463923},
          {-6.954028509809101, 2.489845061869568, -10.358996098473584},
          {2.8029986275628964, 0.5072464736228206, -0.3988312541770524, -0.04721187230404641},
          {kR5a61, kR5a62, kR5a63, kR5a64, kR5a65},
          {kR5a61, kR5a62, kR5a63, kR5a64, kR5a65, 1},
          {kR5a61, kR5a62, kR5a63, kR5a64, kR5a65, 1, 1}},
    .C = {{0},
          {-14.155112264123755},
          {-17.97296035885952, -2.859693295451294},
          {147.12150275711716, -1.41221402718213, 71.68940251302358},
          {165.43517024871676, -0.4592823456491126, 42.90938336958603, -5.961986721573306},
          {24.854864614690072, -3.0009227002832186, 47.4931110020768, 5.5814197821558125,
           -0.6610691825249471},
          {30.91273214028599, -3.1208243349937974, 77.79954646070892, 34.28646028294783,
           -19.097331116725623, -28.087943162872662},
          {37.80277123390563, -3.2571969029072276, 112.26918849496327, 66.9347231244047,
           -40.06618937091002, -54.66780262877968, -9.48861652309627}},
    .b = {kR5a61, kR5a62, kR5a63, kR5a64, kR5a65, 1, 1, 1},
    .btilde = {0, 0, 0, 0, 0, 0, 0, 1},
    .c = {0, 0.6358126895828704, 0.4095798393397535, 0.9769306725060716, 0.4288403609558664, 1,
          1, 1},
    .d = {0.21193756319429014, -0.42387512638858027, -0.3384627126235924, 1.8046452872882734,
          2.325825639765069, 0, 0, 0}};

// SciML/OrdinaryDiffEq.jl:lib/OrdinaryDiffEqRosenbrock/src/generic_rosenbrock.jl (ROS34PW2,
// Rang-Angermann 2005), classical form.
constexpr double kPw2Gamma = 4.3586652150845900e-1;
constexpr RosenbrockTableau kRos34pw2 = transform(ClassicalRosenbrock{
    .stages = 4,
    .alpha = {{0},
              {8.7173304301691801e-1},
              {8.4457060015369423e-1, -1.1299064236484185e-1},
              {0, 0, 1}},
    .Gamma = {{kPw2Gamma},
              {-8.7173304301691801e-1, kPw2Gamma},
              {-9.0338057013044082e-1, 5.4180672388095326e-2, kPw2Gamma},
              {2.4212380706095346e-1, -1.2232505839045147, 5.4526025533510214e-1, kPw2Gamma}},
    .B = {2.4212380706095346e-1, -1.2232505839045147, 1.5452602553351020,
          4.3586652150845900e-1},
    .Bhat = {3.7810903145819369e-1, -9.6042292212423178e-2, 0.5, 2.1793326075422950e-1}});

// --- ESDIRK (first stage explicit) ---

// Implicit Euler with the OrdinaryDiffEq-style estimate (h/2)(f1 - f0).
constexpr SdirkTableau kImplicitEuler{.stages = 2,
                                      .gamma = 1,
                                      .a = {{0}, {0, 1}},
                                      .b = {0, 1},
                                      .btilde = {-0.5, 0.5},
                                      .c = {0, 1}};

// Trapezoid (Crank-Nicolson); the estimate (h/2)(f1 - f0) is first order, so it is safe but
// conservative.
constexpr SdirkTableau kTrapezoid{.stages = 2,
                                  .gamma = 0.5,
                                  .a = {{0}, {0.5, 0.5}},
                                  .b = {0.5, 0.5},
                                  .btilde = {-0.5, 0.5},
                                  .c = {0, 1}};

// SciML/OrdinaryDiffEq.jl:lib/OrdinaryDiffEqSDIRK/src/sdirk_tableaus.jl (TRBDF2, Hosea-
// Shampine 1996): gamma_c = 2-√2, d = 1-√2/2, w = √2/4, btilde = ((1-√2)/3, 1/3, (√2-2)/3).
constexpr double kTrD = 1.0 - kSqrt2 / 2, kTrW = kSqrt2 / 4;
constexpr SdirkTableau kTrbdf2{.stages = 3,
                               .gamma = kTrD,
                               .a = {{0}, {kTrD, kTrD}, {kTrW, kTrW, kTrD}},
                               .b = {kTrW, kTrW, kTrD},
                               .btilde = {(1.0 - kSqrt2) / 3, 1.0 / 3, (kSqrt2 - 2.0) / 3},
                               .c = {0, 2.0 - kSqrt2, 1}};

// SciML/OrdinaryDiffEq.jl:lib/OrdinaryDiffEqSDIRK/src/sdirk_tableaus.jl (Kvaerno3, Kvaerno
// 2004): c = (0, 2γ, 1, 1), stiffly accurate, btilde = bhat - b with bhat = (a31, a32, γ, 0).
constexpr double kKvG = 0.4358665215;
constexpr SdirkTableau kKvaerno3{
    .stages = 4,
    .gamma = kKvG,
    .a = {{0},
          {kKvG, kKvG},
          {0.490563388419108, 0.073570090080892, kKvG},
          {0.308809969973036, 1.490563388254106, -1.235239879727145, kKvG}},
    .b = {0.308809969973036, 1.490563388254106, -1.235239879727145, kKvG},
    .btilde = {0.181753418446072, -1.416993298173214, 1.671106401227145, -kKvG},
    .c = {0, 2 * kKvG, 1, 1}};

}  // namespace

const RosenbrockTableau& rosenbrock_tableau(MethodId id) {
  switch (id) {
    case MethodId::Rosenbrock23: return kRosenbrock23;
    case MethodId::Rosenbrock32: return kRosenbrock32;
    case MethodId::ROS3P: return kRos3p;
    case MethodId::Rodas3: return kRodas3;
    case MethodId::Rodas4: return kRodas4;
    case MethodId::Rodas5P: return kRodas5P;
    case MethodId::ROS34PW2: return kRos34pw2;
    default: break;
  }
  ESI_ASSERT(false && "not a Rosenbrock method");
  return kRodas4;
}

const SdirkTableau& sdirk_tableau(MethodId id) {
  switch (id) {
    case MethodId::ImplicitEuler: return kImplicitEuler;
    case MethodId::Trapezoid: return kTrapezoid;
    case MethodId::TRBDF2: return kTrbdf2;
    case MethodId::Kvaerno3: return kKvaerno3;
    default: break;
  }
  ESI_ASSERT(false && "not an SDIRK method");
  return kImplicitEuler;
}

}  // namespace esi::method::detail
