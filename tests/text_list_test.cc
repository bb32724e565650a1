// The lists and paragraphs messages are built from (common/text_list.h).

#include "common/text_list.h"

#include <gtest/gtest.h>

namespace topoep {
namespace {

TEST(TextList, SpokenListsJoinTheLastNameWithItsConjunction) {
  EXPECT_EQ(spoken_list({}), "");
  EXPECT_EQ(spoken_list({"a"}), "a");
  EXPECT_EQ(spoken_list({"a", "b"}), "a and b");
  EXPECT_EQ(spoken_list({"a", "b", "c"}, "or"), "a, b or c");
}

TEST(TextList, WrappedBreaksAtSpacesWithinTheWidth) {
  EXPECT_EQ(wrapped("", 10), "");
  EXPECT_EQ(wrapped("one two three four", 9), "one two\nthree\nfour\n");
  EXPECT_EQ(wrapped("one two", 7), "one two\n");  // exactly the width fits
  // A word longer than the width stands alone rather than being cut.
  EXPECT_EQ(wrapped("a abcdefghijk b", 5), "a\nabcdefghijk\nb\n");
}

}  // namespace
}  // namespace topoep
