// A small hand-written Chapman + NOx mechanism in KPP's three files is imported; the document
// passes every check, its right-hand side equals one written out by hand from the mechanism,
// and a short simulation matches a hand-coded RK4 integration of that same hand-written ODE.
#include <array>
#include <cmath>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "esi/esm/load.hpp"
#include "esi/exec/simulate.hpp"
#include "kpp/kpp_support.hpp"
#include "support/run_esi.hpp"
#include "support/temp_dir.hpp"

namespace {

using esi::testing::ImportedMechanism;
using json = nlohmann::json;

const std::string kSpc = R"({ chapman_nox.spc: species }
#include atoms
#DEFVAR
O = O ;  O3 = O + O + O ;
NO = N + O ; NO2 = N + 2O ;
HNO3 = H + N + 3O ;
OH = O + H ;
#DEFFIX
M = IGNORE ;   // the air
O2 = 2O ;
)";

const std::string kEqn = R"({ chapman_nox.eqn: seven equations, one without a tag }
#EQUATIONS
<J1> O2 + hv = O + O : 2.0E-12 ;
<K2> O + O2 + M = O3 + M : ARR(6.0d-34, 0.0, -2.4) ;
<J3> NO2 + hv = NO + O : 6.69e-3 ;       { photolysis }
<K4> NO + O3 = NO2 + O2 : ARR2(3.0E-12, -1500.) ;
<K5> OH + NO2 = HNO3 :
     TROE(1.8e-30, 3.0, 2.8e-11, 0.0, TEMP, C_M) ;    // spans two lines
<K6> OH + HNO3 = 0.7 NO2 + 0.3NO + O : EP2(2.4E-14, -460.0, 2.7E-17, -2199.0, 6.5E-34, -1335.0) ;
O + O3 = 2O2 : 8.0E-12*EXP(-2060./TEMP) ;
)";

const std::string kDef = R"(#include chapman_nox.spc
#include chapman_nox.eqn
#INTEGRATOR rosenbrock
#INITVALUES
CFACTOR = 2.5E13 ;
ALL_SPEC = 0.0 ;
M = 1.0E6 ; O2 = 2.1E5 ;
O3 = 0.04 ; NO = 1.0d-3 ; NO2 = 0.01 ; OH = 1.E-7 ; HNO3 = 1.0E-3 ;
#INLINE F90_RATES
  ! code for KPP's generator: { unbalanced braces and // are not comments here
  REAL(kind=dp) FUNCTION SUN() ; END
#ENDINLINE
)";

std::map<std::string, std::string> files() {
  return {{"chapman_nox.spc", kSpc}, {"chapman_nox.eqn", kEqn}, {"chapman_nox.def", kDef}};
}

constexpr double kCfactor = 2.5e13;

/// The mechanism's rates written out from the KPP definitions (not from the importer's code).
struct HandRates {
  double T, M, O2, cf;
  std::array<double, 7> k{};
  HandRates(double T_, double M_, double O2_, double cf_) : T(T_), M(M_), O2(O2_), cf(cf_) {
    k[0] = 2.0e-12;
    k[1] = 6.0e-34 * std::pow(T / 300.0, -2.4);
    k[2] = 6.69e-3;
    k[3] = 3.0e-12 * std::exp(-1500.0 / T);  // KPP's ARR2(A, B) = A exp(+B/T)
    const double k0 = 1.8e-30 * std::pow(300.0 / T, 3.0) * M, kinf = 2.8e-11;
    const double r = k0 / kinf;
    k[4] = k0 / (1.0 + r) * std::pow(0.6, 1.0 / (1.0 + std::log10(r) * std::log10(r)));
    const double e0 = 2.4e-14 * std::exp(460.0 / T), e2 = 2.7e-17 * std::exp(2199.0 / T);
    const double e3 = 6.5e-34 * std::exp(1335.0 / T) * cf * 1.0e6;
    k[5] = e0 + e3 / (1.0 + e3 / e2);
    k[6] = 8.0e-12 * std::exp(-2060.0 / T);
  }
  // State order: O, O3, NO, NO2, HNO3, OH.
  std::array<double, 6> rhs(const std::array<double, 6>& y) const {
    const double O = y[0], O3 = y[1], NO = y[2], NO2 = y[3], HNO3 = y[4], OH = y[5];
    const double v1 = k[0] * O2, v2 = k[1] * O * O2 * M, v3 = k[2] * NO2, v4 = k[3] * NO * O3,
                 v5 = k[4] * OH * NO2, v6 = k[5] * OH * HNO3, v7 = k[6] * O * O3;
    return {2 * v1 - v2 + v3 + v6 - v7,         // O
            v2 - v4 - v7,                       // O3
            v3 - v4 + 0.3 * v6,                 // NO
            -v3 + v4 - v5 + 0.7 * v6,           // NO2
            v5 - v6,                            // HNO3
            -v5 - v6};                          // OH
  }
};

const std::array<const char*, 6> kStates = {"O", "O3", "NO", "NO2", "HNO3", "OH"};

TEST(KppImport, MechanismBecomesTheReactionSystemKppDescribes) {
  ImportedMechanism m(files(), {"chapman_nox.def"});
  const json& rs = m.reaction_system();
  EXPECT_EQ(m.result.document["metadata"]["name"], "chapman_nox");
  ASSERT_EQ(rs["species"].size(), 8u);  // hv is no species
  EXPECT_FALSE(rs["species"].contains("hv"));
  EXPECT_EQ(rs["species"]["M"]["constant"], true);
  EXPECT_EQ(rs["species"]["O2"]["constant"], true);
  EXPECT_FALSE(rs["species"]["O3"].contains("constant"));
  EXPECT_EQ(rs["species"]["O3"]["units"], "molec/cm^3");
  // #INITVALUES times CFACTOR; ALL_SPEC = 0 for the rest.
  EXPECT_DOUBLE_EQ(rs["species"]["O3"]["default"].get<double>(), 0.04 * kCfactor);
  EXPECT_DOUBLE_EQ(rs["species"]["M"]["default"].get<double>(), 1.0e6 * kCfactor);
  EXPECT_EQ(rs["species"]["O"]["default"].get<double>(), 0.0);
  // The fixed species M is the air density TROE reads: no separate parameter M.
  EXPECT_FALSE(rs["parameters"].contains("M"));
  EXPECT_DOUBLE_EQ(rs["parameters"]["T"]["default"].get<double>(), 298.15);
  EXPECT_DOUBLE_EQ(rs["parameters"]["CFACTOR"]["default"].get<double>(), kCfactor);

  const json& r = rs["reactions"];
  ASSERT_EQ(r.size(), 7u);
  EXPECT_EQ(r[0]["id"], "J1");
  EXPECT_EQ(r[0]["substrates"], json::parse(R"([{"species":"O2","stoichiometry":1}])"));
  EXPECT_EQ(r[0]["products"], json::parse(R"([{"species":"O","stoichiometry":2}])"));  // O + O
  EXPECT_EQ(r[0]["rate"], json(2.0e-12));
  EXPECT_EQ(r[5]["id"], "K6");
  EXPECT_EQ(r[5]["products"][0], json::parse(R"({"species":"NO2","stoichiometry":0.7})"));
  EXPECT_EQ(r[5]["products"][1], json::parse(R"({"species":"NO","stoichiometry":0.3})"));
  EXPECT_EQ(r[6]["id"], "R7");  // untagged: by position
  EXPECT_EQ(r[6]["products"], json::parse(R"([{"species":"O2","stoichiometry":2}])"));
  EXPECT_NE(r[4]["reference"]["notes"].get<std::string>().find("chapman_nox.eqn line 7"),
            std::string::npos);

  // What was skipped is said, with its place.
  bool inline_noted = false, integrator_noted = false;
  for (const auto& d : m.result.notes) {
    if (d.code == "kpp_inline_skipped") {
      inline_noted = true;
      EXPECT_EQ(d.pointer, "line 9");
    }
    if (d.code == "kpp_directive_ignored" && d.message.find("#INTEGRATOR") == 0)
      integrator_noted = true;
  }
  EXPECT_TRUE(inline_noted);
  EXPECT_TRUE(integrator_noted);

  // validate_file (checks + trial flatten) accepts it with nothing to note.
  ESI_SKIP_WITHOUT_ESM_SCHEMA();
  const esi::esm::ValidationReport report = esi::esm::validate_file(m.esm);
  EXPECT_TRUE(report.valid());
  EXPECT_TRUE(report.notes.empty());
}

TEST(KppImport, FilesInAnyOrderGiveTheSameDocument) {
  ImportedMechanism by_def(files(), {"chapman_nox.def"});
  ImportedMechanism by_three(files(), {"chapman_nox.eqn", "chapman_nox.spc", "chapman_nox.def"});
  json a = by_def.reaction_system(), b = by_three.reaction_system();
  a.erase("reference");  // lists the files in the order read
  b.erase("reference");
  EXPECT_EQ(a, b);
}

TEST(KppImport, RightHandSideEqualsTheHandWrittenOde) {
  ImportedMechanism m(files(), {"chapman_nox.def"});
  const double M = 1.0e6 * kCfactor, O2 = 2.1e5 * kCfactor;
  const std::array<double, 6> y = {3.0e5, 1.0e12, 2.5e10, 2.5e11, 2.5e10, 2.5e6};
  std::map<std::string, double> state;
  for (std::size_t i = 0; i < y.size(); ++i) state[kStates[i]] = y[i];
  for (double T : {250.0, 298.15, 320.0}) {
    const HandRates hand(T, M, O2, kCfactor);
    const std::array<double, 6> expected = hand.rhs(y);
    const auto got = m.rhs(state, {{"T", T}});
    ASSERT_EQ(got.size(), 6u);  // M and O2 are held: no equation
    for (std::size_t i = 0; i < y.size(); ++i)
      EXPECT_NEAR(got.at(kStates[i]), expected[i], 1e-11 * std::fabs(expected[i]) + 1e-3)
          << kStates[i] << " at T = " << T;
  }
}

TEST(KppImport, ShortRunMatchesRk4OfTheHandWrittenOde) {
  ImportedMechanism m(files(), {"chapman_nox.def"});
  esi::exec::SimulateOptions o;
  o.t0 = 0;
  o.t1 = 1;
  o.integrator.rtol = 1e-10;
  o.integrator.atol = 1e-6;  // molec/cm^3: the states are 1e5 .. 1e12
  o.document = &m.doc;
  const esi::exec::Trajectory tr = esi::exec::simulate(m.system, o);
  ASSERT_EQ(tr.code, esi::method::ReturnCode::Success) << tr.message;

  // RK4 at a step well below O's lifetime (1 / (k2 O2 M) ~ 8 microseconds).
  const HandRates hand(298.15, 1.0e6 * kCfactor, 2.1e5 * kCfactor, kCfactor);
  std::array<double, 6> y = {0.0, 0.04 * kCfactor, 1.0e-3 * kCfactor, 0.01 * kCfactor,
                             1.0e-3 * kCfactor, 1.0e-7 * kCfactor};
  const int steps = 400000;
  const double h = 1.0 / steps;
  auto axpy = [](const std::array<double, 6>& a, double s, const std::array<double, 6>& b) {
    std::array<double, 6> r{};
    for (std::size_t i = 0; i < 6; ++i) r[i] = a[i] + s * b[i];
    return r;
  };
  for (int n = 0; n < steps; ++n) {
    const auto k1 = hand.rhs(y);
    const auto k2 = hand.rhs(axpy(y, h / 2, k1));
    const auto k3 = hand.rhs(axpy(y, h / 2, k2));
    const auto k4 = hand.rhs(axpy(y, h, k3));
    for (std::size_t i = 0; i < 6; ++i) y[i] += h / 6 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i]);
  }
  const std::size_t last = tr.times.size() - 1;
  ASSERT_DOUBLE_EQ(tr.times[last], 1.0);
  for (std::size_t i = 0; i < 6; ++i) {
    const int j = tr.column(std::string("chapman_nox.") + kStates[i]);
    ASSERT_GE(j, 0) << kStates[i];
    EXPECT_NEAR(tr.at(last, static_cast<std::size_t>(j)), y[i], 1e-6 * std::fabs(y[i]) + 1.0)
        << kStates[i];
  }
  // The run moved: O3 photochemistry made O from nothing.
  EXPECT_GT(y[0], 1.0e3);
}

TEST(KppImport, CliWritesAValidDocumentThatSimulates) {
  esi::testing::TempDir dir;
  const std::string src = ESI_SOURCE_DIR "/examples/kpp/";
  const auto out = dir.path() / "small.esm";
  const auto err = dir.path() / "err.txt";
  auto r = esi::testing::run_esi(
      ESI_BINARY, {"import-kpp", src + "small.eqn", src + "small.spc", src + "small.def", "-o",
                   out.string()}, err);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("note[kpp_inline_skipped]"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("12 reactions, 10 species written (valid)"), std::string::npos) << r.err;
  EXPECT_EQ(esi::testing::run_esi(ESI_BINARY, {"validate", out.string()}).status, 0);
  r = esi::testing::run_esi(ESI_BINARY, {"simulate", out.string(), "--tspan", "0", "600",
                                         "--saveat", "300", "--output", "-"});
  ASSERT_EQ(r.status, 0);
  EXPECT_EQ(r.out.rfind("t,small.HNO3,small.HO2,small.NO,small.NO2,small.NO3,small.O,small.O3,small.OH\n", 0), 0u)
      << r.out;
  EXPECT_NE(r.out.find("\n600,"), std::string::npos);

  r = esi::testing::run_esi(ESI_BINARY, {"help", "import-kpp"});
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out.rfind("usage: esi import-kpp", 0), 0u);
  EXPECT_EQ(esi::testing::run_esi(ESI_BINARY, {"import-kpp", src + "small.eqn"}).status, 2);
}

}  // namespace
