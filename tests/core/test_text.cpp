// edit_distance, the measure behind every "did you mean" suggestion.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "esi/core/text.hpp"

TEST(EditDistance, CountsInsertionsDeletionsSubstitutionsAndAdjacentSwaps) {
  EXPECT_EQ(esi::edit_distance("", ""), 0u);
  EXPECT_EQ(esi::edit_distance("exp", "exp"), 0u);
  EXPECT_EQ(esi::edit_distance("", "abc"), 3u);
  EXPECT_EQ(esi::edit_distance("abc", ""), 3u);
  EXPECT_EQ(esi::edit_distance("sin", "sinn"), 1u);         // insertion
  EXPECT_EQ(esi::edit_distance("sqrt", "sqr"), 1u);         // deletion
  EXPECT_EQ(esi::edit_distance("Decay.k", "Decay.K"), 1u);  // substitution
  EXPECT_EQ(esi::edit_distance("exp", "epx"), 1u);          // adjacent swap is one edit
  EXPECT_EQ(esi::edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(esi::edit_distance("ca", "abc"), 3u);  // OSA, not full Damerau (which gives 2)
}

TEST(EditDistance, IsSymmetric) {
  for (const auto& [a, b] : {std::pair<std::string, std::string>{"log10", "lg10"},
                             {"SuperFast.O3", "SuperFast.NO"},
                             {"ab", "ba"},
                             {"x", "xyz"}})
    EXPECT_EQ(esi::edit_distance(a, b), esi::edit_distance(b, a)) << a << " / " << b;
}

TEST(NaturalLess, DigitRunsCompareAsNumbers) {
  std::vector<std::string> names{"j_100", "j_10", "j_2", "j_1", "k", "j_", "C.x[10,1]", "C.x[2,1]",
                                 "C.x[2,10]", "C.x[2,2]"};
  std::sort(names.begin(), names.end(), esi::natural_less);
  const std::vector<std::string> expected{"C.x[2,1]", "C.x[2,2]", "C.x[2,10]", "C.x[10,1]", "j_",
                                          "j_1", "j_2", "j_10", "j_100", "k"};
  EXPECT_EQ(names, expected);
}

TEST(NaturalLess, IsAStrictOrderAlsoWithLeadingZerosAndHugeNumbers) {
  EXPECT_FALSE(esi::natural_less("j_1", "j_1"));
  // Same value, different spelling: ordered, one way only.
  EXPECT_NE(esi::natural_less("j_01", "j_1"), esi::natural_less("j_1", "j_01"));
  // Runs longer than any integer type still compare by value.
  EXPECT_TRUE(esi::natural_less("x99999999999999999999999", "x100000000000000000000000"));
  EXPECT_FALSE(esi::natural_less("x100000000000000000000000", "x99999999999999999999999"));
  EXPECT_TRUE(esi::natural_less("a", "ab"));   // a prefix sorts first
  EXPECT_FALSE(esi::natural_less("ab", "a"));
  EXPECT_TRUE(esi::natural_less("a2", "a2b"));
  EXPECT_TRUE(esi::natural_less("A", "a"));    // otherwise byte order
}
