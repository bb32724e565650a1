#include "traces/sglang_stats.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "common/file_input_error.h"
#include "solver/input_error.h"
#include "traces/cumulative_guide.h"
#include "traces/logical_count_reader.h"
#include "traces/splitmix64.h"

namespace topoep {

std::vector<std::vector<std::int64_t>> read_sglang_logical_count(const std::string& path) {
  const SglangLogicalCount read = read_sglang_stats_file(path);
  std::vector<std::vector<std::int64_t>> layers(
      read.layers, std::vector<std::int64_t>(static_cast<std::size_t>(read.experts), 0));
  for (int layer = 0; layer < read.layers; ++layer) {
    // Each row sums to at most 9e18 (the reader's check): the sum cannot wrap before it is checked.
    std::uint64_t sum = 0;
    for (int pass = 0; pass < read.passes; ++pass) {
      const std::int64_t* const row = read.row(pass, layer);
      for (int e = 0; e < read.experts; ++e) sum += static_cast<std::uint64_t>(row[e]);
      if (sum > 9e18) {  // checked before any total could pass 64 bits
        throw FileInputError(path, "logical_count",
                             "layer " + std::to_string(layer) +
                                 " sums past 9e18 tokens over the passes: too many to sample from");
      }
      for (int e = 0; e < read.experts; ++e) layers[layer][e] += row[e];
    }
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
  CumulativeGuide guide;
  guide.build(cumulative);
  const DrawsBelow below_total(total);
  for (int rank = 0; rank < num_ranks; ++rank) {
    TokenCount* const row = &values[static_cast<std::size_t>(rank) * num_experts];
    for (std::int64_t a = 0; a < assignments; ++a) ++row[guide.find(below_total(random))];
  }
  return RoutingCounts(num_ranks, num_experts, std::move(values));
}

}  // namespace topoep

namespace topoep {
namespace {

// Gamma(alpha, 1) by Marsaglia and Tsang; alpha < 1 through Gamma(alpha + 1) x U^(1 / alpha).
double gamma(double alpha, SplitMix64& random) {
  if (alpha < 1.0) return gamma(alpha + 1.0, random) * std::pow(random.uniform_open(), 1.0 / alpha);
  const double d = alpha - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  while (true) {
    double x, v;
    do {
      x = random.normal();
      v = 1.0 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const double u = random.uniform_open();
    if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v;
  }
}

}  // namespace

std::vector<std::int64_t> dirichlet_shares(const std::vector<std::int64_t>& expert_counts,
                                           double concentration, std::uint64_t seed) {
  if (!(concentration > 0)) throw InputError("concentration", "must be positive");
  double total = 0;
  for (const std::int64_t count : expert_counts) total += static_cast<double>(count);
  if (total <= 0) throw InputError("expert_counts", "the layer has no tokens to sample from");
  SplitMix64 random(seed);
  std::vector<double> draws(expert_counts.size(), 0.0);
  double sum = 0;
  for (std::size_t e = 0; e < expert_counts.size(); ++e) {
    if (expert_counts[e] == 0) continue;
    draws[e] = gamma(concentration * static_cast<double>(expert_counts[e]) / total, random);
    sum += draws[e];
  }
  std::vector<std::int64_t> weights(expert_counts.size(), 0);
  for (std::size_t e = 0; e < expert_counts.size(); ++e) {
    if (expert_counts[e] == 0) continue;
    weights[e] = std::max<std::int64_t>(1, std::llround(draws[e] / sum * 4294967296.0));
  }
  return weights;
}

}  // namespace topoep
