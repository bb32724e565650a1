#pragma once
// TOPOEP_HOST_DEVICE marks functions that nvcc compiles for both host and device and g++
// compiles for the host: the one-source rule for the solver's algorithms.

#if defined(__CUDACC__)
#define TOPOEP_HOST_DEVICE __host__ __device__
#else
#define TOPOEP_HOST_DEVICE
#endif

// Keeps a hot loop in a function of its own: inlined into the solve's large body, the plan's
// writing lost registers (6% on the (256, 64, 0) floor, bench/README.md).
#if defined(__CUDACC__)
#define TOPOEP_NOINLINE __noinline__
#else
#define TOPOEP_NOINLINE __attribute__((noinline))
#endif
