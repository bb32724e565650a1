#pragma once
// Packing per-token routing into rank x expert count matrices by whole units (sequences, or
// fixed runs of tokens), the same way for every layer so that a record's layers see the same
// tokens. Every method is deterministic; the seeded ones use SplitMix64.

#include <cstdint>
#include <string>
#include <vector>

#include "solver/routing_counts.h"

namespace topoep {

enum class PackingMethod {
  kContiguous,  // units in order, one token stream, cut into ranks x tokens_per_rank
  kRoundRobin,  // unit i to rank i % R; microbatch m takes tokens [m T, (m + 1) T) of each rank
  kRandom,      // a seeded shuffle of the units, then contiguous
};

// Parses "contiguous", "round-robin" or "random"; throws InputError naming "packing".
PackingMethod parse_packing_method(const std::string& name);
const char* to_string(PackingMethod method);

// The unit order the packing uses: 0..num_units-1, shuffled for kRandom, and, with
// `bootstrap_units` > 0, that many units drawn with replacement first (seeded resampling of
// whole sequences into a longer trace).
std::vector<int> unit_order(int num_units, PackingMethod method, int bootstrap_units,
                            std::uint64_t seed);

// `units[u]` holds top_k expert ids per token of unit u, token after token. Returns one matrix
// per whole microbatch; tokens that do not fill one are dropped.
std::vector<RoutingCounts> pack_units(const std::vector<std::vector<ExpertId>>& units,
                                      const std::vector<int>& order, PackingMethod method,
                                      int top_k, int num_experts, int num_ranks,
                                      int tokens_per_rank);

}  // namespace topoep
