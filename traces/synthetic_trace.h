#pragma once
// A seeded synthetic routing trace with the structure real traces show: skewed expert
// popularity (Zipf or log-normal), hot experts that drift from step to step, layers whose hot
// experts are correlated, and per-rank variation. Defaults are calibrated to the shared real
// data (traces/README.md).
//
// Determinism: the same spec gives the same trace on any machine whose libm gives the same
// pow/exp/log/cos (IEEE basic operations elsewhere); SplitMix64 supplies every random draw.

#include <cstdint>
#include <string>
#include <vector>

#include "common/progress.h"
#include "solver/types.h"
#include "traces/splitmix64.h"
#include "traces/trace_format.h"

namespace topoep {

enum class Popularity { kZipf, kLogNormal };

struct SyntheticTraceSpec {
  int num_ranks = 32;
  int gpus_per_node = 8;
  int num_experts = 256;
  int top_k = 8;
  int num_layers = 8;
  int microbatches = 2;
  int steps = 4;
  int tokens_per_rank = 1024;
  Popularity popularity = Popularity::kZipf;
  // The busiest expert's expected share over the mean share; the Zipf exponent or log-normal
  // sigma is solved for it (capped at num_experts, all load on one expert). 5.0: the low end of the
  // SGLang DeepSeek-V3 statistics (busiest expert 5-8x the layer mean, median) and the high end of
  // ESFT's per-sequence 3.6-5.6x.
  double hot_ratio = 5.0;
  double drift_per_step = 0.05;    // fraction of popularity positions swapped at each new step
  double layer_correlation = 0.5;  // fraction of a layer's popularity order the next layer keeps
  double rank_variation = 0.25;    // log-normal sigma of per-rank, per-expert weight noise
  std::uint64_t seed = 1;
};

// Throws InputError naming the field for sizes out of range or parameters outside [0, 1]
// (drift, correlation), rank_variation outside [0, 4], or hot_ratio below 1.
void check_synthetic_trace_spec(const SyntheticTraceSpec& spec);

// The Zipf exponent s whose busiest/mean expected share over `num_experts` is `hot_ratio`.
double zipf_exponent_for(int num_experts, double hot_ratio);

// Writes the trace to `out` (atomically, see TraceWriter); the spec goes into the metadata.
// The draws are spread over `threads` threads; the trace is the same for any count. `progress`
// draws the records written (TraceWriter).
std::int64_t write_synthetic_trace(const SyntheticTraceSpec& spec, const std::string& out,
                                   int threads = 1,
                                   ProgressDisplay progress = ProgressDisplay::kNone);

namespace synthetic_trace_detail {
// write_synthetic_trace()'s draws, exposed for their test. The counts of `count` consecutive
// records of one step (from record `first`, microbatch-major, then layer; `order[layer]` gives
// which expert holds each popularity position) into `values` ([count][R][E]), as the
// sequential generator draws them from `random`, which ends where it would.
//
// The (record, rank) tasks are spread over `threads` threads, each started where the stream
// stands if every task before it took `per_task` values: 2 E + tokens x top-k, unless
// SplitMix64::below() rejects a value (below 2^-36 per draw at the default weights). The first
// task that ends elsewhere started right; the tasks after it are redone in order from where it
// ended. So the counts are the sequential generator's for any thread count and any
// `per_task`; a wrong one only costs time.
void generate_records(const SyntheticTraceSpec& spec, const std::vector<double>& popularity,
                      const std::vector<std::vector<ExpertId>>& order, int first, int count,
                      int threads, std::uint64_t per_task, SplitMix64& random,
                      std::vector<TokenCount>& values);
}  // namespace synthetic_trace_detail

}  // namespace topoep
