#pragma once
// The TopoEP solver on the GPU: the same algorithm source as the host (topoep_algorithm.h),
// one thread block per MoE layer (block_threads.h), all layers of a microbatch in one launch,
// from device-resident counts to device-resident plans with no host synchronisation.

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "solver/cuda/device_array.h"
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
  // [L][kSolvePhases]: each layer's clock cycles by phase (TopoepLayerOutput), or nullptr
  std::int64_t* phase_cycles = nullptr;
  // [L][E][R]: each layer's owed holders (phase_times.h), or nullptr for none
  const std::uint8_t* owed_holders = nullptr;
  std::int32_t replica_uses = 1;  // TopoepLayerInput::replica_uses, the same for every layer
};

// Bytes of workspace per layer, rounded up to 8 so that consecutive layers stay aligned.
std::size_t device_workspace_stride(const TopoepParams& params);

// Enqueues the batched solve on `stream`. Asynchronous; returns the launch status.
// Each layer's block splits the pass over the counts and the writing of the routes among its
// threads; the search is sequential and runs on one of them. The plans are bitwise identical to
// the host's (same source, integer arithmetic only; block_threads.h).
cudaError_t launch_topoep_layers(const TopoepParams& params, int num_layers,
                                 const DeviceLayerBatch& batch, cudaStream_t stream);

// The device memory of a batch of L layers that share one TopoepParams: counts, home ranks,
// resident replicas, workspace and the plans' arrays. Shared by the host convenience below,
// the harness's device planner and the GPU microbenchmark.
class DeviceLayerBuffers {
 public:
  // Allocates for `num_layers` layers and copies `home_rank` ([E]) to the device.
  DeviceLayerBuffers(const TopoepParams& params, const std::vector<RankId>& home_rank,
                     int num_layers);
  // Enqueues the host-to-device copy of the counts ([L][R][E], row-major) on `stream`.
  void upload_counts(const std::vector<TokenCount>& counts, cudaStream_t stream);
  // The launch's pointers; `resident` makes the resident buffer ([L][R][S]) the input's, and
  // `owed` the step's owed holders note_used() marked ([L][E][R]).
  DeviceLayerBatch batch(bool resident, bool owed = false) const;
  // Enqueues, on `stream`, the copy of the plans' replicas into the resident buffer: the next
  // launch keeps them.
  void keep_replicas_resident(cudaStream_t stream);
  // The step's replicas, for its gradient reduction (solver/gradient_chains.h), all on the
  // device: start_step() forgets them, note_used() adds the plans' replicas to the owed holders
  // batch(_, true) hands the next launch. Enqueued on `stream`.
  void start_step(cudaStream_t stream);
  void note_used(cudaStream_t stream);
  // Synchronises `stream`, then copies the owed holders back ([L][E][R]; for tests).
  std::vector<std::uint8_t> download_owed(cudaStream_t stream) const;
  // Synchronises `stream`, then copies the plans back (route counts first: they size the rest).
  std::vector<Plan> download(cudaStream_t stream) const;

 private:
  TopoepParams params_;
  int num_layers_;
  DeviceArray<TokenCount> counts_;
  DeviceArray<RankId> home_;
  DeviceArray<ExpertId> resident_, replicas_;
  DeviceArray<std::uint8_t> used_;  // [L][E][R]: 1 where a plan of the step put a replica
  DeviceArray<std::uint64_t> workspace_;
  DeviceArray<Route> routes_;
  DeviceArray<std::int64_t> num_routes_;
  DeviceArray<std::int32_t> num_moves_;
};

// Host convenience for tests and the CLI: copies `layers` to the GPU, solves them in one launch
// and copies the plans back (this one synchronises). Throws InputError for bad inputs and
// std::runtime_error naming the CUDA call that failed.
std::vector<Plan> solve_topoep_layers_cuda(const TopoepProblem& problem,
                                           const std::vector<RoutingCounts>& layers);

}  // namespace topoep
