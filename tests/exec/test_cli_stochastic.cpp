// `esi simulate` on stochastic documents end to end: one path, ensemble statistics, every
// member, thread-count independence of the bytes written, and refusals with their exit status.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/run_esi.hpp"
#include "support/temp_dir.hpp"

namespace {

using Result = esi::testing::CliResult;

Result run(const std::vector<std::string>& args) { return esi::testing::run_esi(ESI_BINARY, args); }

std::string doc(const std::string& name) {
  return (std::filesystem::path(ESI_SOURCE_DIR) / "tests/exec/stochastic" / name).string();
}

std::vector<std::string> lines_of(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(CliStochastic, OnePathThenEnsembleStatisticsThenMembers) {
  esi::testing::TempDir dir;
  const auto one = dir.path() / "one.csv", stats = dir.path() / "stats.csv", members = dir.path() / "members.csv";
  ASSERT_EQ(run({"simulate", doc("ou.esm"), "--tspan", "0", "1", "--saveat", "0.5", "--seed", "7", "-q", "-o",
                 one.string()}).status, 0);
  const auto path = lines_of(one);
  ASSERT_EQ(path.size(), 4u);
  EXPECT_EQ(path[0], "t,OU.x,OU.y");
  EXPECT_EQ(path[1], "0,1,2");

  ASSERT_EQ(run({"simulate", doc("ou.esm"), "--tspan", "0", "1", "--saveat", "0.5", "--seed", "7", "--ensemble",
                 "300", "-q", "-o", stats.string()}).status, 0);
  const auto st = lines_of(stats);
  ASSERT_EQ(st.size(), 4u);
  EXPECT_EQ(st[0], "t,OU.x.mean,OU.x.var,OU.y.mean,OU.y.var");
  EXPECT_EQ(st[1], "0,1,0,2,0");

  ASSERT_EQ(run({"simulate", doc("ou.esm"), "--tspan", "0", "1", "--saveat", "0.5", "--seed", "7", "--ensemble",
                 "3", "--members", "-q", "-o", members.string()}).status, 0);
  const auto mem = lines_of(members);
  ASSERT_EQ(mem.size(), 1u + 3 * 3);
  EXPECT_EQ(mem[0], "member,t,OU.x,OU.y");
  // Member 0 of an ensemble is the single path of the same seed.
  for (std::size_t k = 1; k <= 3; ++k) EXPECT_EQ(mem[k], "0," + path[k]);
  EXPECT_EQ(mem[4].rfind("1,0,", 0), 0u);
}

// ... nor on --native (the SDE programs as compiled C++: the same bits as the tape).
TEST(CliStochastic, OutputBytesDoNotDependOnTheThreadCount) {
  esi::testing::TempDir dir;
  std::vector<std::string> outputs;
  for (const char* threads : {"1", "2", "native"}) {
    const auto out = dir.path() / (std::string("e") + threads + ".csv");
    std::vector<std::string> args{"simulate", doc("gbm_sampled.esm"), "--tspan", "0", "1", "--saveat", "0.25", "--dt",
                                  "0.01", "--seed", "42", "--ensemble", "500", "-q", "-o", out.string()};
    if (std::string(threads) == "native") args.push_back("--native");
    else args.insert(args.end(), {"--threads", threads});
    ASSERT_EQ(run(args).status, 0);
    std::ifstream in(out);
    std::stringstream s;
    s << in.rdbuf();
    outputs.push_back(s.str());
  }
  EXPECT_EQ(outputs[0], outputs[1]);
  EXPECT_EQ(outputs[0], outputs[2]);
  EXPECT_GT(outputs[0].size(), 100u);
}

TEST(CliStochastic, Refusals) {
  esi::testing::TempDir dir;
  const std::string out = (dir.path() / "o.csv").string();
  const auto err = dir.path() / "err.txt";
  Result r = esi::testing::run_esi(ESI_BINARY, {"simulate", doc("wiener_nonlinear.esm"), "--tspan", "0", "1", "-o", out}, err);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("/models/OU/variables/x: error[wiener_nonlinear]"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out));
  r = run({"validate", doc("wiener_nonlinear.esm")});  // the same finding, before any run
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("wiener_nonlinear"), std::string::npos) << r.out;
  r = esi::testing::run_esi(ESI_BINARY, {"simulate", doc("unknown_distribution.esm"), "--tspan", "0", "1", "-o", out}, err);
  EXPECT_EQ(r.status, 1);  // refused by the schema layer at the distribution
  EXPECT_NE(r.err.find("/models/OU/variables/theta/distribution/kind"), std::string::npos) << r.err;
  EXPECT_EQ(run({"simulate", doc("ou.esm"), "--tspan", "0", "1", "--method", "Tsit5", "-o", out}).status, 2);
  EXPECT_EQ(run({"simulate", doc("ou.esm"), "--tspan", "0", "1", "--method", "SRA1", "--seed", "-1", "-o", out}).status, 2);
  EXPECT_EQ(run({"simulate", doc("gbm_sampled.esm"), "--tspan", "0", "1", "--method", "SRA1", "-o", out}).status, 1);
}

TEST(CliSample, OneRowPerChainOneColumnPerFeatureAndRefusals) {
  esi::testing::TempDir dir;
  const auto out = dir.path() / "s.csv";
  ASSERT_EQ(run({"sample", doc("quadratic_energy.esm"), "--energy", "E", "--rows", "5", "--steps", "10", "--step-size",
                 "0.1", "--temperature", "0.5", "--seed", "3", "--threads", "2", "-o", out.string()}).status, 0);
  const auto lines = lines_of(out);
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_EQ(lines[0], "Q.x0,Q.x1,Q.x2");
  // Temperature 0: plain gradient descent from x(0) = 1, 1.1, 1.2 towards y = -1, -0.75, -0.5;
  // after one step of 0.5, x0 = 1 - 0.5 (1 - (-1)) = 0 exactly.
  ASSERT_EQ(run({"sample", doc("quadratic_energy.esm"), "--energy", "Q.E", "--rows", "1", "--steps", "1", "--step-size",
                 "0.5", "--temperature", "0", "-o", out.string()}).status, 0);
  EXPECT_EQ(lines_of(out)[1].rfind("0,", 0), 0u) << lines_of(out)[1];
  const auto err = dir.path() / "err.txt";
  Result r = esi::testing::run_esi(ESI_BINARY, {"sample", doc("quadratic_energy.esm"), "--energy", "F", "--rows", "1",
                                                "--steps", "1", "--step-size", "0.5", "--temperature", "0", "-o",
                                                out.string()}, err);
  EXPECT_EQ(r.status, 1);
  std::ifstream in(err);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("error[unknown_energy]"), std::string::npos) << text.str();
  EXPECT_EQ(run({"sample", doc("quadratic_energy.esm"), "--energy", "E", "--rows", "0", "--steps", "1", "--step-size",
                 "0.5", "--temperature", "0", "-o", out.string()}).status, 2);
  EXPECT_EQ(run({"sample", doc("quadratic_energy.esm"), "--energy", "E", "--rows", "1", "--steps", "1", "--step-size",
                 "-1", "--temperature", "0", "-o", out.string()}).status, 2);
  EXPECT_EQ(run({"sample", doc("ou.esm"), "--energy", "y", "--rows", "1", "--steps", "1", "--step-size", "0.1",
                 "--temperature", "0", "-o", out.string()}).status, 1);  // a Wiener parameter: refused
}

}  // namespace
