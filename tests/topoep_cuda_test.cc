// The CUDA backend against the host on the golden corpus. Runs only where a CUDA GPU is present
// (tag "gpu"); elsewhere it skips itself.
#include "solver/cuda/topoep_cuda.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "solver/plan_encoding.h"
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

}  // namespace
}  // namespace topoep
