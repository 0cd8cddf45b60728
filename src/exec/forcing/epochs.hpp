// Private to exec: a run's forcing epochs. Binds each provider to its target in the model,
// loads the record(s) that hold over a macro step (a bracketed target gets records k and k + 1
// side by side), keeps the last few records and reads the next one ahead on another thread.
#pragma once

#include <cstddef>
#include <future>
#include <utility>
#include <vector>

#include "esi/esm/system.hpp"
#include "esi/exec/forcing.hpp"
#include "esi/exec/run_config.hpp"
#include "exec/model.hpp"

namespace esi::exec::detail {

/// A forcing provider's target in the system: a parameter array or a scalar parameter.
struct ForcingSlot {
  int array = -1;      ///< System::arrays index
  int parameter = -1;  ///< System::parameters index
  int bracket_axis = -1;
  std::size_t values = 1;
  /// Cell form (the array became one parameter per cell): per cell of the array, first index
  /// fastest, its System::parameters index (-1: no equation reads that cell).
  std::vector<int> cell_parameters;
};

/// Checks `f`'s target against `system` (forcing_target_unknown, forcing_shape_mismatch at the
/// provider's pointer) and says where its records go.
ForcingSlot locate_forcing(const esm::System& system, const RunConfig& config,
                           const ForcingProvider& f);

/// Forcing targets get their values from the providers before anything is evaluated; until
/// then they hold 0 where nothing else gave a value (compiling refuses NaN parameter cells).
void zero_forcing_targets(esm::System& system, const std::vector<ForcingProvider>& forcing);

class ForcingEpochs {
 public:
  /// Binds every provider to its target in `model_system` (the model's, after any split).
  /// `forcing` and `config` must outlive this.
  void bind(const esm::System& model_system, const RunConfig& config,
            const std::vector<ForcingProvider>& forcing);

  /// Whether every provider has the record(s) a macro step starting at t needs.
  bool has_epoch(double t) const;
  /// The first record time of any provider after t (infinity when none): a macro step ends there.
  double next_time(double t) const;

  /// Loads into `model`, for every provider, the record(s) that hold over a macro step starting
  /// at t; true when some target changed (the caller prepares the model again). A stage exactly
  /// on a bracketed provider's last record time (a run ending there) gets that record in both
  /// slots: whatever the document's blend weight, it reads the record. Throws
  /// forcing_out_of_range.
  bool load(double t, bool stage, Model& model);

  /// Starts reading, on another thread, the first record some provider needs next that is not
  /// read yet (the one after the loaded epoch's), so the file is read while the leaves step.
  void prefetch_next();

 private:
  /// Record k of provider q, read once and kept while it may be needed again (a run moves
  /// forward, so the last three records suffice).
  const std::vector<double>& record(std::size_t q, std::size_t k);
  const std::vector<double>& keep(std::size_t q, std::size_t k, std::vector<double> values);

  const RunConfig* config_ = nullptr;
  const std::vector<ForcingProvider>* forcing_ = nullptr;
  std::vector<ForcingSlot> slots_;
  std::vector<std::ptrdiff_t> loaded_;
  std::vector<double> scratch_;
  std::vector<std::vector<std::pair<std::size_t, std::vector<double>>>> cache_;
  std::future<std::vector<double>> prefetch_;  ///< at most one record read ahead
  std::size_t prefetch_q_ = 0, prefetch_k_ = 0;
};

}  // namespace esi::exec::detail
