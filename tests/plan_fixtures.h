#pragma once
// Small hand-built problems and plans shared by the solver data-model tests.

#include "solver/placement.h"
#include "solver/plan.h"
#include "solver/routing_counts.h"

namespace topoep::testing {

// 4 ranks (2 nodes x 2 GPUs), 8 experts (2 per rank: expert e on rank e / 2), 1 spare slot.
// Source rank r sends 10 tokens to expert 0 (hot) and r + 1 tokens to expert 5.
inline RoutingCounts small_counts() {
  RoutingCounts counts(4, 8);
  for (RankId src = 0; src < 4; ++src) {
    counts.set(src, 0, 10);
    counts.set(src, 5, src + 1);
  }
  return counts;
}

inline Placement small_placement() { return Placement::contiguous(8, 4, 1); }

// Expert 0 (home rank 0) replicated on rank 2; sources 2 and 3 use the replica for expert 0.
inline Plan small_balanced_plan() {
  Plan plan;
  plan.num_ranks = 4;
  plan.num_experts = 8;
  plan.slots_per_rank = 1;
  plan.replica_expert = {kNoExpert, kNoExpert, 0, kNoExpert};
  plan.routes = {
      {0, 0, 0, 10}, {0, 5, 2, 1},  // rank 0
      {1, 0, 0, 10}, {1, 5, 2, 2},  // rank 1
      {2, 0, 2, 10}, {2, 5, 2, 3},  // rank 2
      {3, 0, 2, 10}, {3, 5, 2, 4},  // rank 3
  };
  return plan;
}

}  // namespace topoep::testing
