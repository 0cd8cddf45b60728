// Each KPP rate function and the rate-expression grammar: the translated ESM expression,
// flattened and evaluated by the kernel's oracle, against the formula written directly in C++
// from KPP's util/UserRateLaws.f90 (KPP 2.x and 3.x) and WRF-Chem's WRFUserRateLaws.f90, at
// three temperatures. Each rate sits in `A = B : rate ;` with A = 1, so dB/dt is the rate.
#include <cmath>
#include <functional>
#include <string>

#include <gtest/gtest.h>

#include "kpp/kpp_support.hpp"

namespace {

using esi::testing::ImportedMechanism;

constexpr double kCfactor = 2.5e13;  // so EP2 / EP3 / FALL's 1e6 CFACTOR is not 1e6
constexpr double kAir = 2.2e19;      // M given to the importer (its default would be 2.46e19)

/// dB/dt of `A = B : rate ;` at temperature T, through import -> check -> flatten -> oracle.
double translated_rate(const std::string& rate, double T) {
  const std::string mech = "#DEFVAR\n A = IGNORE ; B = IGNORE ;\n#EQUATIONS\n A = B : " + rate +
                           " ;\n#INITVALUES\n CFACTOR = 2.5E13 ;\n";
  esi::kpp::ImportOptions options;
  options.air_density = kAir;
  ImportedMechanism m({{"one.eqn", mech}}, {"one.eqn"}, options);
  return m.rhs({{"A", 1.0}, {"B", 0.0}}, {{"T", T}}).at("B");
}

void expect_rate(const std::string& rate, const std::function<double(double)>& direct) {
  for (double T : {250.0, 298.15, 320.0}) {
    const double want = direct(T);
    EXPECT_NEAR(translated_rate(rate, T), want, 1e-13 * std::fabs(want)) << rate << " at T = " << T;
  }
}

double troe_jpl(double T, double cair, double k0, double n, double kinf, double m, double fc) {
  const double k0T = k0 * std::pow(300.0 / T, n) * cair;
  const double kinfT = kinf * std::pow(300.0 / T, m);
  const double r = k0T / kinfT;
  return k0T / (1.0 + r) * std::pow(fc, 1.0 / (1.0 + std::pow(std::log10(r), 2)));
}

TEST(KppRates, Arrhenius) {
  // KPP: ARR(a0, b0, c0) = a0 exp(-b0/T) (T/300)^c0; ARR_abc the same.
  auto arr = [](double T) { return 1.2e-11 * std::exp(-250.0 / T) * std::pow(T / 300.0, -1.5); };
  expect_rate("ARR(1.2E-11, 250.0, -1.5)", arr);
  expect_rate("ARR_abc(1.2E-11, 250.0, -1.5)", arr);
  // WRF-Chem's four-argument ARR passes the temperature itself.
  expect_rate("ARR(1.2E-11, 250.0, -1.5, TEMP)", arr);
  // ARR_ab(a0, b0) = a0 exp(-b0/T); ARR_ac(a0, c0) = a0 (T/300)^c0.
  expect_rate("ARR_ab(3.0d-12, 1500.)", [](double T) { return 3.0e-12 * std::exp(-1500.0 / T); });
  expect_rate("ARR_ac(3.0d-31, -3.3)", [](double T) { return 3.0e-31 * std::pow(T / 300.0, -3.3); });
}

TEST(KppRates, GeosChemArrhenius) {
  // GEOS-Chem rateLawUtilFuncs.F90: GCARR_ab = a0 (300/T)^b0, GCARR_ac = a0 exp(c0/T),
  // GCARR_abc = a0 exp(c0/T) (300/T)^b0 (note: +c0, and 300/T rather than T/300).
  expect_rate("GCARR_ab(3.0E-31, 3.3)", [](double T) { return 3.0e-31 * std::pow(300.0 / T, 3.3); });
  expect_rate("GCARR_ac(2.6E-12, 365.0)", [](double T) { return 2.6e-12 * std::exp(365.0 / T); });
  expect_rate("GCARR_abc(9.1E-15, 1.5, -2580.0)", [](double T) {
    return 9.1e-15 * std::exp(-2580.0 / T) * std::pow(300.0 / T, 1.5);
  });
}

TEST(KppRates, Arr2SignFollowsTheArgumentCount) {
  // KPP's ARR2(a0, b0) = a0 exp(+b0/T) ("B0 has a changed sign when compared to ARR").
  expect_rate("ARR2(3.0E-12, -1500.0)", [](double T) { return 3.0e-12 * std::exp(-1500.0 / T); });
  // WRF-Chem's ARR2(a0, b0, temp) = a0 exp(-b0/temp).
  expect_rate("ARR2(3.0E-12, 1500.0, TEMP)",
              [](double T) { return 3.0e-12 * std::exp(-1500.0 / T); });
}

TEST(KppRates, Ep2Ep3Fall) {
  expect_rate("EP2(2.4E-14, -460.0, 2.7E-17, -2199.0, 6.5E-34, -1335.0)", [](double T) {
    const double k0 = 2.4e-14 * std::exp(460.0 / T), k2 = 2.7e-17 * std::exp(2199.0 / T);
    const double k3 = 6.5e-34 * std::exp(1335.0 / T) * kCfactor * 1e6;
    return k0 + k3 / (1.0 + k3 / k2);
  });
  expect_rate("EP3(6.5E-34, -1335.0, 2.0E-31, 100.0)", [](double T) {
    return 6.5e-34 * std::exp(1335.0 / T) + 2.0e-31 * std::exp(-100.0 / T) * 1e6 * kCfactor;
  });
  expect_rate("FALL(2.0E-30, 0.0, -4.4, 1.4E-12, 0.0, -0.7, 0.6)", [](double T) {
    const double k0 = 2.0e-30 * std::pow(T / 300.0, -4.4) * kCfactor * 1e6;
    const double k1 = 1.4e-12 * std::pow(T / 300.0, -0.7);
    const double r = k0 / k1;
    return k0 / (1.0 + r) * std::pow(0.6, 1.0 / (1.0 + std::pow(std::log10(r), 2)));
  });
}

TEST(KppRates, FalloffForms) {
  // WRF-Chem TROE(k0_300K, n, kinf_300K, m, temp, cair): Fc = 0.6, M the air density.
  expect_rate("TROE(1.8E-30, 3.0, 2.8E-11, 0.0, TEMP, C_M)",
              [](double T) { return troe_jpl(T, kAir, 1.8e-30, 3.0, 2.8e-11, 0.0, 0.6); });
  // KPP k_3rd(temp, cair, k0, n, kinf, m, fc); k3rd_jpl(cair, ...) reads TEMP itself.
  expect_rate("k_3rd(TEMP, M, 5.5E-30, 0.0, 8.3E-13, -2.0, 0.45)",
              [](double T) { return troe_jpl(T, kAir, 5.5e-30, 0.0, 8.3e-13, -2.0, 0.45); });
  expect_rate("k3rd_jpl(CAIR, 5.5E-30, 0.0, 8.3E-13, -2.0, 0.6)",
              [](double T) { return troe_jpl(T, kAir, 5.5e-30, 0.0, 8.3e-13, -2.0, 0.6); });
  // IUPAC: nu = 0.75 - 1.27 log10(fc), exponent 1 / (1 + (log10(r)/nu)^2).
  auto iupac = [](double T) {
    const double k0T = 3.4e-30 * std::pow(300.0 / T, 3.2) * kAir, kinfT = 4.0e-12 * std::pow(300.0 / T, -0.3);
    const double r = k0T / kinfT, fc = 0.4, nu = 0.75 - 1.27 * std::log10(fc);
    return k0T / (1.0 + r) * std::pow(fc, 1.0 / (1.0 + std::pow(std::log10(r) / nu, 2)));
  };
  expect_rate("k_3rd_iupac(TEMP, M, 3.4E-30, 3.2, 4.0E-12, -0.3, 0.4)", iupac);
  expect_rate("k3rd_iupac(M, 3.4E-30, 3.2, 4.0E-12, -0.3, 0.4)", iupac);
  // k_arr(k_298, tdep, temp) = k_298 exp(tdep (1/temp - 3.3540e-3)).
  expect_rate("k_arr(1.2E-11, 440.0, TEMP)",
              [](double T) { return 1.2e-11 * std::exp(440.0 * (1.0 / T - 3.3540e-3)); });
}

TEST(KppRates, ExpressionsAndFortranNumbers) {
  expect_rate("3.3E-12*EXP(270.0/TEMP)", [](double T) { return 3.3e-12 * std::exp(270.0 / T); });
  // (LOG of a bare TEMP would be refused by the unit check: T is in K.)
  expect_rate("1.0d-12*SQRT(TEMP)/LOG(TEMP/200.) + 2.E-13*LOG10(TEMP/1.0)", [](double T) {
    return 1.0e-12 * std::sqrt(T) / std::log(T / 200.0) + 2.0e-13 * std::log10(T / 1.0);
  });
  expect_rate("1.0_dp*TEMP**2*CFACTOR", [](double T) { return T * T * kCfactor; });
  expect_rate("(2.0E-12*M + .5E-11) * ABS(-1.0)", [](double) { return 2.0e-12 * kAir + 0.5e-11; });
  expect_rate("MAX(1.0E-12, 2.0E-12*TEMP/300.) + MIN(1., 2., 3.)",
              [](double T) { return std::max(1.0e-12, 2.0e-12 * T / 300.0) + 1.0; });
  expect_rate("DBLE(4.0E-12)", [](double) { return 4.0e-12; });
}

TEST(KppRates, PrecedenceIsFortrans) {
  expect_rate("-2.0**2", [](double) { return -4.0; });        // -(2**2)
  expect_rate("2**3**2", [](double) { return 512.0; });       // right-associative
  expect_rate("1 - 2 + 3 - 4", [](double) { return -2.0; });  // left to right
  expect_rate("8/4/2", [](double) { return 1.0; });
  expect_rate("2*3/4*5", [](double) { return 7.5; });
  expect_rate("2^-1", [](double) { return 0.5; });
}

TEST(KppRates, AirDensityIsAParameterUnlessMIsAFixedSpecies) {
  {
    esi::kpp::ImportOptions options;
    options.air_density = kAir;
    ImportedMechanism m({{"a.eqn", "#DEFVAR A = IGNORE ;\n#EQUATIONS A = : 1.0E-30*M ;\n"}},
                        {"a.eqn"}, options);
    const auto& p = m.reaction_system()["parameters"];
    ASSERT_TRUE(p.contains("M"));
    EXPECT_EQ(p["M"]["units"], "molec/cm^3");
    EXPECT_EQ(p["M"]["default"].get<double>(), kAir);
    EXPECT_TRUE(m.reaction_system()["reactions"][0]["products"].is_null());  // a sink
    EXPECT_DOUBLE_EQ(m.rhs({{"A", 2.0}}).at("A"), -2.0 * 1.0e-30 * kAir);
  }
  {
    ImportedMechanism m(
        {{"a.eqn", "#DEFVAR A = IGNORE ;\n#DEFFIX M = IGNORE ;\n#EQUATIONS A = : 1.0E-30*C_M ;\n"
                   "#INITVALUES M = 3.0E19 ;\n"}},
        {"a.eqn"});
    EXPECT_FALSE(m.reaction_system()["parameters"].contains("M"));
    EXPECT_DOUBLE_EQ(m.rhs({{"A", 2.0}}).at("A"), -2.0 * 1.0e-30 * 3.0e19);
  }
}

TEST(KppRates, ParamGivesANameFromInlineCodeAValue) {
  esi::kpp::ImportOptions options;
  options.extra_parameters["SUN"] = 0.5;
  ImportedMechanism m({{"a.eqn", "#DEFVAR A = IGNORE ;\n#EQUATIONS A = : 1.0E-3*SUN*SUN ;\n"}},
                      {"a.eqn"}, options);
  EXPECT_EQ(m.reaction_system()["parameters"]["SUN"]["default"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(m.rhs({{"A", 1.0}}).at("A"), -1.0e-3 * 0.25);
}

}  // namespace
