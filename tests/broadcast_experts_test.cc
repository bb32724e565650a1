// Which replicas the harness broadcasts (harness/layer_executor.h, broadcast_experts()): those
// some rank requested, each to every rank but its home, as the cost model's chain prices it.

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "harness/layer_executor.h"

namespace topoep {
namespace {

// 4 ranks, 4 experts, expert e homed on rank e; `requests[rank]` lists what rank asks for.
ReplicaRequests requests_of(const std::vector<std::vector<ExpertId>>& requests) {
  ReplicaRequests r;
  r.requests.assign(4 * 4, 0);
  for (RankId rank = 0; rank < 4; ++rank) {
    for (const ExpertId e : requests[rank]) r.requests[rank * 4 + e] = 1;
  }
  return r;
}

TEST(BroadcastExperts, AreTheExpertsEveryRankButTheHomeRequests) {
  const Placement placement = Placement::contiguous(4, 4, 1);
  // Expert 2 to ranks 0, 1 and 3; nothing else.
  const ReplicaRequests moves = requests_of({{2}, {2}, {}, {2}});
  EXPECT_EQ(broadcast_experts(moves, placement, 4), std::vector<ExpertId>{2});
  EXPECT_TRUE(broadcast_experts(requests_of({{}, {}, {}, {}}), placement, 4).empty());
}

TEST(BroadcastExperts, ABroadcastMissingARankIsRefusedNamingTheExpertAndTheRank) {
  const Placement placement = Placement::contiguous(4, 4, 1);
  try {
    broadcast_experts(requests_of({{1}, {}, {1}, {}}), placement, 4);
    FAIL() << "a broadcast that misses rank 3 was accepted";
  } catch (const std::invalid_argument& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("expert 1"), std::string::npos) << message;
    EXPECT_NE(message.find("rank 3"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace topoep
