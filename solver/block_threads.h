#pragma once
// The threads that solve one layer together: one host thread, or one GPU thread block.
//
// The solver splits its passes over the counts (the static start) and over the plan's rows (the
// routes it writes) among them and runs its search on thread 0. Every split computes the same
// integer sums into the same places, so the plan does not depend on the thread count
// (tests/topoep_block_test.cc checks this on the host with emulated blocks).
//
// A Threads type has: kSerial (true: one thread, the solver takes its single-thread paths),
// index() in [0, count()), count(), and sync(), a barrier of all count() threads after which
// each sees every write made before it.

#include "solver/host_device.h"

namespace topoep {

struct SerialThreads {
  static constexpr bool kSerial = true;
  TOPOEP_HOST_DEVICE int index() const { return 0; }
  TOPOEP_HOST_DEVICE int count() const { return 1; }
  TOPOEP_HOST_DEVICE void sync() const {}
};

#if defined(__CUDACC__)
// The calling thread block (every thread of it must call sync()).
struct BlockThreads {
  static constexpr bool kSerial = false;
  __device__ int index() const { return static_cast<int>(threadIdx.x); }
  __device__ int count() const { return static_cast<int>(blockDim.x); }
  __device__ void sync() const { __syncthreads(); }
};
#endif

}  // namespace topoep
