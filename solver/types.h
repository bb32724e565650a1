#pragma once
// Scalar types shared by the solver, the simulator and the harness. Units live in the names
// and comments; every decision the solver makes uses these integer types only.

#include <cstdint>

namespace topoep {

using TokenCount = std::int64_t;  // tokens (token-expert assignments), never negative
using Bytes = std::int64_t;       // bytes
using ExpertId = std::int32_t;    // logical expert index in [0, num_experts)
using RankId = std::int32_t;      // global GPU rank in [0, num_ranks); rank = node * G + local

constexpr ExpertId kNoExpert = -1;  // an empty spare slot

}  // namespace topoep
