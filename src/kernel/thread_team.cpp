#include "kernel/thread_team.hpp"

#include <algorithm>

namespace esi::kernel::detail {

ThreadTeam::ThreadTeam(unsigned size) : size_(std::max(1u, size)), errors_(size_) {
  threads_.reserve(size_ - 1);
  for (unsigned m = 1; m < size_; ++m) threads_.emplace_back([this, m] { serve(m); });
}

ThreadTeam::~ThreadTeam() {
  {
    std::lock_guard lock(mutex_);
    quit_ = true;
  }
  start_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadTeam::serve(unsigned member) {
  std::size_t seen = 0;
  while (true) {
    Erased fn = nullptr;
    void* work = nullptr;
    {
      std::unique_lock lock(mutex_);
      start_.wait(lock, [&] { return quit_ || generation_ != seen; });
      if (quit_) return;
      seen = generation_;
      fn = fn_;
      work = work_;
    }
    try {
      fn(work, member);
    } catch (...) {
      errors_[member] = std::current_exception();
    }
    {
      std::lock_guard lock(mutex_);
      if (--running_ == 0) done_.notify_one();
    }
  }
}

void ThreadTeam::run_erased(Erased fn, void* work) {
  std::fill(errors_.begin(), errors_.end(), nullptr);
  if (size_ > 1) {
    {
      std::lock_guard lock(mutex_);
      fn_ = fn;
      work_ = work;
      running_ = size_ - 1;
      ++generation_;
    }
    start_.notify_all();
  }
  try {
    fn(work, 0);
  } catch (...) {
    errors_[0] = std::current_exception();
  }
  if (size_ > 1) {
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return running_ == 0; });
    fn_ = nullptr;
    work_ = nullptr;
  }
  for (auto& e : errors_)
    if (e) std::rethrow_exception(e);
}

}  // namespace esi::kernel::detail
