// What the file-based fuzz targets share: a per-process scratch file the input is written to
// (the loaders take paths, as users give them).
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace esi::fuzz {

/// $TMPDIR (or /tmp) / esi_fuzz_<tag>_<pid>.esm
inline std::string scratch_path(const char* tag) {
  const char* tmp = std::getenv("TMPDIR");
  return std::string(tmp && *tmp ? tmp : "/tmp") + "/esi_fuzz_" + tag + "_" +
         std::to_string(::getpid()) + ".esm";
}

/// Writes the input; a scratch file that cannot be written is the harness's failure (abort).
inline void write_input(const std::string& path, const std::uint8_t* data, std::size_t size) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    std::perror(path.c_str());
    std::abort();
  }
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  if (std::fclose(f) != 0) std::abort();
}

}  // namespace esi::fuzz
