// Private to kernel: a fixed team of threads that runs one piece of work per member and
// returns when every member is done (a fork and a join per call, the join being the barrier
// between the grid's stages). The members are started once and wait between calls, so a
// right-hand side evaluated thousands of times does not start threads thousands of times.
// Waiting spins for a few microseconds before sleeping: a stage takes about a millisecond and
// the next one follows at once, so most waits end without a system call.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace esi::kernel::detail {

class ThreadTeam {
 public:
  /// `size` members: the caller of run() and size - 1 threads started here.
  explicit ThreadTeam(unsigned size);
  ~ThreadTeam();
  ThreadTeam(const ThreadTeam&) = delete;
  ThreadTeam& operator=(const ThreadTeam&) = delete;

  unsigned size() const { return size_; }

  /// Runs work(member) for every member in [0, size()), member 0 on the calling thread, and
  /// returns when all have finished; the exception of the lowest failing member is rethrown.
  /// One call at a time (a team belongs to one workspace, a workspace to one caller).
  template <class Work>
  void run(Work& work) {
    run_erased([](void* w, unsigned member) { (*static_cast<Work*>(w))(member); }, &work);
  }

 private:
  using Erased = void (*)(void* work, unsigned member);  // no std::function: nothing allocated per call
  void run_erased(Erased fn, void* work);
  void serve(unsigned member);

  unsigned size_ = 1;
  std::mutex mutex_;
  std::condition_variable start_, done_;
  Erased fn_ = nullptr;
  void* work_ = nullptr;
  // Counts calls; a member runs each generation once. Changed under mutex_ (so a sleeper
  // cannot miss it) but read without it while spinning.
  std::atomic<std::size_t> generation_{0};
  std::atomic<unsigned> running_{0};  // members of the current call not yet finished
  bool quit_ = false;
  std::vector<std::exception_ptr> errors_;
  std::vector<std::thread> threads_;
};

}  // namespace esi::kernel::detail
