#include "traces/trace_format.h"

#include "common/json_fields.h"
#include "solver/input_error.h"

namespace topoep {

void check_trace_metadata(const TraceMetadata& m) {
  using L = TraceLimits;
  auto in_range = [](const char* field, std::int64_t value, std::int64_t low, std::int64_t high) {
    if (value < low || value > high) {
      throw InputError(std::string("metadata.") + field, "must be from " + std::to_string(low) +
                                                             " to " + std::to_string(high) +
                                                             ", got " + std::to_string(value));
    }
  };
  in_range("num_experts", m.num_experts, 1, L::kExperts);
  in_range("top_k", m.top_k, 1, m.num_experts);
  in_range("num_ranks", m.num_ranks, 1, L::kRanks);
  in_range("gpus_per_node", m.gpus_per_node, 1, m.num_ranks);
  if (m.num_ranks % m.gpus_per_node != 0) {
    throw InputError("metadata.gpus_per_node", std::to_string(m.gpus_per_node) +
                                                   " does not divide " +
                                                   std::to_string(m.num_ranks) + " ranks");
  }
  in_range("num_layers", m.num_layers, 1, L::kLayers);
  in_range("microbatches", m.microbatches, 1, L::kMicrobatches);
  in_range("steps", m.steps, 1, L::kSteps);
  in_range("tokens_per_rank", m.tokens_per_rank, 0, L::kTokensPerRank);
  if (!m.dtype.empty() && m.dtype != "U16" && m.dtype != "I32") {
    throw InputError("metadata.dtype", "must be \"U16\" or \"I32\", got \"" + m.dtype + "\"");
  }
  if (m.records_per_chunk != 0) {
    in_range("records_per_chunk", m.records_per_chunk, 1, L::kRecordsPerChunk);
  }
}

nlohmann::json trace_metadata_to_json(const TraceMetadata& m) {
  return {{"model", m.model},
          {"num_experts", m.num_experts},
          {"top_k", m.top_k},
          {"num_ranks", m.num_ranks},
          {"gpus_per_node", m.gpus_per_node},
          {"num_layers", m.num_layers},
          {"microbatches", m.microbatches},
          {"steps", m.steps},
          {"tokens_per_rank", m.tokens_per_rank},
          {"source", m.source},
          {"packing", m.packing},
          {"dtype", m.dtype},
          {"records_per_chunk", m.records_per_chunk}};
}

TraceMetadata trace_metadata_from_json(const nlohmann::json& value, const std::string& origin) {
  using L = TraceLimits;
  JsonObjectReader object(value, origin, "metadata");
  TraceMetadata m;
  m.model = object.string_field("model");
  m.num_experts = static_cast<int>(object.int_field("num_experts", 1, L::kExperts));
  m.top_k = static_cast<int>(object.int_field("top_k", 1, m.num_experts));
  m.num_ranks = static_cast<int>(object.int_field("num_ranks", 1, L::kRanks));
  m.gpus_per_node = static_cast<int>(object.int_field("gpus_per_node", 1, m.num_ranks));
  if (m.num_ranks % m.gpus_per_node != 0) {
    object.fail("gpus_per_node", std::to_string(m.gpus_per_node) + " does not divide " +
                                     std::to_string(m.num_ranks) + " ranks");
  }
  m.num_layers = static_cast<int>(object.int_field("num_layers", 1, L::kLayers));
  m.microbatches = static_cast<int>(object.int_field("microbatches", 1, L::kMicrobatches));
  m.steps = static_cast<int>(object.int_field("steps", 1, L::kSteps));
  m.tokens_per_rank = object.int_field("tokens_per_rank", 0, L::kTokensPerRank);
  m.source = object.string_field("source");
  m.packing = value.contains("packing") ? value["packing"] : nlohmann::json::object();
  if (value.contains("packing")) object.object_field("packing");  // must be an object
  m.dtype = object.string_field("dtype");
  if (m.dtype != "U16" && m.dtype != "I32") object.fail("dtype", "must be \"U16\" or \"I32\"");
  m.records_per_chunk =
      static_cast<int>(object.int_field("records_per_chunk", 1, L::kRecordsPerChunk));
  object.finish();
  return m;
}

}  // namespace topoep
