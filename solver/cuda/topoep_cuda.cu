#include <stdexcept>
#include <string>

#include "solver/cuda/topoep_cuda.h"
#include "solver/topoep_algorithm.h"

namespace topoep {
namespace {

__global__ void solve_layers_kernel(TopoepParams params, DeviceLayerBatch batch,
                                    std::size_t workspace_stride) {
  if (threadIdx.x != 0) return;
  const std::int64_t layer = blockIdx.x;
  const TopoepShape& shape = params.shape;
  const std::int64_t matrix = static_cast<std::int64_t>(shape.num_ranks) * shape.num_experts;
  TopoepWorkspace workspace;
  bind_topoep_workspace(params, static_cast<char*>(batch.workspace) + layer * workspace_stride,
                        &workspace);
  const TopoepLayerInput input{
      batch.counts + layer * matrix, batch.home_rank,
      batch.resident == nullptr ? nullptr : batch.resident + layer * shape.num_slots()};
  const TopoepLayerOutput output{batch.replicas + layer * shape.num_slots(),
                                 batch.routes + layer * shape.route_capacity(),
                                 batch.num_routes + layer, batch.num_moves + layer, nullptr};
  topoep_solve_layer(params, input, workspace, output);
}

void check(cudaError_t status, const char* call) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string(call) + " failed: " + cudaGetErrorString(status));
  }
}

// Owns one device allocation.
template <class T>
class DeviceArray {
 public:
  explicit DeviceArray(std::size_t count) {
    check(cudaMalloc(&data_, sizeof(T) * (count > 0 ? count : 1)), "cudaMalloc");
  }
  ~DeviceArray() { cudaFree(data_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  T* get() const { return data_; }

 private:
  T* data_ = nullptr;
};

}  // namespace

std::size_t device_workspace_stride(const TopoepParams& params) {
  return (topoep_workspace_bytes(params) + 7) / 8 * 8;
}

cudaError_t launch_topoep_layers(const TopoepParams& params, int num_layers,
                                 const DeviceLayerBatch& batch, cudaStream_t stream) {
  if (num_layers <= 0) return cudaSuccess;
  solve_layers_kernel<<<num_layers, 32, 0, stream>>>(params, batch,
                                                     device_workspace_stride(params));
  return cudaGetLastError();
}

std::vector<Plan> solve_topoep_layers_cuda(const TopoepProblem& problem,
                                           const std::vector<RoutingCounts>& layers) {
  for (const RoutingCounts& counts : layers) check_topoep_inputs(problem, counts, {});
  const TopoepParams params = topoep_params_for(problem);
  const TopoepShape& shape = params.shape;
  const std::size_t L = layers.size();
  const std::size_t matrix = static_cast<std::size_t>(shape.num_ranks) * shape.num_experts;
  std::vector<TokenCount> counts(L * matrix);
  for (std::size_t l = 0; l < L; ++l) {
    std::copy(layers[l].values().begin(), layers[l].values().end(), counts.begin() + l * matrix);
  }
  const std::size_t slots = static_cast<std::size_t>(shape.num_slots());
  const std::size_t capacity = static_cast<std::size_t>(shape.route_capacity());
  DeviceArray<TokenCount> d_counts(counts.size());
  DeviceArray<RankId> d_home(problem.placement.home_rank.size());
  DeviceArray<std::uint64_t> d_workspace(L * device_workspace_stride(params) / 8);
  DeviceArray<ExpertId> d_replicas(L * slots);
  DeviceArray<Route> d_routes(L * capacity);
  DeviceArray<std::int64_t> d_num_routes(L);
  DeviceArray<std::int32_t> d_num_moves(L);
  check(cudaMemcpy(d_counts.get(), counts.data(), sizeof(TokenCount) * counts.size(),
                   cudaMemcpyHostToDevice),
        "cudaMemcpy counts");
  check(cudaMemcpy(d_home.get(), problem.placement.home_rank.data(),
                   sizeof(RankId) * problem.placement.home_rank.size(), cudaMemcpyHostToDevice),
        "cudaMemcpy home_rank");
  const DeviceLayerBatch batch{d_counts.get(),     d_home.get(),     nullptr,
                               d_workspace.get(),  d_replicas.get(), d_routes.get(),
                               d_num_routes.get(), d_num_moves.get()};
  check(launch_topoep_layers(params, static_cast<int>(L), batch, nullptr), "solve_layers_kernel");
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");

  std::vector<ExpertId> replicas(L * slots);
  std::vector<std::int64_t> num_routes(L);
  check(cudaMemcpy(replicas.data(), d_replicas.get(), sizeof(ExpertId) * replicas.size(),
                   cudaMemcpyDeviceToHost),
        "cudaMemcpy replicas");
  check(cudaMemcpy(num_routes.data(), d_num_routes.get(), sizeof(std::int64_t) * L,
                   cudaMemcpyDeviceToHost),
        "cudaMemcpy num_routes");
  std::vector<Plan> plans(L);
  for (std::size_t l = 0; l < L; ++l) {
    Plan& plan = plans[l];
    plan.num_ranks = shape.num_ranks;
    plan.num_experts = shape.num_experts;
    plan.slots_per_rank = shape.slots_per_rank;
    plan.replica_expert.assign(replicas.begin() + l * slots, replicas.begin() + (l + 1) * slots);
    plan.routes.resize(static_cast<std::size_t>(num_routes[l]));
    check(cudaMemcpy(plan.routes.data(), d_routes.get() + l * capacity,
                     sizeof(Route) * plan.routes.size(), cudaMemcpyDeviceToHost),
          "cudaMemcpy routes");
  }
  return plans;
}

}  // namespace topoep
