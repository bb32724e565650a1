#include "sim/expert_activations.h"

#include <algorithm>
#include <cstddef>
#include <numeric>

namespace topoep {
namespace {

// The token assignments each GPU processes in one record under `planner`: its loads, or for a
// planner without loads (the ideal) the mean of `reference`'s on every GPU (rounded down), or
// nothing where `reference` is -1.
class LayerLoads {
 public:
  LayerLoads(const std::vector<RecordResult>& records, int planner, int reference, int ranks,
             int layers)
      : records_(records),
        planner_(planner),
        reference_(reference),
        ranks_(ranks),
        layers_(layers) {}

  // Calls `add(gpu, tokens)` for every GPU of microbatch `m`'s layer `layer`.
  template <typename Add>
  void each(int m, int layer, Add&& add) const {
    const std::vector<LayerCost>& costs =
        records_[static_cast<std::size_t>(m) * layers_ + layer].planners;
    const std::vector<TokenCount>& loads = costs[planner_].loads;
    if (!loads.empty()) {
      for (int g = 0; g < ranks_; ++g) add(g, loads[g]);
      return;
    }
    if (reference_ < 0) return;
    const std::vector<TokenCount>& processed = costs[reference_].loads;
    const TokenCount mean =
        std::accumulate(processed.begin(), processed.end(), TokenCount{0}) / ranks_;
    for (int g = 0; g < ranks_; ++g) add(g, mean);
  }

 private:
  const std::vector<RecordResult>& records_;
  int planner_, reference_, ranks_, layers_;
};

}  // namespace

std::vector<TokenCount> peak_expert_tokens(const std::vector<RecordResult>& records, int planner,
                                           int reference, int ranks,
                                           const std::vector<int>& chunk_first,
                                           const PipelineTimes& span) {
  const LayerLoads loads(records, planner, reference, ranks, chunk_first.back());
  return peak_gpu_tokens(span, [&](int chunk, int m) {
    std::vector<TokenCount> held(static_cast<std::size_t>(ranks), 0);
    for (int layer = chunk_first[chunk]; layer < chunk_first[chunk + 1]; ++layer) {
      loads.each(m, layer, [&](int g, TokenCount tokens) { held[g] += tokens; });
    }
    return held;
  });
}

TokenBufferBytes token_buffer_bytes(const ModelSpec& model, Dispatcher dispatcher,
                                    int local_experts) {
  const Bytes h = model.hidden_size, f = model.expert_ffn_size, width = model.combine_bytes;
  const bool sorted_back = dispatcher == Dispatcher::kPerAssignment && local_experts > 1;
  const Bytes copies = sorted_back ? 2 * h : h;
  return {copies * width, std::max({copies, h + f, 3 * f, 2 * f + h}) * width};
}

std::vector<Bytes> peak_expert_bytes(const std::vector<RecordResult>& records, int planner,
                                     int reference, int ranks, const std::vector<int>& chunk_first,
                                     const PipelineTimes& span, Bytes kept_bytes,
                                     const TokenBufferBytes& buffers) {
  const LayerLoads loads(records, planner, reference, ranks, chunk_first.back());
  const std::size_t gpus = static_cast<std::size_t>(ranks);
  const auto held = [&](int chunk, int m) {
    std::vector<Bytes> bytes(gpus, 0);
    for (int layer = chunk_first[chunk]; layer < chunk_first[chunk + 1]; ++layer) {
      loads.each(m, layer, [&](int g, TokenCount tokens) { bytes[g] += tokens * kept_bytes; });
    }
    return bytes;
  };
  // As layer j's forward runs a GPU holds its buffers and the chunk's kept activations up to j;
  // as its backward runs, its buffers and those up to j too, the layers after j let go: either
  // way, beyond what the GPU holds with the whole chunk's, j's buffers less what the layers
  // after j keep. Walked from the chunk's last layer back, the suffix is what those keep.
  const auto during = [&](int chunk, int m, bool forward) {
    const Bytes rate = forward ? buffers.forward : buffers.backward;
    // At least nothing: the chunk's last layer's buffers are on top of everything it keeps.
    std::vector<Bytes> most(gpus, 0), later(gpus, 0);
    std::vector<TokenCount> tokens(gpus, 0);
    for (int layer = chunk_first[chunk + 1] - 1; layer >= chunk_first[chunk]; --layer) {
      loads.each(m, layer, [&](int g, TokenCount t) { tokens[g] = t; });
      for (std::size_t g = 0; g < gpus; ++g) {
        most[g] = std::max(most[g], tokens[g] * rate - later[g]);
        later[g] += tokens[g] * kept_bytes;
      }
    }
    return most;
  };
  return peak_gpu_tokens(span, held, {}, during);
}

}  // namespace topoep
