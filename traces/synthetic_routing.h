#pragma once
// Seeded synthetic routing counts for one layer and microbatch, from integer arithmetic only
// (bit-identical on every platform), for tests, golden corpora and benchmarks.

#include <cstdint>

#include "solver/routing_counts.h"

namespace topoep {

enum class RoutingSkew {
  kUniform,   // every expert equally likely
  kZipf,      // expert of popularity rank i has weight 2^20 / (i + 1) (Zipf, s = 1)
  kAllToOne,  // every assignment goes to one expert (the seed picks which)
  kEmpty,     // no tokens at all
};

struct SyntheticRoutingSpec {
  int num_ranks = 8;
  int num_experts = 64;
  int tokens_per_rank = 256;
  int top_k = 8;
  RoutingSkew skew = RoutingSkew::kZipf;
  std::uint64_t seed = 1;
};

// counts[src][expert]: each source rank draws tokens_per_rank x top_k assignments (with
// replacement) from the popularity, whose order over experts is a seeded permutation.
RoutingCounts generate_routing(const SyntheticRoutingSpec& spec);

}  // namespace topoep
