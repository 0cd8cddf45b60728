// `--params FILE`: many `--set name=value` overrides from one file.
//
// FILE is a JSON object {"name": number, ...} or CSV rows `name,value` (an optional header row
// `name,value`, blank lines and `#` comments skipped, a name holding a comma quoted per RFC
// 4180: "C.x[2,1]",0.5). JSON when the name ends in .json or the first non-blank byte is `{`,
// CSV otherwise. Every value must be a finite number; a name may appear once. Malformed input
// throws esi::Error `invalid_params` naming the file and the JSON pointer or the CSV line.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "esi/exec/prepare.hpp"
#include "esi/exec/sweep.hpp"

namespace esi::cli {

/// The `file` of an Error about something typed on the command line (a --set name): reported
/// as "esi simulate: error[...]: ..." rather than against the document.
inline constexpr std::string_view kCommandLine = "<command line>";

using exec::Override;  ///< one override and where it came from

/// The overrides of one --params file, in file order.
std::vector<Override> read_params_file(const std::string& path);

/// `--params TABLE --sweep`: a CSV whose first record names the columns (parameters or states)
/// and whose every further record is one member's values (blank lines and `#` comments
/// skipped), or a JSON object {"name": [values...], ...} of equal lengths. Throws
/// `invalid_params` at the line or pointer.
exec::SweepTable read_sweep_table(const std::string& path);

}  // namespace esi::cli
