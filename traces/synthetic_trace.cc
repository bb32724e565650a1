#include "traces/synthetic_trace.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "common/parallel_tasks.h"
#include "solver/input_error.h"
#include "traces/cumulative_guide.h"
#include "traces/splitmix64.h"
#include "traces/trace_writer.h"

namespace topoep {
namespace {

double busiest_over_mean(const std::vector<double>& weights) {
  const double total = std::accumulate(weights.begin(), weights.end(), 0.0);
  return *std::max_element(weights.begin(), weights.end()) * weights.size() / total;
}

// Popularity by rank position (descending), normalised so the busiest over the mean is the
// target: Zipf 1 / (i + 1)^s, or log-normal quantiles exp(sigma * z_i) sorted descending.
std::vector<double> popularity_weights(SyntheticTraceSpec spec) {
  const int E = spec.num_experts;
  // No expert can hold more than all the load: the ratio is at most E.
  spec.hot_ratio = std::min(spec.hot_ratio, static_cast<double>(E));
  std::vector<double> weights(E);
  if (spec.popularity == Popularity::kZipf) {
    const double s = zipf_exponent_for(E, spec.hot_ratio);
    for (int i = 0; i < E; ++i) weights[i] = std::pow(i + 1.0, -s);
    return weights;
  }
  // Log-normal: evenly spaced normal quantiles (deterministic), sigma by bisection.
  std::vector<double> z(E);
  for (int i = 0; i < E; ++i) {
    const double p = (E - i - 0.5) / E;  // descending
    // Acklam-free quantile: invert the error function by bisection on the normal CDF.
    double low = -10, high = 10;
    for (int k = 0; k < 100; ++k) {
      const double mid = (low + high) / 2;
      (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p ? low : high) = mid;
    }
    z[i] = (low + high) / 2;
  }
  double low = 0, high = 10;
  for (int k = 0; k < 100; ++k) {
    const double sigma = (low + high) / 2;
    for (int i = 0; i < E; ++i) weights[i] = std::exp(sigma * z[i]);
    (busiest_over_mean(weights) < spec.hot_ratio ? low : high) = sigma;
  }
  for (int i = 0; i < E; ++i) weights[i] = std::exp((low + high) / 2 * z[i]);
  return weights;
}

void swap_fraction(std::vector<ExpertId>& order, double fraction, SplitMix64& random) {
  const int swaps = static_cast<int>(std::llround(fraction * order.size() / 2));
  for (int k = 0; k < swaps; ++k) {
    std::swap(order[random.below(order.size())], order[random.below(order.size())]);
  }
}

}  // namespace

double zipf_exponent_for(int num_experts, double hot_ratio) {
  double low = 0, high = 8;
  std::vector<double> weights(num_experts);
  for (int k = 0; k < 100; ++k) {
    const double s = (low + high) / 2;
    for (int i = 0; i < num_experts; ++i) weights[i] = std::pow(i + 1.0, -s);
    (busiest_over_mean(weights) < hot_ratio ? low : high) = s;
  }
  return (low + high) / 2;
}

namespace {

TraceMetadata synthetic_trace_metadata(const SyntheticTraceSpec& spec) {
  TraceMetadata m;
  m.model = "synthetic";
  m.num_experts = spec.num_experts;
  m.top_k = spec.top_k;
  m.num_ranks = spec.num_ranks;
  m.gpus_per_node = spec.gpus_per_node;
  m.num_layers = spec.num_layers;
  m.microbatches = spec.microbatches;
  m.steps = spec.steps;
  m.tokens_per_rank = spec.tokens_per_rank;
  m.source = "topoep synthetic trace generator";
  m.packing = {{"generator", "synthetic_trace"},
               {"popularity", spec.popularity == Popularity::kZipf ? "zipf" : "lognormal"},
               {"hot_ratio", spec.hot_ratio},
               {"drift_per_step", spec.drift_per_step},
               {"layer_correlation", spec.layer_correlation},
               {"rank_variation", spec.rank_variation},
               {"seed", spec.seed}};
  return m;
}

}  // namespace

void check_synthetic_trace_spec(const SyntheticTraceSpec& s) {
  require_at_least(s.num_experts, 1, "num_experts");
  require_at_least(s.num_ranks, 1, "num_ranks");
  require_at_least(s.gpus_per_node, 1, "gpus_per_node");
  require_at_least(s.num_layers, 1, "layers");
  require_at_least(s.microbatches, 1, "microbatches");
  require_at_least(s.steps, 1, "steps");
  require_at_least(s.tokens_per_rank, 1, "tokens_per_rank");
  if (s.top_k < 1 || s.top_k > s.num_experts) {
    throw InputError("top_k", "must be 1 to the " + std::to_string(s.num_experts) +
                                  " experts (got " + std::to_string(s.top_k) + ")");
  }
  if (s.num_ranks % s.gpus_per_node != 0) {
    throw InputError("gpus_per_node", std::to_string(s.gpus_per_node) + " does not divide the " +
                                          std::to_string(s.num_ranks) + " ranks into nodes");
  }
  auto in_range = [](double value, double low, double high, const char* field) {
    if (!(value >= low && value <= high)) {
      std::ostringstream message;
      message << "must be in [" << low << ", " << high << "] (got " << value << ")";
      throw InputError(field, message.str());
    }
  };
  if (!(s.hot_ratio >= 1)) {
    std::ostringstream message;
    message << "must be at least 1 (got " << s.hot_ratio << ")";
    throw InputError("hot_ratio", message.str());
  }
  in_range(s.drift_per_step, 0, 1, "drift_per_step");
  in_range(s.layer_correlation, 0, 1, "layer_correlation");
  in_range(s.rank_variation, 0, 4, "rank_variation");
  check_trace_metadata(synthetic_trace_metadata(s));  // what the trace writer will be given
}

namespace {

// One rank's reusable buffers for rank_counts().
struct RankScratch {
  std::vector<double> noisy;
  std::vector<std::uint64_t> weight, cumulative;
  CumulativeGuide guide;
};

// Integer weights, 1 + llround(noisy x scale) each, and their running sums into `cumulative`;
// false where one would not fit llround() or the sum 64 bits.
bool quantise(const std::vector<double>& noisy, const std::vector<ExpertId>& order, double scale,
              RankScratch& scratch) {
  for (std::size_t position = 0; position < noisy.size(); ++position) {
    const double scaled = noisy[position] * scale;
    if (!(scaled < 0x1p63)) return false;
    scratch.weight[order[position]] = static_cast<std::uint64_t>(std::llround(scaled)) + 1;
  }
  std::uint64_t total = 0;
  for (std::size_t e = 0; e < noisy.size(); ++e) {
    if (__builtin_add_overflow(total, scratch.weight[e], &total)) return false;
    scratch.cumulative[e] = total;
  }
  return true;
}

// One rank's counts of one record into `row` (zeroed first): the layer's popularity with
// log-normal noise per expert, quantised to integers so that the draws are exact, then
// tokens x top-k weighted draws. Takes 2 E + tokens x top-k values from `random`, more only
// where SplitMix64::below() rejects a value.
void rank_counts(const SyntheticTraceSpec& spec, const std::vector<double>& popularity,
                 const std::vector<ExpertId>& order, SplitMix64& random, RankScratch& scratch,
                 TokenCount* row) {
  const int E = spec.num_experts;
  scratch.noisy.resize(E);
  scratch.weight.resize(E);
  scratch.cumulative.resize(E);
  for (int position = 0; position < E; ++position) {
    scratch.noisy[position] =
        popularity[position] * std::exp(spec.rank_variation * random.normal());
  }
  // 2^20 per unit of popularity. A hot log-normal expert times a noise of many sigma (rank
  // variation 4 reaches e^34) can pass what llround() or a 64-bit total holds: the scale is
  // then halved until the rank's weights fit (the shares change by rounding only).
  double scale = 1 << 20;
  while (!quantise(scratch.noisy, order, scale, scratch)) scale /= 2;
  const std::uint64_t total = scratch.cumulative.back();
  scratch.guide.build(scratch.cumulative);
  const DrawsBelow below_total(total);
  std::fill(row, row + E, 0);
  const std::int64_t draws = static_cast<std::int64_t>(spec.tokens_per_rank) * spec.top_k;
  for (std::int64_t d = 0; d < draws; ++d) ++row[scratch.guide.find(below_total(random))];
}

}  // namespace

namespace synthetic_trace_detail {

void generate_records(const SyntheticTraceSpec& spec, const std::vector<double>& popularity,
                      const std::vector<std::vector<ExpertId>>& order, int first, int count,
                      int threads, std::uint64_t per_task, SplitMix64& random,
                      std::vector<TokenCount>& values) {
  const int R = spec.num_ranks, E = spec.num_experts;
  const std::int64_t tasks = static_cast<std::int64_t>(count) * R;
  // Where the stream stands before `task` if every task before it took `per_task` values.
  const std::uint64_t start = random.state();
  auto assumed_state = [&](std::int64_t task) {
    return start + static_cast<std::uint64_t>(task) * per_task * SplitMix64::kGamma;
  };
  std::vector<std::uint64_t> end_state(static_cast<std::size_t>(tasks));
  auto run_task = [&](std::int64_t task, SplitMix64& stream, RankScratch& scratch) {
    const int layer = (first + static_cast<int>(task / R)) % spec.num_layers;
    rank_counts(spec, popularity, order[layer], stream, scratch,
                &values[static_cast<std::size_t>(task) * E]);
    end_state[static_cast<std::size_t>(task)] = stream.state();
  };
  std::vector<RankScratch> scratch(static_cast<std::size_t>(std::max(1, threads)));
  run_tasks(tasks, threads, [&](std::int64_t task, int worker) {
    SplitMix64 stream(assumed_state(task));
    run_task(task, stream, scratch[static_cast<std::size_t>(worker)]);
  });

  std::int64_t task = 0;
  while (task < tasks && end_state[static_cast<std::size_t>(task)] == assumed_state(task + 1)) {
    ++task;
  }
  if (task == tasks) {
    random = SplitMix64(end_state.back());
    return;
  }
  // Task `task` started right and ended elsewhere: the rest, in order, from where it ended.
  SplitMix64 stream(end_state[static_cast<std::size_t>(task)]);
  for (++task; task < tasks; ++task) run_task(task, stream, scratch[0]);
  random = stream;
}

}  // namespace synthetic_trace_detail

std::int64_t write_synthetic_trace(const SyntheticTraceSpec& spec, const std::string& out,
                                   int threads, ProgressDisplay progress) {
  check_synthetic_trace_spec(spec);
  const int E = spec.num_experts, R = spec.num_ranks;
  SplitMix64 random(spec.seed);
  const std::vector<double> popularity = popularity_weights(spec);

  // Per layer: which expert holds each popularity position. Layer 0 is a seeded shuffle; each
  // next layer keeps a `layer_correlation` share of the previous order and reshuffles the rest.
  std::vector<std::vector<ExpertId>> order(spec.num_layers, std::vector<ExpertId>(E));
  std::iota(order[0].begin(), order[0].end(), 0);
  for (int i = E - 1; i > 0; --i)
    std::swap(order[0][i], order[0][random.below(static_cast<std::uint64_t>(i) + 1)]);
  for (int l = 1; l < spec.num_layers; ++l) {
    order[l] = order[l - 1];
    swap_fraction(order[l], 1.0 - spec.layer_correlation, random);
  }

  TraceWriter writer(out, synthetic_trace_metadata(spec), progress);
  // Records are generated a batch at a time, at most 64 and 16 MiB of counts (4 MiB at R = 32,
  // E = 256), so that memory stays bounded however long the trace and large the cluster.
  const std::size_t record_values = static_cast<std::size_t>(R) * E;
  const std::size_t batch_values = (std::size_t{16} << 20) / sizeof(TokenCount);
  const int records_per_step = spec.microbatches * spec.num_layers;
  const int batch = static_cast<int>(
      std::max<std::size_t>(1, std::min<std::size_t>({static_cast<std::size_t>(records_per_step),
                                                      64, batch_values / record_values})));
  std::vector<TokenCount> values(static_cast<std::size_t>(batch) * record_values);
  const std::uint64_t values_per_task =
      2 * static_cast<std::uint64_t>(E) +
      static_cast<std::uint64_t>(spec.tokens_per_rank) * static_cast<std::uint64_t>(spec.top_k);
  for (int step = 0; step < spec.steps; ++step) {
    if (step > 0) {
      for (auto& layer_order : order) swap_fraction(layer_order, spec.drift_per_step, random);
    }
    for (int first = 0; first < records_per_step; first += batch) {
      const int count = std::min(batch, records_per_step - first);
      synthetic_trace_detail::generate_records(spec, popularity, order, first, count, threads,
                                               values_per_task, random, values);
      for (int i = 0; i < count; ++i) {
        const auto begin = values.begin() + static_cast<std::ptrdiff_t>(i * record_values);
        writer.add(RoutingCounts(
            R, E,
            std::vector<TokenCount>(begin, begin + static_cast<std::ptrdiff_t>(record_values))));
      }
    }
  }
  writer.finish();
  return writer.metadata().num_records();
}

}  // namespace topoep
