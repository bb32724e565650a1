#pragma once
// One expert's feed-forward network at the harness's dimensions: gate and up projections, SiLU,
// down projection, in fp32 with Eigen (host mode). Weights are a function of the expert id and
// a seed, so the home rank builds them and a replica receives them over the wire: the harness
// moves replica weights for real.

#include <Eigen/Dense>
#include <cstdint>
#include <vector>

#include "solver/types.h"

namespace topoep {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

struct ExpertWeights {
  RowMatrix gate;  // [hidden][ffn]
  RowMatrix up;    // [hidden][ffn]
  RowMatrix down;  // [ffn][hidden]
};

// Uniform in +-1/sqrt(fan-in), from SplitMix64 seeded by (seed, expert).
ExpertWeights make_expert_weights(ExpertId expert, int hidden, int ffn, std::uint64_t seed);

// The weights as one contiguous buffer (gate, up, down, row-major) and back.
std::vector<float> pack_weights(const ExpertWeights& weights);
ExpertWeights unpack_weights(const float* data, int hidden, int ffn);

// y = (silu(x gate) * (x up)) down for the rows of x ([tokens][hidden]).
RowMatrix expert_forward(const ExpertWeights& weights, const RowMatrix& x);

// The activation of token-assignment `j` that `src` routed to `expert` in record `record`:
// `hidden` values in [-1, 1), the same on every rank.
void token_activation(std::uint64_t seed, std::int64_t record, RankId src, ExpertId expert,
                      TokenCount j, int hidden, float* out);

}  // namespace topoep
