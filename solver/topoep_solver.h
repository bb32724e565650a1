#pragma once
// The TopoEP planner's host entry points: one layer, or a batch of layers on several threads.
// The algorithm itself is solver/topoep_algorithm.h, shared with the CUDA backend.

#include <cstdint>
#include <memory>
#include <vector>

#include "solver/cost_params.h"
#include "solver/placement.h"
#include "solver/plan.h"
#include "solver/plan_cost.h"
#include "solver/plan_tally.h"
#include "solver/routing_counts.h"
#include "solver/topoep_algorithm.h"
#include "solver/topology_view.h"

namespace topoep {

// What stays fixed across the layers and microbatches of a run.
struct TopoepProblem {
  TopologyView topology;
  Placement placement;  // home ranks and S spare slots per rank
  CostParams cost;
  // A cap on each search's moves, 1 to kMaxMovesCap, or 0: default_max_moves() of
  // topoep_layer_io.h. The search ends there and keeps its best prefix so far: a smaller cap
  // bounds the solve's work at some cost to the plan.
  int max_moves = 0;
  // TopoepParams::ib_load_slack_permille: how far above the mean load, in thousandths of it,
  // compute may be traded for IB time; 0 to 1000.
  int ib_load_slack_permille = kDefaultIbLoadSlackPermille;
  // TopoepParams::ib_opened_run: whether the search may run its IB-opened second run.
  bool ib_opened_run = true;
};

struct LayerPlan {
  Plan plan;
  PlanCost cost;         // the plan's predicted cost
  PlanCost static_cost;  // the static plan's, on the same input
  int moves = 0;         // greedy moves the plan keeps
};

// The algorithm's parameters for `problem` (max_moves filled in when 0).
TopoepParams topoep_params_for(const TopoepProblem& problem);

// Throws InputError naming the field unless the topology, placement, cost parameters, counts,
// resident replicas ([R][S] or empty: no home-rank, duplicate or out-of-range replica) and owed
// holders ([E][R] owed holders, phase_times.h, or empty: 0 or 1, never the expert's home) agree
// with one another, and the counts fit the 64-bit arithmetic at these costs
// (check_cost_range(), from the total RoutingCounts keeps).
void check_topoep_inputs(const TopoepProblem& problem, const RoutingCounts& counts,
                         const std::vector<ExpertId>& resident,
                         const std::vector<std::uint8_t>& owed_holders = {});

// The two halves of check_topoep_inputs(): what depends on the problem alone (topology,
// placement, cost parameters, IB slack), which a planner checks once, and what each record
// brings (counts, resident replicas, owed holders, the counts' range at these costs).
void check_topoep_problem(const TopoepProblem& problem);
void check_topoep_record(const TopoepProblem& problem, const RoutingCounts& counts,
                         const std::vector<ExpertId>& resident,
                         const std::vector<std::uint8_t>& owed_holders = {});

// One move a plan keeps, as the search made it (TopoepHostSolver::last_kept_moves()): the plan
// is the static plan with its kept moves applied in order.
struct KeptMove {
  enum class Instance { kHome, kReplica, kNewReplica };
  ExpertId expert = kNoExpert;
  TokenCount tokens = 0;
  RankId from_rank = -1;
  Instance from = Instance::kHome;  // the tokens left the expert's home or a replica
  RankId to_rank = -1;
  Instance to = Instance::kHome;  // ... for its home, a replica, or a replica made for them
  // The layer time, forward and backward, the greedy expected the move to save when it chose
  // it (picoseconds; with a new replica, net of its weights and gradients); 0 for the IB
  // levelling phase's moves, which only the best prefix's measure weighs
  Picoseconds gain = 0;
  TokenCount ib_delta = 0;    // the change in token assignments crossing nodes
  bool ib_levelling = false;  // made by the IB levelling phase (step 5), else by the greedy
};

// The moves a plan keeps and the run they come from (solver/README.md, steps 2-6).
struct KeptMoves {
  enum class Run { kPlain, kSeeded, kOpened, kOpenedIb };
  Run run = Run::kPlain;
  std::vector<KeptMove> moves;
};

// Where a TopoepHostSolver's workspace lives.
enum class TopoepWorkspaceUse {
  // The solver's own buffer, allocated with it: one solver solving over and over.
  kOwn,
  // The calling thread's buffer, shared by every kThread solver on that thread and grown to the
  // largest problem it solved: many solvers of which one runs at a time (a replay's per-layer
  // planners), which would otherwise each hold one (2.2 MB at R = E = 256, S = 2). A solve
  // writes every word it reads, so nothing carries from one solve to the next: the plans are
  // the same bit for bit.
  kThread,
};

// A host solver for one problem that keeps its workspace between solves: repeated solves
// allocate nothing but the plan's own vectors (which keep their capacity when a plan is
// reused). Inputs are not checked here (see check_topoep_inputs); one object serves one thread
// at a time.
class TopoepHostSolver {
 public:
  explicit TopoepHostSolver(const TopoepProblem& problem,
                            TopoepWorkspaceUse use = TopoepWorkspaceUse::kOwn);
  ~TopoepHostSolver();
  TopoepHostSolver(const TopoepHostSolver&) = delete;
  TopoepHostSolver& operator=(const TopoepHostSolver&) = delete;

  // Writes the canonical plan for `counts` ([R][E]) with `resident` ([R][S] or empty) into
  // `plan`; returns the greedy moves it keeps. Same plan as solve_topoep's, bit for bit.
  // `owed_holders` ([E][R] owed holders, phase_times.h, or empty): the replicas earlier
  // microbatches of the step used, whose gradients are reduced with this one's;
  // `replica_uses`: the step's microbatches from this one on (TopoepLayerInput::replica_uses;
  // solver/README.md, "Gradients the step owes").
  // `routes` false leaves `plan->routes` empty: the replica slots and last_tally() only, for a
  // caller that prices the tally and never reads the routes.
  int solve(const RoutingCounts& counts, const std::vector<ExpertId>& resident, Plan* plan,
            const std::vector<std::uint8_t>& owed_holders = {}, int replica_uses = 1,
            bool routes = true);

  // The last solve's phase times as the search weighed them (TopoepLayerOutput::predicted):
  // what tests hold its incremental counters to.
  const PhaseTimes& last_predicted() const { return last_predicted_; }
  // The moves the last solve's search made, every run (step 6) included: what its time
  // follows, where solve() returns the moves the plan keeps (diagnostic).
  int last_searched_moves() const { return last_searched_moves_; }
  // The moves the last solve's plan keeps, in the order the search made them (diagnostic: what
  // `topoep solve --explain` prints). Read before the thread's next solve, as last_tally().
  KeptMoves last_kept_moves() const;
  // The last solve's plan summed as the search left its counters: what a walk over its routes
  // would sum (tests hold the two equal). Read before the thread's next solve, which a
  // kThread solver's workspace shares with every such solver on the thread.
  void last_tally(PlanTally* tally) const;
  // The same for the static plan of the last solve's counts (every token at home; resident
  // replicas idle), from the static start the search began at.
  void last_static_tally(PlanTally* tally) const;

 private:
  TopoepParams params_;
  std::vector<RankId> home_rank_;
  std::size_t workspace_words_;              // 8-byte words of workspace this problem needs
  std::unique_ptr<std::uint64_t[]> buffer_;  // kOwn's buffer; empty for kThread
  // The workspace as last bound, and the buffer it was bound to (carving depends only on the
  // base and the shape: a kThread solver rebinds when it runs on another thread)
  TopoepWorkspace workspace_;
  const std::uint64_t* bound_to_ = nullptr;
  PhaseTimes last_predicted_;
  std::int32_t last_searched_moves_ = 0;
  std::int32_t last_kept_moves_ = 0;  // where last_kept_moves() reads them
  std::int32_t last_kept_log_ = 0;
  std::int32_t last_kept_run_kind_ = 0;
};

// Plans one layer. Deterministic: the same inputs give the same plan, bit for bit.
LayerPlan solve_topoep(const TopoepProblem& problem, const RoutingCounts& counts,
                       const std::vector<ExpertId>& resident = {});

// Plans independent layers (no resident replicas) on `num_threads` host threads (1: serial).
// Each layer's plan is the same as solve_topoep's for any thread count.
std::vector<Plan> solve_topoep_layers(const TopoepProblem& problem,
                                      const std::vector<RoutingCounts>& layers, int num_threads);

}  // namespace topoep
