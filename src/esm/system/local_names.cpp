// Resolving names authored inside one component to flat names (local_names.hpp, spec §6.6.2).
#include "esi/esm/local_names.hpp"

#include <algorithm>
#include <vector>

#include "esi/core/error.hpp"
#include "esi/esm/flatten.hpp"

namespace esi::esm {

std::string resolve_local(const esm::System& sys, const std::string& scope, const std::string& key,
                          const std::string& file, const std::string& pointer) {
  std::vector<std::string> all;
  for_each_variable([&](const esm::FlatVariable& v) { all.push_back(v.name); }, sys.states,
                         sys.observed, sys.algebraic, sys.parameters);
  const auto has = [&](const std::string& n) { return std::find(all.begin(), all.end(), n) != all.end(); };
  if (has(scope + "." + key)) return scope + "." + key;
  if (has(key)) return key;
  std::vector<std::string> hits;
  if (key.find('.') == std::string::npos)
    for (const auto& n : all)
      if (n.size() > key.size() && n.compare(n.size() - key.size(), key.size(), key) == 0 &&
          n[n.size() - key.size() - 1] == '.')
        hits.push_back(n);
  if (hits.size() == 1) return hits[0];
  if (hits.empty()) {
    // A cell name "x[i,j]" of a scalar x: typically a species that coupling lifts onto a grid,
    // while a test runs its component alone (§6.6), where x is 0-D.
    std::string why;
    if (const auto bracket = key.find('['); bracket != std::string::npos && bracket > 0 && key.back() == ']') {
      const std::string base = key.substr(0, bracket);
      if (has(scope + "." + base) || has(base))
        why = "; '" + base + "' is a scalar there: a test runs its own component alone (spec §6.6), "
              "so a variable that only the coupling lifts onto a grid has no cells in it";
    }
    throw Error("unknown_override", file, pointer,
                "'" + key + "' names no variable of component '" + scope + "'" + why);
  }
  std::string list;
  for (const auto& h : hits) list += (list.empty() ? "" : ", ") + h;
  throw Error("ambiguous_override", file, pointer, "'" + key + "' matches several variables: " + list);
}

}  // namespace esi::esm
