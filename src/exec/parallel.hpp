// Private to exec: a parallel loop over indices handed out in order to a fixed number of
// std::threads. Results must not depend on which worker runs an index (callers store by index).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <thread>
#include <vector>

namespace esi::exec::detail {

/// The number of workers parallel_for uses.
inline unsigned worker_count(std::size_t count, unsigned threads) {
  return static_cast<unsigned>(std::max<std::size_t>(1, std::min<std::size_t>(threads, count)));
}

/// Runs work(index, worker) for index in [0, count) on worker_count() threads (indices handed
/// out in order as workers become free; worker in [0, worker_count)); the exception of the
/// lowest failing index is rethrown.
template <class Work>
void parallel_for(std::size_t count, unsigned threads, Work&& work) {
  std::atomic<std::size_t> next{0};
  std::vector<std::exception_ptr> errors(count);
  auto loop = [&](unsigned worker) {
    for (std::size_t i = next++; i < count; i = next++) {
      try {
        work(i, worker);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  for (unsigned k = 1; k < worker_count(count, threads); ++k) pool.emplace_back(loop, k);
  loop(0);
  for (auto& t : pool) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace esi::exec::detail
