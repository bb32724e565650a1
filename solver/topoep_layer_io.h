#pragma once
// What one layer's TopoEP solve reads (counts, homes, resident replicas, owed holders), writes
// (the plan and diagnostics) and is parameterised by.

#include <cstdint>

#include "solver/cost_params.h"
#include "solver/host_device.h"
#include "solver/phase_times.h"
#include "solver/plan.h"
#include "solver/topoep_workspace.h"

namespace topoep {

struct TopoepLayerInput {
  const TokenCount* counts;  // [R][E]
  const RankId* home_rank;   // [E]
  const ExpertId* resident;  // [R][S] replicas kept from earlier microbatches, or nullptr
  // [E][R] the ranks whose replica of each expert the step's earlier microbatches used (owed
  // holders, phase_times.h: their gradients are reduced with this microbatch's), or nullptr
  const std::uint8_t* owed_holders = nullptr;
  // The step's microbatches from this one on (>= 1), which a new replica can serve while it
  // stays resident: the gradient phase, paid once at the step's end, is weighed per microbatch
  // as its share over them (solver/README.md, "Gradients the step owes").
  std::int32_t replica_uses = 1;
};

struct TopoepLayerOutput {
  ExpertId* replicas;  // [R][S], canonical slot order
  Route* routes;       // [shape.route_capacity()], canonical order; null: none written
  std::int64_t* num_routes;
  std::int32_t* num_moves;                 // moves the plan keeps (diagnostic)
  std::int32_t* searched_moves = nullptr;  // moves the search made (diagnostic; may be null)
  // [kSolvePhases]: GPU clock cycles of the static start, the search (both runs and the replay
  // of the best prefix), the plan's slots and instance lists, and its routes (diagnostic for
  // the GPU microbenchmark; may be null; the host reads no clock and writes zeros)
  std::int64_t* phase_cycles = nullptr;
  // The kept state's phase times as the search weighed them, from its incremental counters
  // (diagnostic, may be null). Without owed holders and with one use they are
  // predict_plan_cost()'s for the plan, phase for phase (the property test holds them to it).
  PhaseTimes* predicted = nullptr;
  // Where the moves the plan keeps are logged (diagnostic, may be null): which of the two logs in
  // the workspace's move_log ([2][max_moves]; the plan keeps the first *num_moves of it; a later
  // run overwrites the log of a run that lost), and the kept run's kind (topoep_detail::RunKind:
  // 0 plain, 1 seeded, 2 opened, 3 opened over IB; solver/README.md, step 6).
  std::int32_t* kept_log = nullptr;
  std::int32_t* kept_run_kind = nullptr;
};

constexpr int kSolvePhases = 4;

// The default of TopoepParams::ib_load_slack_permille: 1% above the mean load.
constexpr std::int32_t kDefaultIbLoadSlackPermille = 10;

struct TopoepParams {
  TopoepShape shape;
  CostParams cost;
  std::int32_t max_moves = 0;  // cap on greedy moves; see default_max_moves()
  // How far above the mean compute load (in thousandths of it) the IB levelling's relaxed pass
  // may raise a rank to save IB time (LayerSolve::level_ib()); 0: no relaxed pass. At the
  // default the plans balance as issue 3's property asks (max/mean at most 1.05, and no worse
  // than a naive greedy's on the shared real traces) while trading what IB allows.
  std::int32_t ib_load_slack_permille = kDefaultIbLoadSlackPermille;
  // 1: where the first run's best state stays above the mean with room left and none of its
  // new replicas crosses nodes, a second run prices each rank's first replica over IB as paid
  // (LayerSolve::needs_opened_ib_run()); 0: never. The solver prices IB per token assignment;
  // a caller whose dispatch sends a token once per node turns it off (solver/DECISIONS.md,
  // "The IB-opened run").
  std::int32_t ib_opened_run = 1;
};

// The largest cap a caller may set (TopoepProblem::max_moves): two move logs of this many
// 64-byte moves are 128 MB of workspace per thread.
constexpr std::int32_t kMaxMovesCap = 1000000;

// 4 R (S + 1): enough for every replica slot to be filled and levelled several times over.
TOPOEP_HOST_DEVICE inline std::int32_t default_max_moves(const TopoepShape& shape) {
  return 4 * shape.num_ranks * (shape.slots_per_rank + 1);
}

}  // namespace topoep
