// Small text utilities shared by the modules that talk to people ("did you mean ...?").
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace esi {

/// Optimal-string-alignment distance: insertions, deletions, substitutions and transpositions
/// of two adjacent characters each count one edit ("exp" ~ "epx" is 1).
std::size_t edit_distance(std::string_view a, std::string_view b);

/// "Natural" order for names people read: runs of digits compare as numbers, so j_2 < j_10 <
/// j_100 and C.x[2,1] < C.x[10,1]. Leading zeros do not change a run's value ("j_01" and
/// "j_1" are the same number); such ties fall back to plain byte order, so this is a strict
/// weak ordering with equality only for identical strings.
bool natural_less(std::string_view a, std::string_view b);

/// The shortest spelling of x that reads back as the same double (std::to_chars): for
/// messages, labels and provenance.
std::string number_text(double x);

/// A finite number spelled completely (std::from_chars: no blanks, no trailing text; "inf" and
/// "nan" are numbers to from_chars, not to us); false leaves `out` unspecified.
bool parse_finite(std::string_view text, double& out);

/// `s` without leading and trailing white space (std::isspace).
std::string trim(std::string_view s);

/// Splits one CSV record into fields (RFC 4180 quoting: "a,b" and "" inside quotes); false
/// for unbalanced quotes or text after a closing quote.
bool split_csv(std::string_view line, std::vector<std::string>& fields);

}  // namespace esi
