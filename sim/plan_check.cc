#include "sim/plan_check.h"

#include <optional>
#include <stdexcept>
#include <vector>

#include "sim/deepep_dispatch.h"
#include "solver/plan_validator.h"

namespace topoep {

void check_priced_plan(const std::string& where, const PricedPlan& priced,
                       const TopologyView& topology, Bytes dispatch_bytes_per_token,
                       Dispatcher dispatcher, int top_k, ExpertGroups groups) {
  const auto fail = [&](const std::string& what) {
    throw std::runtime_error("plan check: " + where + ": " + what);
  };
  const std::optional<PlanViolation> violation = find_plan_violation(
      priced.counts, priced.decision.placement, priced.decision.plan, &priced.loads);
  if (violation) fail(std::string(to_string(violation->kind)) + ": " + violation->message);
  if (topology.num_ranks() != priced.decision.plan.num_ranks) {
    fail("shape_mismatch: the plan has " + std::to_string(priced.decision.plan.num_ranks) +
         " ranks, the topology " + std::to_string(topology.num_ranks()));
  }
  TokenCount nvlink_tokens = 0, ib_tokens = 0;
  if (dispatcher == Dispatcher::kDeepEP) {
    DeepepTraffic traffic(topology, priced.counts, top_k, groups);
    for (const Route& route : priced.decision.plan.routes) {
      traffic.add_instance(route.src, route.dst, route.tokens, route.expert);
    }
    nvlink_tokens = traffic.nvlink_sent();
    ib_tokens = traffic.ib_sent();
  } else {
    // The validator has checked every route's ranks against the plan's: they index `node`.
    std::vector<int> node(static_cast<std::size_t>(topology.num_ranks()));
    for (RankId rank = 0; rank < topology.num_ranks(); ++rank) node[rank] = topology.node_of(rank);
    for (const Route& route : priced.decision.plan.routes) {
      if (route.src == route.dst) continue;
      (node[route.src] == node[route.dst] ? nvlink_tokens : ib_tokens) += route.tokens;
    }
  }
  const auto check_bytes = [&](const char* link, TokenCount tokens, Bytes bytes) {
    if (tokens * dispatch_bytes_per_token == bytes) return;
    fail(std::string("dispatch_bytes: priced with ") + std::to_string(bytes) + " " + link +
         " bytes, the routes send " + std::to_string(tokens) + " tokens x " +
         std::to_string(dispatch_bytes_per_token) + " = " +
         std::to_string(tokens * dispatch_bytes_per_token));
  };
  check_bytes("NVLink", nvlink_tokens, priced.nvlink_dispatch_bytes);
  check_bytes("IB", ib_tokens, priced.ib_dispatch_bytes);
}

}  // namespace topoep
