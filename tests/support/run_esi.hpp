// Running the built `esi` binary from a test: stdout, stderr and the exit status.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace esi::testing {

struct CliResult {
  int status = -1;  ///< exit status, or -1 when the process did not exit normally
  std::string out;
  std::string err;  ///< empty unless a stderr file was given
};

inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += (c == '\'') ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

inline std::string read_all(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Runs `binary ARGS...`; stderr goes to `err_file` (read back into `err`) or is dropped.
inline CliResult run_esi(const std::string& binary, const std::vector<std::string>& args,
                         const std::filesystem::path& err_file = {}) {
  std::string cmd = shell_quote(binary);
  for (const std::string& a : args) cmd += " " + shell_quote(a);
  cmd += " 2>" + (err_file.empty() ? std::string("/dev/null") : shell_quote(err_file.string()));
  CliResult r;
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (pipe == nullptr) return r;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) r.out.append(buf, n);
  const int raw = ::pclose(pipe);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  if (!err_file.empty()) r.err = read_all(err_file);
  return r;
}

}  // namespace esi::testing
