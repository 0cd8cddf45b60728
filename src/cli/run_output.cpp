// `esi run`'s output and NetCDF forcing (run_output.hpp).
#ifdef ESI_HAVE_EXEC

#include "cli/run_output.hpp"

#include <cstdio>
#include <filesystem>
#include <optional>

#include "cli/csv.hpp"
#include "esi/core/error.hpp"

namespace esi::cli {

struct RunOutput::Impl {
  std::string path, partial;
  std::optional<CsvWriter> csv;
  bool finished = false;
};

RunOutput::RunOutput(const std::string& path, const esm::System&, const exec::RunConfig& config,
                     const std::string&, const std::string&)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.path = path;
  m.partial = path + ".partial";
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".csv") {
    m.csv.emplace(m.partial);
    return;
  }
  if (ext == ".nc")
    throw Error("unsupported_output", config.file, "/output",
                "NetCDF output (.nc) is not available in this build; write .csv");
  throw Error("unsupported_output", path, "", "the output file must end in .nc (NetCDF) or .csv");
}

RunOutput::~RunOutput() {
  if (impl_ && !impl_->finished) {
    if (impl_->csv) impl_->csv->discard();
    std::error_code ec;
    std::filesystem::remove(impl_->partial, ec);
  }
}

void RunOutput::columns(const std::vector<std::string>& names) {
  if (impl_->csv) impl_->csv->header(names);
}

void RunOutput::row(double t, std::span<const double> values) {
  if (impl_->csv) impl_->csv->row(t, values);
}

void RunOutput::finish(const exec::Trajectory&) {
  Impl& m = *impl_;
  if (m.csv) m.csv->close();
  std::error_code ec;
  std::filesystem::rename(m.partial, m.path, ec);
  if (ec)
    throw Error("output_write_failed", m.path, "", "could not rename the finished output into place: " + ec.message());
  m.finished = true;
}

exec::ForcingProvider netcdf_forcing(const exec::RunConfig& config, const exec::ForcingSpec& spec,
                                     const esm::System&) {
  throw Error("unsupported_forcing", config.file, spec.pointer, "NetCDF forcing is not available in this build");
}

}  // namespace esi::cli

#endif  // ESI_HAVE_EXEC
