#pragma once
// TopoEP planned on this rank's GPU for the harness's cuda mode: the counts go to the device
// (in training they are already there: the gate produced them), one launch of the CUDA solver
// (solver/cuda) plans the layer, and the plan comes back to the host, because the host sizes
// the NCCL transfers: that copy is the one host synchronisation left on the critical path, and
// it is timed separately. The device plan hash is checked against the host's on every record.
//
// Built only with --config=cuda; not yet run on a GPU.

#include <memory>

#include "solver/planners/planner.h"

namespace topoep {

// What the last plan() cost, µs: the solve by CUDA events, and the device-to-host copy of the
// plan (with its synchronisation) by the host clock.
struct DeviceSolveTimes {
  double solve_us = 0;
  double plan_copy_us = 0;
};

class DeviceTopoepPlanner : public Planner {
 public:
  virtual DeviceSolveTimes last_times() const = 0;
};

// One planner per MoE layer (replicas of the step's earlier microbatches stay resident, as in
// the host TopoepPlanner). Throws std::runtime_error naming a failing CUDA call.
std::unique_ptr<DeviceTopoepPlanner> make_device_topoep_planner(const PlannerContext& context);

}  // namespace topoep
