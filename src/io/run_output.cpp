// The output file of one `esi run` (run_output.hpp): the CSV or NetCDF writer behind one
// partial file that becomes the output only when the run ends.
#include "esi/io/run_output.hpp"

#include <filesystem>

#include "esi/core/error.hpp"
#include "esi/io/csv.hpp"

namespace esi::io {

struct RunOutput::Impl {
  std::string path, partial;
  bool netcdf_wanted = false;
  const esm::System* system = nullptr;
  NetcdfOutputOptions netcdf_options;
  std::optional<CsvWriter> csv;
  std::optional<NetcdfOutput> netcdf;
  bool finished = false;
};

RunOutput::RunOutput(const std::string& path, const esm::System& system, NetcdfOutputOptions netcdf)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.path = path;
  m.partial = path + ".partial";
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".csv") return;
  if (ext != ".nc") throw Error("unsupported_output", path, "", "the output file must end in .nc (NetCDF) or .csv");
  m.netcdf_wanted = true;
  m.system = &system;
  m.netcdf_options = std::move(netcdf);
}

RunOutput::~RunOutput() {
  if (!impl_ || impl_->finished) return;
  if (impl_->csv) impl_->csv->discard();
  if (impl_->netcdf) impl_->netcdf->discard();
  std::error_code ec;
  std::filesystem::remove(impl_->partial, ec);
}

// The file is created here, when the run has bound its operators, forcing and model (what can
// be refused is refused by then), so a refused run never creates one.
void RunOutput::columns(const std::vector<std::string>& names) {
  Impl& m = *impl_;
  if (m.netcdf_wanted) {
    m.netcdf.emplace(m.path, *m.system, m.netcdf_options);
    m.netcdf->define(names);
  } else {
    m.csv.emplace(m.partial);
    m.csv->header(names);
  }
}

void RunOutput::row(double t, std::span<const double> values) {
  if (impl_->csv) impl_->csv->row(t, values);
  if (impl_->netcdf) impl_->netcdf->write(t, values);
}

void RunOutput::finish(const std::string& return_code, const std::optional<std::string>& failure) {
  Impl& m = *impl_;
  if (m.netcdf_wanted) {
    if (m.netcdf) {
      m.netcdf->set_attribute("esi_return_code", return_code);
      if (failure) m.netcdf->set_attribute("esi_failure", *failure);
      m.netcdf->close();  // renames into place itself
    }
    m.finished = true;
    return;
  }
  if (!m.csv) m.csv.emplace(m.partial);  // a run that produced no columns: an empty file
  m.csv->close();
  std::error_code ec;
  std::filesystem::rename(m.partial, m.path, ec);
  if (ec)
    throw Error("output_write_failed", m.path, "", "could not rename the finished output into place: " + ec.message());
  m.finished = true;
}

}  // namespace esi::io
