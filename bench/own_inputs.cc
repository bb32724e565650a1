#include "bench/own_inputs.h"

#include <algorithm>
#include <cstdlib>

#include "models/model_json.h"
#include "solver/input_error.h"
#include "topologies/topology_presets.h"

namespace topoep {

std::string env_or(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value == nullptr || *value == '\0' ? fallback : std::string(value);
}

Topology own_topology() { return load_topology(env_or("TOPOEP_BENCH_TOPOLOGY", "h800-4x8")); }

ModelSpec own_model() { return load_model(env_or("TOPOEP_BENCH_MODEL", "deepseek-v3")); }

int own_slots() {
  const std::string slots = env_or("TOPOEP_BENCH_SLOTS", "1");
  // Four digits at most: more slots than that never fit a rank, and std::stoi cannot overflow.
  if (slots.size() > 4 ||
      !std::all_of(slots.begin(), slots.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    throw InputError("TOPOEP_BENCH_SLOTS", "must be a whole number of slots, got '" + slots + "'");
  }
  return std::stoi(slots);
}

}  // namespace topoep
