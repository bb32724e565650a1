#pragma once
// One expert's feed-forward network on the host: gate and up projections, SiLU, down
// projection, in fp32 with Eigen. The harness's host mode runs it; the weights come from
// synthetic_values.h, so a home rank builds them and a replica receives them over the wire.

#include <Eigen/Dense>
#include <vector>

#include "harness/synthetic_values.h"

namespace topoep {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

struct ExpertWeights {
  RowMatrix gate;  // [hidden][ffn]
  RowMatrix up;    // [hidden][ffn]
  RowMatrix down;  // [ffn][hidden]
};

ExpertWeights make_expert_weights(ExpertId expert, int hidden, int ffn, std::uint64_t seed);

// The weights as one contiguous buffer (gate, up, down, row-major) and back.
std::vector<float> pack_weights(const ExpertWeights& weights);
ExpertWeights unpack_weights(const float* data, int hidden, int ffn);

// y = (silu(x gate) * (x up)) down for the rows of x ([tokens][hidden]).
RowMatrix expert_forward(const ExpertWeights& weights, const RowMatrix& x);

}  // namespace topoep
