// The CUDA backend against the host on the golden corpus. Runs only where a CUDA GPU is present
// (tag "gpu"); elsewhere it skips itself.
#include "solver/cuda/topoep_cuda.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "solver/plan_encoding.h"
#include "solver/topoep_solver.h"
#include "tests/topoep_corpus.h"

namespace topoep {
namespace {

bool has_gpu() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

TEST(TopoepCuda, PlansMatchTheHostBitForBitOnTheGoldenCorpus) {
  if (!has_gpu()) GTEST_SKIP() << "no CUDA device";
  for (const testing::CorpusCase& c : testing::topoep_corpus()) {
    const std::uint64_t host = plan_hash(solve_topoep(c.problem, c.counts).plan);
    const std::vector<RoutingCounts> batch(3, c.counts);  // one launch, three blocks
    for (const Plan& plan : solve_topoep_layers_cuda(c.problem, batch)) {
      EXPECT_EQ(format_plan_hash(plan_hash(plan)), format_plan_hash(host)) << c.name;
    }
  }
}

// A step's second microbatch on the device: the first plan's replicas resident and marked as
// owed holders by the device as the host planner marks them, and the same plan as the host's
// from the same inputs.
TEST(TopoepCuda, OwedHoldersAndTheNextPlanMatchTheHost) {
  if (!has_gpu()) GTEST_SKIP() << "no CUDA device";
  int checked = 0;
  for (const testing::CorpusCase& c : testing::topoep_corpus()) {
    if (c.problem.placement.slots_per_rank == 0) continue;
    TopoepProblem problem = c.problem;  // with the replicas' gradients charged
    problem.cost.replica_gradient_bytes = problem.cost.replica_weight_bytes;
    const TopoepParams params = topoep_params_for(problem);
    const int R = params.shape.num_ranks, S = params.shape.slots_per_rank;
    DeviceLayerBuffers buffers(params, problem.placement.home_rank, 1);
    buffers.upload_counts(c.counts.values(), nullptr);
    buffers.start_step(nullptr);
    ASSERT_EQ(launch_topoep_layers(params, 1, buffers.batch(false), nullptr), cudaSuccess);
    const Plan first = buffers.download(nullptr).front();
    buffers.keep_replicas_resident(nullptr);
    buffers.note_used(nullptr);
    const std::vector<std::uint8_t> device_owed = buffers.download_owed(nullptr);

    std::vector<std::uint8_t> host_owed(static_cast<std::size_t>(params.shape.num_experts) * R, 0);
    for (RankId rank = 0; rank < R; ++rank) {
      for (int slot = 0; slot < S; ++slot) {
        const ExpertId expert = first.replica_at(rank, slot);
        if (expert != kNoExpert) host_owed[static_cast<std::size_t>(expert) * R + rank] = 1;
      }
    }
    EXPECT_EQ(device_owed, host_owed) << c.name;

    // The next microbatch: the same counts reversed by source, the replicas resident.
    RoutingCounts next(R, params.shape.num_experts);
    for (RankId src = 0; src < R; ++src) {
      for (ExpertId e = 0; e < params.shape.num_experts; ++e) {
        next.set(src, e, c.counts.at(R - 1 - src, e));
      }
    }
    buffers.upload_counts(next.values(), nullptr);
    ASSERT_EQ(launch_topoep_layers(params, 1, buffers.batch(true, true), nullptr), cudaSuccess);
    const Plan device_next = buffers.download(nullptr).front();
    TopoepHostSolver host(problem);
    Plan host_next;
    host.solve(next, first.replica_expert, &host_next, host_owed);
    EXPECT_EQ(format_plan_hash(plan_hash(device_next)), format_plan_hash(plan_hash(host_next)))
        << c.name;
    ++checked;
  }
  EXPECT_GT(checked, 30);
}

}  // namespace
}  // namespace topoep
