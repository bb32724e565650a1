#pragma once
// The toolkit's routing trace: counts[src_rank][expert] per (step, microbatch, MoE layer)
// record, in a directory that streams chunk by chunk:
//
//   NAME/index.json            {"format": "topoep-trace", "version": 1, "metadata": {...},
//                               "chunks": [{"file", "first_record", "num_records"}, ...]}
//   NAME/chunk-000000.safetensors   "counts" [n][R][E] (U16 or I32), "records" I32 [n][3]
//
// Records run step-major, then microbatch, then layer, with no gaps. Counts use U16 when the
// metadata's tokens_per_rank x top_k fits in 16 bits, else I32; a count that does not fit its
// type is an error, never a wrap. All integers are little-endian. See traces/README.md.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "solver/routing_counts.h"

namespace topoep {

struct TraceMetadata {
  std::string model;  // free text, e.g. "deepseek-v3"
  int num_experts = 0;
  int top_k = 0;
  int num_ranks = 0;
  int gpus_per_node = 0;
  int num_layers = 0;    // MoE layers per microbatch
  int microbatches = 0;  // per step
  int steps = 0;
  std::int64_t tokens_per_rank = 0;  // per microbatch; 0 when rows are not all equal
  std::string source;                // where the data came from
  nlohmann::json packing = nlohmann::json::object();  // how tokens became rank x expert counts
  std::string dtype;          // "U16" or "I32"; chosen by the writer when empty
  int records_per_chunk = 0;  // chosen by the writer when 0

  std::int64_t num_records() const {
    return static_cast<std::int64_t>(steps) * microbatches * num_layers;
  }
};

struct TraceRecord {
  int step = 0;
  int microbatch = 0;
  int layer = 0;
  RoutingCounts counts;
};

// The largest sizes a trace may declare. The reader refuses more, so the writer does too: a
// trace written is a trace that reads back.
struct TraceLimits {
  static constexpr int kExperts = 1 << 20;
  static constexpr int kRanks = 1 << 20;
  static constexpr int kLayers = 1 << 16;
  static constexpr int kMicrobatches = 1 << 20;
  static constexpr int kSteps = 1 << 30;
  static constexpr std::int64_t kTokensPerRank = 1LL << 40;
  static constexpr int kRecordsPerChunk = 1 << 30;
};

// Throws InputError("metadata.FIELD", ...) naming the first size out of TraceLimits' ranges,
// a gpus_per_node that does not divide the ranks, or a dtype other than "U16" or "I32" (an
// empty dtype and records_per_chunk 0 pass: the writer chooses them).
void check_trace_metadata(const TraceMetadata& metadata);

nlohmann::json trace_metadata_to_json(const TraceMetadata& metadata);
// Throws FileInputError(origin, "metadata.FIELD", ...) for a missing, unknown or bad field.
TraceMetadata trace_metadata_from_json(const nlohmann::json& value, const std::string& origin);

}  // namespace topoep
