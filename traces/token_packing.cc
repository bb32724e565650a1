#include "traces/token_packing.h"

#include "solver/input_error.h"

namespace topoep {

std::vector<RoutingCounts> pack_tokens_contiguous(const std::vector<ExpertId>& token_experts,
                                                  int top_k, int num_experts, int num_ranks,
                                                  int tokens_per_rank) {
  if (top_k < 1) throw InputError("top_k", "must be at least 1");
  if (tokens_per_rank < 1) throw InputError("tokens_per_rank", "must be at least 1");
  if (num_ranks < 1) throw InputError("num_ranks", "must be at least 1");
  const std::int64_t num_tokens = static_cast<std::int64_t>(token_experts.size()) / top_k;
  const std::int64_t per_microbatch = static_cast<std::int64_t>(num_ranks) * tokens_per_rank;
  std::vector<RoutingCounts> microbatches;
  for (std::int64_t first = 0; first + per_microbatch <= num_tokens; first += per_microbatch) {
    std::vector<TokenCount> values(static_cast<std::size_t>(num_ranks) * num_experts, 0);
    for (std::int64_t token = first; token < first + per_microbatch; ++token) {
      const std::int64_t rank = (token - first) / tokens_per_rank;
      for (int choice = 0; choice < top_k; ++choice) {
        const ExpertId expert = token_experts[token * top_k + choice];
        if (expert < 0 || expert >= num_experts) {
          throw InputError("token_experts[" + std::to_string(token * top_k + choice) + "]",
                           "expert " + std::to_string(expert) + " is out of range");
        }
        ++values[rank * num_experts + expert];
      }
    }
    microbatches.emplace_back(num_ranks, num_experts, std::move(values));
  }
  return microbatches;
}

}  // namespace topoep
