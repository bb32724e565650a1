#include "sim/gpu_memory.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "sim/deepep_buffers.h"

namespace topoep {

Bytes most_expert_activations(const std::vector<StageMemory>& stages) {
  Bytes most = 0;
  for (const StageMemory& stage : stages) most = std::max(most, stage.expert_activations);
  return most;
}

Bytes model_state_bytes(const StageParameters& parameters, const ModelSpec& model,
                        const SimOptions& options) {
  const int gradient_bytes =
      options.dense_grad_bytes > 0 ? options.dense_grad_bytes : model.weight_bytes;
  return std::llround(parameters.held * (model.weight_bytes + gradient_bytes) +
                      parameters.owned * options.optimizer_state_bytes_per_param);
}

Bytes spare_slot_bytes(const ModelSpec& model, int slots, int layers) {
  return std::llround(model.expert_params() * model.weight_bytes * 2.0) * slots * layers;
}

Bytes loss_logits_bytes(const CostModel& cost, int layers) {
  const ModelSpec& model = cost.model();
  return std::llround(model.routed_share(layers, cost.options().mtp_layers) *
                      static_cast<double>(cost.tokens_per_rank()) *
                      static_cast<double>(model.loss_transient_bytes_per_token()));
}

std::vector<Bytes> dense_activation_bytes(const CostModel& cost,
                                          const std::vector<int>& layers_per_chunk,
                                          const PipelineTimes& order) {
  const ModelSpec& model = cost.model();
  const SimOptions& options = cost.options();
  const bool norms = options.recompute_layernorm, up = options.recompute_mla_up_proj;
  const double tokens = static_cast<double>(cost.tokens_per_rank());
  const Bytes per_layer = std::llround(
      tokens * static_cast<double>(model.moe_layer_dense_activation_bytes_per_token(norms, up)));
  const int all = std::accumulate(layers_per_chunk.begin(), layers_per_chunk.end(), 0);
  const int mtp = options.mtp_layers;
  const double dense_only_layers = model.dense_layers_per_moe_layer(mtp) * all;
  const Bytes dense_only =
      std::llround(dense_only_layers * tokens *
                   static_cast<double>(model.dense_layer_activation_bytes_per_token(norms, up)));
  // The model's end, as the stage's parameters count it: the chunks' routed_share() of the
  // head's passes (the model's and each MTP module's) and of the modules' own, so that a trace
  // of some of the layers keeps the model's proportions.
  const std::int64_t end_per_token = (1 + mtp) * model.head_activation_bytes_per_token(norms) +
                                     mtp * model.mtp_activation_bytes_per_token(norms);
  const Bytes head =
      std::llround(model.routed_share(all, mtp) * tokens * static_cast<double>(end_per_token));
  const Bytes loss = loss_logits_bytes(cost, all);
  const int last = static_cast<int>(layers_per_chunk.size()) - 1;
  return peak_gpu_tokens(
      order,
      [&](int chunk, int) {
        const Bytes layers = layers_per_chunk.at(static_cast<std::size_t>(chunk)) * per_layer;
        return std::vector<TokenCount>{layers + (chunk == 0 ? dense_only : 0) +
                                       (chunk == last ? head : 0)};
      },
      [&](int chunk) { return chunk == last ? loss : 0; });
}

std::vector<StageMemory> resident_stage_memory(const CostModel& cost,
                                               const std::vector<int>& layers_per_chunk, int stages,
                                               int slots, const PipelineTimes& order) {
  const std::vector<Bytes> dense = dense_activation_bytes(cost, layers_per_chunk, order);
  const Bytes buffers = dispatcher_buffer_bytes(cost);
  std::vector<StageMemory> memory;
  for (const StageParameters& stage : cost.pipeline_parameters(layers_per_chunk, stages)) {
    const Bytes activations = dense.at(memory.size());
    StageMemory held;
    held.model_state = model_state_bytes(stage, cost.model(), cost.options());
    held.spare_slots = spare_slot_bytes(cost.model(), slots, stage.layers);
    held.dense_activations = activations;
    held.deepep_buffers = buffers;
    memory.push_back(held);
  }
  return memory;
}

Bytes dispatcher_buffer_bytes(const CostModel& cost) {
  if (cost.options().dispatcher != Dispatcher::kDeepEP) return 0;
  return deepep_buffer_bytes(cost.topology().num_gpus(), cost.model().hidden_size).value_or(0);
}

bool planner_reserves_slots(const std::string& name) { return name != "static" && name != "ideal"; }

}  // namespace topoep
