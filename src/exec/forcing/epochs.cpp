// A run's forcing epochs (forcing/epochs.hpp) and the epoch rule (forcing.hpp): which record
// holds when, bracketed pairs, the record cache and the read-ahead.
#include "exec/forcing/epochs.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "esi/core/error.hpp"
#include "esi/core/json.hpp"
#include "exec/run_support.hpp"

namespace esi::exec {
namespace {

/// The index of the last record time at or before t (-1: t is before the first). A time
/// exactly on t_k+1 selects k + 1: epochs are half-open.
std::ptrdiff_t epoch_at(std::span<const double> times, double t) {
  return std::upper_bound(times.begin(), times.end(), t) - times.begin() - 1;
}

}  // namespace

std::size_t select_epoch(std::span<const double> times, double t) {
  if (times.empty() || !(t >= times.front()))
    throw Error("forcing_time_out_of_range", "", "",
                times.empty() ? std::string("the forcing has no records")
                              : "time " + detail::number_text(t) +
                                    " s is before the forcing's first record (" +
                                    detail::number_text(times.front()) + " s)");
  return static_cast<std::size_t>(epoch_at(times, t));
}

std::optional<double> next_epoch_time(std::span<const double> times, double t) {
  const auto it = std::upper_bound(times.begin(), times.end(), t);
  if (it == times.end()) return std::nullopt;
  return *it;
}

namespace detail {

ForcingSlot locate_forcing(const esm::System& system, const RunConfig& config,
                           const ForcingProvider& f) {
  ForcingSlot slot;
  for (std::size_t a = 0; a < system.arrays.size(); ++a)
    if (system.arrays[a].name == f.target) slot.array = static_cast<int>(a);
  if (slot.array < 0) {
    slot.parameter = system.parameter_index(f.target);
    if (slot.parameter < 0)
      throw Error("forcing_target_unknown", config.file, f.pointer,
                  "'" + f.target + "' is not a parameter or parameter array of the model");
    if (!f.bracket.empty() || f.record_values != 1)
      throw Error("forcing_shape_mismatch", config.file, f.pointer,
                  "'" + f.target + "' is a scalar parameter, but the provider gives " +
                      std::to_string(f.record_values) + " values per record" +
                      (f.bracket.empty() ? "" : " with a bracket"));
    return slot;
  }
  const auto& arr = system.arrays[static_cast<std::size_t>(slot.array)];
  if (!arr.parameter)
    throw Error("forcing_target_unknown", config.file, f.pointer,
                "'" + f.target +
                    "' is an array the model computes or integrates, not a parameter array; "
                    "forcing sets parameters");
  if (arr.values.empty()) {  // cell form: one parameter per cell that some equation reads
    std::vector<std::int64_t> x(arr.extents.size(), 1);
    std::size_t cells = 1;
    for (std::int64_t e : arr.extents) cells *= static_cast<std::size_t>(e);
    for (std::size_t c = 0; c < cells; ++c) {
      slot.cell_parameters.push_back(system.parameter_index(esm::cell_name(arr.name, x)));
      for (std::size_t d = 0; d < x.size(); ++d) {  // odometer, first index fastest
        if (++x[d] <= arr.extents[d]) break;
        x[d] = 1;
      }
    }
  }
  std::size_t n = 1;
  for (std::size_t d = 0; d < arr.axes.size(); ++d) {
    if (arr.axes[d] == f.bracket) {
      slot.bracket_axis = static_cast<int>(d);
      if (arr.extents[d] != 2)
        throw Error("forcing_shape_mismatch", config.file, pointer_join(f.pointer, "bracket"),
                    "the bracket index set '" + f.bracket + "' has " +
                        std::to_string(arr.extents[d]) + " entries along '" + f.target +
                        "'; it must hold two records");
      continue;
    }
    n *= static_cast<std::size_t>(arr.extents[d]);
  }
  if (!f.bracket.empty() && slot.bracket_axis < 0)
    throw Error("forcing_shape_mismatch", config.file, pointer_join(f.pointer, "bracket"),
                "'" + f.target + "' has no axis '" + f.bracket + "'");
  if (n != f.record_values)
    throw Error("forcing_shape_mismatch", config.file, f.pointer,
                "'" + f.target + "' holds " + std::to_string(n) +
                    " values per record, the provider gives " + std::to_string(f.record_values));
  slot.values = n;
  return slot;
}

void zero_forcing_targets(esm::System& system, const std::vector<ForcingProvider>& forcing) {
  for (const ForcingProvider& f : forcing) {
    for (auto& a : system.arrays)
      if (a.name == f.target && a.parameter)
        for (double& v : a.values)
          if (std::isnan(v)) v = 0;
    for (auto& p : system.parameters)  // the cell form: one parameter per cell
      if ((p.name == f.target || p.array == f.target) && !p.default_value) p.default_value = 0.0;
  }
}

void ForcingEpochs::bind(const esm::System& model_system, const RunConfig& config,
                         const std::vector<ForcingProvider>& forcing) {
  config_ = &config;
  forcing_ = &forcing;
  for (const ForcingProvider& f : forcing)
    slots_.push_back(locate_forcing(model_system, config, f));
  loaded_.assign(forcing.size(), -1);
  cache_.resize(forcing.size());
}

bool ForcingEpochs::has_epoch(double t) const {
  for (const ForcingProvider& f : *forcing_) {
    if (f.times.size() <= 1 && f.bracket.empty()) continue;
    const auto k = epoch_at(f.times, t);
    if (k < 0 || (!f.bracket.empty() && static_cast<std::size_t>(k + 1) >= f.times.size() &&
                  t != f.times.back()))
      return false;
  }
  return true;
}

double ForcingEpochs::next_time(double t) const {
  double next = std::numeric_limits<double>::infinity();
  for (const ForcingProvider& f : *forcing_)
    if (const auto at = next_epoch_time(f.times, t)) next = std::min(next, *at);
  return next;
}

const std::vector<double>& ForcingEpochs::record(std::size_t q, std::size_t k) {
  auto& cache = cache_[q];
  for (const auto& [index, values] : cache)
    if (index == k) return values;
  std::vector<double> values;
  const bool prefetched = prefetch_.valid() && prefetch_q_ == q && prefetch_k_ == k;
  // One read at a time, whichever thread: NetCDF-C is not thread-safe.
  if (prefetch_.valid() && !prefetched) keep(prefetch_q_, prefetch_k_, prefetch_.get());
  if (prefetched) {
    values = prefetch_.get();  // a read error surfaces here, when the record is needed
  } else {
    values.resize((*forcing_)[q].record_values);
    (*forcing_)[q].read(k, values);
  }
  return keep(q, k, std::move(values));
}

const std::vector<double>& ForcingEpochs::keep(std::size_t q, std::size_t k,
                                               std::vector<double> values) {
  auto& cache = cache_[q];
  if (cache.size() >= 3) cache.erase(cache.begin());
  cache.emplace_back(k, std::move(values));
  return cache.back().second;
}

void ForcingEpochs::prefetch_next() {
  if (prefetch_.valid()) return;
  for (std::size_t q = 0; q < forcing_->size(); ++q) {
    const ForcingProvider& f = (*forcing_)[q];
    if (loaded_[q] < 0) continue;
    const std::size_t next = static_cast<std::size_t>(loaded_[q]) + (f.bracket.empty() ? 1 : 2);
    if (next >= f.times.size()) continue;
    const auto& cache = cache_[q];
    if (std::any_of(cache.begin(), cache.end(), [&](const auto& e) { return e.first == next; }))
      continue;
    prefetch_q_ = q;
    prefetch_k_ = next;
    prefetch_ = std::async(std::launch::async, [&f, next] {
      std::vector<double> values(f.record_values);
      f.read(next, values);
      return values;
    });
    return;
  }
}

bool ForcingEpochs::load(double t, bool stage, Model& model) {
  bool changed = false;
  for (std::size_t q = 0; q < forcing_->size(); ++q) {
    const ForcingProvider& f = (*forcing_)[q];
    const ForcingSlot& slot = slots_[q];
    std::ptrdiff_t k = 0;
    if (f.times.size() > 1 || !f.bracket.empty()) {
      k = epoch_at(f.times, t);
      const bool on_last = stage && t == f.times.back();
      const bool beyond =
          !f.bracket.empty() && static_cast<std::size_t>(k + 1) >= f.times.size() && !on_last;
      if (k < 0 || beyond)
        throw Error("forcing_out_of_range", config_->file, f.pointer,
                    "'" + f.target + "' has records from t = " + number_text(f.times.front()) +
                        " to " + number_text(f.times.back()) + " s; the run needs " +
                        (f.bracket.empty() ? "one at or before" : "a pair around") +
                        " t = " + number_text(t));
    }
    if (loaded_[q] == k) continue;
    loaded_[q] = k;
    changed = true;
    if (slot.parameter >= 0) {
      model.p[static_cast<std::size_t>(slot.parameter)] = record(q, static_cast<std::size_t>(k))[0];
      continue;
    }
    auto& arr = model.system.arrays[static_cast<std::size_t>(slot.array)];
    std::vector<double>& full = slot.cell_parameters.empty() ? arr.values : scratch_;
    full.resize(slot.bracket_axis < 0 ? f.record_values : 2 * f.record_values);
    if (slot.bracket_axis < 0) {
      const auto& values = record(q, static_cast<std::size_t>(k));
      std::copy(values.begin(), values.end(), full.begin());
    } else {
      // Cells first index fastest: inner = cells per step of the bracket axis.
      std::size_t inner = 1;
      for (int d = 0; d < slot.bracket_axis; ++d)
        inner *= static_cast<std::size_t>(arr.extents[static_cast<std::size_t>(d)]);
      const auto last = static_cast<std::ptrdiff_t>(f.times.size()) - 1;
      for (int side = 0; side < 2; ++side) {
        const auto& values =
            record(q, static_cast<std::size_t>(std::min<std::ptrdiff_t>(k + side, last)));
        for (std::size_t v = 0; v < f.record_values; ++v) {
          const std::size_t lo = v % inner, hi = v / inner;
          full[hi * inner * 2 + static_cast<std::size_t>(side) * inner + lo] = values[v];
        }
      }
    }
    for (std::size_t c = 0; c < slot.cell_parameters.size(); ++c)
      if (slot.cell_parameters[c] >= 0)
        model.p[static_cast<std::size_t>(slot.cell_parameters[c])] = full[c];
  }
  return changed;
}

}  // namespace detail
}  // namespace esi::exec
