#pragma once
// What one GPU of a pipeline stage holds in memory at its peak (sim/README.md, "Memory a GPU
// holds"): its model state, the spare slots a planner reserves, the expert activations the
// replay counts and the experts' token buffers as a layer's forward or backward runs
// (sim/expert_activations.h), the attention's and other dense activations, the loss's
// transient logits among them, and under DeepEP its fixed buffers (sim/deepep_buffers.h).
// Decimal bytes; deterministic. A floor of what a real run allocates: the all-to-alls'
// dispatch-side buffers, the framework's workspaces and the allocator's fragmentation are not
// counted.

#include <string>
#include <vector>

#include "models/model.h"
#include "sim/cost_model.h"
#include "sim/pipeline_schedule.h"
#include "sim/sim_options.h"
#include "solver/types.h"

namespace topoep {

struct StageMemory {
  Bytes model_state = 0;         // weights, gradients and optimizer state (model_state_bytes())
  Bytes spare_slots = 0;         // the replicas' weights and gradients (spare_slot_bytes())
  Bytes expert_activations = 0;  // the most one GPU holds at once over the run
  // What the MoE layers' token buffers add to that peak for a moment as a layer's forward or
  // backward runs (peak_expert_bytes() less expert_activations: sim/expert_activations.h).
  Bytes token_buffers = 0;
  Bytes dense_activations = 0;  // dense_activation_bytes(), the same under every planner
  // Under DeepEP, its fixed communication buffers (sim/deepep_buffers.h), the same under every
  // planner; 0 otherwise, or where DeepEP recommends no config for the group.
  Bytes deepep_buffers = 0;
  Bytes total() const {
    return model_state + spare_slots + expert_activations + token_buffers + dense_activations +
           deepep_buffers;
  }
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

// The loss's transient logits (ModelSpec::loss_transient_bytes_per_token()) of one microbatch
// of CostModel::tokens_per_rank() tokens, at the share of the model's end a trace of `layers`
// MoE layers carries (ModelSpec::routed_share(), as the head's activations): what a GPU running
// the loss holds besides for that moment.
Bytes loss_logits_bytes(const CostModel& cost, int layers);

// The dense activations one GPU of each of `order`'s stages holds at its peak, with
// `layers_per_chunk` MoE layers in each chunk of `order` (schedule_order() of the run's
// schedule): each microbatch's CostModel::tokens_per_rank() tokens keep, in each of a chunk's
// layers, ModelSpec::moe_layer_dense_activation_bytes_per_token(), and in the first chunk also
// its share of the dense-only layers (ModelSpec::routed_share() of the chunks' layers, as the
// stage's parameters count them) at dense_layer_activation_bytes_per_token(), and in the last
// chunk that share of the output head and loss's head_activation_bytes_per_token() (once more
// for each MTP module trained, with its mtp_activation_bytes_per_token()); held from the
// microbatch's forward through the chunk until its backward through it ends, as the expert
// activations are (peak_gpu_tokens()); as a forward through the last chunk ends, the loss's
// transient logits (ModelSpec::loss_transient_bytes_per_token(), the same share) on top for
// that moment. The norms' and MLA's up-projections' outputs are left out where SimOptions
// recomputes them.
std::vector<Bytes> dense_activation_bytes(const CostModel& cost,
                                          const std::vector<int>& layers_per_chunk,
                                          const PipelineTimes& order);

// DeepEP's fixed buffers on a GPU of `cost`'s run: deepep_buffer_bytes() for its topology's GPUs
// and its model's hidden size under the DeepEP dispatcher, where DeepEP has a config for them;
// else 0.
Bytes dispatcher_buffer_bytes(const CostModel& cost);

// What one GPU of each stage holds whatever the routing, under `layers_per_chunk` over `stages`
// stages (CostModel::pipeline_parameters()) run in `order` (as dense_activation_bytes()): its
// model state, `slots` spare slots, its dense activations and DeepEP's fixed buffers
// (dispatcher_buffer_bytes()); no expert activations or token buffers.
std::vector<StageMemory> resident_stage_memory(const CostModel& cost,
                                               const std::vector<int>& layers_per_chunk, int stages,
                                               int slots, const PipelineTimes& order);

// Whether planner `name` places replicas in the spare slots: every planner but "static" (which
// makes none) and "ideal" (not a plan).
bool planner_reserves_slots(const std::string& name);

}  // namespace topoep
