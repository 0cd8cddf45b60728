// Ctrl-C (SIGINT) and SIGTERM during a long run (esi simulate, esi run).
#pragma once

#include <atomic>
#include <csignal>

namespace esi::cli {

// Ctrl-C (SIGINT) or SIGTERM during a run: the handler only sets this flag (the one thing a
// signal handler may do); the driver stops after the step in progress, the rows reached stay
// in the CSV and the exit status is 130. Process-wide by nature, so a global.
inline std::atomic<bool> g_interrupted{false};
extern "C" inline void on_interrupt(int) { g_interrupted.store(true); }

/// Installs on_interrupt for the duration of one run and restores what was there.
struct InterruptScope {
  using Handler = void (*)(int);
  Handler old_int, old_term;
  InterruptScope() {
    g_interrupted.store(false);
    old_int = std::signal(SIGINT, on_interrupt);
    old_term = std::signal(SIGTERM, on_interrupt);
  }
  ~InterruptScope() {
    std::signal(SIGINT, old_int);
    std::signal(SIGTERM, old_term);
  }
};

}  // namespace esi::cli
