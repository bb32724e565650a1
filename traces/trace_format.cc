#include "traces/trace_format.h"

#include "common/json_fields.h"

namespace topoep {

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
  JsonObjectReader object(value, origin, "metadata");
  TraceMetadata m;
  m.model = object.string_field("model");
  m.num_experts = static_cast<int>(object.int_field("num_experts", 1, 1 << 20));
  m.top_k = static_cast<int>(object.int_field("top_k", 1, m.num_experts));
  m.num_ranks = static_cast<int>(object.int_field("num_ranks", 1, 1 << 20));
  m.gpus_per_node = static_cast<int>(object.int_field("gpus_per_node", 1, m.num_ranks));
  if (m.num_ranks % m.gpus_per_node != 0) {
    object.fail("gpus_per_node", std::to_string(m.gpus_per_node) + " does not divide " +
                                     std::to_string(m.num_ranks) + " ranks");
  }
  m.num_layers = static_cast<int>(object.int_field("num_layers", 1, 1 << 16));
  m.microbatches = static_cast<int>(object.int_field("microbatches", 1, 1 << 20));
  m.steps = static_cast<int>(object.int_field("steps", 1, 1 << 30));
  m.tokens_per_rank = object.int_field("tokens_per_rank", 0, 1LL << 40);
  m.source = object.string_field("source");
  m.packing = value.contains("packing") ? value["packing"] : nlohmann::json::object();
  if (value.contains("packing")) object.object_field("packing");  // must be an object
  m.dtype = object.string_field("dtype");
  if (m.dtype != "U16" && m.dtype != "I32") object.fail("dtype", "must be \"U16\" or \"I32\"");
  m.records_per_chunk = static_cast<int>(object.int_field("records_per_chunk", 1, 1 << 30));
  object.finish();
  return m;
}

}  // namespace topoep
