// A GoogleTest fixture for esi command-line tests: a temporary folder per test (named after the
// suite, the test and the process), removed afterwards; `write` puts a file there and `run`
// starts the esi binary with its stderr captured there.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

#include <gtest/gtest.h>

#include "support/run_esi.hpp"

namespace esi::testing {

class CliDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           ("esi_" + std::string(info->test_suite_name()) + "_" + std::to_string(::getpid()) + "_" +
            info->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  CliResult run(const std::vector<std::string>& args) const {
    return run_esi(ESI_BINARY, args, dir_ / "stderr.txt");
  }
  std::string write(const std::string& name, const std::string& text) const {
    const std::filesystem::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  std::filesystem::path dir_;
};

}  // namespace esi::testing
