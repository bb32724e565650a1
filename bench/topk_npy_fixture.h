#pragma once
// Per-token routing files for the import benchmarks: `layers` .npy arrays of seeded int32 expert
// ids, [tokens, top_k] each, as `trace import --format topk-npy` reads them.

#include <cstdint>
#include <string>

namespace topoep {
namespace bench {

// Writes DIR/layer<l>.npy for l < layers (DIR is made); returns the bytes of ids written.
std::int64_t write_topk_npy_layers(const std::string& dir, int layers, std::int64_t tokens,
                                   int top_k, int num_experts);

}  // namespace bench
}  // namespace topoep
