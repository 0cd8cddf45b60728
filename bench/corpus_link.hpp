// A corpus library linked beside a rewritten document (benchmarks write documents into a temp
// folder whose relative imports must still reach the corpus).
#pragma once

#include <filesystem>

/// `link` points at `target` afterwards: the target made absolute (ESI_CORPUS may be relative
/// to the caller's folder), and a link left by an earlier run, possibly dangling, replaced.
inline void link_corpus_library(const std::filesystem::path& target, const std::filesystem::path& link) {
  namespace fs = std::filesystem;
  const fs::path absolute = fs::absolute(target);
  if (fs::is_symlink(link) && fs::read_symlink(link) == absolute) return;
  fs::remove(link);
  fs::create_directory_symlink(absolute, link);
}
