#pragma once
// Turns per-token routing (no source ranks recorded) into rank x expert count matrices by
// packing the token stream onto ranks and microbatches. The packing is this function's
// documented choice, not a property of the data.

#include <vector>

#include "solver/routing_counts.h"

namespace topoep {

// Contiguous packing: the tokens of all sequences, in order, form one stream; microbatch m takes
// tokens [m R T, (m + 1) R T) and rank r of it the T tokens starting at m R T + r T, where T is
// tokens_per_rank. A final partial microbatch is dropped. `token_experts` holds top_k expert ids
// per token, token after token. Returns one RoutingCounts per whole microbatch.
std::vector<RoutingCounts> pack_tokens_contiguous(const std::vector<ExpertId>& token_experts,
                                                  int top_k, int num_experts, int num_ranks,
                                                  int tokens_per_rank);

}  // namespace topoep
