#pragma once
// What one GPU of a pipeline stage holds in memory at its peak (sim/README.md, "Memory a GPU
// holds"): its model state, the spare slots a planner reserves, and the expert activations the
// replay counts (sim/expert_activations.h). Decimal bytes; deterministic. A floor of what a
// real run allocates: attention and other dense activations, the all-to-alls' and the token
// permutation's buffers, the framework's workspaces and the allocator's fragmentation are not
// counted (they are alike under every planner).

#include <string>
#include <vector>

#include "models/model.h"
#include "sim/cost_model.h"
#include "sim/sim_options.h"
#include "solver/types.h"

namespace topoep {

struct StageMemory {
  Bytes model_state = 0;         // weights, gradients and optimizer state (model_state_bytes())
  Bytes spare_slots = 0;         // the replicas' weights and gradients (spare_slot_bytes())
  Bytes expert_activations = 0;  // the most one GPU holds at once over the run
  Bytes total() const { return model_state + spare_slots + expert_activations; }
};

// The most expert activations of any of `stages`.
Bytes most_expert_activations(const std::vector<StageMemory>& stages);

// Bytes one GPU keeps for `parameters` (CostModel::pipeline_parameters()): every parameter it
// holds as a weight (ModelSpec::weight_bytes) and a gradient (SimOptions::dense_grad_bytes, the
// width Megatron-LM's gradient buffer accumulates and reduces in; the weights' where 0), and
// the optimizer state of those it owns (SimOptions::optimizer_state_bytes_per_param).
Bytes model_state_bytes(const StageParameters& parameters, const ModelSpec& model,
                        const SimOptions& options);

// Bytes `slots` spare slots take on one GPU over `layers` MoE layers: each slot one expert's
// weights and a gradient buffer of the same width (the replicas' gradients reduce into their
// homes at it: sim/solver_cost.h). Reserved whether or not a plan fills them: the GPU solver
// writes into fixed slots, and EPLB's layouts place a fixed count of physical experts.
Bytes spare_slot_bytes(const ModelSpec& model, int slots, int layers);

// What one GPU of each stage holds whatever the routing, under `layers_per_chunk` over `stages`
// stages (CostModel::pipeline_parameters()): its model state and `slots` spare slots, no expert
// activations.
std::vector<StageMemory> resident_stage_memory(const CostModel& cost,
                                               const std::vector<int>& layers_per_chunk, int stages,
                                               int slots);

// Whether planner `name` places replicas in the spare slots: every planner but "static" (which
// makes none) and "ideal" (not a plan).
bool planner_reserves_slots(const std::string& name);

}  // namespace topoep
