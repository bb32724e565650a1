#pragma once
// SGLang's published expert-load statistics (`{"logical_count": [layers][experts]}`, totals
// over a whole benchmark run) and a seeded sampler that turns one layer's expert shares into
// per-microbatch, per-rank counts.

#include <cstdint>
#include <string>
#include <vector>

#include "solver/routing_counts.h"

namespace topoep {

// [layer][expert] token counts: the file's run totals, or its passes' counts summed
// (traces/logical_count_reader.h, which also reads the passes one by one). Throws
// FileInputError naming the file and field for a missing or ragged logical_count, or a negative
// or non-integral count.
std::vector<std::vector<std::int64_t>> read_sglang_logical_count(const std::string& path);

// Each of num_ranks source ranks draws tokens_per_rank x top_k assignments independently from
// the layer's shares (multinomial; SplitMix64 seeded with `seed`, so integer-exact everywhere).
// Throws InputError if the layer has no tokens.
RoutingCounts sample_counts_from_shares(const std::vector<std::int64_t>& expert_counts,
                                        int num_ranks, int tokens_per_rank, int top_k,
                                        std::uint64_t seed);

// Microbatch-to-microbatch variation: shares drawn from a Dirichlet with mean the layer's shares
// and total concentration `concentration` (expert e gets alpha_e = concentration x share_e; a
// smaller concentration means more variation), then sampled as above: a Dirichlet-multinomial.
// Returns integer weights (the shares x 2^32, at least 1 for experts with tokens) for
// sample_counts_from_shares. Deterministic for a seed (Marsaglia-Tsang gamma draws).
std::vector<std::int64_t> dirichlet_shares(const std::vector<std::int64_t>& expert_counts,
                                           double concentration, std::uint64_t seed);

}  // namespace topoep
