// Host solve latency of the TopoEP planner for one layer, single thread, on seeded Zipf routing
// (integer generator: the same inputs on every machine). Shapes from issue 3: (E, R, S).

#include <benchmark/benchmark.h>

#include "solver/topoep_solver.h"
#include "traces/synthetic_routing.h"

namespace topoep {
namespace {

// H800-like cost parameters for DeepSeek-V3 dimensions (see sim/ for their derivation).
CostParams bench_cost() {
  CostParams cost;
  cost.compute_ps_per_token = 137000;
  cost.dispatch_bytes_per_token = 7392;
  cost.combine_bytes_per_token = 14336;
  cost.replica_weight_bytes = 3LL * 7168 * 2048;
  cost.weight_overlap_ps = 500000000;
  cost.scale_up = LinkCost{160000, 3400000};
  cost.scale_out = LinkCost{48500, 9600000};
  return cost;
}

void BM_TopoepSolve(benchmark::State& state) {
  const int num_experts = static_cast<int>(state.range(0));
  const int num_ranks = static_cast<int>(state.range(1));
  const int slots = static_cast<int>(state.range(2));
  TopoepProblem problem;
  problem.topology = TopologyView{num_ranks / 8, 8};
  problem.placement = Placement::contiguous(num_experts, num_ranks, slots);
  problem.cost = bench_cost();
  SyntheticRoutingSpec spec;
  spec.num_ranks = num_ranks;
  spec.num_experts = num_experts;
  spec.tokens_per_rank = 4096;
  spec.top_k = 8;
  spec.seed = 42;
  const RoutingCounts counts = generate_routing(spec);
  // One solver and one plan reused, as a planner keeps them: the workspace is allocated once.
  TopoepHostSolver solver(problem);
  Plan plan;
  int moves = 0;
  for (auto _ : state) {
    moves = solver.solve(counts, {}, &plan);
    benchmark::DoNotOptimize(plan.routes.data());
  }
  state.counters["moves"] = moves;
}
// Issue 3's shapes, then S = 0: the same solve with nothing to search (no spare slot), the
// floor every solve of that shape pays here (reading the counts, writing the canonical plan).
BENCHMARK(BM_TopoepSolve)
    ->Args({64, 32, 1})
    ->Args({256, 32, 1})
    ->Args({256, 64, 1})
    ->Args({256, 256, 2})
    ->Args({256, 32, 0})
    ->Args({256, 64, 0})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace topoep

BENCHMARK_MAIN();
