// Malformed and untranslatable KPP input: each is one esi::Error with its stable code, the file
// it is in and the line, never a crash; and the command line says the same with exit 1.
#include <string>

#include <gtest/gtest.h>

#include "kpp/kpp_support.hpp"
#include "support/run_esi.hpp"

namespace {

using esi::testing::import_error;

const std::string kSpecies = "#DEFVAR\n A = IGNORE ; B = IGNORE ;\n";

/// The error for a mechanism whose #EQUATIONS section is `equations` (starting on line 4).
esi::Diagnostic equation_error(const std::string& equations) {
  return import_error({{"m.eqn", kSpecies + "#EQUATIONS\n" + equations}}, {"m.eqn"});
}

void expect(const esi::Diagnostic& d, const std::string& code, const std::string& file,
            const std::string& pointer) {
  EXPECT_EQ(d.code, code) << d.message;
  EXPECT_EQ(d.file, file) << d.message;
  EXPECT_EQ(d.pointer, pointer) << d.message;
  EXPECT_FALSE(d.message.empty());
}

TEST(KppHostile, MalformedEquations) {
  expect(equation_error("<R1> A = B : 1.0 ;\n<R2> A + B 2.0 ;\n"), "kpp_parse_error", "m.eqn",
         "line 5");  // no ':' and no '='
  expect(equation_error("A B = B : 1.0 ;\n"), "kpp_parse_error", "m.eqn", "line 4");
  expect(equation_error("A = B : 1.0 ;\nA = B : (1.0 + ;\n"), "kpp_parse_error", "m.eqn",
         "line 5");
  expect(equation_error("A = B : 1.0 ;\n\n A = B : 1.0\n"), "kpp_parse_error", "m.eqn",
         "line 6");  // not ended by ';'
  expect(equation_error("A = B + : 1.0 ;\n"), "kpp_parse_error", "m.eqn", "line 4");
  expect(equation_error("A = B : 1.0 ? 2 ;\n"), "kpp_parse_error", "m.eqn", "line 4");
  expect(equation_error("A = B : 1.0e999 ;\n"), "kpp_parse_error", "m.eqn", "line 4");
  expect(equation_error("<> A = B : 1.0 ;\n"), "kpp_parse_error", "m.eqn", "line 4");
  expect(equation_error("A = B : ;\n"), "kpp_parse_error", "m.eqn", "line 4");
  const std::string deep = std::string(100, '(') + "1.0" + std::string(100, ')');
  expect(equation_error("A = B : " + deep + " ;\n"), "kpp_parse_error", "m.eqn", "line 4");
  std::string divisions = "1.0";
  for (int k = 0; k < 100000; ++k) divisions += "/2.0";
  expect(equation_error("A = B : " + divisions + " ;\n"), "kpp_parse_error", "m.eqn", "line 4");
}

TEST(KppHostile, UntranslatableRates) {
  const auto unknown_fn = equation_error("A = B : 1.0 ;\nA = B : MY_RATE(1.0, TEMP) ;\n");
  expect(unknown_fn, "kpp_unsupported_rate", "m.eqn", "line 5");
  EXPECT_NE(unknown_fn.message.find("MY_RATE"), std::string::npos);
  const auto unknown_name = equation_error("A = B : 1.0E-3*SUN ;\n");
  expect(unknown_name, "kpp_unsupported_rate", "m.eqn", "line 4");
  EXPECT_NE(unknown_name.message.find("--param SUN=VALUE"), std::string::npos);
  expect(equation_error("A = B : ARR(1.0, 2.0) ;\n"), "kpp_unsupported_rate", "m.eqn", "line 4");
  expect(equation_error("A = B : TROE(1.0, 2.0, 3.0, 4.0, TEMP) ;\n"), "kpp_unsupported_rate",
         "m.eqn", "line 4");
  // A species is not a value a rate can read in KPP (only inline code can).
  expect(equation_error("A = B : 1.0*A ;\n"), "kpp_unsupported_rate", "m.eqn", "line 4");
}

TEST(KppHostile, SpeciesProblems) {
  expect(equation_error("A + C = B : 1.0 ;\n"), "kpp_undefined_species", "m.eqn", "line 4");
  expect(equation_error("A = -1 B : 1.0 ;\n"), "kpp_unsupported_stoichiometry", "m.eqn", "line 4");
  expect(equation_error("A = 0 B : 1.0 ;\n"), "kpp_unsupported_stoichiometry", "m.eqn", "line 4");
  expect(equation_error("A = alpha*B : 1.0 ;\n"), "kpp_unsupported_stoichiometry", "m.eqn",
         "line 4");
  expect(import_error({{"m.spc", "#DEFVAR\n A = IGNORE ;\n#DEFFIX\n A = IGNORE ;\n"}}, {"m.spc"}),
         "kpp_duplicate_species", "m.spc", "line 4");
  expect(import_error({{"m.eqn", kSpecies + "#EQUATIONS\n<R1> A = B : 1.0 ;\n<R1> B = A : 2.0 ;\n"}},
                      {"m.eqn"}),
         "kpp_duplicate_tag", "m.eqn", "line 5");
  expect(import_error({{"m.def", kSpecies + "#INITVALUES\n A = 1.0 ;\n C = 2.0 ;\n"}}, {"m.def"}),
         "kpp_undefined_species", "m.def", "line 5");
  expect(import_error({{"m.def", kSpecies + "#EQUATIONS A = B : 1.0 ;\n#INITVALUES\n CFACTOR = 1e300 ;"
                                            " A = 1e300 ;\n"}}, {"m.def"}),
         "kpp_parse_error", "m.def", "line 2");  // 1e600 molec/cm^3, located at A's declaration
  expect(equation_error("A = 1e308 B + 1e308 B : 1.0 ;\n"), "kpp_unsupported_stoichiometry",
         "m.eqn", "line 4");
  expect(import_error({{"m.def", kSpecies + "#INITVALUES\n A = TEMP ;\n"}}, {"m.def"}),
         "kpp_parse_error", "m.def", "line 4");
  expect(import_error({{"m.spc", "#DEFVAR\n 1A = IGNORE ;\n"}}, {"m.spc"}), "kpp_parse_error",
         "m.spc", "line 2");
  expect(import_error({{"m.spc", kSpecies}}, {"m.spc"}), "kpp_no_equations", "m.spc", "");
}

TEST(KppHostile, CommentsAndSections) {
  expect(equation_error("A = B : 1.0 ; { never closed\n\nB = A : 1.0 ;\n"), "kpp_parse_error",
         "m.eqn", "line 4");
  expect(equation_error("A = B : 1.0 ;\n  oops } \n"), "kpp_parse_error", "m.eqn", "line 5");
  expect(import_error({{"m.eqn", "A = B : 1.0 ;\n" + kSpecies}}, {"m.eqn"}), "kpp_parse_error",
         "m.eqn", "line 1");  // text before any section
  expect(import_error({{"m.def", kSpecies + "#INLINE F90_INIT\n TEMP = 298.\n"}}, {"m.def"}),
         "kpp_parse_error", "m.def", "line 3");  // #INLINE without #ENDINLINE
  expect(import_error({{"m.eqn", kSpecies + "#EQUATIONS\n A = B : 1.0 ;\n#\n"}}, {"m.eqn"}),
         "kpp_parse_error", "m.eqn", "line 5");
  // #SETFIX would change the mechanism: refused, not ignored.
  expect(import_error({{"m.eqn", kSpecies + "#EQUATIONS\n A = B : 1.0 ;\n#SETFIX A ;\n"}}, {"m.eqn"}),
         "kpp_unsupported_directive", "m.eqn", "line 5");
  expect(import_error({{"m.eqn", kSpecies + "#EQUATIONS\n A = B : 1.0 ;\n\n#LUMP A + B : C\n"}},
                      {"m.eqn"}),
         "kpp_unsupported_directive", "m.eqn", "line 6");
  // --param may not shadow a species.
  esi::kpp::ImportOptions clash;
  clash.extra_parameters["A"] = 1.0;
  expect(import_error({{"m.eqn", kSpecies + "#EQUATIONS\n A = B : 1.0 ;\n"}}, {"m.eqn"}, clash),
         "kpp_invalid_parameter", "m.eqn", "line 2");
}

TEST(KppHostile, Files) {
  expect(import_error({}, {"missing.eqn"}), "file_not_found", "missing.eqn", "");
  expect(import_error({{"m.def", "#INCLUDE gone.spc\n"}}, {"m.def"}), "file_not_found", "m.def",
         "line 1");
  expect(import_error({{"m.def", "\n#MODEL other\n"}}, {"m.def"}), "file_not_found", "m.def",
         "line 2");  // #MODEL other -> other.def
  // A file including itself is read once, not forever.
  esi::testing::ImportedMechanism self(
      {{"m.eqn", "#INCLUDE m.eqn\n" + kSpecies + "#EQUATIONS\n A = B : 1.0 ;\n"}}, {"m.eqn"});
  EXPECT_EQ(self.reaction_system()["reactions"].size(), 1u);
  ASSERT_FALSE(self.result.notes.empty());
  EXPECT_EQ(self.result.notes.front().code, "kpp_file_repeated");
  // A chain of 17 distinct includes is refused (a loop through renamed copies, say).
  std::map<std::string, std::string> chain;
  for (int k = 0; k < 18; ++k)
    chain["f" + std::to_string(k) + ".kpp"] = "#INCLUDE f" + std::to_string(k + 1) + ".kpp\n";
  expect(import_error(chain, {"f0.kpp"}), "kpp_include_too_deep", "f16.kpp", "line 1");
  // Binary junk is not a KPP file.
  expect(import_error({{"m.eqn", std::string("#EQUATIONS\n A = B : 1.0 ;") + '\0'}}, {"m.eqn"}),
         "kpp_parse_error", "m.eqn", "line 2");
}

TEST(KppHostile, CommandLineReportsTheLocatedErrorAndWritesNothing) {
  esi::testing::TempDir dir;
  const auto eqn = dir.write("bad.eqn", kSpecies + "#EQUATIONS\n A = B : 1.0 ;\n A = B : FOO(1) ;\n");
  const auto out = dir.path() / "bad.esm";
  const auto err = dir.path() / "err.txt";
  auto r = esi::testing::run_esi(ESI_BINARY, {"import-kpp", eqn.string(), "-o", out.string()}, err);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("bad.eqn:line 5: error[kpp_unsupported_rate]"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out));

  r = esi::testing::run_esi(ESI_BINARY, {"import-kpp", (dir.path() / "nope.eqn").string(), "-o",
                                         out.string()}, err);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("error[file_not_found]"), std::string::npos) << r.err;

  EXPECT_EQ(esi::testing::run_esi(ESI_BINARY, {"import-kpp", "-o", out.string()}).status, 2);
  EXPECT_EQ(esi::testing::run_esi(ESI_BINARY, {"import-kpp", eqn.string(), "--bogus"}).status, 2);
  EXPECT_EQ(esi::testing::run_esi(ESI_BINARY, {"import-kpp", eqn.string(), "-o", out.string(),
                                               "--param", "SUN"}).status, 2);
}

}  // namespace
