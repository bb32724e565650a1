#include "topologies/topology_json.h"

#include <limits>

#include "common/json_fields.h"

namespace topoep {
namespace {

constexpr double kMaxBandwidth = 1e6;  // GB/s: catches unit mistakes (bytes/s typed as GB/s)
constexpr double kMaxLatency = 1e6;    // µs
constexpr double kMaxTflops = 1e6;

LinkSpec read_link(JsonObjectReader object) {
  LinkSpec link;
  link.name = object.string_field("name");
  link.spec_gb_per_s = object.number_field("spec_gb_per_s", 0, true, kMaxBandwidth);
  link.bandwidth_gb_per_s = object.number_field("bandwidth_gb_per_s", 0, true, kMaxBandwidth);
  if (link.bandwidth_gb_per_s > link.spec_gb_per_s) {
    object.fail("bandwidth_gb_per_s",
                "achieved bandwidth " + std::to_string(link.bandwidth_gb_per_s) +
                    " exceeds the spec " + std::to_string(link.spec_gb_per_s));
  }
  link.latency_us = object.number_field("latency_us", 0, false, kMaxLatency);
  link.source = object.string_field("source");
  object.finish();
  return link;
}

GpuSpec read_gpu(JsonObjectReader object) {
  GpuSpec gpu;
  gpu.name = object.string_field("name");
  JsonObjectReader peak = object.object_field("peak_tflops");
  gpu.peak_tflops_bf16 = peak.number_field("bf16", 0, true, kMaxTflops);
  gpu.peak_tflops_fp8 = peak.number_field("fp8", 0, false, kMaxTflops);  // 0: none (A100)
  peak.finish();
  gpu.hbm_bandwidth_gb_per_s =
      object.number_field("hbm_bandwidth_gb_per_s", 0, true, kMaxBandwidth);
  gpu.hbm_capacity_gb = object.number_field("hbm_capacity_gb", 0, true, 1e6);
  gpu.source = object.string_field("source");
  object.finish();
  return gpu;
}

// Points of a curve over `points_field` strictly increasing and positive, and each of
// `values` as many, in (0, 1].
void check_curve(const JsonObjectReader& object, const char* points_field,
                 const std::vector<double>& points,
                 const std::vector<std::pair<const char*, const std::vector<double>*>>& values) {
  if (points.empty()) object.fail(points_field, "needs at least one point");
  for (const auto& [field, column] : values) {
    if (column->size() != points.size()) {
      object.fail(field, "has " + std::to_string(column->size()) + " points, " + points_field +
                             " has " + std::to_string(points.size()));
    }
  }
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (!(points[i] > 0) || (i > 0 && !(points[i] > points[i - 1]))) {
      object.fail(points_field, "must be positive and strictly increasing (element " +
                                    std::to_string(i) + " is " + std::to_string(points[i]) + ")");
    }
    for (const auto& [field, column] : values) {
      const double efficiency = (*column)[i];
      if (!(efficiency > 0 && efficiency <= 1)) {
        object.fail(field, "element " + std::to_string(i) + " is " + std::to_string(efficiency) +
                               ", outside (0, 1]");
      }
    }
  }
}

AttentionEfficiencyCurve read_attention_curve(JsonObjectReader object) {
  AttentionEfficiencyCurve curve;
  curve.sequence_length = object.number_array_field("sequence_length");
  curve.forward = object.number_array_field("forward");
  curve.backward = object.number_array_field("backward");
  curve.source = object.string_field("source");
  object.finish();
  check_curve(object, "sequence_length", curve.sequence_length,
              {{"forward", &curve.forward}, {"backward", &curve.backward}});
  return curve;
}

GemmEfficiencyCurve read_curve(JsonObjectReader object) {
  GemmEfficiencyCurve curve;
  curve.tokens_per_expert = object.number_array_field("tokens_per_expert");
  curve.efficiency = object.number_array_field("efficiency");
  curve.source = object.string_field("source");
  object.finish();
  check_curve(object, "tokens_per_expert", curve.tokens_per_expert,
              {{"efficiency", &curve.efficiency}});
  return curve;
}

nlohmann::json link_to_json(const LinkSpec& link) {
  return {{"name", link.name},
          {"spec_gb_per_s", link.spec_gb_per_s},
          {"bandwidth_gb_per_s", link.bandwidth_gb_per_s},
          {"latency_us", link.latency_us},
          {"source", link.source}};
}

}  // namespace

Topology parse_topology(const std::string& text, const std::string& origin) {
  const nlohmann::json document = parse_json_text(text, origin);
  JsonObjectReader root(document, origin, "");
  Topology topology;
  topology.origin = origin;
  topology.name = root.string_field("name");
  if (topology.name.empty()) root.fail("name", "must not be empty");
  topology.description = root.has("description") ? root.string_field("description") : "";
  topology.gpus_per_node = static_cast<int>(root.int_field("gpus_per_node", 1, kMaxTopologyGpus));
  if (!root.has("nodes") && !root.has("total_gpus")) {
    root.fail("nodes", "is missing (give nodes, or total_gpus)");
  }
  if (root.has("total_gpus")) {
    const auto total = root.int_field("total_gpus", 1, kMaxTopologyGpus);
    if (total % topology.gpus_per_node != 0) {
      root.fail("gpus_per_node", std::to_string(topology.gpus_per_node) +
                                     " GPUs per node does not divide total_gpus " +
                                     std::to_string(total));
    }
    topology.nodes = static_cast<int>(total / topology.gpus_per_node);
  }
  if (root.has("nodes")) {
    const int nodes = static_cast<int>(root.int_field("nodes", 1, kMaxTopologyGpus));
    if (root.has("total_gpus") && nodes != topology.nodes) {
      root.fail("nodes", std::to_string(nodes) + " nodes x " +
                             std::to_string(topology.gpus_per_node) +
                             " GPUs per node disagrees with total_gpus");
    }
    topology.nodes = nodes;
  }
  if (static_cast<std::int64_t>(topology.nodes) * topology.gpus_per_node > kMaxTopologyGpus) {
    root.fail("nodes",
              "nodes x gpus_per_node exceeds " + std::to_string(kMaxTopologyGpus) + " GPUs");
  }
  topology.scale_up = read_link(root.object_field("scale_up"));
  topology.scale_out = read_link(root.object_field("scale_out"));
  topology.gpu = read_gpu(root.object_field("gpu"));
  topology.gemm_efficiency = read_curve(root.object_field("grouped_gemm_efficiency"));
  if (root.has("attention_efficiency")) {
    topology.attention_efficiency = read_attention_curve(root.object_field("attention_efficiency"));
  }
  root.finish();
  return topology;
}

nlohmann::json topology_to_json(const Topology& topology) {
  const GpuSpec& gpu = topology.gpu;
  const GemmEfficiencyCurve& curve = topology.gemm_efficiency;
  nlohmann::json json = {
      {"name", topology.name},
      {"description", topology.description},
      {"nodes", topology.nodes},
      {"gpus_per_node", topology.gpus_per_node},
      {"scale_up", link_to_json(topology.scale_up)},
      {"scale_out", link_to_json(topology.scale_out)},
      {"gpu",
       {{"name", gpu.name},
        {"peak_tflops", {{"bf16", gpu.peak_tflops_bf16}, {"fp8", gpu.peak_tflops_fp8}}},
        {"hbm_bandwidth_gb_per_s", gpu.hbm_bandwidth_gb_per_s},
        {"hbm_capacity_gb", gpu.hbm_capacity_gb},
        {"source", gpu.source}}},
      {"grouped_gemm_efficiency",
       {{"tokens_per_expert", curve.tokens_per_expert},
        {"efficiency", curve.efficiency},
        {"source", curve.source}}}};
  const AttentionEfficiencyCurve& attention = topology.attention_efficiency;
  if (!attention.empty()) {
    json["attention_efficiency"] = {{"sequence_length", attention.sequence_length},
                                    {"forward", attention.forward},
                                    {"backward", attention.backward},
                                    {"source", attention.source}};
  }
  return json;
}

}  // namespace topoep
