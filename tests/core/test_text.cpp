// edit_distance, the measure behind every "did you mean" suggestion.
#include <gtest/gtest.h>

#include <string>

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
