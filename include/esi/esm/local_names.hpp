// Names authored inside one component (an override key, a swept parameter, a plotted or
// asserted variable) resolved to the flat names of a flattened system, by spec §6.6.2.
#pragma once

#include <string>

#include "esi/esm/system.hpp"

namespace esi::esm {

/// The scoped name under component `scope`, an exact flat name, or a unique trailing segment
/// of a bare key; throws `unknown_override` / `ambiguous_override` at (file, pointer) otherwise.
std::string resolve_local(const System& sys, const std::string& scope, const std::string& key,
                          const std::string& file, const std::string& pointer);

}  // namespace esi::esm
