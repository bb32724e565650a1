#pragma once
// One interface for every planner the toolkit compares: TopoEP, static, DeepSeek's EPLB as
// deployed and every microbatch, FasterMoE-style shadowing, TopoEP's two ablations. A planner sees
// the records of one MoE layer in (step, microbatch) order and returns, for each, the layout it
// runs with, the plan, and what planning cost on the critical path.

#include <memory>
#include <string>
#include <vector>

#include "solver/cost_params.h"
#include "solver/placement.h"
#include "solver/plan.h"
#include "solver/plan_cost.h"
#include "solver/plan_tally.h"
#include "solver/routing_counts.h"
#include "solver/topoep_layer_io.h"
#include "solver/topology_view.h"
#include "solver/weight_delivery.h"

namespace topoep {

struct KeptMoves;  // solver/topoep_solver.h

struct PlannerContext {
  TopologyView topology;
  Placement placement;  // the base layout: home ranks and S spare slots per rank
  CostParams cost;
  int microbatches_per_step = 1;  // the trace's: replicas stay resident over a step's
  // False where the caller reads a decision's replica slots and tally only, never its routes
  // (a replay that neither hashes nor checks plans): a planner with a tally may then leave
  // plan.routes empty (every planner here does: writing them was a tenth of a TopoEP record).
  bool routes = true;
  // The model's expert groups (ModelSpec::expert_groups, DeepSeek-V3's n_group): EPLB's
  // num_groups, as vLLM and SGLang pass it. 0: the model has none.
  int expert_groups = 0;
  // True where the all-to-alls send a token once to each node that holds any of its experts
  // (DeepEP's dispatch) rather than every token-expert assignment on its own, as the solvers
  // price IB: TopoEP then trades less compute for IB (topoep_ib_load_slack()).
  bool node_deduplicated_dispatch = false;
};

// PlannerOptions::eplb_groups. One group per node keeps every expert on its home node (the
// reference packs n groups onto n nodes in order): EPLB's strongest layout where routing is
// not group-limited. The model's groups (PlannerContext::expert_groups; one where it has none)
// are what vLLM and SGLang pass: more groups than nodes are packed onto nodes by load, and
// move between nodes at a replan.
constexpr int kEplbGroupsPerNode = 0;
constexpr int kEplbGroupsOfModel = -1;
// "nodes", "model" or a count of at least 1 as an eplb_groups value; false for anything else.
bool parse_eplb_groups(const std::string& text, int* out);
// The value's name: "nodes", "model" or the count.
std::string eplb_groups_name(int eplb_groups);

// Assumptions behind the overheads, each a documented default (solver/planners/README.md).
struct PlannerOptions {
  int eplb_period_steps = 10;  // EPLB as deployed: replan every K steps ...
  int eplb_window_steps = 10;  // ... from the loads of the last W steps
  // EPLB's expert groups (num_groups): kEplbGroupsPerNode, kEplbGroupsOfModel or a count
  int eplb_groups = kEplbGroupsPerNode;
  double host_roundtrip_us = 20;      // device->host copy of the loads and the stream sync
  double eplb_cpu_us_per_layer = 18;  // C++ EPLB per layer (bench/eplb_bench)
  double topoep_solve_us = 20;  // TopoEP's on-GPU solve per layer (issue 3's target; unmeasured)
  // The most microbatches a new replica's step-end gradient is shared over in TopoEP's choices
  // (TopoepLayerInput::replica_uses): this one and the next, unless set
  int topoep_replica_uses = 2;
  // How far above the mean load TopoEP may raise a GPU's compute to save IB time, as a
  // fraction of the mean (TopoepProblem::ib_load_slack_permille, rounded to thousandths);
  // negative: by the dispatcher (topoep_ib_load_slack())
  double topoep_ib_load_slack = -1;
  // A cap on the moves of each of TopoEP's searches (TopoepProblem::max_moves), to weigh plan
  // quality against the solver's work; 0: the solver's default, 4 R (S + 1)
  int topoep_max_moves = 0;
  // Whether TopoEP's search may run its IB-opened second run (TopoepProblem::ib_opened_run):
  // 1 yes, 0 no; negative: by the dispatcher (topoep_ib_opened_run())
  int topoep_ib_opened_run = -1;
};

// TopoEP's IB slack where PlannerOptions leaves it unset. Where every assignment crosses IB on
// its own, as the solver prices it, 5%: trading up to that much compute for IB pays
// (solver/DECISIONS.md, "The planners' slack": +0.8% geometric mean over 1% on 180 simulated
// cases, +3.5% on GB200 2 x 72). Where the dispatch sends a token once per node, the solver's
// per-assignment IB overstates what levelling saves and more slack loses (-0.2%, down to
// -7.5%): the solver's own default, 1%, which keeps the balance issue 3 asks for.
constexpr double kTopoepIbSlackPerAssignment = 0.05;
constexpr double kTopoepIbSlackNodeDeduplicated = kDefaultIbLoadSlackPermille / 1000.0;

// The slack TopoEP plans with: `options`' where set (0 to 1), else the default above for the
// dispatch (`node_deduplicated`: PlannerContext::node_deduplicated_dispatch).
double topoep_ib_load_slack(const PlannerOptions& options, bool node_deduplicated);

// Whether TopoEP runs its IB-opened second run: as `options` set it (0 or 1), else where every
// assignment crosses IB on its own (`node_deduplicated` false). That run trades replica weights
// over IB for the IB tokens their node then keeps, priced per assignment; DeepEP sends a token
// once per node, so it saves a fraction of that, and the run lost there (solver/DECISIONS.md,
// "The IB-opened run": -0.2% geometric mean, down to -23%, where per assignment it gains 2.7%).
bool topoep_ib_opened_run(const PlannerOptions& options, bool node_deduplicated);

struct PlannerOverhead {
  Picoseconds host_ps = 0;           // critical-path time outside the MoE layer's phases
  Bytes migration_nvlink_bytes = 0;  // expert weights a re-layout moves inside nodes
  Bytes migration_ib_bytes = 0;      // ... and between nodes (both summed over ranks)
  // The migration's time: the busiest rank's sends or receives, NVLink and IB pipelined.
  Picoseconds migration_ps = 0;
  // Backward pass: every replica's weight gradients (as large as its weights) are reduced into
  // the expert's home rank along one chain per expert (solver/gradient_chains.h), as the
  // simulator reduces them. Charged alike for every planner's replicas.
  Bytes gradient_nvlink_bytes = 0;  // summed over the chains' hops
  Bytes gradient_ib_bytes = 0;
  // The busiest rank's link time, NVLink and IB pipelined, beyond the attention backward's
  // window (gradient_exposed_ps()).
  Picoseconds gradient_ps = 0;
};

struct RecordId {
  int step = 0;
  int microbatch = 0;
};

struct PlannerDecision {
  Placement placement;  // the layout `plan` runs on (EPLB: its own)
  Plan plan;
  std::vector<ExpertId> resident;  // [R][S] replicas already in place (free), or empty
  PlannerOverhead overhead;
  // The plan's sums (every planner here but topoep-flat hands them over), priced instead of
  // its routes; empty: priced from the routes.
  PlanTally tally;
  // How the plan's new replicas receive their weights (shadowing: a broadcast).
  WeightDelivery weight_delivery = WeightDelivery::kFromHome;
};

class Planner {
 public:
  virtual ~Planner() = default;
  virtual std::string name() const = 0;
  // Plans one record of the planner's layer. Records arrive in (step, microbatch) order.
  virtual PlannerDecision plan(const RecordId& record, const RoutingCounts& counts) = 0;

  // A planner whose decision a caller with a finer cost model may overrule (TopoEP decides with
  // the solver's linear model; the simulator prices per-instance GEMM efficiency): the layout to
  // run instead for the record just planned, with every token at its expert's home rank, or
  // false when there is none. `out->plan.routes` is left empty: the caller prices the layout
  // from the counts and writes the routes (route_all_home()) only if it runs it, which it then
  // says with ran_fallback(), before the next plan(). The static routing of the last record is
  // the only fallback: a planner cannot then be slower than leaving its tokens at home.
  virtual bool static_fallback(PlannerDecision* /*out*/) const { return false; }
  virtual void ran_fallback(const PlannerDecision& /*fallback*/) {}

  // The moves the last plan() kept, for a planner that searches by moves (TopoEP,
  // TopoepHostSolver::last_kept_moves()), or false. Read right after plan(): the next solve on
  // the thread reuses the memory they are read from.
  virtual bool last_kept_moves(KeptMoves* /*out*/) const { return false; }

  // Where data-parallel groups route apart and each group has its own planners, the expert
  // loads ([E], tokens) of the next record summed over every group, given before plan(). A
  // planner whose layout the groups share keeps its statistics from these (EPLB as deployed:
  // the expert weights' data-parallel sync needs every group's layout alike, and DeepSeek's EPLB
  // sums its loads over all ranks); the others ignore them.
  virtual void set_all_groups_loads(const std::vector<TokenCount>& /*expert_totals*/) {}
};

// Throws InputError naming the field (as PlannerOptions and the sweep grid spell it) for an
// option out of its range: times in [0, 1e6] µs (a second per layer is a unit mistake, and the
// picosecond conversion must not overflow), EPLB's period and window and TopoEP's replica uses
// at least 1, the IB load slack in [0, 1], the move cap in [0, kMaxMovesCap].
void check_planner_options(const PlannerOptions& options);

// "static", "topoep", "topoep-flat", "topoep-balance", "eplb", "eplb-microbatch" or "shadowing"
// (one instance per MoE layer: planners keep per-layer state), with the gradient reduction of its
// replicas charged. Throws InputError naming "planner" for an unknown name, or the field of a bad
// option (check_planner_options()).
std::unique_ptr<Planner> make_planner(const std::string& name, const PlannerContext& context,
                                      const PlannerOptions& options);

std::vector<std::string> planner_names();

// The planners that read a PlannerOptions field, named as the field (and the sweep grid's key):
// "topoep_ib_load_slack" -> {"topoep"}; empty for a field every planner or none reads. An
// option given while none of them runs changes nothing, and the CLI and sweeps refuse it.
std::vector<std::string> planners_reading_option(const std::string& field);

// The forward critical-path time of an overhead: host time plus the part of the weight
// migration that does not hide behind the overlap window. A migration moves weights on copy
// engines and NICs as new replicas' weights do, and after them on the same links, so it hides
// behind what the plan's own new replicas (`plan_cost.weight_transfer`) leave of
// `cost.weight_overlap_ps`. Gradient reduction is the backward pass's.
Picoseconds overhead_time_ps(const PlannerOverhead& overhead, const PlanCost& plan_cost,
                             const CostParams& cost);

// Sets decision.overhead's gradient fields from its plan's replicas (see PlannerOverhead).
void charge_gradient_reduction(PlannerDecision& decision, const PlannerContext& context);

}  // namespace topoep
