#include "solver/routing_counts.h"

#include <numeric>
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
  for (std::size_t i = 0; i < values_.size(); ++i) {
    if (values_[i] < 0) {
      throw InputError(entry_name(static_cast<long long>(i / num_experts),
                                  static_cast<long long>(i % num_experts)),
                       "is negative (" + std::to_string(values_[i]) + ")");
    }
  }
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
  values_[static_cast<std::size_t>(src) * num_experts_ + expert] = value;
}

std::vector<TokenCount> RoutingCounts::expert_totals() const {
  std::vector<TokenCount> totals(num_experts_, 0);
  for (std::size_t i = 0; i < values_.size(); ++i) totals[i % num_experts_] += values_[i];
  return totals;
}

TokenCount RoutingCounts::total() const {
  return std::accumulate(values_.begin(), values_.end(), TokenCount{0});
}

}  // namespace topoep
