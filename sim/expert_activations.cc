#include "sim/expert_activations.h"

#include <cstddef>
#include <numeric>

namespace topoep {

std::vector<TokenCount> peak_expert_tokens(const std::vector<RecordResult>& records, int planner,
                                           int reference, int ranks,
                                           const std::vector<int>& chunk_first,
                                           const PipelineTimes& span) {
  const int layers = chunk_first.back();
  const std::size_t gpus = static_cast<std::size_t>(ranks);
  // Adds microbatch `m`'s tokens of layers [first, end) to each GPU's `held`.
  const auto add_layers = [&](int m, int first, int end, std::vector<TokenCount>& held) {
    for (int layer = first; layer < end; ++layer) {
      const std::vector<LayerCost>& costs =
          records[static_cast<std::size_t>(m) * layers + layer].planners;
      const std::vector<TokenCount>& loads = costs[planner].loads;
      if (!loads.empty()) {
        for (std::size_t g = 0; g < gpus; ++g) held[g] += loads[g];
        continue;
      }
      if (reference < 0) continue;
      const std::vector<TokenCount>& processed = costs[reference].loads;
      const TokenCount mean =
          std::accumulate(processed.begin(), processed.end(), TokenCount{0}) / ranks;
      for (TokenCount& tokens : held) tokens += mean;
    }
  };
  return peak_gpu_tokens(span, [&](int chunk, int m) {
    std::vector<TokenCount> held(gpus, 0);
    add_layers(m, chunk_first[chunk], chunk_first[chunk + 1], held);
    return held;
  });
}

}  // namespace topoep
