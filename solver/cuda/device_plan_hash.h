#pragma once
// The plan hash computed on the GPU from device-resident plan arrays, so that ranks can compare
// plans without copying them to the host. Same encoding and hash as solver/plan_encoding.h.

#include <cuda_runtime_api.h>

#include <cstdint>

#include "solver/plan.h"

namespace topoep {

// Enqueues on `stream` the kernels that write plan hash v1 of `plan` to *d_hash. `plan`'s
// arrays, `d_hash` and `d_scratch` (one u64 of scratch) are device pointers; `plan`'s counts
// are host values. Asynchronous: no host synchronisation. Threads hash disjoint words and add
// their terms with 64-bit integer atomics; integer addition is exact and order-free, so the
// result is bitwise identical to the host's for any launch shape. Returns the launch status.
cudaError_t launch_plan_hash(const PlanView& plan, std::uint64_t* d_hash, std::uint64_t* d_scratch,
                             cudaStream_t stream);

}  // namespace topoep
