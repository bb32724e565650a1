#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/cuda/device_planner.h"
#include "solver/cuda/device_array.h"
#include "solver/cuda/device_plan_hash.h"
#include "solver/cuda/topoep_cuda.h"
#include "solver/plan_encoding.h"

namespace topoep {
namespace {

class DevicePlanner : public DeviceTopoepPlanner {
 public:
  explicit DevicePlanner(const PlannerContext& context)
      : context_(context),
        problem_{context.topology, context.placement, context.cost, 0},
        params_(topoep_params_for(problem_)),
        buffers_(params_, context.placement.home_rank, 1),
        hash_(2) {
    check_cuda(cudaStreamCreate(&stream_), "cudaStreamCreate");
    check_cuda(cudaEventCreate(&start_), "cudaEventCreate");
    check_cuda(cudaEventCreate(&stop_), "cudaEventCreate");
  }

  ~DevicePlanner() override {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
    cudaStreamDestroy(stream_);
  }

  std::string name() const override { return "topoep"; }
  DeviceSolveTimes last_times() const override { return times_; }

  PlannerDecision plan(const RecordId& record, const RoutingCounts& counts) override {
    check_topoep_inputs(problem_, counts, {});
    // The device keeps the step's owed holders itself: a rank sends at most one gradient and
    // receives at most one in each expert's chain.
    check_cost_range(
        problem_.cost, counts,
        static_cast<std::int64_t>(params_.shape.num_slots()) + params_.shape.num_experts);
    const bool keep = record.step == step_;  // a new step starts from the home layout
    step_ = record.step;
    // Untimed: in training the gate leaves the counts on the device.
    buffers_.upload_counts(counts.values(), stream_);
    check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    check_cuda(cudaEventRecord(start_, stream_), "cudaEventRecord");
    // The step's earlier replicas (owed holders, solver/phase_times.h) stay marked on the
    // device, as the host planner marks them; a new step forgets them.
    if (!keep) buffers_.start_step(stream_);
    DeviceLayerBatch launch = buffers_.batch(keep, keep);
    // A new replica can serve this microbatch and the step's later ones (at most the host
    // planner's default share, PlannerOptions::topoep_replica_uses).
    launch.replica_uses = std::min(PlannerOptions{}.topoep_replica_uses,
                                   std::max(1, context_.microbatches_per_step - record.microbatch));
    check_cuda(launch_topoep_layers(params_, 1, launch, stream_), "launch_topoep_layers");
    check_cuda(cudaEventRecord(stop_, stream_), "cudaEventRecord");
    // The plan comes back to the host, and the device hashes it for the check below.
    const auto copy_start = std::chrono::steady_clock::now();
    PlannerDecision decision;
    decision.placement = context_.placement;
    decision.plan = std::move(buffers_.download(stream_).front());
    const Plan& plan = decision.plan;
    const DeviceLayerBatch batch = buffers_.batch(false);
    const PlanView view{plan.num_ranks,
                        plan.num_experts,
                        plan.slots_per_rank,
                        batch.replicas,
                        static_cast<std::int64_t>(plan.routes.size()),
                        batch.routes};
    check_cuda(launch_plan_hash(view, hash_.get(), hash_.get() + 1, stream_), "launch_plan_hash");
    std::uint64_t device_hash = 0;
    check_cuda(cudaMemcpyAsync(&device_hash, hash_.get(), sizeof device_hash,
                               cudaMemcpyDeviceToHost, stream_),
               "cudaMemcpyAsync hash");
    check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    times_.plan_copy_us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - copy_start)
            .count();
    float ms = 0;
    check_cuda(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
    times_.solve_us = ms * 1000.0;
    const std::uint64_t host_hash = plan_hash(plan);
    if (device_hash != host_hash) {
      throw std::runtime_error("the device plan hash " + format_plan_hash(device_hash) +
                               " differs from the host's over the copied plan " +
                               format_plan_hash(host_hash));
    }
    // These replicas stay resident for the step's next microbatch of this layer, and their
    // gradients are owed at the step's end.
    buffers_.keep_replicas_resident(stream_);
    buffers_.note_used(stream_);
    decision.resident = keep ? resident_host_ : std::vector<ExpertId>{};
    resident_host_ = plan.replica_expert;
    decision.overhead.host_ps = static_cast<Picoseconds>(times_.solve_us * 1e6);
    return decision;
  }

 private:
  PlannerContext context_;
  TopoepProblem problem_;
  TopoepParams params_;
  DeviceLayerBuffers buffers_;
  DeviceArray<std::uint64_t> hash_;  // the plan hash and its scratch word
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  int step_ = -1;
  std::vector<ExpertId> resident_host_;
  DeviceSolveTimes times_;
};

}  // namespace

std::unique_ptr<DeviceTopoepPlanner> make_device_topoep_planner(const PlannerContext& context) {
  return std::make_unique<DevicePlanner>(context);
}

}  // namespace topoep
