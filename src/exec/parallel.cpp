// exec::parallel_for: the private loop (exec/parallel.hpp) behind a plain function, so callers
// in other modules share it without seeing exec's private headers.
#include "esi/exec/parallel.hpp"

#include "exec/parallel.hpp"

namespace esi::exec {

void parallel_for(std::size_t count, unsigned threads,
                  const std::function<void(std::size_t, unsigned)>& work) {
  detail::parallel_for(count, threads, work);
}

}  // namespace esi::exec
