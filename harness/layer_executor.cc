#include "harness/layer_executor.h"

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

std::vector<TokenCount> expert_rows(const RoutingCounts& counts, RankId rank) {
  std::vector<TokenCount> begin(counts.num_experts() + 1, 0);
  for (ExpertId e = 0; e < counts.num_experts(); ++e) begin[e + 1] = begin[e] + counts.at(rank, e);
  return begin;
}

}  // namespace topoep
