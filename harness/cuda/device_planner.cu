#include <cuda_runtime.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/cuda/device_planner.h"
#include "solver/cuda/device_plan_hash.h"
#include "solver/cuda/topoep_cuda.h"
#include "solver/plan_encoding.h"

namespace topoep {
namespace {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
  }
}

template <typename T>
T* device_alloc(std::size_t count) {
  void* p = nullptr;
  check(cudaMalloc(&p, sizeof(T) * (count > 0 ? count : 1)), "cudaMalloc");
  return static_cast<T*>(p);
}

class DevicePlanner : public DeviceTopoepPlanner {
 public:
  explicit DevicePlanner(const PlannerContext& context) : context_(context) {
    problem_ = TopoepProblem{context.topology, context.placement, context.cost, 0};
    params_ = topoep_params_for(problem_);
    const TopoepShape& s = params_.shape;
    check(cudaStreamCreate(&stream_), "cudaStreamCreate");
    check(cudaEventCreate(&start_), "cudaEventCreate");
    check(cudaEventCreate(&stop_), "cudaEventCreate");
    counts_ = device_alloc<TokenCount>(static_cast<std::size_t>(s.num_ranks) * s.num_experts);
    home_ = device_alloc<RankId>(context.placement.home_rank.size());
    resident_ = device_alloc<ExpertId>(s.num_slots());
    workspace_ = device_alloc<std::uint64_t>(device_workspace_stride(params_) / 8);
    replicas_ = device_alloc<ExpertId>(s.num_slots());
    routes_ = device_alloc<Route>(s.route_capacity());
    num_routes_ = device_alloc<std::int64_t>(1);
    moves_ = device_alloc<std::int32_t>(1);
    hash_ = device_alloc<std::uint64_t>(2);
    check(cudaMemcpy(home_, context.placement.home_rank.data(),
                     context.placement.home_rank.size() * sizeof(RankId), cudaMemcpyHostToDevice),
          "cudaMemcpy home ranks");
  }

  ~DevicePlanner() override {
    for (void* p :
         {static_cast<void*>(counts_), static_cast<void*>(home_), static_cast<void*>(resident_),
          static_cast<void*>(workspace_), static_cast<void*>(replicas_),
          static_cast<void*>(routes_), static_cast<void*>(num_routes_), static_cast<void*>(moves_),
          static_cast<void*>(hash_)}) {
      cudaFree(p);
    }
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
    cudaStreamDestroy(stream_);
  }

  std::string name() const override { return "topoep"; }
  DeviceSolveTimes last_times() const override { return times_; }

  PlannerDecision plan(const RecordId& record, const RoutingCounts& counts) override {
    check_topoep_inputs(problem_, counts, {});
    const TopoepShape& s = params_.shape;
    const bool keep = record.step == step_;  // a new step starts from the home layout
    step_ = record.step;
    // Untimed: in training the gate leaves the counts on the device.
    check(cudaMemcpyAsync(counts_, counts.values().data(),
                          counts.values().size() * sizeof(TokenCount), cudaMemcpyHostToDevice,
                          stream_),
          "cudaMemcpyAsync counts");
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    const DeviceLayerBatch batch{counts_,     home_,     keep ? resident_ : nullptr,
                                 workspace_,  replicas_, routes_,
                                 num_routes_, moves_};
    check(cudaEventRecord(start_, stream_), "cudaEventRecord");
    check(launch_topoep_layers(params_, 1, batch, stream_), "launch_topoep_layers");
    check(cudaEventRecord(stop_, stream_), "cudaEventRecord");
    // The plan comes back: the route count first (it sizes the rest), then the arrays.
    const auto copy_start = std::chrono::steady_clock::now();
    std::int64_t num_routes = 0;
    check(cudaMemcpyAsync(&num_routes, num_routes_, sizeof num_routes, cudaMemcpyDeviceToHost,
                          stream_),
          "cudaMemcpyAsync route count");
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    PlannerDecision decision;
    decision.placement = context_.placement;
    Plan& plan = decision.plan;
    plan.num_ranks = s.num_ranks;
    plan.num_experts = s.num_experts;
    plan.slots_per_rank = s.slots_per_rank;
    plan.replica_expert.resize(s.num_slots());
    plan.routes.resize(num_routes);
    check(cudaMemcpyAsync(plan.replica_expert.data(), replicas_, s.num_slots() * sizeof(ExpertId),
                          cudaMemcpyDeviceToHost, stream_),
          "cudaMemcpyAsync replicas");
    check(cudaMemcpyAsync(plan.routes.data(), routes_, num_routes * sizeof(Route),
                          cudaMemcpyDeviceToHost, stream_),
          "cudaMemcpyAsync routes");
    const PlanView view{s.num_ranks, s.num_experts, s.slots_per_rank,
                        replicas_,   num_routes,    routes_};
    check(launch_plan_hash(view, hash_, hash_ + 1, stream_), "launch_plan_hash");
    std::uint64_t device_hash = 0;
    check(cudaMemcpyAsync(&device_hash, hash_, sizeof device_hash, cudaMemcpyDeviceToHost, stream_),
          "cudaMemcpyAsync hash");
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    times_.plan_copy_us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - copy_start)
            .count();
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
    times_.solve_us = ms * 1000.0;
    if (device_hash != plan_hash(plan)) {
      throw std::runtime_error("the device plan hash " + format_plan_hash(device_hash) +
                               " differs from the host's over the copied plan " +
                               format_plan_hash(plan_hash(plan)));
    }
    // These replicas stay resident for the step's next microbatch of this layer.
    check(cudaMemcpyAsync(resident_, replicas_, s.num_slots() * sizeof(ExpertId),
                          cudaMemcpyDeviceToDevice, stream_),
          "cudaMemcpyAsync resident");
    decision.resident = keep ? resident_host_ : std::vector<ExpertId>{};
    resident_host_ = plan.replica_expert;
    decision.overhead.host_ps = static_cast<Picoseconds>(times_.solve_us * 1e6);
    return decision;
  }

 private:
  PlannerContext context_;
  TopoepProblem problem_;
  TopoepParams params_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  TokenCount* counts_ = nullptr;
  RankId* home_ = nullptr;
  ExpertId *resident_ = nullptr, *replicas_ = nullptr;
  std::uint64_t* workspace_ = nullptr;
  Route* routes_ = nullptr;
  std::int64_t* num_routes_ = nullptr;
  std::int32_t* moves_ = nullptr;
  std::uint64_t* hash_ = nullptr;
  int step_ = -1;
  std::vector<ExpertId> resident_host_;
  DeviceSolveTimes times_;
};

}  // namespace

std::unique_ptr<DeviceTopoepPlanner> make_device_topoep_planner(const PlannerContext& context) {
  return std::make_unique<DevicePlanner>(context);
}

}  // namespace topoep
