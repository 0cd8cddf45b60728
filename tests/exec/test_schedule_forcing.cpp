// The forcing epoch rule (exec/forcing.hpp): half-open epoch selection at and between record
// times, and when the forcing next changes. (Moved from tests/io with the rule.)
#include <cmath>
#include <functional>
#include <vector>

#include <gtest/gtest.h>

#include "esi/core/error.hpp"
#include "esi/exec/forcing.hpp"
#include "support/error_of.hpp"

namespace {

using esi::testing::error_of;

TEST(ForcingEpochs, EpochsAreHalfOpenAtAndBetweenRecordTimes) {
  const std::vector<double> times = {0, 3600, 7200};
  EXPECT_EQ(esi::exec::select_epoch(times, 0), 0u);
  EXPECT_EQ(esi::exec::select_epoch(times, 1800), 0u);
  EXPECT_EQ(esi::exec::select_epoch(times, std::nextafter(3600.0, 0.0)), 0u);
  EXPECT_EQ(esi::exec::select_epoch(times, 3600), 1u);  // exactly on t_1: the next epoch
  EXPECT_EQ(esi::exec::select_epoch(times, 3600.5), 1u);
  EXPECT_EQ(esi::exec::select_epoch(times, 7200), 2u);
  EXPECT_EQ(esi::exec::select_epoch(times, 1e9), 2u);  // the last record holds from its time on
  EXPECT_EQ(error_of([&] { esi::exec::select_epoch(times, -1); }).code(), "forcing_time_out_of_range");
  EXPECT_EQ(error_of([&] { esi::exec::select_epoch({}, 0); }).code(), "forcing_time_out_of_range");
  EXPECT_EQ(esi::exec::next_epoch_time(times, 0), 3600.0);
  EXPECT_EQ(esi::exec::next_epoch_time(times, 3599), 3600.0);
  EXPECT_EQ(esi::exec::next_epoch_time(times, 3600), 7200.0);
  EXPECT_FALSE(esi::exec::next_epoch_time(times, 7200));
}

}  // namespace
