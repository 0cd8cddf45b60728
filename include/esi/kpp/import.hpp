// Importing a KPP (Kinetic PreProcessor) mechanism as an ESM reaction system.
//
// `import_kpp` reads the files of a KPP mechanism (.eqn, .spc, .def in any order, each with its
// `#INCLUDE`s resolved next to the including file) and returns one ESM document holding one
// reaction system:
//   - `#DEFVAR` (and `#DEFRAD`) species become species, `#DEFFIX` species become reservoir
//     species (`constant: true`, spec §7.2); atom compositions are ignored; `hv` is a dummy
//     (the photon) and is dropped wherever it appears;
//   - `#INITVALUES` give each species' `default` (KPP's default is 0), multiplied by `CFACTOR`
//     as KPP's generated Initialize does; `ALL_SPEC`, `VAR_SPEC`, `FIX_SPEC` set every species,
//     every variable or every fixed species first;
//   - every equation of `#EQUATIONS` becomes a reaction (`<TAG>` its id, else `R<n>` by
//     position); its rate is translated into an ESM expression, KPP's standard rate functions
//     (ARR, ARR2, ARR_ab/ac/abc, GEOS-Chem's GCARR_ab/ac/abc, EP2, EP3, FALL, TROE, k_3rd,
//     k_3rd_iupac, k3rd_jpl, k3rd_iupac, k_arr) expanded inline; `TEMP` becomes the parameter `T` (K), `M` / `C_M` /
//     `CAIR` the air number density `M` (molec/cm^3; the fixed species `M` when the mechanism
//     declares one), `CFACTOR` a dimensionless parameter;
//   - `#INLINE` blocks (code in the target language) and directives about code generation
//     (`#INTEGRATOR`, `#LANGUAGE`, `#LOOKAT`, ...) are skipped, each with a note.
// Species are number densities in KPP's units, molec/cm^3 unless `ImportOptions` says other.
//
// Anything that cannot be translated throws esi::Error with a stable code, the file and the
// location as the pointer ("line 42"): `kpp_parse_error` (malformed line, unbalanced braces,
// unterminated statement), `kpp_unsupported_rate` (a function or symbol esi does not know,
// e.g. one defined in `#INLINE` code), `kpp_undefined_species`, `kpp_duplicate_species`,
// `kpp_duplicate_tag`, `kpp_unsupported_stoichiometry`, `kpp_unsupported_directive` (#SETVAR,
// #SETFIX), `kpp_no_equations`, `kpp_invalid_parameter` (a bad --param name), and for files
// `file_not_found`, `not_a_regular_file`, `file_too_large`, `kpp_include_too_deep`.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "esi/core/error.hpp"

namespace esi::kpp {

struct ImportOptions {
  /// Name of the reaction system and of the document; "" = the first file's stem, made an
  /// identifier ("small_strato.eqn" -> "small_strato").
  std::string name;
  /// Units of every species (KPP's concentrations are molec/cm^3 unless its driver says other).
  std::string species_units = "molec/cm^3";
  /// Default temperature `T` (K) and air number density `M` (molec/cm^3, 1 atm at 298.15 K).
  double temperature = 298.15;
  double air_density = 2.46e19;
  /// Names a rate may read that KPP's inline code or driver defines (`SUN`, `J_NO2`, ...):
  /// each becomes a dimensionless parameter with this default.
  std::map<std::string, double> extra_parameters;
};

struct ImportResult {
  nlohmann::json document;
  /// What was skipped or assumed (inline code, code-generation directives, repeated files).
  std::vector<Diagnostic> notes;
};

/// Throws esi::Error on the first construct that cannot be translated (see above).
ImportResult import_kpp(const std::vector<std::filesystem::path>& files,
                        const ImportOptions& options = {});

}  // namespace esi::kpp
