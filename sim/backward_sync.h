#pragma once
// The step-end gradient syncs of one planner, as Megatron-LM's overlapped gradient reduce runs
// them (sim/README.md, "The gradient syncs' overlap"): each layer's syncs start once its
// gradients are complete in the step's last microbatch's backward, run on their own stream
// while the links are otherwise idle (the layers' expert compute and attention backward, the
// all-to-alls keep the links to themselves), and the optimizer waits for what is still
// running when the backward pass ends.
//
// One stream, first ready first served. Layer l's replica gradients (to their homes) and then
// its experts' sync between data-parallel groups are ready when its MoE backward ends; its dense
// gradients' sync when its attention backward ends. The syncs of the last layer the backward
// reaches (layer 0) have only its share outside the MoE layers left to hide in, as Megatron-LM's
// last gradient bucket. Deterministic integers.

#include <vector>

#include "solver/cost_params.h"

namespace topoep {

// One MoE layer of the last microbatch, its times in picoseconds.
struct LayerSyncWork {
  // Link-idle time the syncs may use: the expert backward compute (between the two
  // activation-gradient all-to-alls) and the attention backward after the MoE backward, each
  // already scaled by SimOptions::gradient_overlap_fraction.
  Picoseconds expert_compute_idle = 0;
  Picoseconds attention_idle = 0;
  // The layer's share of the backward outside the MoE layers (dense-only layers, output head),
  // after its dense gradients are ready: link-idle compute too, scaled the same.
  Picoseconds outside_idle = 0;
  // The syncs' own times.
  Picoseconds replica_reduction = 0;  // the replica gradients into their homes
  Picoseconds expert_sync = 0;        // the home experts' between data-parallel groups
  Picoseconds dense_sync = 0;         // the dense gradients'
  // How long the layer's backward phases run, in order: the combine's gradient all-to-all, the
  // expert backward compute (expert_compute_idle of it is link-idle), the dispatch's gradient
  // all-to-all, the attention backward (attention_idle of it) and the share outside the MoE
  // layers (outside_idle of it). Only groups routed apart need them: there a sync between the
  // groups waits, in time, for the last group to reach it.
  Picoseconds combine_grad = 0;
  Picoseconds compute_grad = 0;
  Picoseconds dispatch_grad = 0;
  Picoseconds attention = 0;
  Picoseconds outside = 0;
};

// What of each sync is still running when the backward pass ends: on the critical path.
struct LayerSyncExposed {
  Picoseconds replica_reduction = 0;
  Picoseconds expert_sync = 0;
  Picoseconds dense_sync = 0;
};

// `layers` in forward order (the backward runs them last to first); the result likewise. The
// exposed times sum to the backward's sync tail.
std::vector<LayerSyncExposed> expose_backward_syncs(const std::vector<LayerSyncWork>& layers);

// One data-parallel group's last-microbatch backward: when it starts (picoseconds from the
// step's start, on that group's own critical path) and its layers in forward order.
struct GroupBackward {
  Picoseconds start = 0;
  std::vector<LayerSyncWork> layers;
};

// Groups that route apart (sim/replay.h, routing_groups()), all with the same layers: each
// group's stream runs as expose_backward_syncs() runs one, except that the syncs between the
// groups (the experts' and the dense gradients') are collectives: each starts on every group's
// stream only when the last group's stream reaches it (in time: the group whose gradients are
// complete last, or whose stream is still busy with its own replicas' gradients), the others'
// streams waiting for it meanwhile. A group's replica gradients stay within it. The result is
// [group][layer]; a group's exposed times sum to how long its stream runs past its backward,
// the waiting included (charged to the sync waited for). One group: expose_backward_syncs().
std::vector<std::vector<LayerSyncExposed>> expose_group_backward_syncs(
    const std::vector<GroupBackward>& groups);

}  // namespace topoep
