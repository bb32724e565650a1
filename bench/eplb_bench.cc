// C++ EPLB (solver/eplb) latency at DeepSeek-V3 shapes: 256 experts in 8 groups, one layer and
// all 58 MoE layers, with seeded Zipf-like loads (integer generator: the same on every machine).

#include <benchmark/benchmark.h>

#include "solver/eplb/eplb.h"
#include "traces/splitmix64.h"

namespace topoep {
namespace {

EplbWeights zipf_weights(int layers, int experts) {
  SplitMix64 random(7);
  EplbWeights weights{layers, experts, {}};
  for (int l = 0; l < layers; ++l) {
    for (int e = 0; e < experts; ++e) {
      // Popularity rank from a seeded draw, weight ~ 1 / rank, plus noise to avoid ties.
      const double rank =
          1.0 + static_cast<double>(random.below(static_cast<std::uint64_t>(experts)));
      weights.values.push_back(
          static_cast<float>(1e6 / rank + static_cast<double>(random.below(1000))));
    }
  }
  return weights;
}

void BM_Eplb(benchmark::State& state) {
  const int layers = static_cast<int>(state.range(0));
  const EplbParams params{static_cast<int>(state.range(1)), 8, static_cast<int>(state.range(2)),
                          static_cast<int>(state.range(3))};
  const EplbWeights weights = zipf_weights(layers, 256);
  for (auto _ : state) benchmark::DoNotOptimize(rebalance_experts(weights, params));
}
// Args: layers, replicas, nodes, GPUs.
BENCHMARK(BM_Eplb)
    ->Args({1, 288, 4, 32})
    ->Args({1, 320, 8, 64})
    ->Args({58, 288, 4, 32})
    ->Args({58, 320, 8, 64})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace topoep

BENCHMARK_MAIN();
