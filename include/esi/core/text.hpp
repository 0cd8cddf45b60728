// Small text utilities shared by the modules that talk to people ("did you mean ...?").
#pragma once

#include <cstddef>
#include <string_view>

namespace esi {

/// Optimal-string-alignment distance: insertions, deletions, substitutions and transpositions
/// of two adjacent characters each count one edit ("exp" ~ "epx" is 1).
std::size_t edit_distance(std::string_view a, std::string_view b);

}  // namespace esi
