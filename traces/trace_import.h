#pragma once
// Importers that turn recorded routing data into the toolkit's trace format. Every choice they
// make (packing, sampling, seeds) is written into the trace's metadata. The importers of
// recorded data stream: they keep what they read in a scratch file beside `out` (removed
// however the import ends), so their heap does not grow with the input (traces/README.md,
// "Memory").

#include <cstdint>
#include <string>

#include "traces/unit_packing.h"

namespace topoep {

struct ImportShape {
  int num_ranks = 32;
  int gpus_per_node = 8;
  int tokens_per_rank = 64;  // per microbatch (packing, sampling)
  int microbatches_per_step = 1;
};

// How per-token data becomes rank x expert matrices (traces/unit_packing.h): units are whole
// sequences where the data has them (ESFT lines) unless unit_tokens > 0 cuts runs of that many
// tokens (the default for per-token files: 1). bootstrap_units > 0 resamples that many units
// with replacement first. Recorded in the trace's metadata.
struct PackingOptions {
  PackingMethod method = PackingMethod::kContiguous;
  int unit_tokens = 0;
  int bootstrap_units = 0;
  std::uint64_t seed = 1;
};

// ESFT expert-score dumps: DIR/expert_weights_<L>.txt for L = 1..num_layers, the same sequences
// on the same lines of every file. Whole microbatches only; steps group microbatches_per_step
// of them. Returns the number of records written.
std::int64_t import_esft(const std::string& dir, int num_layers, int num_experts, int top_k,
                         const ImportShape& shape, const PackingOptions& packing,
                         const std::string& out);

// Per-token files, one layer each, in DIR: "flame-csv" (FLAME-MoE router probabilities; files
// grouped by the layer in their name ("layerN"), else their layer_id column, and concatenated in
// natural name order, e.g. decoder positions),
// "topk-csv" (*.csv) or "topk-npy" (*.npy), one file per layer in natural name order.
std::int64_t import_token_files(const std::string& format, const std::string& dir, int num_experts,
                                int top_k, const ImportShape& shape, const PackingOptions& packing,
                                const std::string& out);

// SGLang expert-load statistics ({"logical_count": [layers][experts]}): layers with no tokens
// (dense layers) are skipped; every (step, microbatch, layer) record samples each rank's
// tokens_per_rank x top_k assignments from the layer's shares (multinomial; SplitMix64 seeded
// with seed + record index).
// With concentration > 0, each record's shares are first drawn from a Dirichlet around the
// layer's shares (traces/sglang_stats.h): a Dirichlet-multinomial with that overdispersion.
std::int64_t import_sglang_stats(const std::string& path, int top_k, int steps,
                                 const ImportShape& shape, std::uint64_t seed,
                                 const std::string& out, double concentration = 0);

// JSON lines {"step", "microbatch", "layer", "rank", "counts": [...E...]}, in any order, in
// the file `path` or in every *.jsonl file of the directory `path` (natural name order: one
// file a rank, as each rank records its own routing, imports as it is); every
// (step, microbatch, layer, rank) of the implied ranges must appear exactly once, and every
// count fit the trace's 32-bit counts. Streams: holds one trace chunk, parsing the text once
// and keeping the counts meanwhile in scratch files beside `out` (about 4 bytes a count and 32
// a line; removed however the import ends). Errors name the file and line (an input whose keys
// repeat or leave a gap is sorted to name the first: 32 bytes a line of heap, then).
std::int64_t import_jsonl(const std::string& path, int top_k, int gpus_per_node,
                          const std::string& out);

}  // namespace topoep
