#include "solver/placement.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "solver/input_error.h"
#include "solver/topology_view.h"
#include "tests/input_error_field.h"

namespace topoep {
namespace {

TEST(Placement, ContiguousPutsExpertOnRankEOverExpertsPerRank) {
  const Placement placement = Placement::contiguous(8, 4, 1);
  EXPECT_EQ(placement.home_rank, (std::vector<RankId>{0, 0, 1, 1, 2, 2, 3, 3}));
  EXPECT_EQ(placement.num_experts(), 8);
}

TEST(Placement, EvenContiguousRejectsExpertsNotDivisibleByRanks) {
  EXPECT_EQ(testing::input_error_field([&] { Placement::contiguous(10, 4, 1); }), "num_experts");
}

// Experts that do not divide over the ranks, laid out unevenly: the first E mod R ranks hold
// one more (vLLM's layout), the fullest rank bounds the slots; where R divides E, the even
// layout.
TEST(Placement, UnevenContiguousGivesTheFirstEModRRanksOneExpertMore) {
  constexpr HomeLayout kUneven = HomeLayout::kUneven;
  EXPECT_EQ(Placement::contiguous(8, 4, 1, kUneven).home_rank,
            Placement::contiguous(8, 4, 1).home_rank);
  const Placement ten = Placement::contiguous(10, 4, 1, kUneven);
  EXPECT_EQ(ten.home_rank, (std::vector<RankId>{0, 0, 0, 1, 1, 1, 2, 2, 3, 3}));
  EXPECT_EQ(ten.most_homed(), 3);
  const Placement gb200 = Placement::contiguous(256, 144, 1, kUneven);  // DeepSeek-V3, 2 x NVL72
  EXPECT_EQ(std::count(gb200.home_rank.begin(), gb200.home_rank.end(), 111), 2);
  EXPECT_EQ(std::count(gb200.home_rank.begin(), gb200.home_rank.end(), 112), 1);
  EXPECT_EQ(gb200.home_rank.back(), 143);
  EXPECT_TRUE(std::is_sorted(gb200.home_rank.begin(), gb200.home_rank.end()));
  // Fewer experts than ranks: ranks E and beyond home none and hold only spare slots.
  EXPECT_EQ(Placement::contiguous(3, 5, 2, kUneven).home_rank, (std::vector<RankId>{0, 1, 2}));
  EXPECT_EQ(testing::input_error_field([&] { Placement::contiguous(10, 4, 8, kUneven); }),
            "slots_per_rank");
  EXPECT_NO_THROW(Placement::contiguous(10, 4, 7, kUneven));
  EXPECT_EQ(testing::input_error_field([&] { Placement::contiguous(0, 4, 1, kUneven); }),
            "num_experts");
  EXPECT_EQ(testing::input_error_field([&] { Placement::contiguous(8, 0, 1, kUneven); }),
            "num_ranks");
}

TEST(Placement, RejectsMoreSlotsThanDistinctReplicasFit) {
  // 8 experts, 2 per rank: each rank can hold at most 6 distinct foreign replicas.
  EXPECT_NO_THROW(Placement::contiguous(8, 4, 6));
  EXPECT_EQ(testing::input_error_field([&] { Placement::contiguous(8, 4, 7); }), "slots_per_rank");
}

TEST(Placement, RejectsNegativeSlotsAndHomeOutsideRanks) {
  EXPECT_THROW(Placement::contiguous(8, 4, -1), InputError);
  Placement placement = Placement::contiguous(8, 4, 1);
  placement.home_rank[3] = 4;
  EXPECT_EQ(testing::input_error_field([&] { check_placement(placement); }), "home_rank[3]");
}

TEST(TopologyView, NumbersRanksNodeMajor) {
  const TopologyView topology{2, 8};
  EXPECT_EQ(topology.num_ranks(), 16);
  EXPECT_EQ(topology.node_of(7), 0);
  EXPECT_EQ(topology.node_of(8), 1);
  EXPECT_TRUE(topology.same_node(8, 15));
  EXPECT_FALSE(topology.same_node(7, 8));
}

TEST(TopologyView, RejectsEmptyShapes) {
  EXPECT_THROW(check_topology_view(TopologyView{0, 8}), InputError);
  EXPECT_THROW(check_topology_view(TopologyView{2, 0}), InputError);
  EXPECT_THROW(check_topology_view(TopologyView{1 << 20, 1 << 20}), InputError);
}

}  // namespace
}  // namespace topoep
