#include "solver/static_tally.h"

#include <string>
#include <vector>

#include "solver/experts_by_home.h"
#include "solver/input_error.h"
#include "solver/plan_cost.h"

namespace topoep {

StaticTraffic static_plan_tally(const TopologyView& topology, const Placement& placement,
                                const RoutingCounts& counts, PlanTally* tally) {
  const int R = placement.num_ranks, E = placement.num_experts();
  if (counts.num_ranks() != R || topology.num_ranks() != R) {
    throw InputError("counts", "has " + std::to_string(counts.num_ranks()) +
                                   " source ranks, the placement " + std::to_string(R) +
                                   " and the topology " + std::to_string(topology.num_ranks()));
  }
  if (counts.num_experts() != E) {
    throw InputError("counts", "has " + std::to_string(counts.num_experts()) +
                                   " experts, the placement " + std::to_string(E));
  }
  // Scratch the thread reuses: the replay prices a static plan on every record.
  thread_local std::vector<std::int32_t> begin, cursor;
  thread_local std::vector<ExpertId> by_home;
  thread_local std::vector<TokenCount> node_tokens, totals;
  begin.resize(static_cast<std::size_t>(R) + 1);
  cursor.resize(static_cast<std::size_t>(R));
  by_home.resize(static_cast<std::size_t>(E));
  node_tokens.resize(static_cast<std::size_t>(topology.num_nodes) * E);
  totals.resize(static_cast<std::size_t>(E));
  group_experts_by_home(placement.home_rank.data(), E, R, begin.data(), cursor.data(),
                        by_home.data());

  // Every token at home: the compute load static_traffic() counts is the tally's load.
  const RankCounters c = zeroed_token_counters(R, tally);
  const StaticTraffic traffic =
      static_traffic(counts.values().data(), R, E, topology.gpus_per_node, begin.data(),
                     by_home.data(), node_tokens.data(), totals.data(), c);
  tally->instances.clear();
  for (ExpertId e = 0; e < E; ++e) {
    if (totals[e] > 0) tally->instances.emplace_back(placement.home_rank[e], totals[e]);
  }
  return traffic;
}

}  // namespace topoep
