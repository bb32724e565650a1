// The baselines' token split (solver/planners/instance_layout.h): a source's tokens go to its own
// GPU's instance, else evenly over its node's instances, else evenly over all of them, the
// remainder to the lower ranks first.

#include "solver/planners/instance_layout.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "solver/plan_validator.h"

namespace topoep {
namespace {

using Sends = std::vector<std::pair<RankId, TokenCount>>;

// The (dst, tokens) of a source's routes, in the plan's order.
Sends sent_by(const Plan& plan, RankId src) {
  Sends out;
  for (const Route& route : plan.routes) {
    if (route.src == src) out.emplace_back(route.dst, route.tokens);
  }
  return out;
}

TEST(InstanceLayout, SendsToTheSourcesOwnInstanceThenItsNodeThenEveryInstanceEvenly) {
  // Two nodes of two GPUs; expert 0 homed on rank 0 with replicas on ranks 1 and 3, expert 1 on
  // rank 2 alone, expert 2 on rank 3 with a replica on rank 2.
  const TopologyView topology{2, 2};
  InstanceLayout layout;
  layout.instances = {{0, 3, 1}, {2}, {3, 2}};
  RoutingCounts counts(4, 3);
  counts.set(1, 0, 10);  // rank 1 holds expert 0: all local
  counts.set(2, 0, 7);   // node 1 holds expert 0 on rank 3 only
  counts.set(0, 1, 5);   // no instance of expert 1 in node 0: every instance (rank 2)
  counts.set(0, 2, 9);   // no instance of expert 2 in node 0: ranks 2 and 3, 5 + 4
  counts.set(3, 2, 4);   // rank 3 holds expert 2: local
  const LayoutPlan result = plan_layout(layout, counts, topology, 0);
  EXPECT_EQ(result.placement.slots_per_rank, 1);
  EXPECT_FALSE(find_plan_violation(counts, result.placement, result.plan, nullptr));
  // Rank 0: expert 1 to rank 2, then expert 2 split 5 + 4, the remainder to the lower rank.
  EXPECT_EQ(sent_by(result.plan, 0), (Sends{{2, 5}, {2, 5}, {3, 4}}));
  EXPECT_EQ(sent_by(result.plan, 1), (Sends{{1, 10}}));
  EXPECT_EQ(sent_by(result.plan, 2), (Sends{{3, 7}}));
  EXPECT_EQ(sent_by(result.plan, 3), (Sends{{3, 4}}));
}

TEST(InstanceLayout, SplitsFewerTokensThanInstancesOverTheLowestRanksOnly) {
  // One expert on every GPU of node 0, homed on rank 0.
  InstanceLayout layout;
  layout.instances = {{0, 3, 1, 2}};
  RoutingCounts local(4, 1);
  local.set(0, 0, 1);
  local.set(1, 0, 2);
  const LayoutPlan one_node = plan_layout(layout, local, TopologyView{1, 4}, 0);
  EXPECT_EQ(sent_by(one_node.plan, 0), (Sends{{0, 1}}));
  EXPECT_EQ(sent_by(one_node.plan, 1), (Sends{{1, 2}}));

  // From node 1, which holds none: 2 tokens over the 4 instances reach ranks 0 and 1 only.
  RoutingCounts remote(8, 1);
  remote.set(5, 0, 2);
  const LayoutPlan two_nodes = plan_layout(layout, remote, TopologyView{2, 4}, 0);
  EXPECT_EQ(sent_by(two_nodes.plan, 5), (Sends{{0, 1}, {1, 1}}));
  EXPECT_EQ(two_nodes.plan.routes.size(), 2u);
}

}  // namespace
}  // namespace topoep
