// The `esi` executable's main() alone: runs one command line through dispatch (dispatch.cpp,
// in the esi_cli library the CLI fuzz target drives too) and maps what escapes to an exit status.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <new>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "esi/core/error.hpp"

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    const int status = esi::cli::dispatch(args);
    // Reports go to stdout: a full disk or a closed pipe must not pass as success.
    if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
      std::fprintf(stderr,
                   "esi: error[output_write_failed]: writing to standard output failed: %s\n",
                   std::strerror(errno));
      return status == esi::cli::kExitOk ? esi::cli::kExitInvalid : status;
    }
    return status;
  } catch (const esi::Error& e) {
    // Subcommands report input errors themselves; one escaping here is still the input's fault.
    std::fprintf(stderr, "%s\n", esi::format_diagnostic(e.diagnostic()).c_str());
    return esi::cli::kExitInvalid;
  } catch (const std::bad_alloc&) {
    std::fputs("esi: error[out_of_memory]: ran out of memory\n", stderr);
    return esi::cli::kExitInternal;
  } catch (const std::filesystem::filesystem_error& e) {
    // The OS's reason and the path, not the library's wording.
    std::fprintf(stderr, "esi: error[filesystem_error]: %s: %s\n", e.path1().string().c_str(),
                 e.code().message().c_str());
    return esi::cli::kExitInvalid;
  } catch (const std::exception& e) {
    // Every input problem is an esi::Error; anything else is a bug in esi.
    std::fprintf(
        stderr,
        "esi: error[internal_error]: an unexpected failure inside esi (please report it): %s\n",
        e.what());
    return esi::cli::kExitInternal;
  }
}
