#pragma once
// Random TopoEP inputs for the property tests (tests/topoep_solver_test.cc,
// tests/topoep_block_test.cc).

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "solver/routing_counts.h"
#include "solver/topoep_solver.h"

namespace topoep {
namespace testing {

// A random input beyond the corpus's shapes: any G and N, contiguous or scattered homes, any
// valid S, resident replicas, costs from zero to extreme, a move cap, an IB load slack up to
// the whole mean, and counts that are skewed, sparse, one-hot or from one source. Properties
// only: the draws may differ between standard libraries.
struct RandomCase {
  TopoepProblem problem;
  RoutingCounts counts;
  std::vector<ExpertId> resident;
  std::vector<std::uint8_t> owed_holders;  // [E][R] or empty
};

inline RandomCase random_case(std::uint64_t seed) {
  std::mt19937_64 random(seed);
  auto draw = [&](std::int64_t low, std::int64_t high) {
    return std::uniform_int_distribution<std::int64_t>(low, high)(random);
  };
  auto power_of_ten = [&](int max_exponent) {
    std::int64_t value = 1;
    for (std::int64_t k = draw(0, max_exponent); k > 0; --k) value *= 10;
    return value;
  };
  RandomCase c;
  const int gpus_per_node = 1 << draw(0, 3), nodes = static_cast<int>(draw(1, 8));
  const int ranks = gpus_per_node * nodes, experts = ranks * static_cast<int>(draw(1, 8));
  c.problem.topology = TopologyView{nodes, gpus_per_node};
  Placement& placement = c.problem.placement;
  placement = Placement::contiguous(experts, ranks, 0);
  if (draw(0, 2) == 0) {
    for (RankId& home : placement.home_rank) home = static_cast<RankId>(draw(0, ranks - 1));
  }
  std::vector<int> homed(ranks, 0);
  for (const RankId home : placement.home_rank) ++homed[home];
  placement.slots_per_rank = static_cast<int>(
      std::min<std::int64_t>(experts - *std::max_element(homed.begin(), homed.end()), draw(0, 4)));
  CostParams& cost = c.problem.cost;
  const bool extreme = draw(0, 3) == 0;
  cost.compute_ps_per_token = extreme ? power_of_ten(12) : draw(0, 300000);
  cost.dispatch_bytes_per_token = extreme ? power_of_ten(9) : draw(0, 16000);
  cost.combine_bytes_per_token = extreme ? power_of_ten(9) : draw(0, 32000);
  cost.replica_weight_bytes = extreme ? power_of_ten(13) : draw(0, 1) * draw(0, 100000000);
  cost.replica_gradient_bytes = extreme ? power_of_ten(13) : draw(0, 1) * draw(0, 100000000);
  cost.backward_compute_factor = static_cast<std::int32_t>(draw(0, extreme ? 1000 : 2));
  cost.backward_bytes_per_token = extreme ? power_of_ten(9) : draw(0, 1) * draw(0, 16000);
  cost.weight_overlap_ps = extreme ? power_of_ten(15) : draw(0, 1000000000);
  cost.scale_up = extreme ? LinkCost{power_of_ten(12), power_of_ten(12)}
                          : LinkCost{draw(1, 1000000), draw(0, 10000000)};
  cost.scale_out = extreme ? LinkCost{power_of_ten(12), power_of_ten(12)}
                           : LinkCost{draw(1, 200000), draw(0, 20000000)};
  if (draw(0, 3) == 0) c.problem.max_moves = static_cast<int>(draw(1, 50));
  if (draw(0, 2) == 0) c.problem.ib_load_slack_permille = static_cast<int>(draw(0, 1000));
  c.counts = RoutingCounts(ranks, experts);
  const int kind = static_cast<int>(draw(0, 4));
  const std::int64_t scale = draw(0, 3) == 0 ? draw(1, 1000000000) : draw(1, 5000);
  const ExpertId hot = static_cast<ExpertId>(draw(0, experts - 1));
  for (RankId src = 0; src < ranks; ++src) {
    for (ExpertId e = 0; e < experts; ++e) {
      const std::int64_t skewed = scale / (1 + (e * 7919 + seed) % experts) * draw(0, 100) / 100;
      const std::int64_t value = kind == 0   ? skewed
                                 : kind == 1 ? (draw(0, 4) == 0 ? draw(0, scale) : 0)
                                 : kind == 2 ? (e == hot ? scale : 0)
                                 : kind == 3 ? (src == 0 ? skewed : 0)
                                             : draw(0, 1) * draw(0, 3);
      c.counts.set(src, e, value);
    }
  }
  const int slots = placement.slots_per_rank;
  if (slots > 0 && draw(0, 1) == 0) {
    c.resident.assign(static_cast<std::size_t>(ranks) * slots, kNoExpert);
    for (RankId rank = 0; rank < ranks; ++rank) {
      for (int k = 0; k < slots; ++k) {
        const ExpertId e = static_cast<ExpertId>(draw(0, experts - 1));
        ExpertId* row = &c.resident[static_cast<std::size_t>(rank) * slots];
        if (draw(0, 1) == 0 || placement.home_rank[e] == rank || std::count(row, row + k, e) > 0)
          continue;
        row[k] = e;
      }
    }
  }
  // Drawn last, so that the draws above are those of the cases before instances had a minimum.
  if (draw(0, 1) == 0) cost.instance_min_tokens = extreme ? power_of_ten(9) : draw(1, 3000);
  if (draw(0, 1) == 0) {
    c.owed_holders.resize(static_cast<std::size_t>(experts) * ranks);
    for (std::size_t i = 0; i < c.owed_holders.size(); ++i) {
      const bool home = c.problem.placement.home_rank[i / ranks] == static_cast<RankId>(i % ranks);
      c.owed_holders[i] = !home && draw(0, 4) == 0 ? 1 : 0;
    }
  }
  // Drawn after the others for the same reason.
  if (draw(0, 1) == 0) cost.gradient_overlap_ps = extreme ? power_of_ten(15) : draw(0, 1000000000);
  return c;
}

}  // namespace testing
}  // namespace topoep
