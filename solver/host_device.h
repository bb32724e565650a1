#pragma once
// TOPOEP_HOST_DEVICE marks functions that nvcc compiles for both host and device and g++
// compiles for the host: the one-source rule for the solver's algorithms.

#if defined(__CUDACC__)
#define TOPOEP_HOST_DEVICE __host__ __device__
#else
#define TOPOEP_HOST_DEVICE
#endif
