// Units and dimensional analysis (spec §4.8).
//
// Unit strings are parsed into a scale factor and a vector of exponents over the eight
// canonical axes of §4.8.1; expressions are checked bottom-up against the declared units of
// the variables they read (§4.8.3), and a definite inconsistency is a `unit_inconsistency`
// finding (§4.8.4). Unknown dimensions (open-tier ops, unparseable subexpressions) skip the
// check rather than inventing one.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "esi/core/error.hpp"

namespace esi::esm {

/// Number of dimension axes (§4.8.1: m kg s mol K A cd rad, and no others).
inline constexpr std::size_t kDimensionAxes = 8;

/// Exponents of the base dimensions, in the order
/// length (m), mass (kg), time (s), amount (mol), temperature (K), current (A),
/// luminous intensity (cd), plane angle (rad). Counts (`molec`, `units`, ...) carry no
/// dimension. Rational exponents are kept exactly as num/den in lowest terms, den > 0.
struct Dimension {
  std::array<std::int32_t, kDimensionAxes> num{};  ///< numerators
  std::array<std::int32_t, kDimensionAxes> den{1, 1, 1, 1, 1, 1, 1, 1};
  bool operator==(const Dimension&) const = default;
  bool dimensionless() const;
};

/// Axis symbols in Dimension order: "m", "kg", "s", "mol", "K", "A", "cd", "rad".
extern const std::array<std::string_view, kDimensionAxes> kAxisNames;

/// Dimension of a single axis raised to 1 (axis index as in kAxisNames).
Dimension axis_dimension(std::size_t axis);
/// a·b, a/b and a^(p/q) (q != 0). Exact rational arithmetic.
Dimension multiply(const Dimension& a, const Dimension& b);
Dimension divide(const Dimension& a, const Dimension& b);
Dimension power(const Dimension& a, std::int64_t p, std::int64_t q);

struct Unit {
  double scale = 1.0;  ///< value in SI base units of one of this unit
  Dimension dim;
  /// Kelvin value of this unit's zero when the string is a lone absolute temperature with an
  /// offset (`degC`: 273.15, `degF`: 459.67·5/9); 0 otherwise. Dimensional analysis ignores it
  /// (§4.8.1, affine offsets are not modelled); it only tells `K` from `degC` where two unit
  /// strings must denote the same unit (a `default_units` declaration).
  double offset = 0.0;
};

/// Parses a unit string ("m/s", "kg m^-3", "molec/cm^3", "ppb", "1", "") against the flat
/// registry of §4.8.1 with the grammar of §4.8.2 (Unicode normalisation first).
/// nullopt and `error` set (one sentence) when the string is not a unit.
std::optional<Unit> parse_unit(std::string_view text, std::string* error = nullptr);

/// Human form of a dimension, e.g. "m kg^-1 s^-2"; "1" when dimensionless.
std::string to_string(const Dimension& d);

/// Dimensional check of every model and reaction system of a document whose `ref`s are already
/// resolved (components inlined; components still given as `ref` are skipped), and of its
/// coupling entries. Findings carry code `unit_inconsistency` or `unit_parse_error`, `file`,
/// and the pointer of the node at fault: the declaration, the equation, the offending
/// expression node, the reaction, the species or the coupling entry (see units_check.cpp).
std::vector<Diagnostic> check_units(const nlohmann::json& document, const std::string& file);

}  // namespace esi::esm
