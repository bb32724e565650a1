#include "traces/synthetic_routing.h"

#include <algorithm>
#include <numeric>
#include <vector>

#include "solver/input_error.h"
#include "traces/cumulative_guide.h"
#include "traces/splitmix64.h"

namespace topoep {

RoutingCounts generate_routing(const SyntheticRoutingSpec& spec) {
  if (spec.tokens_per_rank < 0) throw InputError("tokens_per_rank", "must not be negative");
  if (spec.top_k < 1) throw InputError("top_k", "must be at least 1");
  RoutingCounts counts(spec.num_ranks, spec.num_experts);
  if (spec.skew == RoutingSkew::kEmpty) return counts;
  SplitMix64 random(spec.seed);
  // Seeded Fisher-Yates permutation: which expert holds each popularity rank.
  std::vector<ExpertId> by_popularity(spec.num_experts);
  std::iota(by_popularity.begin(), by_popularity.end(), 0);
  for (int i = spec.num_experts - 1; i > 0; --i) {
    std::swap(by_popularity[i], by_popularity[random.below(static_cast<std::uint64_t>(i) + 1)]);
  }
  const std::int64_t assignments = static_cast<std::int64_t>(spec.tokens_per_rank) * spec.top_k;
  if (spec.skew == RoutingSkew::kAllToOne) {
    for (RankId src = 0; src < spec.num_ranks; ++src)
      counts.set(src, by_popularity[0], assignments);
    return counts;
  }
  std::vector<std::uint64_t> cumulative(spec.num_experts);
  std::uint64_t total = 0;
  for (int i = 0; i < spec.num_experts; ++i) {
    total +=
        spec.skew == RoutingSkew::kZipf ? (1ull << 20) / (static_cast<std::uint64_t>(i) + 1) : 1;
    cumulative[i] = total;
  }
  CumulativeGuide guide;
  guide.build(cumulative);
  const DrawsBelow below_total(total);
  std::vector<TokenCount> row(spec.num_experts);
  for (RankId src = 0; src < spec.num_ranks; ++src) {
    std::fill(row.begin(), row.end(), 0);
    for (std::int64_t a = 0; a < assignments; ++a) {
      ++row[by_popularity[guide.find(below_total(random))]];
    }
    for (ExpertId e = 0; e < spec.num_experts; ++e) counts.set(src, e, row[e]);
  }
  return counts;
}

}  // namespace topoep
