#pragma once
// Reader for ESFT's expert-score dumps (deepseek-ai/ESFT, results/expert_scores/): one text file
// per MoE layer, one line per sequence holding, tab-separated, the top-k expert ids of every
// token in order, then a double tab, then the matching gate weights (ignored here).

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "solver/types.h"

namespace topoep {

// ESFT published expert scores of one model, ESFT-vanilla-lite (DeepSeek-V2-Lite's
// architecture: 64 routed experts, top-6): what its dumps hold unless told otherwise.
constexpr int kEsftExperts = 64;
constexpr int kEsftTopK = 6;

struct EsftLayer {
  int top_k = 0;
  // [sequence][token * top_k + choice]: the experts each token was routed to.
  std::vector<std::vector<ExpertId>> sequences;
  std::int64_t num_tokens() const;
};

// Throws FileInputError naming the file and line for: a missing file, a line without the
// double tab, a non-integer or negative id, an id >= num_experts, or an id count not divisible
// by top_k.
EsftLayer read_esft_layer(const std::string& path, int num_experts, int top_k);
// The same, streamed: `sequence` gets each line's ids, whole, as it is read and checked.
void read_esft_layer(const std::string& path, int num_experts, int top_k,
                     const std::function<void(const ExpertId* ids, std::size_t count)>& sequence);

}  // namespace topoep
