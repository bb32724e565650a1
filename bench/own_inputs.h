#pragma once
// Your own inputs for the benchmarks, from the environment (bench/README.md): the cluster
// (TOPOEP_BENCH_TOPOLOGY, a preset or a file; default h800-4x8), the model (TOPOEP_BENCH_MODEL;
// default deepseek-v3) and the spare slots per GPU (TOPOEP_BENCH_SLOTS; default 1). Each throws
// the loaders' errors, or InputError naming the variable.

#include <string>

#include "models/model.h"
#include "topologies/topology.h"

namespace topoep {

// The variable's value, or `fallback` where it is unset or empty.
std::string env_or(const char* name, const std::string& fallback);

Topology own_topology();
ModelSpec own_model();
int own_slots();

}  // namespace topoep
