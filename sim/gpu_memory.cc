#include "sim/gpu_memory.h"

#include <algorithm>
#include <cmath>

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

std::vector<StageMemory> resident_stage_memory(const CostModel& cost,
                                               const std::vector<int>& layers_per_chunk, int stages,
                                               int slots) {
  std::vector<StageMemory> memory;
  for (const StageParameters& stage : cost.pipeline_parameters(layers_per_chunk, stages)) {
    memory.push_back({model_state_bytes(stage, cost.model(), cost.options()),
                      spare_slot_bytes(cost.model(), slots, stage.layers), 0});
  }
  return memory;
}

bool planner_reserves_slots(const std::string& name) { return name != "static" && name != "ideal"; }

}  // namespace topoep
