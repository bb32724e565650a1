// static_traffic() (solver/static_traffic.h) derives the static plan's counters from per-node
// sums; the solver's starting state and the simulator's fallback pricing rely on it. Checked
// against pricing every route of the static plan, on shapes and home placements the contiguous
// default never produces.

#include "solver/static_traffic.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "solver/experts_by_home.h"
#include "solver/plan_cost.h"
#include "solver/static_plan.h"

namespace topoep {
namespace {

struct Shape {
  int nodes, gpus_per_node, experts;
};

TEST(StaticTraffic, EqualsPricingEveryRouteOfTheStaticPlan) {
  std::mt19937_64 rng(20261129);
  // One node (no IB), one GPU per node (no NVLink), uneven expert counts per rank.
  const std::vector<Shape> shapes = {{1, 8, 64}, {4, 1, 12}, {3, 4, 36}, {2, 8, 256}, {5, 3, 45}};
  for (const Shape& shape : shapes) {
    for (int trial = 0; trial < 4; ++trial) {
      const TopologyView topology{shape.nodes, shape.gpus_per_node};
      const int R = topology.num_ranks(), E = shape.experts;
      // Homes scattered at random (some ranks hold none, some many), counts sparse and dense.
      Placement placement;
      placement.num_ranks = R;
      placement.home_rank.resize(E);
      for (RankId& home : placement.home_rank) home = static_cast<RankId>(rng() % R);
      std::vector<TokenCount> values(static_cast<std::size_t>(R) * E);
      for (TokenCount& v : values) {
        const bool sparse = trial % 2 == 1;
        v = sparse && rng() % 3 != 0 ? 0 : static_cast<TokenCount>(rng() % (sparse ? 50 : 1000));
      }
      const RoutingCounts counts(R, E, values);

      std::vector<std::int32_t> begin(R + 1), cursor(R);
      std::vector<ExpertId> by_home(E);
      group_experts_by_home(placement.home_rank.data(), E, R, begin.data(), cursor.data(),
                            by_home.data());
      PlanCost derived = plan_cost_detail::empty_plan_cost(R);
      std::vector<TokenCount> node_tokens(static_cast<std::size_t>(shape.nodes) * E, -1);
      std::vector<TokenCount> totals(E, -1);
      const StaticTraffic traffic =
          static_traffic(values.data(), R, E, shape.gpus_per_node, begin.data(), by_home.data(),
                         node_tokens.data(), totals.data(), derived.counters());

      const PlanCost priced =
          predict_plan_cost(topology, placement, static_plan(counts, placement), {}, CostParams{});
      SCOPED_TRACE("nodes " + std::to_string(shape.nodes) + " x " +
                   std::to_string(shape.gpus_per_node) + ", trial " + std::to_string(trial));
      EXPECT_EQ(derived.loads, priced.loads);
      EXPECT_EQ(derived.nvlink_tokens_out, priced.nvlink_tokens_out);
      EXPECT_EQ(derived.nvlink_tokens_in, priced.nvlink_tokens_in);
      EXPECT_EQ(derived.ib_tokens_out, priced.ib_tokens_out);
      EXPECT_EQ(derived.ib_tokens_in, priced.ib_tokens_in);
      TokenCount ib = 0, busiest = 0;
      for (RankId r = 0; r < R; ++r) {
        ib += priced.ib_tokens_out[r];
        TokenCount row = 0;
        for (ExpertId e = 0; e < E; ++e) row += counts.at(r, e);
        busiest = std::max(busiest, row);
      }
      EXPECT_EQ(traffic.ib_tokens, ib);
      EXPECT_EQ(traffic.busiest_row, busiest);
      EXPECT_EQ(totals, counts.expert_totals());
      for (int n = 0; n < shape.nodes; ++n) {
        for (ExpertId e = 0; e < E; ++e) {
          TokenCount sum = 0;
          for (RankId src = n * shape.gpus_per_node; src < (n + 1) * shape.gpus_per_node; ++src) {
            sum += counts.at(src, e);
          }
          EXPECT_EQ(node_tokens[static_cast<std::size_t>(n) * E + e], sum);
        }
      }
    }
  }
}

}  // namespace
}  // namespace topoep
