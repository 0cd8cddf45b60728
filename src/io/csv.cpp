// CSV output files (csv.hpp): field quoting, number spelling and checked, whole-line writes.
#include "esi/io/csv.hpp"

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>

#include "esi/core/error.hpp"

namespace esi::io {

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

CsvWriter::CsvWriter(const std::string& path, bool streaming) : path_(path), streaming_(streaming) {
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

CsvWriter::~CsvWriter() {
  if (file_ != nullptr && !to_stdout_) std::fclose(file_);
}

void CsvWriter::header(const std::vector<std::string>& names, const std::string& first) {
  std::string line = first;
  for (const std::string& n : names) line += "," + csv_field(n);
  put(line + "\n");
  if (streaming_) drain();  // a streamed file shows its columns at once
}

void CsvWriter::text_row(const std::string& line) {
  pending_ += line;
  put("\n");
}

void CsvWriter::row(double t, std::span<const double> values) {
  line_.clear();
  append_number(t);
  append_values(values);
}

void CsvWriter::row(std::string_view t_text, std::span<const double> values) {
  line_.assign(t_text);
  append_values(values);
}

void CsvWriter::close() {
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

void CsvWriter::discard() {
  pending_.clear();
  if (to_stdout_) return;
  if (file_ != nullptr) std::fclose(file_);
  file_ = nullptr;
  std::error_code ec;
  if (!existed_ && std::filesystem::is_regular_file(path_, ec)) std::filesystem::remove(path_, ec);
}

void CsvWriter::append_values(std::span<const double> values) {
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

void CsvWriter::append_number(double x) {
  char buf[32];
  const auto end = std::to_chars(buf, buf + sizeof buf, x).ptr;
  line_.append(buf, end);
}

void CsvWriter::put(const std::string& text) {
  pending_ += text;
  if (pending_.size() >= (std::size_t{1} << 20)) return drain();
  if (streaming_ && std::chrono::steady_clock::now() - last_drain_ >= std::chrono::milliseconds(200)) drain();
}

void CsvWriter::drain() {
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

void CsvWriter::fail(int error) {
  throw Error("output_write_failed", path_, "",
              std::string("writing the output file failed: ") + std::strerror(error));
}

}  // namespace esi::io
