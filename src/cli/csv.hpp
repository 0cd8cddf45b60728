// CSV output shared by `esi simulate` and `esi analyze`: RFC 4180 fields, numbers in their
// shortest round-trip spelling, every write checked.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <charconv>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "esi/core/error.hpp"

namespace esi::cli {

/// A CSV field per RFC 4180: quoted, with quotes doubled, when it holds a comma, a quote or a
/// line break.
inline std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

/// The output file, opened before the run; every write is checked and a failure throws
/// `output_write_failed` (which ends the run). Rows are collected whole and handed to the
/// system in one write() of complete lines (at most every 0.2 s or 1 MiB, and at the end), so a
/// run killed at any moment, even by SIGKILL, leaves a file whose rows are a prefix of the
/// full run's, never half a line. A writer that is not `streaming` (a file written whole from
/// results already at hand, as `esi analyze` does) reads no clock: it writes every 1 MiB and at
/// the end.
class CsvWriter {
 public:
  explicit CsvWriter(const std::string& path, bool streaming = true) : path_(path), streaming_(streaming) {
    if (path == "-") {  // standard output, as Unix tools spell it
      file_ = stdout;
      to_stdout_ = true;
      return;
    }
    std::error_code ec;
    existed_ = std::filesystem::exists(path, ec);
    file_ = std::fopen(path.c_str(), "w");
    if (file_ == nullptr)
      throw Error("output_not_writable", path, "", std::string("cannot open the output file for writing: ") +
                                                       std::strerror(errno));
  }
  CsvWriter(const CsvWriter&) = delete;
  CsvWriter& operator=(const CsvWriter&) = delete;
  ~CsvWriter() {
    if (file_ != nullptr && !to_stdout_) std::fclose(file_);
  }

  void header(const std::vector<std::string>& names, const std::string& first = "t") {
    std::string line = first;
    for (const std::string& n : names) line += "," + csv_field(n);
    put(line + "\n");
    if (streaming_) drain();  // a streamed file shows its columns at once
  }

  /// A row already spelled out (fields joined, quoted where csv_field says), without its line
  /// break; unlike header(), it waits for the next write like any row.
  void text_row(const std::string& line) {
    pending_ += line;
    put("\n");
  }

  /// Numbers in their shortest round-trip spelling (4e-06, not 3.9999999999999998e-06).
  /// A column's text is kept and reused while its value stays the same (the same bits): most
  /// columns of `esi analyze`'s runs are constant in time (sweeps of algebraic relations), and
  /// formatting was most of the writing's CPU time.
  void row(double t, std::span<const double> values) {
    line_.clear();
    append_number(t);
    append_values(values);
  }

  /// The same with the time already spelled (as row() would spell it): the runs of a sweep
  /// share their output times, and formatting them again for every file showed in profiles.
  void row(std::string_view t_text, std::span<const double> values) {
    line_.assign(t_text);
    append_values(values);
  }

  /// Flushes and closes; a failure (a full disk shows here at the latest) throws.
  void close() {
    drain();
    std::FILE* f = file_;
    file_ = nullptr;
    if (to_stdout_) {
      if (std::fflush(f) != 0 || std::ferror(f) != 0) fail(errno);
      return;
    }
    const bool flushed = std::fflush(f) == 0 && std::ferror(f) == 0;
    const int flush_errno = errno;
    if (std::fclose(f) != 0 || !flushed) fail(flushed ? errno : flush_errno);
  }

  /// After an input error before any row: a file this run created holds nothing useful.
  void discard() {
    pending_.clear();
    if (to_stdout_) return;
    if (file_ != nullptr) std::fclose(file_);
    file_ = nullptr;
    std::error_code ec;
    if (!existed_ && std::filesystem::is_regular_file(path_, ec)) std::filesystem::remove(path_, ec);
  }

 private:
  void append_values(std::span<const double> values) {
    if (column_text_.size() != values.size()) {
      column_text_.assign(values.size(), std::string());
      column_bits_.assign(values.size(), 0);
      column_known_.assign(values.size(), false);
    }
    for (std::size_t i = 0; i < values.size(); ++i) {
      line_ += ',';
      std::uint64_t bits;
      std::memcpy(&bits, &values[i], sizeof bits);
      if (!column_known_[i] || column_bits_[i] != bits) {
        char buf[32];
        const auto end = std::to_chars(buf, buf + sizeof buf, values[i]).ptr;
        column_text_[i].assign(buf, end);
        column_bits_[i] = bits;
        column_known_[i] = true;
      }
      line_ += column_text_[i];
    }
    line_ += '\n';
    put(line_);
  }

  void append_number(double x) {
    char buf[32];
    const auto end = std::to_chars(buf, buf + sizeof buf, x).ptr;
    line_.append(buf, end);
  }
  void put(const std::string& text) {
    pending_ += text;
    if (pending_.size() >= (std::size_t{1} << 20)) return drain();
    if (streaming_ && std::chrono::steady_clock::now() - last_drain_ >= std::chrono::milliseconds(200)) drain();
  }
  /// Complete lines to the file descriptor, bypassing stdio's buffer (which splits lines).
  void drain() {
    if (streaming_) last_drain_ = std::chrono::steady_clock::now();
    if (pending_.empty() || file_ == nullptr) return;
    if (std::fflush(file_) != 0) fail(errno);
    const int fd = ::fileno(file_);
    std::size_t done = 0;
    while (done < pending_.size()) {
      const ::ssize_t n = ::write(fd, pending_.data() + done, pending_.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) fail(n < 0 ? errno : EIO);
      done += static_cast<std::size_t>(n);
    }
    pending_.clear();
  }
  [[noreturn]] void fail(int error) {
    throw Error("output_write_failed", path_, "",
                std::string("writing the output file failed: ") + std::strerror(error));
  }

  std::string path_;
  std::FILE* file_ = nullptr;
  bool to_stdout_ = false;
  bool existed_ = false;
  bool streaming_ = true;
  std::string line_;
  std::vector<std::string> column_text_;  ///< each column's last value as written
  std::vector<std::uint64_t> column_bits_;
  std::vector<bool> column_known_;
  std::string pending_;
  std::chrono::steady_clock::time_point last_drain_ = std::chrono::steady_clock::now();
};

}  // namespace esi::cli
