#pragma once
// The TopoEP solver on the GPU: the same algorithm source as the host (topoep_algorithm.h),
// one thread block per MoE layer, all layers of a microbatch in one launch, from device-resident
// counts to device-resident plans with no host synchronisation.

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "solver/topoep_solver.h"

namespace topoep {

// Device pointers for a batch of L layers that share one TopoepParams.
struct DeviceLayerBatch {
  const TokenCount* counts;  // [L][R][E]
  const RankId* home_rank;   // [E]
  const ExpertId* resident;  // [L][R][S], or nullptr for none
  void* workspace;           // L x topoep_workspace_bytes(params), 8-byte aligned
  ExpertId* replicas;        // [L][R][S]
  Route* routes;             // [L][params.shape.route_capacity()]
  std::int64_t* num_routes;  // [L]
  std::int32_t* num_moves;   // [L]
};

// Bytes of workspace per layer, rounded up to 8 so that consecutive layers stay aligned.
std::size_t device_workspace_stride(const TopoepParams& params);

// Enqueues the batched solve on `stream`. Asynchronous; returns the launch status.
// NOTE: the search is sequential, so each layer runs on one thread of its block; the plans are
// bitwise identical to the host's (same source, integer arithmetic only).
cudaError_t launch_topoep_layers(const TopoepParams& params, int num_layers,
                                 const DeviceLayerBatch& batch, cudaStream_t stream);

// Host convenience for tests and the CLI: copies `layers` to the GPU, solves them in one launch
// and copies the plans back (this one synchronises). Throws InputError for bad inputs and
// std::runtime_error naming the CUDA call that failed.
std::vector<Plan> solve_topoep_layers_cuda(const TopoepProblem& problem,
                                           const std::vector<RoutingCounts>& layers);

}  // namespace topoep
