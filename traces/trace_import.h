#pragma once
// Importers that turn recorded routing data into the toolkit's trace format. Every choice they
// make (packing, sampling, seeds) is written into the trace's metadata.

#include <cstdint>
#include <string>

namespace topoep {

struct ImportShape {
  int num_ranks = 32;
  int gpus_per_node = 8;
  int tokens_per_rank = 64;  // per microbatch (packing, sampling)
  int microbatches_per_step = 1;
};

// ESFT expert-score dumps: DIR/expert_weights_<L>.txt for L = 1..num_layers, the same sequences
// on the same lines of every file. Tokens are packed contiguously (traces/token_packing.h) into
// ranks x tokens_per_rank microbatches; whole microbatches only; steps group
// microbatches_per_step of them. Returns the number of records written.
std::int64_t import_esft(const std::string& dir, int num_layers, int num_experts, int top_k,
                         const ImportShape& shape, const std::string& out);

// SGLang expert-load statistics ({"logical_count": [layers][experts]}): layers with no tokens
// (dense layers) are skipped; every (step, microbatch, layer) record samples each rank's
// tokens_per_rank x top_k assignments from the layer's shares (multinomial; SplitMix64 seeded
// with seed + record index).
std::int64_t import_sglang_stats(const std::string& path, int top_k, int steps,
                                 const ImportShape& shape, std::uint64_t seed,
                                 const std::string& out);

// JSON lines {"step", "microbatch", "layer", "rank", "counts": [...E...]}, in any order; every
// (step, microbatch, layer, rank) of the implied ranges must appear exactly once. Holds the
// input in memory. Errors name the file and line.
std::int64_t import_jsonl(const std::string& path, int top_k, int gpus_per_node,
                          const std::string& out);

}  // namespace topoep
