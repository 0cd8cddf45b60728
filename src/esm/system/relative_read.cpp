// Parsing relative-read names (relative_read.hpp).
#include "esi/esm/relative_read.hpp"

#include <charconv>

namespace esi::esm {

bool RelativeRead::own_cell() const {
  for (std::size_t i = 0; i < axis.size(); ++i)
    if (axis[i] < 0 || offset[i] != 0) return false;
  return !axis.empty();
}

bool parse_relative_read(std::string_view name, RelativeRead& out) {
  const auto open = name.find('[');
  if (open == std::string_view::npos || open == 0 || name.back() != ']') return false;
  out.array = std::string(name.substr(0, open));
  out.axis.clear();
  out.offset.clear();
  std::string_view rest = name.substr(open + 1, name.size() - open - 2);
  while (true) {
    const auto comma = rest.find(',');
    std::string_view c = rest.substr(0, comma);
    int ax = -1;
    std::int64_t off = 0;
    if (!c.empty() && c[0] == '@') {
      std::size_t k = 1;
      while (k < c.size() && c[k] >= '0' && c[k] <= '9') ++k;
      if (std::from_chars(c.data() + 1, c.data() + k, ax).ec != std::errc()) return false;
      c = c.substr(k);
      if (!c.empty() && c[0] == '+') c = c.substr(1);
    }
    if (!c.empty()) {
      const auto r = std::from_chars(c.data(), c.data() + c.size(), off);
      if (r.ec != std::errc() || r.ptr != c.data() + c.size()) return false;
    } else if (ax < 0) {
      return false;
    }
    out.axis.push_back(ax);
    out.offset.push_back(off);
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return true;
}

}  // namespace esi::esm
