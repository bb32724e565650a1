#include "harness/expert_ffn.h"

#include <cmath>

#include "traces/splitmix64.h"

namespace topoep {
namespace {

void fill_uniform(RowMatrix& m, SplitMix64& random, float scale) {
  for (Eigen::Index i = 0; i < m.size(); ++i) {
    m.data()[i] = scale * static_cast<float>(2.0 * random.uniform_open() - 1.0);
  }
}

}  // namespace

ExpertWeights make_expert_weights(ExpertId expert, int hidden, int ffn, std::uint64_t seed) {
  SplitMix64 random(seed * 0x9e3779b97f4a7c15ULL + static_cast<std::uint64_t>(expert) + 1);
  ExpertWeights w{RowMatrix(hidden, ffn), RowMatrix(hidden, ffn), RowMatrix(ffn, hidden)};
  fill_uniform(w.gate, random, 1.0f / std::sqrt(static_cast<float>(hidden)));
  fill_uniform(w.up, random, 1.0f / std::sqrt(static_cast<float>(hidden)));
  fill_uniform(w.down, random, 1.0f / std::sqrt(static_cast<float>(ffn)));
  return w;
}

std::vector<float> pack_weights(const ExpertWeights& w) {
  std::vector<float> data;
  data.reserve(static_cast<std::size_t>(w.gate.size() + w.up.size() + w.down.size()));
  for (const RowMatrix* m : {&w.gate, &w.up, &w.down}) {
    data.insert(data.end(), m->data(), m->data() + m->size());
  }
  return data;
}

ExpertWeights unpack_weights(const float* data, int hidden, int ffn) {
  ExpertWeights w{RowMatrix(hidden, ffn), RowMatrix(hidden, ffn), RowMatrix(ffn, hidden)};
  for (RowMatrix* m : {&w.gate, &w.up, &w.down}) {
    std::copy(data, data + m->size(), m->data());
    data += m->size();
  }
  return w;
}

RowMatrix expert_forward(const ExpertWeights& w, const RowMatrix& x) {
  const RowMatrix gate = x * w.gate;
  const RowMatrix up = x * w.up;
  const RowMatrix hidden =
      (gate.array() / (1.0f + (-gate.array()).exp()) * up.array()).matrix();  // silu(g) * u
  return hidden * w.down;
}

void token_activation(std::uint64_t seed, std::int64_t record, RankId src, ExpertId expert,
                      TokenCount j, int hidden, float* out) {
  SplitMix64 random(seed ^ (static_cast<std::uint64_t>(record) * 0xbf58476d1ce4e5b9ULL) ^
                    (static_cast<std::uint64_t>(src) << 48) ^
                    (static_cast<std::uint64_t>(expert) << 24) ^ static_cast<std::uint64_t>(j));
  for (int i = 0; i < hidden; ++i) out[i] = static_cast<float>(2.0 * random.uniform_open() - 1.0);
}

}  // namespace topoep
