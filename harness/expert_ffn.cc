#include "harness/expert_ffn.h"

namespace topoep {

ExpertWeights make_expert_weights(ExpertId expert, int hidden, int ffn, std::uint64_t seed) {
  return unpack_weights(expert_weight_values(expert, hidden, ffn, seed).data(), hidden, ffn);
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

}  // namespace topoep
