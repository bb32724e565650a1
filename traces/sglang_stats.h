#pragma once
// SGLang's published expert-load statistics (`{"logical_count": [layers][experts]}`, totals
// over a whole benchmark run) and a seeded sampler that turns one layer's expert shares into
// per-microbatch, per-rank counts.

#include <cstdint>
#include <string>
#include <vector>

#include "solver/routing_counts.h"

namespace topoep {

// [layer][expert] token counts. Throws FileInputError naming the file and field for a missing
// or ragged logical_count, or a negative or non-integral count.
std::vector<std::vector<std::int64_t>> read_sglang_logical_count(const std::string& path);

// Each of num_ranks source ranks draws tokens_per_rank x top_k assignments independently from
// the layer's shares (multinomial; SplitMix64 seeded with `seed`, so integer-exact everywhere).
// Throws InputError if the layer has no tokens.
RoutingCounts sample_counts_from_shares(const std::vector<std::int64_t>& expert_counts,
                                        int num_ranks, int tokens_per_rank, int top_k,
                                        std::uint64_t seed);

}  // namespace topoep
