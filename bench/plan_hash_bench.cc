// Cost of the plan hash and the plan validator at DeepSeek-V3-like shapes: every rank hashes
// its plan each layer and microbatch (harness), and tests validate every plan they produce.

#include <benchmark/benchmark.h>

#include <random>

#include "solver/placement.h"
#include "solver/plan_encoding.h"
#include "solver/plan_validator.h"
#include "solver/routing_counts.h"
#include "solver/static_plan.h"

namespace topoep {
namespace {

// Dense counts (every source sends to every expert): the largest route list for the shape.
RoutingCounts dense_counts(int num_ranks, int num_experts) {
  std::mt19937_64 random(12345);
  std::uniform_int_distribution<TokenCount> tokens(1, 64);
  RoutingCounts counts(num_ranks, num_experts);
  for (RankId src = 0; src < num_ranks; ++src) {
    for (ExpertId expert = 0; expert < num_experts; ++expert)
      counts.set(src, expert, tokens(random));
  }
  return counts;
}

void BM_PlanHash(benchmark::State& state) {
  const int num_ranks = static_cast<int>(state.range(0));
  const int num_experts = static_cast<int>(state.range(1));
  const Plan plan = static_plan(dense_counts(num_ranks, num_experts),
                                Placement::contiguous(num_experts, num_ranks, 1));
  for (auto _ : state) benchmark::DoNotOptimize(plan_hash(plan));
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(encode_plan(plan).size()));
  state.counters["routes"] = static_cast<double>(plan.routes.size());
}
BENCHMARK(BM_PlanHash)
    ->Args({32, 64})
    ->Args({32, 256})
    ->Args({64, 256})
    ->Args({256, 256})
    ->Unit(benchmark::kMicrosecond);

void BM_PlanValidator(benchmark::State& state) {
  const int num_ranks = static_cast<int>(state.range(0));
  const int num_experts = static_cast<int>(state.range(1));
  const RoutingCounts counts = dense_counts(num_ranks, num_experts);
  const Placement placement = Placement::contiguous(num_experts, num_ranks, 1);
  const Plan plan = static_plan(counts, placement);
  for (auto _ : state) benchmark::DoNotOptimize(find_plan_violation(counts, placement, plan));
}
BENCHMARK(BM_PlanValidator)->Args({32, 256})->Args({256, 256})->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace topoep

BENCHMARK_MAIN();
