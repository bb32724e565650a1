#include "solver/routing_counts.h"

#include <gtest/gtest.h>

#include <limits>

#include "solver/input_error.h"
#include "tests/input_error_field.h"

namespace topoep {
namespace {

TEST(RoutingCounts, StoresRowMajorAndSumsPerExpert) {
  const RoutingCounts counts = RoutingCounts::from_rows({{1, 2, 3}, {4, 5, 6}});
  EXPECT_EQ(counts.num_ranks(), 2);
  EXPECT_EQ(counts.num_experts(), 3);
  EXPECT_EQ(counts.at(1, 0), 4);
  EXPECT_EQ(counts.expert_totals(), (std::vector<TokenCount>{5, 7, 9}));
  EXPECT_EQ(counts.total(), 21);
}

TEST(RoutingCounts, RejectsNegativeCountNamingTheEntry) {
  EXPECT_EQ(testing::input_error_field([&] {
              RoutingCounts::from_rows({{1, 2}, {3, -4}});
            }),
            "counts[1][1]");
}

TEST(RoutingCounts, RejectsRaggedRows) {
  EXPECT_EQ(testing::input_error_field([&] {
              RoutingCounts::from_rows({{1, 2}, {3}});
            }),
            "counts[1]");
}

TEST(RoutingCounts, RejectsValuesThatDoNotFitTheShape) {
  EXPECT_THROW(RoutingCounts(2, 3, std::vector<TokenCount>(5, 0)), InputError);
  EXPECT_THROW(RoutingCounts(0, 3), InputError);
  EXPECT_THROW(RoutingCounts::from_rows({}), InputError);
}

TEST(RoutingCounts, SetRejectsOutOfRangeAndNegative) {
  RoutingCounts counts(2, 2);
  EXPECT_THROW(counts.set(2, 0, 1), InputError);
  EXPECT_THROW(counts.set(-1, 0, 1), InputError);
  EXPECT_THROW(counts.set(0, 0, -1), InputError);
  counts.set(1, 1, 7);
  EXPECT_EQ(counts.at(1, 1), 7);
}

TEST(RoutingCounts, TotalFollowsEverySetIncludingValuesPast32Bits) {
  RoutingCounts counts = RoutingCounts::from_rows({{1, 2}, {3, 4}});
  const TokenCount big = (TokenCount{1} << 40) + 5;
  counts.set(0, 1, big);
  EXPECT_EQ(counts.total(), 1 + big + 3 + 4);
  counts.set(0, 1, 0);  // lowering a value past a 32-bit boundary
  EXPECT_EQ(counts.total(), 8);
  EXPECT_EQ(counts.total_in_range_check(), 8.0L);
}

TEST(RoutingCounts, SummedByTheReaderKeepsTheSameTotalThroughSets) {
  const std::vector<TokenCount> values{1, 0xffffffff, 3, 0xfffffffe};
  const TokenCount sum = 1 + 0xffffffffLL + 3 + 0xfffffffeLL;
  RoutingCounts summed = RoutingCounts::from_summed(2, 2, values, sum);
  RoutingCounts checked(2, 2, values);
  EXPECT_EQ(summed.total(), checked.total());
  EXPECT_EQ(summed.total_in_range_check(), checked.total_in_range_check());
  for (RoutingCounts* counts : {&summed, &checked}) {
    counts->set(0, 1, 0);  // lowering a value whose low half carried
    counts->set(1, 0, TokenCount{1} << 40);
  }
  EXPECT_EQ(summed.total(), checked.total());
  EXPECT_EQ(summed.values(), checked.values());
  EXPECT_THROW(RoutingCounts::from_summed(2, 2, values, -1), InputError);
  EXPECT_THROW(RoutingCounts::from_summed(2, 3, values, sum), InputError);
}

TEST(RoutingCounts, TotalThatOverflowsIsAnErrorNotAWrappedSum) {
  const TokenCount half = TokenCount{1} << 62;
  const RoutingCounts counts = RoutingCounts::from_rows({{half, half}});  // 2^63: one too many
  EXPECT_EQ(testing::input_error_field([&] { counts.total(); }), "counts");
  EXPECT_EQ(counts.total_in_range_check(), 2.0L * static_cast<long double>(half));
  const RoutingCounts largest = RoutingCounts::from_rows({{half - 1, half}});
  EXPECT_EQ(largest.total(), std::numeric_limits<TokenCount>::max());
}

}  // namespace
}  // namespace topoep
