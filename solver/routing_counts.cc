#include "solver/routing_counts.h"

#include <string>
#include <utility>

#include "solver/input_error.h"

namespace topoep {
namespace {

std::string entry_name(long long src, long long expert) {
  return "counts[" + std::to_string(src) + "][" + std::to_string(expert) + "]";
}

void check_shape(int num_ranks, int num_experts) {
  if (num_ranks < 1) throw InputError("counts", "needs at least one source rank (row)");
  if (num_experts < 1) throw InputError("counts", "needs at least one expert (column)");
}

}  // namespace

RoutingCounts::RoutingCounts(int num_ranks, int num_experts)
    : RoutingCounts(
          num_ranks, num_experts,
          std::vector<TokenCount>(static_cast<std::size_t>(num_ranks > 0 ? num_ranks : 0) *
                                  (num_experts > 0 ? num_experts : 0))) {}

RoutingCounts::RoutingCounts(int num_ranks, int num_experts, std::vector<TokenCount> values)
    : num_ranks_(num_ranks), num_experts_(num_experts), values_(std::move(values)) {
  check_shape(num_ranks, num_experts);
  const std::size_t expected = static_cast<std::size_t>(num_ranks) * num_experts;
  if (values_.size() != expected) {
    throw InputError("counts", "has " + std::to_string(values_.size()) + " values, expected " +
                                   std::to_string(num_ranks) + " ranks x " +
                                   std::to_string(num_experts) + " experts");
  }
  sum_and_check();
}

void RoutingCounts::sum_and_check() {
  // One branch-free pass: a negative count sets the sign bit of `any`; only then is it found.
  std::uint64_t high = 0, low = 0, any = 0;
  for (const TokenCount value : values_) {
    const auto bits = static_cast<std::uint64_t>(value);
    high += bits >> 32;
    low += bits & 0xffffffffu;
    any |= bits;
  }
  if (any >> 63) {
    for (std::size_t i = 0; i < values_.size(); ++i) {
      if (values_[i] < 0) {
        throw InputError(entry_name(static_cast<long long>(i / num_experts_),
                                    static_cast<long long>(i % num_experts_)),
                         "is negative (" + std::to_string(values_[i]) + ")");
      }
    }
  }
  sum_high_ = high;
  sum_low_ = low;
}

RoutingCounts RoutingCounts::from_summed(int num_ranks, int num_experts,
                                         std::vector<TokenCount> values, TokenCount total) {
  check_shape(num_ranks, num_experts);
  if (values.size() != static_cast<std::size_t>(num_ranks) * num_experts || total < 0) {
    throw InputError("counts", "has " + std::to_string(values.size()) + " values summing to " +
                                   std::to_string(total) + ", expected " +
                                   std::to_string(num_ranks) + " ranks x " +
                                   std::to_string(num_experts) + " experts, a sum >= 0");
  }
  RoutingCounts counts;
  counts.num_ranks_ = num_ranks;
  counts.num_experts_ = num_experts;
  counts.values_ = std::move(values);
  // The halves sum_and_check() would find: no count has high bits.
  counts.sum_high_ = 0;
  counts.sum_low_ = static_cast<std::uint64_t>(total);
  return counts;
}

RoutingCounts RoutingCounts::from_rows(const std::vector<std::vector<TokenCount>>& rows) {
  check_shape(static_cast<int>(rows.size()), rows.empty() ? 0 : static_cast<int>(rows[0].size()));
  std::vector<TokenCount> values;
  values.reserve(rows.size() * rows[0].size());
  for (std::size_t src = 0; src < rows.size(); ++src) {
    if (rows[src].size() != rows[0].size()) {
      throw InputError("counts[" + std::to_string(src) + "]",
                       "has " + std::to_string(rows[src].size()) + " experts, row 0 has " +
                           std::to_string(rows[0].size()));
    }
    values.insert(values.end(), rows[src].begin(), rows[src].end());
  }
  return RoutingCounts(static_cast<int>(rows.size()), static_cast<int>(rows[0].size()),
                       std::move(values));
}

void RoutingCounts::set(RankId src, ExpertId expert, TokenCount value) {
  if (src < 0 || src >= num_ranks_ || expert < 0 || expert >= num_experts_) {
    throw InputError(entry_name(src, expert), "is outside the shape [" +
                                                  std::to_string(num_ranks_) + "][" +
                                                  std::to_string(num_experts_) + "]");
  }
  if (value < 0) {
    throw InputError(entry_name(src, expert), "is negative (" + std::to_string(value) + ")");
  }
  TokenCount& entry = values_[static_cast<std::size_t>(src) * num_experts_ + expert];
  // Unsigned, so the halves' differences wrap back to the exact sums.
  const auto old_bits = static_cast<std::uint64_t>(entry), bits = static_cast<std::uint64_t>(value);
  sum_high_ += (bits >> 32) - (old_bits >> 32);
  sum_low_ += (bits & 0xffffffffu) - (old_bits & 0xffffffffu);
  entry = value;
}

std::vector<TokenCount> RoutingCounts::expert_totals() const {
  std::vector<TokenCount> totals(num_experts_, 0);
  const std::size_t E = totals.size();
  for (std::size_t row = 0; row + E <= values_.size() && E > 0; row += E) {
    for (std::size_t e = 0; e < E; ++e) totals[e] += values_[row + e];
  }
  return totals;
}

TokenCount RoutingCounts::total() const {
  // high * 2^32 + low must stay below 2^63.
  const std::uint64_t low_carry = sum_low_ >> 32;
  if (sum_high_ + low_carry >= (std::uint64_t{1} << 31)) {
    throw InputError("counts", "sum to more than a 64-bit count can hold");
  }
  return static_cast<TokenCount>(((sum_high_ + low_carry) << 32) + (sum_low_ & 0xffffffffu));
}

long double RoutingCounts::total_in_range_check() const {
  return static_cast<long double>(sum_high_) * 4294967296.0L + static_cast<long double>(sum_low_);
}

}  // namespace topoep
