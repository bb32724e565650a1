#include "traces/unit_packing.h"

#include <algorithm>
#include <numeric>

#include "solver/input_error.h"
#include "traces/splitmix64.h"
#include "traces/token_packing.h"

namespace topoep {

PackingMethod parse_packing_method(const std::string& name) {
  if (name == "contiguous") return PackingMethod::kContiguous;
  if (name == "round-robin") return PackingMethod::kRoundRobin;
  if (name == "random") return PackingMethod::kRandom;
  throw InputError("packing", "unknown method '" + name + "' (contiguous, round-robin, random)");
}

const char* to_string(PackingMethod method) {
  switch (method) {
    case PackingMethod::kContiguous:
      return "contiguous";
    case PackingMethod::kRoundRobin:
      return "round-robin";
    case PackingMethod::kRandom:
      return "random";
  }
  return "unknown";
}

std::vector<int> unit_order(int num_units, PackingMethod method, int bootstrap_units,
                            std::uint64_t seed) {
  SplitMix64 random(seed);
  std::vector<int> order;
  if (bootstrap_units > 0) {
    for (int i = 0; i < bootstrap_units; ++i)
      order.push_back(static_cast<int>(random.below(static_cast<std::uint64_t>(num_units))));
  } else {
    order.resize(num_units);
    std::iota(order.begin(), order.end(), 0);
  }
  if (method == PackingMethod::kRandom) {
    for (int i = static_cast<int>(order.size()) - 1; i > 0; --i) {
      std::swap(order[i], order[random.below(static_cast<std::uint64_t>(i) + 1)]);
    }
  }
  return order;
}

std::vector<RoutingCounts> pack_units(const std::vector<std::vector<ExpertId>>& units,
                                      const std::vector<int>& order, PackingMethod method,
                                      int top_k, int num_experts, int num_ranks,
                                      int tokens_per_rank) {
  if (method != PackingMethod::kRoundRobin) {
    std::vector<ExpertId> stream;
    for (const int u : order) stream.insert(stream.end(), units[u].begin(), units[u].end());
    return pack_tokens_contiguous(stream, top_k, num_experts, num_ranks, tokens_per_rank);
  }
  std::vector<std::vector<ExpertId>> per_rank(num_ranks);
  for (std::size_t i = 0; i < order.size(); ++i) {
    const auto& unit = units[order[i]];
    per_rank[i % num_ranks].insert(per_rank[i % num_ranks].end(), unit.begin(), unit.end());
  }
  std::size_t shortest = per_rank[0].size();
  for (const auto& stream : per_rank) shortest = std::min(shortest, stream.size());
  const std::size_t per_microbatch = static_cast<std::size_t>(tokens_per_rank) * top_k;
  std::vector<RoutingCounts> microbatches;
  for (std::size_t first = 0; first + per_microbatch <= shortest; first += per_microbatch) {
    std::vector<TokenCount> values(static_cast<std::size_t>(num_ranks) * num_experts, 0);
    for (int rank = 0; rank < num_ranks; ++rank) {
      for (std::size_t i = first; i < first + per_microbatch; ++i) {
        const ExpertId expert = per_rank[rank][i];
        if (expert < 0 || expert >= num_experts)
          throw InputError("units", "expert id out of range");
        ++values[static_cast<std::size_t>(rank) * num_experts + expert];
      }
    }
    microbatches.emplace_back(num_ranks, num_experts, std::move(values));
  }
  return microbatches;
}

}  // namespace topoep
