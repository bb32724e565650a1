#include "traces/sglang_stats.h"

#include <algorithm>
#include <cmath>

#include "common/json_fields.h"
#include "solver/input_error.h"
#include "traces/splitmix64.h"

namespace topoep {

std::vector<std::vector<std::int64_t>> read_sglang_logical_count(const std::string& path) {
  const nlohmann::json document = parse_json_text(read_text_file(path), path);
  if (!document.is_object() || !document.contains("logical_count") ||
      !document["logical_count"].is_array()) {
    throw FileInputError(path, "logical_count", "must be an array of per-layer arrays");
  }
  std::vector<std::vector<std::int64_t>> layers;
  const nlohmann::json& rows = document["logical_count"];
  for (std::size_t layer = 0; layer < rows.size(); ++layer) {
    const std::string field = "logical_count[" + std::to_string(layer) + "]";
    if (!rows[layer].is_array() || (layer > 0 && rows[layer].size() != rows[0].size())) {
      throw FileInputError(path, field, "must be an array as long as logical_count[0]");
    }
    std::vector<std::int64_t> counts;
    for (std::size_t expert = 0; expert < rows[layer].size(); ++expert) {
      const nlohmann::json& value = rows[layer][expert];
      const double number = value.is_number() ? value.get<double>() : -1;
      if (!(number >= 0) || number != std::floor(number) || number > 9e18) {
        throw FileInputError(path, field + "[" + std::to_string(expert) + "]",
                             "must be a non-negative whole number, got " + value.dump());
      }
      counts.push_back(static_cast<std::int64_t>(number));
    }
    layers.push_back(std::move(counts));
  }
  return layers;
}

RoutingCounts sample_counts_from_shares(const std::vector<std::int64_t>& expert_counts,
                                        int num_ranks, int tokens_per_rank, int top_k,
                                        std::uint64_t seed) {
  std::vector<std::uint64_t> cumulative(expert_counts.size());
  std::uint64_t total = 0;
  for (std::size_t e = 0; e < expert_counts.size(); ++e) {
    total += static_cast<std::uint64_t>(expert_counts[e]);
    cumulative[e] = total;
  }
  if (total == 0) throw InputError("expert_counts", "the layer has no tokens to sample from");
  SplitMix64 random(seed);
  const int num_experts = static_cast<int>(expert_counts.size());
  std::vector<TokenCount> values(static_cast<std::size_t>(num_ranks) * num_experts, 0);
  const std::int64_t assignments = static_cast<std::int64_t>(tokens_per_rank) * top_k;
  for (int rank = 0; rank < num_ranks; ++rank) {
    for (std::int64_t a = 0; a < assignments; ++a) {
      const std::uint64_t draw = random.below(total);
      const auto it = std::upper_bound(cumulative.begin(), cumulative.end(), draw);
      ++values[static_cast<std::size_t>(rank) * num_experts + (it - cumulative.begin())];
    }
  }
  return RoutingCounts(num_ranks, num_experts, std::move(values));
}

}  // namespace topoep
