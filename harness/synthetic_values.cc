#include "harness/synthetic_values.h"

#include <cmath>

#include "traces/splitmix64.h"

namespace topoep {

std::vector<float> expert_weight_values(ExpertId expert, int hidden, int ffn, std::uint64_t seed) {
  SplitMix64 random(seed * 0x9e3779b97f4a7c15ULL + static_cast<std::uint64_t>(expert) + 1);
  const std::size_t matrix = static_cast<std::size_t>(hidden) * ffn;
  std::vector<float> values(3 * matrix);
  const float in_scale = 1.0f / std::sqrt(static_cast<float>(hidden));
  const float down_scale = 1.0f / std::sqrt(static_cast<float>(ffn));
  for (std::size_t i = 0; i < values.size(); ++i) {
    const float scale = i < 2 * matrix ? in_scale : down_scale;
    values[i] = scale * static_cast<float>(2.0 * random.uniform_open() - 1.0);
  }
  return values;
}

void token_activation(std::uint64_t seed, std::int64_t record, RankId src, ExpertId expert,
                      TokenCount j, int hidden, float* out) {
  SplitMix64 random(seed ^ (static_cast<std::uint64_t>(record) * 0xbf58476d1ce4e5b9ULL) ^
                    (static_cast<std::uint64_t>(src) << 48) ^
                    (static_cast<std::uint64_t>(expert) << 24) ^ static_cast<std::uint64_t>(j));
  for (int i = 0; i < hidden; ++i) out[i] = static_cast<float>(2.0 * random.uniform_open() - 1.0);
}

}  // namespace topoep
