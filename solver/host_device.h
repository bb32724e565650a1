#pragma once
// TOPOEP_HOST_DEVICE marks functions that nvcc compiles for both host and device and g++
// compiles for the host: the one-source rule for the solver's algorithms.

#if defined(__CUDACC__)
#define TOPOEP_HOST_DEVICE __host__ __device__
#else
#define TOPOEP_HOST_DEVICE
#endif

#include <cstdint>

namespace topoep {
// The lowest and the highest set bit of x != 0.
TOPOEP_HOST_DEVICE inline int lowest_bit(std::uint64_t x) {
#if defined(__CUDA_ARCH__)
  return __ffsll(static_cast<long long>(x)) - 1;
#else
  return __builtin_ctzll(x);
#endif
}
TOPOEP_HOST_DEVICE inline int highest_bit(std::uint64_t x) {
#if defined(__CUDA_ARCH__)
  return 63 - __clzll(static_cast<long long>(x));
#else
  return 63 - __builtin_clzll(x);
#endif
}
}  // namespace topoep

// Keeps a hot loop in a function of its own: inlined into the solve's large body, the plan's
// writing lost registers (6% on the (256, 64, 0) floor, bench/HISTORY.md).
#if defined(__CUDACC__)
#define TOPOEP_NOINLINE __noinline__
#else
#define TOPOEP_NOINLINE __attribute__((noinline))
#endif
