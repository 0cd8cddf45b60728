// CSV output files (`esi simulate`, `esi run`, `esi analyze`): RFC 4180 fields, numbers in
// their shortest round-trip spelling, every write checked.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace esi::io {

/// A CSV field per RFC 4180: quoted, with quotes doubled, when it holds a comma, a quote or a
/// line break.
std::string csv_field(const std::string& text);

/// The output file, opened before the run; every write is checked and a failure throws
/// `output_write_failed` (which ends the run). Rows are collected whole and handed to the
/// system in one write() of complete lines (at most every 0.2 s or 1 MiB, and at the end), so a
/// run killed at any moment, even by SIGKILL, leaves a file whose rows are a prefix of the
/// full run's, never half a line. A writer that is not `streaming` (a file written whole from
/// results already at hand, as `esi analyze` does) reads no clock: it writes every 1 MiB and at
/// the end. `path` "-" is standard output, as Unix tools spell it.
class CsvWriter {
 public:
  /// Throws `output_not_writable` when the file cannot be opened.
  explicit CsvWriter(const std::string& path, bool streaming = true);
  CsvWriter(const CsvWriter&) = delete;
  CsvWriter& operator=(const CsvWriter&) = delete;
  ~CsvWriter();

  void header(const std::vector<std::string>& names, const std::string& first = "t");

  /// A row already spelled out (fields joined, quoted where csv_field says), without its line
  /// break; unlike header(), it waits for the next write like any row.
  void text_row(const std::string& line);

  /// Numbers in their shortest round-trip spelling (4e-06, not 3.9999999999999998e-06).
  /// A column's text is kept and reused while its value stays the same (the same bits): most
  /// columns of `esi analyze`'s runs are constant in time (sweeps of algebraic relations), and
  /// formatting was most of the writing's CPU time.
  void row(double t, std::span<const double> values);

  /// The same with the time already spelled (as row() would spell it): the runs of a sweep
  /// share their output times, and formatting them again for every file showed in profiles.
  void row(std::string_view t_text, std::span<const double> values);

  /// Flushes and closes; a failure (a full disk shows here at the latest) throws.
  void close();

  /// After an input error before any row: a file this run created holds nothing useful.
  void discard();

 private:
  void append_values(std::span<const double> values);
  void append_number(double x);
  void put(const std::string& text);
  /// Complete lines to the file descriptor, bypassing stdio's buffer (which splits lines).
  void drain();
  [[noreturn]] void fail(int error);

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

}  // namespace esi::io
