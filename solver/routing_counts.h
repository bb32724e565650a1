#pragma once
// Routing counts of one MoE layer in one microbatch: how many tokens each source rank sends to
// each expert (one count per token-expert assignment, so a token with top-k sends k).

#include <cstdint>
#include <utility>
#include <vector>

#include "solver/types.h"

namespace topoep {

// counts[src_rank][expert], row-major, shape [num_ranks][num_experts]. Counts are never
// negative: the constructors throw InputError naming the first bad entry. The sum of all counts
// is kept, found in the same pass as that check: every planner's range check needs it, and a
// second pass over the counts per plan cost 2% of a replayed TopoEP record.
class RoutingCounts {
 public:
  RoutingCounts() = default;
  // All zeros.
  RoutingCounts(int num_ranks, int num_experts);
  // Takes `values` of length num_ranks * num_experts in row-major order.
  RoutingCounts(int num_ranks, int num_experts, std::vector<TokenCount> values);
  // Takes rows (one per source rank); every row must have the same length.
  static RoutingCounts from_rows(const std::vector<std::vector<TokenCount>>& rows);
  // For a reader of 16- or 32-bit counts that has already found every one of `values` in
  // [0, 2^32) and summed them to `total` in its own pass: takes them without a second pass (a
  // replay reads a record's counts once, not twice). Throws InputError on a bad shape or a
  // negative total; the counts' range is the caller's word.
  static RoutingCounts from_summed(int num_ranks, int num_experts, std::vector<TokenCount> values,
                                   TokenCount total);

  int num_ranks() const { return num_ranks_; }
  int num_experts() const { return num_experts_; }
  TokenCount at(RankId src, ExpertId expert) const {
    return values_[static_cast<std::size_t>(src) * num_experts_ + expert];
  }
  // Throws InputError for a negative value.
  void set(RankId src, ExpertId expert, TokenCount value);
  const std::vector<TokenCount>& values() const { return values_; }
  // Gives up the values' buffer, leaving no counts: a reader refills it for the next record
  // without allocating and zero-filling another.
  std::vector<TokenCount> release_values() && {
    num_ranks_ = num_experts_ = 0;
    sum_high_ = sum_low_ = 0;
    return std::move(values_);
  }

  // Tokens per expert summed over source ranks, shape [num_experts].
  std::vector<TokenCount> expert_totals() const;
  // The sum of all counts. Throws InputError when it does not fit in a TokenCount.
  TokenCount total() const;
  // The same sum, never overflowing (exact below 2^64): for range checks.
  long double total_in_range_check() const;

 private:
  // Throws InputError naming the first negative count; sets the sum's halves.
  void sum_and_check();

  int num_ranks_ = 0;
  int num_experts_ = 0;
  std::vector<TokenCount> values_;
  // The counts' sum in two halves: each count's high and low 32 bits, summed apart, so that
  // neither overflows for fewer than 2^32 counts and the pass stays integer and vectorisable.
  std::uint64_t sum_high_ = 0;
  std::uint64_t sum_low_ = 0;
};

}  // namespace topoep
