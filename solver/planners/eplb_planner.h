#pragma once
// DeepSeek's EPLB as a planner. Deployed mode: replan on the CPU every K steps from the expert
// loads of the last W steps, keep the layout in between. Microbatch mode: replan from the
// current counts at every record. A layout holds ceil(E/R) + S physical experts per GPU (the
// fullest rank's homes and S spare slots).

#include <deque>

#include "solver/planners/planner.h"

namespace topoep {

// The expert groups EPLB runs with on this cluster and model (PlannerOptions::eplb_groups
// resolved; 1 where they do not divide the experts), and whether they make DeepSeek's
// hierarchical policy (groups a multiple of the nodes: groups packed onto nodes, every copy
// of an expert kept on its group's node) rather than the global one.
struct EplbPolicy {
  int groups = 1;
  bool hierarchical = false;
};
EplbPolicy eplb_policy(int eplb_groups, int num_nodes, int model_expert_groups, int num_experts);

class EplbPlanner : public Planner {
 public:
  EplbPlanner(const PlannerContext& context, const PlannerOptions& options, bool every_microbatch);
  std::string name() const override { return every_microbatch_ ? "eplb-microbatch" : "eplb"; }
  PlannerDecision plan(const RecordId& record, const RoutingCounts& counts) override;
  // As deployed, the window sums these where given (the groups share one layout); every
  // microbatch, each group relayouts on its own counts.
  void set_all_groups_loads(const std::vector<TokenCount>& expert_totals) override {
    all_groups_loads_ = expert_totals;
  }

 private:
  // Replans from `loads` ([E]); returns the overhead: host round trip, CPU time, the loads'
  // cross-rank sum, and the weights of every (rank, expert) the new layout adds.
  PlannerOverhead relayout(const std::vector<double>& loads);

  PlannerContext context_;
  PlannerOptions options_;
  bool every_microbatch_;
  std::vector<std::vector<RankId>> instances_;  // [E] current layout, home first
  int last_step_ = -1;
  std::deque<std::vector<double>> window_;  // per finished step: expert loads, [E]
  std::vector<double> current_step_loads_;
  std::vector<TokenCount> all_groups_loads_;  // of the next record; empty: not given
};

}  // namespace topoep
