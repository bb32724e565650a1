#include <cub/block/block_reduce.cuh>

#include "solver/cuda/device_plan_hash.h"
#include "solver/plan_encoding.h"

namespace topoep {
namespace {

constexpr int kThreads = 256;

__global__ void sum_word_terms(PlanView plan, std::int64_t num_words, unsigned long long* d_sum) {
  std::uint64_t sum = 0;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t index = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       index < num_words; index += stride) {
    sum += hash_word_term(encoded_plan_word(plan, index), index);
  }
  using BlockReduce = cub::BlockReduce<std::uint64_t, kThreads>;
  __shared__ typename BlockReduce::TempStorage storage;
  const std::uint64_t block_sum = BlockReduce(storage).Sum(sum);
  if (threadIdx.x == 0) atomicAdd(d_sum, static_cast<unsigned long long>(block_sum));
}

__global__ void finish_hash(const unsigned long long* d_sum, std::int64_t num_bytes,
                            std::uint64_t* d_hash) {
  *d_hash = hash_finish(*d_sum, num_bytes);
}

}  // namespace

cudaError_t launch_plan_hash(const PlanView& plan, std::uint64_t* d_hash, std::uint64_t* d_scratch,
                             cudaStream_t stream) {
  static_assert(sizeof(unsigned long long) == sizeof(std::uint64_t), "atomicAdd width");
  auto* d_sum = reinterpret_cast<unsigned long long*>(d_scratch);
  cudaError_t status = cudaMemsetAsync(d_sum, 0, sizeof *d_sum, stream);
  if (status != cudaSuccess) return status;
  const std::int64_t num_words = encoded_word_count(plan);
  const std::int64_t wanted_blocks = (num_words + kThreads - 1) / kThreads;
  const int blocks = static_cast<int>(wanted_blocks < 1024 ? wanted_blocks : 1024);
  sum_word_terms<<<blocks, kThreads, 0, stream>>>(plan, num_words, d_sum);
  finish_hash<<<1, 1, 0, stream>>>(d_sum, encoded_plan_size(plan), d_hash);
  return cudaGetLastError();
}

}  // namespace topoep
