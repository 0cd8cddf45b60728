// The parallel loop of exec's own drivers, for callers outside exec (a sweep's points): indices
// handed out in order to a fixed number of threads; callers store results by index.
#pragma once

#include <cstddef>
#include <functional>

namespace esi::exec {

/// Runs work(index, worker) for index in [0, count) on min(threads, count) threads, at least
/// one (indices handed out in order as workers become free; worker in [0, that number)); the
/// exception of the lowest failing index is rethrown.
void parallel_for(std::size_t count, unsigned threads,
                  const std::function<void(std::size_t, unsigned)>& work);

}  // namespace esi::exec
