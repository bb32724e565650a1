#pragma once
// Per-token routing files for the import benchmarks: `layers` files of seeded expert ids,
// [tokens, top_k] each, as `trace import --format topk-npy` and `topk-csv` read them.

#include <cstdint>
#include <string>

namespace topoep {
namespace bench {

// Writes DIR/layer<l>.npy, int32 ids, for l < layers (DIR is made); returns the bytes of ids
// written.
std::int64_t write_topk_npy_layers(const std::string& dir, int layers, std::int64_t tokens,
                                   int top_k, int num_experts);

// Writes DIR/layer<l>.csv, a line of comma-separated ids a token, for l < layers (DIR is
// made); returns the bytes written. The same ids as write_topk_npy_layers() for the same shape.
std::int64_t write_topk_csv_layers(const std::string& dir, int layers, std::int64_t tokens,
                                   int top_k, int num_experts);

}  // namespace bench
}  // namespace topoep
