// `esi run`'s output and NetCDF forcing (run_output.hpp).
#ifdef ESI_HAVE_EXEC

#include "cli/run_output.hpp"

#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>

#include "cli/commands.hpp"
#include "cli/csv.hpp"
#include "esi/core/error.hpp"
#include "esi/io/netcdf_forcing.hpp"
#include "esi/io/netcdf_output.hpp"

namespace esi::cli {

struct RunOutput::Impl {
  std::string path, partial;
  bool netcdf_wanted = false;
  const esm::System* system = nullptr;
  io::NetcdfOutputOptions netcdf_options;
  std::optional<CsvWriter> csv;
  std::optional<io::NetcdfOutput> netcdf;
  bool finished = false;
};

RunOutput::RunOutput(const std::string& path, const esm::System& system, const nlohmann::json& document,
                     const exec::RunConfig& config, const std::string& model_file, const std::string& command_line)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.path = path;
  m.partial = path + ".partial";
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".csv") return;
  if (ext != ".nc") throw Error("unsupported_output", path, "", "the output file must end in .nc (NetCDF) or .csv");
  m.netcdf_wanted = true;
  m.system = &system;
  io::NetcdfOutputOptions& o = m.netcdf_options;
  o.document = &document;
  const nlohmann::json metadata = document.value("metadata", nlohmann::json::object());
  if (metadata.is_object() && metadata.contains("name") && metadata["name"].is_string())
    o.provenance["title"] = metadata["name"].get<std::string>();
  o.provenance["history"] = command_line;
  o.provenance["esi_command_line"] = command_line;
  o.provenance["esi_model_file"] = model_file;
  o.provenance["esi_run_config_file"] = config.file;
  o.provenance["esi_run_config"] = config.source.dump();
  o.provenance["esi_tspan"] = format_number(config.start) + " " + format_number(config.stop);
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

void RunOutput::finish(const exec::Trajectory& trajectory) {
  Impl& m = *impl_;
  if (m.netcdf_wanted) {
    if (m.netcdf) {
      m.netcdf->set_attribute("esi_return_code", std::string(method::return_code_name(trajectory.code)));
      if (!trajectory.ok()) m.netcdf->set_attribute("esi_failure", trajectory.message);
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

exec::ForcingProvider netcdf_forcing(const exec::RunConfig& config, const exec::ForcingSpec& spec,
                                     const esm::System& system) {
  auto file = std::make_shared<io::NetcdfForcing>(spec.file, io::ForcingOrigin{config.file, spec.pointer});
  exec::ForcingProvider p;
  p.target = spec.target;
  p.pointer = spec.pointer;
  p.bracket = spec.bracket;
  io::ForcingField field;
  const esm::System::Array* array = nullptr;
  for (const auto& a : system.arrays)
    if (a.name == spec.target) array = &a;
  if (array != nullptr) {
    // The file holds one record per time; a bracketed target holds two of them side by side,
    // so the file's variable is bound to the target without its bracket axis.
    esm::System::Array one = *array;
    for (std::size_t d = 0; d < one.axes.size(); ++d)
      if (one.axes[d] == spec.bracket) {
        one.axes.erase(one.axes.begin() + static_cast<std::ptrdiff_t>(d));
        one.extents.erase(one.extents.begin() + static_cast<std::ptrdiff_t>(d));
        break;
      }
    field = file->bind(spec.variable, one);
  } else {
    const int k = system.parameter_index(spec.target);
    if (k < 0)
      throw Error("forcing_target_unknown", config.file, spec.pointer,
                  "'" + spec.target + "' is not a parameter or parameter array of the model");
    field = file->bind_scalar(spec.variable, spec.target, system.parameters[static_cast<std::size_t>(k)].units);
  }
  p.record_values = field.values;
  p.times = field.times.empty() ? std::vector<double>{config.start} : field.times;
  p.read = [file, field](std::size_t record, std::span<double> out) {
    file->read(field, field.times.empty() ? 0 : record, out);
  };
  return p;
}

}  // namespace esi::cli

#endif  // ESI_HAVE_EXEC
