#pragma once
// Importers that turn recorded routing data into the toolkit's trace format. Every choice they
// make (packing, sampling, seeds) is written into the trace's metadata. The importers of
// recorded data stream: they keep what they read in a scratch file beside `out` (removed
// however the import ends), so their heap does not grow with the input (traces/README.md,
// "Memory").

#include <cstdint>
#include <functional>
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

// Where routing counts cannot say how many experts a token picks (per-rank counts, totals) and
// the caller gave no top-k: asked with the data's expert count, it returns top-k or throws
// InputError (the CLI answers from the model presets with that many experts).
using TopKForExperts = std::function<int(int num_experts)>;

// `top_k`, or where it is 0, what `top_k_for` says for `num_experts` (an InputError naming
// "top_k" and `what`, the input, where there is no `top_k_for`); held to 1..num_experts.
int resolve_top_k(int top_k, int num_experts, const TopKForExperts& top_k_for,
                  const std::string& what);

// A 0 below (experts, top-k, layers) is "what the data says", or where it cannot say, the
// default each importer names.

// ESFT expert-score dumps: DIR/expert_weights_<L>.txt for num_layers layers from L = 1 (or 0,
// where DIR holds expert_weights_0.txt; num_layers 0: every layer file, none missing), the same
// sequences on the same lines of every file. num_experts and top_k 0: ESFT's model's, 64 and 6
// (esft_import.h). Whole microbatches only; steps group microbatches_per_step of them. Returns the
// number of records written.
std::int64_t import_esft(const std::string& dir, int num_layers, int num_experts, int top_k,
                         const ImportShape& shape, const PackingOptions& packing,
                         const std::string& out);

// Per-token files, one layer each, in DIR: "flame-csv" (FLAME-MoE router probabilities; files
// grouped by the layer in their name ("layerN"), else their layer_id column, and concatenated in
// natural name order, e.g. decoder positions),
// "topk-csv" (*.csv) or "topk-npy" (*.npy), one file per layer in natural name order (a .npy
// of [layers, tokens, top_k] is that many layers, in order).
// num_experts 0: the FLAME header's columns (the top-k formats need it given); top_k 0: the
// first file's first token's (a .npy's columns). Every row is then held to them.
std::int64_t import_token_files(const std::string& format, const std::string& dir, int num_experts,
                                int top_k, const ImportShape& shape, const PackingOptions& packing,
                                const std::string& out);

// Tokens per rank and microbatch that `topoep trace import` samples from statistics unless told:
// the demo's microbatch. Recorded samples (ImportShape's default) fill few tokens; statistics
// can be sampled at any size, and at 64 tokens a GPU no replica of a large expert pays.
constexpr int kSampledTokensPerRank = 4096;

// Steps sampled from run totals unless told.
constexpr int kSampledSteps = 4;

// SGLang expert-load statistics (traces/logical_count_reader.h): layers with no tokens (dense
// layers) are skipped; every (step, microbatch, layer) record samples each rank's
// tokens_per_rank x top_k assignments (multinomial; SplitMix64 seeded with seed + record index)
// from the layer's shares: in run totals ({"logical_count": [layers][experts]}), the same for
// every record, `steps` of them (0: kSampledSteps); in SGLang's per-pass counts
// ([passes][layers][experts]), microbatch i's from the i-th pass with tokens (passes with none,
// the unfilled slots of SGLang's buffer, are dropped), `steps` of them (0: every whole step of
// the passes; more than they fill is an InputError).
// With concentration > 0, each record's shares are first drawn from a Dirichlet around the
// layer's shares (traces/sglang_stats.h): a Dirichlet-multinomial with that overdispersion.
// top_k 0: top_k_for's answer for the file's expert count.
std::int64_t import_sglang_stats(const std::string& path, int top_k, int steps,
                                 const ImportShape& shape, std::uint64_t seed,
                                 const std::string& out, double concentration = 0,
                                 const TopKForExperts& top_k_for = {});

// JSON lines {"step", "microbatch", "layer", "rank", "counts": [...E...]}, in any order, in
// the file `path` or in every *.jsonl file of the directory `path` (natural name order: one
// file a rank, as each rank records its own routing, imports as it is); every
// (step, microbatch, layer, rank) of the implied ranges must appear exactly once, and every
// count fit the trace's 32-bit counts. Streams: holds one trace chunk, parsing the text once
// and keeping the counts meanwhile in scratch files beside `out` (about 4 bytes a count and 32
// a line; removed however the import ends). Errors name the file and line (an input whose keys
// repeat or leave a gap is sorted to name the first: 32 bytes a line of heap, then).
// top_k 0: the lines' own "top_k" where they give one (they must agree, and agree with a given
// top_k), else top_k_for's answer for the lines' expert count.
std::int64_t import_jsonl(const std::string& path, int top_k, int gpus_per_node,
                          const std::string& out, const TopKForExperts& top_k_for = {});

}  // namespace topoep
