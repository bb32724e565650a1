#include "harness/layer_executor.h"

#include <stdexcept>
#include <string>

namespace topoep {

std::vector<Segment> plan_segments(const Plan& plan) {
  std::vector<Segment> segments;
  segments.reserve(plan.routes.size());
  TokenCount offset = 0;
  for (std::size_t i = 0; i < plan.routes.size(); ++i) {
    const Route& r = plan.routes[i];
    if (i == 0 || r.src != plan.routes[i - 1].src || r.expert != plan.routes[i - 1].expert) {
      offset = 0;
    }
    segments.push_back({r.src, r.expert, r.dst, offset, r.tokens});
    offset += r.tokens;
  }
  return segments;
}

std::vector<ExpertId> broadcast_experts(const ReplicaRequests& moves, const Placement& placement,
                                        int num_ranks) {
  const int num_experts = placement.num_experts();
  std::vector<ExpertId> experts;
  for (ExpertId e = 0; e < num_experts; ++e) {
    RankId missing = -1;
    int receivers = 0;
    for (RankId rank = 0; rank < num_ranks; ++rank) {
      if (rank == placement.home_rank[e]) continue;
      if (moves.requested(rank, e, num_experts)) {
        ++receivers;
      } else if (missing < 0) {
        missing = rank;
      }
    }
    if (receivers == 0) continue;
    if (missing >= 0) {
      throw std::invalid_argument(
          "a broadcast of expert " + std::to_string(e) +
          "'s weights reaches every rank, but rank " + std::to_string(missing) +
          " does not receive it in this plan: the harness broadcasts only to every rank but the "
          "home (as shadowing does)");
    }
    experts.push_back(e);
  }
  return experts;
}

std::vector<TokenCount> expert_rows(const RoutingCounts& counts, RankId rank) {
  std::vector<TokenCount> begin(counts.num_experts() + 1, 0);
  for (ExpertId e = 0; e < counts.num_experts(); ++e) begin[e + 1] = begin[e] + counts.at(rank, e);
  return begin;
}

}  // namespace topoep
