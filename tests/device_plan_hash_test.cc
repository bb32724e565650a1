// Runs only where a CUDA GPU is present (tag "gpu"); elsewhere every test skips itself.
#include "solver/cuda/device_plan_hash.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "solver/plan_encoding.h"
#include "tests/plan_fixtures.h"

namespace topoep {
namespace {

bool has_gpu() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

template <class T, class Allocator>
T* copy_to_device(const std::vector<T, Allocator>& host) {
  T* device = nullptr;
  EXPECT_EQ(cudaMalloc(&device, sizeof(T) * (host.size() + 1)), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(device, host.data(), sizeof(T) * host.size(), cudaMemcpyHostToDevice),
            cudaSuccess);
  return device;
}

TEST(DevicePlanHash, EqualsTheHostHash) {
  if (!has_gpu()) GTEST_SKIP() << "no CUDA device";
  const Plan plan = testing::small_balanced_plan();
  ExpertId* d_replicas = copy_to_device(plan.replica_expert);
  Route* d_routes = copy_to_device(plan.routes);
  std::uint64_t* d_hash = nullptr;
  std::uint64_t* d_scratch = nullptr;
  ASSERT_EQ(cudaMalloc(&d_hash, sizeof(std::uint64_t)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d_scratch, sizeof(std::uint64_t)), cudaSuccess);

  PlanView device_view = view_of(plan);
  device_view.replica_expert = d_replicas;
  device_view.routes = d_routes;
  ASSERT_EQ(launch_plan_hash(device_view, d_hash, d_scratch, nullptr), cudaSuccess);
  std::uint64_t hash = 0;
  ASSERT_EQ(cudaMemcpy(&hash, d_hash, sizeof hash, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(hash, plan_hash(plan));
  EXPECT_EQ(hash, 0x79ad7f63354b26b4ull);  // the golden value of plan_hash_test.cc

  cudaFree(d_scratch);
  cudaFree(d_hash);
  cudaFree(d_routes);
  cudaFree(d_replicas);
}

}  // namespace
}  // namespace topoep
