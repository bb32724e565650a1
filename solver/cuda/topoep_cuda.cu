#include <stdexcept>
#include <string>

#include "solver/cuda/device_array.h"
#include "solver/cuda/topoep_cuda.h"
#include "solver/topoep_algorithm.h"

namespace topoep {
namespace {

// Threads per layer's block: they split the pass over the counts and the writing of the routes
// (one source row each at R = 128); the search runs on one of them.
constexpr int kThreadsPerLayer = 128;

__global__ void solve_layers_kernel(TopoepParams params, DeviceLayerBatch batch,
                                    std::size_t workspace_stride) {
  const std::int64_t layer = blockIdx.x;
  const TopoepShape& shape = params.shape;
  const std::int64_t matrix = static_cast<std::int64_t>(shape.num_ranks) * shape.num_experts;
  TopoepWorkspace workspace;
  bind_topoep_workspace(params, static_cast<char*>(batch.workspace) + layer * workspace_stride,
                        &workspace);
  const TopoepLayerInput input{
      batch.counts + layer * matrix, batch.home_rank,
      batch.resident == nullptr ? nullptr : batch.resident + layer * shape.num_slots(),
      batch.owed_holders == nullptr ? nullptr : batch.owed_holders + layer * matrix,
      batch.replica_uses};
  const TopoepLayerOutput output{
      batch.replicas + layer * shape.num_slots(),
      batch.routes + layer * shape.route_capacity(),
      batch.num_routes + layer,
      batch.num_moves + layer,
      nullptr,
      batch.phase_cycles == nullptr ? nullptr : batch.phase_cycles + layer * kSolvePhases};
  topoep_solve_layer(params, input, workspace, output, BlockThreads{});
}

// Marks used[layer][expert][rank] for every replica of the layer's plan (a block per layer).
__global__ void note_used_kernel(TopoepShape shape, const ExpertId* replicas, std::uint8_t* used) {
  const std::int64_t layer = blockIdx.x;
  const std::int64_t slots = shape.num_slots();
  const ExpertId* const plan = replicas + layer * slots;
  std::uint8_t* const mask = used + layer * shape.num_experts * shape.num_ranks;
  for (std::int64_t j = threadIdx.x; j < slots; j += blockDim.x) {
    const ExpertId expert = plan[j];
    if (expert != kNoExpert) {
      mask[static_cast<std::int64_t>(expert) * shape.num_ranks + j / shape.slots_per_rank] = 1;
    }
  }
}

}  // namespace

std::size_t device_workspace_stride(const TopoepParams& params) {
  return (topoep_workspace_bytes(params) + 7) / 8 * 8;
}

cudaError_t launch_topoep_layers(const TopoepParams& params, int num_layers,
                                 const DeviceLayerBatch& batch, cudaStream_t stream) {
  if (num_layers <= 0) return cudaSuccess;
  solve_layers_kernel<<<num_layers, kThreadsPerLayer, 0, stream>>>(params, batch,
                                                                   device_workspace_stride(params));
  return cudaGetLastError();
}

DeviceLayerBuffers::DeviceLayerBuffers(const TopoepParams& params,
                                       const std::vector<RankId>& home_rank, int num_layers)
    : params_(params), num_layers_(num_layers) {
  const TopoepShape& shape = params.shape;
  const std::size_t L = static_cast<std::size_t>(num_layers);
  const std::size_t slots = static_cast<std::size_t>(shape.num_slots());
  counts_ = DeviceArray<TokenCount>(L * shape.num_ranks * shape.num_experts);
  home_ = DeviceArray<RankId>(home_rank.size());
  resident_ = DeviceArray<ExpertId>(L * slots);
  replicas_ = DeviceArray<ExpertId>(L * slots);
  used_ = DeviceArray<std::uint8_t>(L * shape.num_experts * shape.num_ranks);
  workspace_ = DeviceArray<std::uint64_t>(L * device_workspace_stride(params) / 8);
  routes_ = DeviceArray<Route>(L * static_cast<std::size_t>(shape.route_capacity()));
  num_routes_ = DeviceArray<std::int64_t>(L);
  num_moves_ = DeviceArray<std::int32_t>(L);
  check_cuda(cudaMemcpy(home_.get(), home_rank.data(), sizeof(RankId) * home_rank.size(),
                        cudaMemcpyHostToDevice),
             "cudaMemcpy home_rank");
}

void DeviceLayerBuffers::upload_counts(const std::vector<TokenCount>& counts, cudaStream_t stream) {
  check_cuda(cudaMemcpyAsync(counts_.get(), counts.data(), sizeof(TokenCount) * counts.size(),
                             cudaMemcpyHostToDevice, stream),
             "cudaMemcpyAsync counts");
}

DeviceLayerBatch DeviceLayerBuffers::batch(bool resident, bool owed) const {
  DeviceLayerBatch batch{counts_.get(),     home_.get(),     resident ? resident_.get() : nullptr,
                         workspace_.get(),  replicas_.get(), routes_.get(),
                         num_routes_.get(), num_moves_.get()};
  batch.owed_holders = owed ? used_.get() : nullptr;
  return batch;
}

void DeviceLayerBuffers::start_step(cudaStream_t stream) {
  check_cuda(cudaMemsetAsync(used_.get(), 0, used_.size(), stream), "cudaMemsetAsync used");
}

void DeviceLayerBuffers::note_used(cudaStream_t stream) {
  note_used_kernel<<<num_layers_, kThreadsPerLayer, 0, stream>>>(params_.shape, replicas_.get(),
                                                                 used_.get());
  check_cuda(cudaGetLastError(), "note_used_kernel");
}

void DeviceLayerBuffers::keep_replicas_resident(cudaStream_t stream) {
  check_cuda(cudaMemcpyAsync(resident_.get(), replicas_.get(), sizeof(ExpertId) * replicas_.size(),
                             cudaMemcpyDeviceToDevice, stream),
             "cudaMemcpyAsync resident");
}

std::vector<std::uint8_t> DeviceLayerBuffers::download_owed(cudaStream_t stream) const {
  std::vector<std::uint8_t> owed(used_.size());
  check_cuda(cudaMemcpyAsync(owed.data(), used_.get(), owed.size(), cudaMemcpyDeviceToHost, stream),
             "cudaMemcpyAsync owed");
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  return owed;
}

std::vector<Plan> DeviceLayerBuffers::download(cudaStream_t stream) const {
  const TopoepShape& shape = params_.shape;
  const std::size_t L = static_cast<std::size_t>(num_layers_);
  const std::size_t slots = static_cast<std::size_t>(shape.num_slots());
  const std::size_t capacity = static_cast<std::size_t>(shape.route_capacity());
  std::vector<ExpertId> replicas(L * slots);
  std::vector<std::int64_t> num_routes(L);
  check_cuda(cudaMemcpyAsync(replicas.data(), replicas_.get(), sizeof(ExpertId) * replicas.size(),
                             cudaMemcpyDeviceToHost, stream),
             "cudaMemcpyAsync replicas");
  check_cuda(cudaMemcpyAsync(num_routes.data(), num_routes_.get(), sizeof(std::int64_t) * L,
                             cudaMemcpyDeviceToHost, stream),
             "cudaMemcpyAsync num_routes");
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  std::vector<Plan> plans(L);
  for (std::size_t l = 0; l < L; ++l) {
    Plan& plan = plans[l];
    plan.num_ranks = shape.num_ranks;
    plan.num_experts = shape.num_experts;
    plan.slots_per_rank = shape.slots_per_rank;
    plan.replica_expert.assign(replicas.begin() + l * slots, replicas.begin() + (l + 1) * slots);
    plan.routes.resize(static_cast<std::size_t>(num_routes[l]));
    check_cuda(cudaMemcpyAsync(plan.routes.data(), routes_.get() + l * capacity,
                               sizeof(Route) * plan.routes.size(), cudaMemcpyDeviceToHost, stream),
               "cudaMemcpyAsync routes");
  }
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  return plans;
}

std::vector<Plan> solve_topoep_layers_cuda(const TopoepProblem& problem,
                                           const std::vector<RoutingCounts>& layers) {
  for (const RoutingCounts& counts : layers) check_topoep_inputs(problem, counts, {});
  const TopoepParams params = topoep_params_for(problem);
  const std::size_t matrix =
      static_cast<std::size_t>(params.shape.num_ranks) * params.shape.num_experts;
  std::vector<TokenCount> counts(layers.size() * matrix);
  for (std::size_t l = 0; l < layers.size(); ++l) {
    std::copy(layers[l].values().begin(), layers[l].values().end(), counts.begin() + l * matrix);
  }
  DeviceLayerBuffers buffers(params, problem.placement.home_rank, static_cast<int>(layers.size()));
  buffers.upload_counts(counts, nullptr);
  check_cuda(
      launch_topoep_layers(params, static_cast<int>(layers.size()), buffers.batch(false), nullptr),
      "solve_layers_kernel");
  return buffers.download(nullptr);
}

}  // namespace topoep
