#pragma once
// The numbers the harness computes with, the same on every rank and in every mode: expert
// weights as a function of (seed, expert), token activations as a function of (seed, record,
// source, expert, assignment). No Eigen, no CUDA: both modes include it.

#include <cstdint>
#include <vector>

#include "solver/types.h"

namespace topoep {

// gate [hidden][ffn], up [hidden][ffn], down [ffn][hidden], row-major, one after the other;
// uniform in +-1/sqrt(fan-in), from SplitMix64 seeded by (seed, expert).
std::vector<float> expert_weight_values(ExpertId expert, int hidden, int ffn, std::uint64_t seed);

// The activation of assignment `j` of the tokens `src` routed to `expert` in `record`:
// `hidden` values in [-1, 1).
void token_activation(std::uint64_t seed, std::int64_t record, RankId src, ExpertId expert,
                      TokenCount j, int hidden, float* out);

}  // namespace topoep
