#include "sim/sim_config.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "common/preset_source.h"
#include "common/text_list.h"
#include "models/model_json.h"
#include "sim/home_layout_check.h"
#include "solver/input_error.h"
#include "solver/placement.h"
#include "topologies/topology_presets.h"
#include "topologies/topology_shape.h"

namespace topoep {

void check_model_fits_trace(const ModelSpec& model, const TraceMetadata& metadata) {
  const std::string named = quoted_with_origin(model.name, model.origin);
  const auto hint = [&] {
    return preset_hint(
        model_presets_fitting(metadata.num_experts, metadata.top_k),
        std::to_string(metadata.num_experts) + " experts and top-" + std::to_string(metadata.top_k),
        show_command("model", model.name, model.origin));
  };
  if (metadata.num_experts != model.num_experts) {
    throw InputError("model.num_experts", named + " has " + std::to_string(model.num_experts) +
                                              " experts but the trace has " +
                                              std::to_string(metadata.num_experts) + hint());
  }
  if (metadata.top_k != model.top_k) {
    throw InputError("model.top_k", named + " routes each token to " + std::to_string(model.top_k) +
                                        " experts but the trace to " +
                                        std::to_string(metadata.top_k) + hint());
  }
}

namespace {

// SimConfig::explain: none, or a record of the trace that the topoep planner plans.
void check_explain(const SimConfig& config, const TraceMetadata& metadata) {
  const RecordKey& record = config.explain;
  if (record.step < 0) return;
  if (std::find(config.planners.begin(), config.planners.end(), "topoep") ==
      config.planners.end()) {
    throw InputError("explain", "shows the topoep planner's moves: add topoep to the planners");
  }
  const int groups = routing_groups(config, metadata);
  const std::pair<int, int> parts[] = {{record.step, metadata.steps},
                                       {record.microbatch, metadata.microbatches},
                                       {record.layer, metadata.num_layers},
                                       {record.group, groups}};
  const char* names[] = {"steps", "microbatches", "layers", "data-parallel groups routed apart"};
  for (int i = 0; i < 4; ++i) {
    if (parts[i].first < 0 || parts[i].first >= parts[i].second) {
      throw InputError(
          "explain",
          "step " + std::to_string(record.step) + ", microbatch " +
              std::to_string(record.microbatch) + ", layer " + std::to_string(record.layer) +
              (i == 3 ? ", group " + std::to_string(record.group) : "") +
              (i == 3 && groups == 1
                   ? ": the trace's ranks stand for every data-parallel group, so the group is 0"
                   : ": the trace has " + std::to_string(parts[i].second) + " " + names[i] +
                         " (0 to " + std::to_string(parts[i].second - 1) + ")"));
    }
  }
}

}  // namespace

void check_sim_config(const SimConfig& config, const TraceMetadata& metadata) {
  check_sim_options(config.options);
  check_planner_options(config.planner_options);
  if (config.planners.empty()) throw InputError("planners", "name at least one planner");
  const std::vector<std::string> known = planner_names();
  bool planned = false;
  for (std::size_t i = 0; i < config.planners.size(); ++i) {
    const std::string& name = config.planners[i];
    if (std::find(config.planners.begin(), config.planners.begin() + i, name) !=
        config.planners.begin() + i) {
      throw InputError("planners", "'" + name + "' is listed twice");
    }
    if (name == "ideal") continue;
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      make_planner(name, PlannerContext{}, PlannerOptions{});  // throws, listing the names
    }
    planned = true;
  }
  if (!planned) throw InputError("planners", "'ideal' is a bound on other planners: add one");
  if (config.threads < 1) throw InputError("threads", "must be at least 1");
  const std::vector<int>& per_stage = config.options.pipeline_layers;
  const int staged = std::accumulate(per_stage.begin(), per_stage.end(), 0);
  if (!per_stage.empty() && staged != metadata.num_layers) {
    throw InputError("pipeline_layers", "place " + std::to_string(staged) +
                                            " MoE layers, but the "
                                            "trace has " +
                                            std::to_string(metadata.num_layers));
  }
  if (config.options.pipeline_stages > metadata.num_layers) {
    throw InputError("pipeline_stages",
                     "is " + std::to_string(config.options.pipeline_stages) + ", more than the " +
                         std::to_string(metadata.num_layers) +
                         " MoE layers of the trace: each stage holds at least one");
  }
  if (config.options.virtual_stages > 1) {
    const int chunks = config.options.pipeline_chunks();
    if (chunks > metadata.num_layers) {
      throw InputError("virtual_stages",
                       "makes " + std::to_string(chunks) + " chunks, more than the " +
                           std::to_string(metadata.num_layers) +
                           " MoE layers of the trace: each chunk holds at least one");
    }
    // Megatron-LM's interleaved schedule runs the microbatches in groups of pipeline_stages.
    if (metadata.microbatches % config.options.pipeline_stages != 0) {
      throw InputError("virtual_stages",
                       "needs the trace's microbatches a step (" +
                           std::to_string(metadata.microbatches) +
                           ") to be a multiple of the pipeline stages (" +
                           std::to_string(config.options.pipeline_stages) +
                           "): Megatron-LM's interleaved schedule runs them in groups of one a "
                           "stage");
    }
  }
  if (config.options.pipeline_schedule == PipelineSchedule::kDualPipeV) {
    const int stages = config.options.pipeline_stages;
    if (2 * stages > metadata.num_layers) {
      throw InputError("pipeline_schedule",
                       "dualpipev makes " + std::to_string(2 * stages) + " chunks, more than the " +
                           std::to_string(metadata.num_layers) +
                           " MoE layers of the trace: each chunk holds at least one");
    }
    // Every microbatch goes down and back up the V: DualPipeV needs at least 2P.
    if (metadata.microbatches < 2 * stages) {
      throw InputError("pipeline_schedule", "dualpipev needs at least twice the pipeline stages (" +
                                                std::to_string(2 * stages) +
                                                ") microbatches a step; the trace has " +
                                                std::to_string(metadata.microbatches));
    }
  }
  if (config.options.pipeline_schedule == PipelineSchedule::kDualPipe) {
    const int stages = config.options.pipeline_stages;
    // DeepSeek's DualPipe sends half the microbatches in from each end, at least P each.
    if (metadata.microbatches % 2 != 0 || metadata.microbatches < 2 * stages) {
      throw InputError("pipeline_schedule",
                       "dualpipe needs the trace's microbatches a step (" +
                           std::to_string(metadata.microbatches) +
                           ") to be even and at least twice the pipeline stages (" +
                           std::to_string(2 * stages) +
                           "): half of them enter at each end of the pipeline");
    }
  }
  const int gpus = config.topology.num_gpus();
  const int groups = config.options.data_parallel;
  // D x the GPUs, each group's own routing, fit as well as the GPUs (routing_groups()).
  if (metadata.num_ranks != gpus && routing_groups(config, metadata) == 1) {
    const std::vector<std::string> fitting = topology_presets_with_gpus(metadata.num_ranks);
    // Where its nodes divide the ranks, the same cluster on more or fewer nodes fits.
    const std::string reshape = fitting_nodes_hint(config.topology, metadata.num_ranks, true);
    throw InputError(
        "topology", quoted_with_origin(config.topology.name, config.topology.origin) + " has " +
                        std::to_string(gpus) + " GPUs but the trace has " +
                        std::to_string(metadata.num_ranks) + " ranks" +
                        (groups > 1 ? " (with " + std::to_string(groups) +
                                          " data-parallel groups it may also have " +
                                          std::to_string(static_cast<std::int64_t>(groups) * gpus) +
                                          ", each group's own)"
                                    : "") +
                        reshape +
                        (reshape.empty() || !fitting.empty()
                             ? preset_hint(fitting, std::to_string(metadata.num_ranks) + " GPUs",
                                           show_command("topology", config.topology.name,
                                                        config.topology.origin))
                             : ""));
  }
  check_model_fits_trace(config.model, metadata);
  require_homes_fit(config.homes, metadata.num_experts, gpus, "num_experts",
                    "the trace's " + std::to_string(metadata.num_experts) + " experts",
                    " of " + quoted_with_origin(config.topology.name, config.topology.origin));
  // A replica never sits on its expert's home: the fullest rank has room for the others.
  const int max_slots =
      metadata.num_experts -
      Placement::contiguous(metadata.num_experts, gpus, 0, config.homes).most_homed();
  if (config.slots_per_rank < 0 || config.slots_per_rank > max_slots) {
    throw InputError("slots", "must be in [0, " + std::to_string(max_slots) + "] for " +
                                  std::to_string(metadata.num_experts) + " experts on " +
                                  std::to_string(gpus) + " GPUs");
  }
  check_explain(config, metadata);
}

int routing_groups(const SimConfig& config, const TraceMetadata& metadata) {
  const int groups = config.options.data_parallel;
  const bool apart =
      groups > 1 && static_cast<std::int64_t>(metadata.num_ranks) ==
                        static_cast<std::int64_t>(groups) * config.topology.num_gpus();
  return apart ? groups : 1;
}

nlohmann::json sim_options_json(const SimOptions& options) {
  return {{"weight_overlap_fraction", options.weight_overlap_fraction},
          {"gradient_overlap_fraction", options.gradient_overlap_fraction},
          {"dense_grad_bytes", options.dense_grad_bytes},
          {"dense_sync", dense_sync_name(options.dense_sync)},
          {"data_parallel", options.data_parallel},
          {"activation_grad_bytes", options.activation_grad_bytes},
          {"optimizer_bytes_per_param", options.optimizer_bytes_per_param},
          {"optimizer_state_bytes_per_param", options.optimizer_state_bytes_per_param},
          {"dispatcher", dispatcher_name(options.dispatcher)},
          {"a2a_overlap_fraction", options.a2a_overlap_fraction},
          {"pipeline_stages", options.pipeline_stages},
          {"virtual_stages", options.virtual_stages},
          {"pipeline_schedule", pipeline_schedule_name(options.pipeline_schedule)},
          {"recompute_moe_act", options.recompute_moe_activation},
          {"recompute_layernorm", options.recompute_layernorm},
          {"recompute_mla_up_proj", options.recompute_mla_up_proj},
          {"mtp_layers", options.mtp_layers},
          {"memory_bound_kernels", options.memory_bound_kernels}};
}

}  // namespace topoep
