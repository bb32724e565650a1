// Host solve latency of the TopoEP planner for one layer, single thread, on seeded Zipf routing
// (integer generator: the same inputs on every machine). Shapes from issue 3: (E, R, S). With
// TOPOEP_SHARED_DIR set, also on DeepSeek-V3's real expert shares (../shared/traces); with
// TOPOEP_BENCH_COUNTS set, on your own counts (register_own_routing_benchmark()).

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <exception>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "bench/own_inputs.h"
#include "models/model_json.h"
#include "sim/cost_model.h"
#include "sim/own_routing.h"
#include "solver/topoep_solver.h"
#include "topologies/topology_presets.h"
#include "traces/sglang_stats.h"
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

// Seeded Zipf routing for `problem`'s shape: 4096 tokens x top-8 per rank.
RoutingCounts zipf_counts(const TopoepProblem& problem, std::uint64_t seed) {
  SyntheticRoutingSpec spec;
  spec.num_ranks = problem.placement.num_ranks;
  spec.num_experts = problem.placement.num_experts();
  spec.tokens_per_rank = 4096;
  spec.top_k = 8;
  spec.seed = seed;
  return generate_routing(spec);
}

// Solves `inputs` in turn in the timed loop, with one solver and one plan reused, as a planner
// keeps them: the workspace is allocated once. Counters: the moves the plan keeps and the
// moves searched, means over the solves.
void time_solves(benchmark::State& state, const TopoepProblem& problem,
                 const std::vector<RoutingCounts>& inputs) {
  TopoepHostSolver solver(problem);
  Plan plan;
  std::int64_t moves = 0, searched = 0, solves = 0;
  std::size_t next = 0;
  for (auto _ : state) {
    moves += solver.solve(inputs[next], {}, &plan);
    searched += solver.last_searched_moves();
    ++solves;
    next = (next + 1) % inputs.size();
    benchmark::DoNotOptimize(plan.routes.data());
  }
  state.counters["moves"] = static_cast<double>(moves) / static_cast<double>(solves);
  state.counters["searched"] = static_cast<double>(searched) / static_cast<double>(solves);
}

// One seeded Zipf input (seed 42), solved again and again.
void time_zipf_solve(benchmark::State& state, const TopoepProblem& problem) {
  time_solves(state, problem, {zipf_counts(problem, 42)});
}

// Contiguous homes on nodes of 8 GPUs, bench_cost().
TopoepProblem bench_problem(int num_experts, int num_ranks, int slots) {
  TopoepProblem problem;
  problem.topology = TopologyView{num_ranks / 8, 8};
  problem.placement = Placement::contiguous(num_experts, num_ranks, slots);
  problem.cost = bench_cost();
  return problem;
}

void BM_TopoepSolve(benchmark::State& state) {
  time_zipf_solve(state,
                  bench_problem(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)),
                                static_cast<int>(state.range(2))));
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

// Issue 3's shapes on 16 seeded Zipf inputs (seeds 42-57) in turn. A planner never solves the
// same counts twice, and one input's time is its own move count's: at (256, 64, 1) seed 42
// searches 208 moves, the 16 seeds 299 on average (bench/README.md).
void BM_TopoepSolveSeeds(benchmark::State& state) {
  const TopoepProblem problem =
      bench_problem(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)),
                    static_cast<int>(state.range(2)));
  std::vector<RoutingCounts> inputs;
  for (std::uint64_t seed = 42; seed < 42 + 16; ++seed) {
    inputs.push_back(zipf_counts(problem, seed));
  }
  time_solves(state, problem, inputs);
}
BENCHMARK(BM_TopoepSolveSeeds)
    ->Args({64, 32, 1})
    ->Args({256, 32, 1})
    ->Args({256, 64, 1})
    ->Args({256, 256, 2})
    ->Unit(benchmark::kMicrosecond);

// The same Zipf solve at the simulator's costs (sim_bench's TopoEP records): DeepSeek-V3 on the
// paper's 4 x 8 H800 cluster, where replica weights beyond the overlap window and their gradient
// reduction are charged, so most candidate moves are new replicas that lose on their weights.
// (bench_cost() hides every replica behind a 500 µs overlap and charges no gradients.)
void BM_TopoepSolveSimCosts(benchmark::State& state) {
  const CostModel model(load_topology("h800-4x8"), load_model("deepseek-v3"), SimOptions{}, 4096);
  TopoepProblem problem;
  problem.topology = model.topology().view();
  problem.placement =
      Placement::contiguous(256, problem.topology.num_ranks(), static_cast<int>(state.range(0)));
  problem.cost = model.solver_params();
  time_zipf_solve(state, problem);
}
BENCHMARK(BM_TopoepSolveSimCosts)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond);

// The same solve on real routing: DeepSeek-V3's per-layer expert shares from SGLang
// (prefill_in4096, the 58 MoE layers), sampled onto R ranks at 4096 tokens x top-8 per rank,
// one layer per iteration in turn (so the median is over layers). Registered only when
// TOPOEP_SHARED_DIR names the shared data (never copied into the project).
void BM_TopoepSolveDeepSeekV3Shares(benchmark::State& state,
                                    const std::vector<std::vector<std::int64_t>>* layers) {
  const int num_ranks = static_cast<int>(state.range(0));
  const TopoepProblem problem = bench_problem(256, num_ranks, static_cast<int>(state.range(1)));
  std::vector<RoutingCounts> matrices;
  for (std::size_t layer = 3; layer < layers->size(); ++layer) {  // 0-2 are dense
    matrices.push_back(sample_counts_from_shares((*layers)[layer], num_ranks, 4096, 8, layer));
  }
  time_solves(state, problem, matrices);
}

void register_shared_benchmarks() {
  const char* dir = std::getenv("TOPOEP_SHARED_DIR");
  if (dir == nullptr) return;
  const std::string path =
      std::string(dir) + "/traces/sglang-deepseek-v3-stats/prefill_in4096.json";
  if (!std::filesystem::exists(path)) return;
  static const auto layers = read_sglang_logical_count(path);
  benchmark::RegisterBenchmark("BM_TopoepSolveDeepSeekV3Shares", BM_TopoepSolveDeepSeekV3Shares,
                               &layers)
      ->Args({32, 1})
      ->Args({64, 1})
      ->Args({256, 2})
      ->Unit(benchmark::kMicrosecond);
}

// Your own routing: TOPOEP_BENCH_COUNTS names a counts file or a trace (its first 64 records;
// read_routing_layers()), whose layers are solved one after another as `topoep solve` plans them
// on the cluster, model and spare slots of bench/own_inputs.h (problem_for_routing()). Each
// solve is cold (no replica resident from an earlier microbatch), as BM_TopoepSolve's are.
// Returns false, having said why on stderr, where the inputs do not fit together.
bool register_own_routing_benchmark() {
  const std::string path = env_or("TOPOEP_BENCH_COUNTS", "");
  if (path.empty()) return true;
  static TopoepProblem problem;
  static std::vector<RoutingCounts> layers;
  try {
    layers = read_routing_layers(path);
    problem = problem_for_routing(
        layers, own_topology(), own_model(), own_slots(),
        {path, "TOPOEP_BENCH_TOPOLOGY", "TOPOEP_BENCH_MODEL", "TOPOEP_BENCH_SLOTS"});
  } catch (const std::exception& error) {
    std::cerr << "topoep_solver_bench: TOPOEP_BENCH_COUNTS=" << path << ": " << error.what()
              << "\n";
    return false;
  }
  benchmark::RegisterBenchmark("BM_TopoepSolveOwnRouting", [](benchmark::State& state) {
    time_solves(state, problem, layers);
  })->Unit(benchmark::kMicrosecond);
  return true;
}

}  // namespace
}  // namespace topoep

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  topoep::register_shared_benchmarks();
  if (!topoep::register_own_routing_benchmark()) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
