// The assembly of a run's forcing set (forcing.hpp): one provider per configuration entry,
// constants and expressions made here, file variables through the caller's reader.
#include <algorithm>
#include <utility>

#include "esi/exec/forcing.hpp"

namespace esi::exec {

std::vector<ForcingProvider> forcing_providers(const RunConfig& config, const esm::System& system,
                                               const ForcingFileReader& netcdf) {
  std::vector<ForcingProvider> out;
  for (const ForcingSpec& f : config.forcing) {
    ForcingProvider p;
    p.target = f.target;
    p.pointer = f.pointer;
    p.bracket = f.bracket;
    if (f.kind == ForcingSpec::Kind::Constant) {
      std::size_t n = 1;
      for (const auto& a : system.arrays)
        if (a.name == f.target)
          for (std::int64_t e : a.extents) n *= static_cast<std::size_t>(e);
      p.record_values = n;
      p.times = {config.start};
      p.read = [v = f.value](std::size_t, std::span<double> out) {
        std::fill(out.begin(), out.end(), v);
      };
    } else if (f.kind == ForcingSpec::Kind::Expression) {
      p = expression_forcing(config, f, system);
    } else {
      ForcingRecords r = netcdf(config, f, system);
      p.record_values = r.record_values;
      // A file without a time axis is one record, constant from the start.
      const bool constant = r.times.empty();
      p.times = constant ? std::vector<double>{config.start} : std::move(r.times);
      p.read = [read = std::move(r.read), constant](std::size_t record, std::span<double> out) {
        read(constant ? 0 : record, out);
      };
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace esi::exec
