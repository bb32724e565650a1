#include <algorithm>
#include <string>
#include <utility>

#include "solver/gradient_chains.h"
#include "solver/input_error.h"
#include "solver/phase_times.h"
#include "solver/planners/balance_topoep_planner.h"
#include "solver/planners/basic_planners.h"
#include "solver/planners/eplb_planner.h"
#include "solver/planners/flat_topoep_planner.h"
#include "solver/planners/shadowing_planner.h"
#include "solver/topoep_layer_io.h"

namespace topoep {
namespace {

// Every planner pays for its replicas' gradient reduction the same way.
class GradientCharging : public Planner {
 public:
  GradientCharging(std::unique_ptr<Planner> inner, const PlannerContext& context)
      : inner_(std::move(inner)), context_(context) {}
  std::string name() const override { return inner_->name(); }

  PlannerDecision plan(const RecordId& record, const RoutingCounts& counts) override {
    PlannerDecision decision = inner_->plan(record, counts);
    charge_gradient_reduction(decision, context_);
    return decision;
  }
  bool static_fallback(PlannerDecision* out) const override {
    if (!inner_->static_fallback(out)) return false;
    charge_gradient_reduction(*out, context_);
    return true;
  }
  void ran_fallback(const PlannerDecision& fallback) override { inner_->ran_fallback(fallback); }
  bool last_kept_moves(KeptMoves* out) const override { return inner_->last_kept_moves(out); }
  void set_all_groups_loads(const std::vector<TokenCount>& expert_totals) override {
    inner_->set_all_groups_loads(expert_totals);
  }

 private:
  std::unique_ptr<Planner> inner_;
  PlannerContext context_;
};

std::unique_ptr<Planner> make_uncharged(const std::string& name, const PlannerContext& context,
                                        const PlannerOptions& options) {
  if (name == "static") return std::make_unique<StaticPlanner>(context);
  if (name == "topoep") return std::make_unique<TopoepPlanner>(context, options);
  if (name == "topoep-flat") return std::make_unique<FlatTopoepPlanner>(context, options);
  if (name == "topoep-balance") return std::make_unique<BalanceTopoepPlanner>(context, options);
  if (name == "eplb") return std::make_unique<EplbPlanner>(context, options, false);
  if (name == "eplb-microbatch") return std::make_unique<EplbPlanner>(context, options, true);
  if (name == "shadowing") return std::make_unique<ShadowingPlanner>(context, options);
  return nullptr;
}

}  // namespace

Picoseconds overhead_time_ps(const PlannerOverhead& overhead, const PlanCost& plan_cost,
                             const CostParams& cost) {
  const Picoseconds window =
      std::max<Picoseconds>(0, cost.weight_overlap_ps - plan_cost.weight_transfer);
  return overhead.host_ps + std::max<Picoseconds>(0, overhead.migration_ps - window);
}

void charge_gradient_reduction(PlannerDecision& decision, const PlannerContext& context) {
  const Plan& plan = decision.plan;
  const Bytes bytes = context.cost.replica_weight_bytes;
  std::vector<ReplicaInstance> replicas;
  for (RankId rank = 0; rank < plan.num_ranks; ++rank) {
    for (int slot = 0; slot < plan.slots_per_rank; ++slot) {
      const ExpertId expert = plan.replica_at(rank, slot);
      if (expert != kNoExpert)
        replicas.push_back({expert, decision.placement.home_rank[expert], rank});
    }
  }
  // The simulator's model (sim/gradient_reduction.h): one chain per expert, beyond the
  // attention backward's window.
  std::vector<std::int32_t> counts(4 * static_cast<std::size_t>(plan.num_ranks), 0);
  GradientHops hops;
  add_replica_chains(replicas, context.topology, counts.data(), hops);
  PlannerOverhead& overhead = decision.overhead;
  overhead.gradient_nvlink_bytes = hops.nvlink * bytes;
  overhead.gradient_ib_bytes = hops.ib * bytes;
  overhead.gradient_ps = gradient_exposed_ps(
      gradient_chains_ps(counts.data(), plan.num_ranks, bytes, context.cost), context.cost);
}

std::vector<std::string> planner_names() {
  return {"topoep", "topoep-flat",     "topoep-balance", "static",
          "eplb",   "eplb-microbatch", "shadowing"};
}

std::vector<std::string> planners_reading_option(const std::string& field) {
  // topoep-flat plans on one node and topoep-balance with free links: neither has IB time to
  // trade compute for.
  if (field == "topoep_ib_load_slack" || field == "topoep_ib_opened_run") return {"topoep"};
  if (field == "topoep_solve_us" || field == "topoep_replica_uses" || field == "topoep_max_moves") {
    return {"topoep", "topoep-flat", "topoep-balance"};
  }
  if (field == "eplb_period_steps" || field == "eplb_window_steps") return {"eplb"};
  if (field == "host_roundtrip_us") return {"eplb", "eplb-microbatch", "shadowing"};
  if (field == "eplb_cpu_us_per_layer" || field == "eplb_groups") {
    return {"eplb", "eplb-microbatch"};
  }
  return {};
}

bool parse_eplb_groups(const std::string& text, int* out) {
  if (text == "nodes" || text == "model") {
    *out = text == "nodes" ? kEplbGroupsPerNode : kEplbGroupsOfModel;
    return true;
  }
  if (text.empty() || text.size() > 6 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return false;
  }
  *out = std::stoi(text);
  return *out >= 1;
}

std::string eplb_groups_name(int eplb_groups) {
  if (eplb_groups == kEplbGroupsPerNode) return "nodes";
  if (eplb_groups == kEplbGroupsOfModel) return "model";
  return std::to_string(eplb_groups);
}

double topoep_ib_load_slack(const PlannerOptions& options, bool node_deduplicated) {
  if (options.topoep_ib_load_slack >= 0) return options.topoep_ib_load_slack;
  return node_deduplicated ? kTopoepIbSlackNodeDeduplicated : kTopoepIbSlackPerAssignment;
}

bool topoep_ib_opened_run(const PlannerOptions& options, bool node_deduplicated) {
  if (options.topoep_ib_opened_run >= 0) return options.topoep_ib_opened_run == 1;
  return !node_deduplicated;
}

void check_planner_options(const PlannerOptions& options) {
  for (const auto& [field, us] :
       {std::pair{"topoep_solve_us", options.topoep_solve_us},
        std::pair{"host_roundtrip_us", options.host_roundtrip_us},
        std::pair{"eplb_cpu_us_per_layer", options.eplb_cpu_us_per_layer}}) {
    if (!(us >= 0 && us <= 1e6)) {
      throw InputError(field, "must be in [0, 1e6] us (got " + std::to_string(us) + ")");
    }
  }
  if (options.eplb_period_steps < 1) throw InputError("eplb_period_steps", "must be at least 1");
  if (options.eplb_window_steps < 1) throw InputError("eplb_window_steps", "must be at least 1");
  if (options.eplb_groups < kEplbGroupsOfModel) {
    throw InputError("eplb_groups", "must be a count of groups, or 'nodes' or 'model'");
  }
  if (options.topoep_replica_uses < 1) {
    throw InputError("topoep_replica_uses", "must be at least 1");
  }
  // Negative: unset (topoep_ib_load_slack()).
  if (!(options.topoep_ib_load_slack <= 1)) {
    throw InputError("topoep_ib_load_slack", "must be in [0, 1]");
  }
  // Negative: unset (topoep_ib_opened_run()).
  if (options.topoep_ib_opened_run > 1) throw InputError("topoep_ib_opened_run", "must be 0 or 1");
  if (options.topoep_max_moves < 0 || options.topoep_max_moves > kMaxMovesCap) {
    throw InputError("topoep_max_moves", "must be in [0, " + std::to_string(kMaxMovesCap) + "]");
  }
}

std::unique_ptr<Planner> make_planner(const std::string& name, const PlannerContext& context,
                                      const PlannerOptions& options) {
  check_planner_options(options);
  if (auto planner = make_uncharged(name, context, options)) {
    return std::make_unique<GradientCharging>(std::move(planner), context);
  }
  std::string known;
  for (const std::string& planner : planner_names()) known += (known.empty() ? "" : ", ") + planner;
  throw InputError("planner", "unknown planner '" + name + "' (available: " + known + ", ideal)");
}

}  // namespace topoep
