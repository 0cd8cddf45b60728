// Units and dimensional analysis (spec §4.8).
//
// Unit strings are parsed into a scale factor and a vector of exponents over the SI base
// dimensions; expressions are checked bottom-up against the declared units of the variables
// they read (§4.8.3), and a definite inconsistency is a `unit_inconsistency` finding
// (§4.8.4). Unknown dimensions (open-tier ops, unparseable subexpressions) skip the check
// rather than inventing one.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "esi/core/error.hpp"

namespace esi::esm {

/// Exponents of the base dimensions, in the order
/// length, mass, time, current, temperature, amount, luminous intensity (+ dimensionless
/// counters stay dimensionless). Rational exponents are kept exactly as num/den.
struct Dimension {
  std::array<std::int32_t, 7> num{};  ///< numerators
  std::array<std::int32_t, 7> den{1, 1, 1, 1, 1, 1, 1};
  bool operator==(const Dimension&) const = default;
  bool dimensionless() const;
};

struct Unit {
  double scale = 1.0;  ///< value in SI base units of one of this unit
  Dimension dim;
};

/// Parses a unit string ("m/s", "kg m^-3", "molec/cm^3", "ppb", "1", "").
/// nullopt and `error` set when the string is not a unit.
std::optional<Unit> parse_unit(std::string_view text, std::string* error = nullptr);

/// Human form of a dimension, e.g. "m kg^-1 s^-2".
std::string to_string(const Dimension& d);

/// Dimensional check of every model and reaction system of a document whose `ref`s are already
/// resolved (components inlined). Findings carry code `unit_inconsistency` or
/// `unit_parse_error`, `file`, and the pointer of the variable / equation / reaction at fault.
std::vector<Diagnostic> check_units(const nlohmann::json& document, const std::string& file);

}  // namespace esi::esm
