// A scratch folder for tests that write `.esm` files (refs resolve against real paths).
#pragma once

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "esi/esm/schema.hpp"

namespace esi::testing {

class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() /
            ("esi_test_" + std::to_string(rd()) + "_" + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  /// Writes `text` to `name` (sub-folders created) and returns the full path.
  std::filesystem::path write(const std::string& name, const std::string& text) const {
    const auto p = path_ / name;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p;
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

/// Skips the calling test when the ESM schema cannot be found (a checkout without ../shared):
/// what it asserts is the schema layer's verdict.
#define ESI_SKIP_WITHOUT_ESM_SCHEMA() \
  if (!esi::esm::locate_esm_schema()) \
  GTEST_SKIP() << "the ESM schema was not found (set ESI_SCHEMA): this test checks its findings"

/// Where the development corpus is: $ESI_CORPUS, else the build's default. Empty if absent.
inline std::filesystem::path corpus_dir() {
  std::filesystem::path p;
  if (const char* env = std::getenv("ESI_CORPUS")) p = env;
#ifdef ESI_DEFAULT_CORPUS
  else p = ESI_DEFAULT_CORPUS;
#endif
  std::error_code ec;
  return std::filesystem::is_directory(p, ec) ? p : std::filesystem::path();
}

}  // namespace esi::testing
