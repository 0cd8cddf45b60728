// libFuzzer target for the `esi` command line: option parsing and every subcommand, in-process.
//
// An input is a command line, one argument per line ('\n'-separated, at most 24 arguments). It
// runs in a scratch folder holding `ok.esm` (a valid model with an inline test) and `bad.esm`
// (an invalid one), so arguments that name them reach the loaders, solvers and writers.
// Contract under test: every command line ends in an exit status (0-3) or an esi::Error (which
// `main` maps to exit 1); any other exception, crash, sanitizer report or hang is a finding.
//
// Kept inside the scratch folder: '/' in an argument becomes '_' and arguments holding '..' are
// skipped, so the target never reads or writes elsewhere. Skipped as uninteresting (documented
// limits, not defects): --native (it starts the system compiler), output grids finer than 1e-2
// of model time (up to 10^7 CSV rows are legal and only slow) and tolerances below 1e-12 (they
// run to max_steps: bounded, reported, slow under ASan). Run with -close_fd_mask=3 to silence
// the commands' output.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "esi/core/error.hpp"

namespace {

constexpr const char* kOk = R"({"esm": "1.0.0", "metadata": {"name": "Ok"}, "models": {"M": {
  "variables": {"x": {"type": "unknown", "units": "1", "default": 1.0},
                "y": {"type": "unknown", "units": "1"},
                "k": {"type": "parameter", "units": "1/s", "default": 0.5}},
  "equations": [{"lhs": {"op": "D", "args": ["x"], "wrt": "t"},
                 "rhs": {"op": "*", "args": [{"op": "-", "args": ["k"]}, "x"]}},
                {"lhs": "y", "rhs": {"op": "*", "args": [2, "x"]}}],
  "tests": [{"id": "decay", "time_span": {"start": 0, "end": 1},
             "assertions": [{"variable": "x", "time": 1, "expected": 0.6065306597126334}]}]}}})";

constexpr const char* kBad = R"({"esm": "1.0.0", "metadata": {"name": "Bad"}, "models": {"M": {
  "variables": {"x": {"type": "unknown", "default": 1.0}},
  "equations": [{"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": "nope"}]}}})";

/// Makes the scratch folder once per process and enters it.
void enter_scratch() {
  static bool done = false;
  if (done) return;
  done = true;
  const char* tmp = std::getenv("TMPDIR");
  const std::filesystem::path dir = std::filesystem::path(tmp && *tmp ? tmp : "/tmp") /
                                    ("esi_fuzz_cli_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "ok.esm") << kOk;
  std::ofstream(dir / "bad.esm") << kBad;
  if (::chdir(dir.c_str()) != 0) std::abort();
}

std::vector<std::string> split_arguments(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> args(1);
  for (std::size_t i = 0; i < size; ++i) {
    const char c = static_cast<char>(data[i]);
    if (c == '\n') {
      args.emplace_back();
      continue;
    }
    args.back() += (c == '/') ? '_' : c;
  }
  return args;
}

bool uninteresting(const std::vector<std::string>& args) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i].find("native") != std::string::npos) return true;
    if (args[i].find("..") != std::string::npos) return true;  // would leave the scratch folder
    // Tolerances below double precision's reach run until max_steps (10^6 attempts): 0.8 s in
    // a release build, over the 20 s limit under ASan and coverage. Bounded, reported
    // (MaxSteps, with a hint), and only slow, so not explored.
    if ((args[i] == "--rtol" || args[i] == "--atol") && i + 1 < args.size()) {
      char* end = nullptr;
      const double tol = std::strtod(args[i + 1].c_str(), &end);
      if (end != args[i + 1].c_str() && tol < 1e-12) return true;
    }
    if (args[i] == "--saveat" && i + 1 < args.size()) {
      char* end = nullptr;
      const double dt = std::strtod(args[i + 1].c_str(), &end);
      if (end != args[i + 1].c_str() && dt < 1e-2) return true;
    }
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 4096) return 0;
  enter_scratch();
  const std::vector<std::string> args = split_arguments(data, size);
  if (args.size() > 24 || uninteresting(args)) return 0;
  try {
    const int status = esi::cli::dispatch(args);
    if (status < 0 || status > 3) std::abort();
  } catch (const esi::Error&) {
    // main() prints it and exits 1: an input problem, reported.
  }
  return 0;
}
