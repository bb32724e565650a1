// The synthetic trace generator: seeded and reproducible, calibrated skew, drift and layer
// correlation that behave as documented.

#include "traces/synthetic_trace.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "solver/input_error.h"
#include "tests/input_error_field.h"
#include "traces/trace_reader.h"

namespace topoep {
namespace {

namespace fs = std::filesystem;

std::vector<TraceRecord> generate(const SyntheticTraceSpec& spec, const std::string& name,
                                  int threads = 1) {
  const std::string path = ::testing::TempDir() + "/" + name;
  fs::remove_all(path);
  write_synthetic_trace(spec, path, threads);
  TraceReader reader(path);
  std::vector<TraceRecord> records;
  TraceRecord record;
  while (reader.next(record)) records.push_back(record);
  return records;
}

SyntheticTraceSpec small_spec() {
  SyntheticTraceSpec spec;
  spec.num_ranks = 16;
  spec.num_experts = 64;
  spec.num_layers = 3;
  spec.microbatches = 1;
  spec.steps = 3;
  spec.tokens_per_rank = 512;
  return spec;
}

ExpertId busiest(const RoutingCounts& counts) {
  const auto totals = counts.expert_totals();
  return static_cast<ExpertId>(std::max_element(totals.begin(), totals.end()) - totals.begin());
}

double busiest_over_mean(const RoutingCounts& counts) {
  const auto totals = counts.expert_totals();
  return static_cast<double>(*std::max_element(totals.begin(), totals.end())) * totals.size() /
         static_cast<double>(counts.total());
}

TEST(SyntheticTrace, IsReproducibleFromItsSeed) {
  const auto a = generate(small_spec(), "a.trace");
  const auto b = generate(small_spec(), "b.trace");
  SyntheticTraceSpec other = small_spec();
  other.seed = 2;
  const auto c = generate(other, "c.trace");
  ASSERT_EQ(a.size(), 9u);
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].counts.values(), b[i].counts.values());
  EXPECT_NE(a[0].counts.values(), c[0].counts.values());
}

TEST(SyntheticTrace, IsTheSameForAnyThreadCount) {
  SyntheticTraceSpec spec = small_spec();
  spec.num_layers = 40;  // 80 records a step: more than one batch of 64
  spec.microbatches = 2;
  spec.steps = 2;
  spec.tokens_per_rank = 64;
  const auto serial = generate(spec, "serial.trace");
  for (const int threads : {2, 3, 8}) {
    const auto parallel = generate(spec, "parallel.trace", threads);
    ASSERT_EQ(parallel.size(), serial.size());
    for (std::size_t i = 0; i < serial.size(); ++i) {
      ASSERT_EQ(parallel[i].counts.values(), serial[i].counts.values())
          << threads << " threads, record " << i;
    }
  }
}

// The parallel draws start each (record, rank) where the stream would stand had no value been
// rejected; where one was, the tasks after it are redone in order. Rejections are too rare to
// meet in a test, so a wrong count of values per task stands in for them: every task then ends
// elsewhere than assumed, and the counts must still be the sequential ones.
TEST(SyntheticTrace, ParallelDrawsRecoverFromAWrongGuessOfTheStream) {
  SyntheticTraceSpec spec = small_spec();
  spec.num_layers = 3;
  const std::vector<double> popularity = {8, 4, 2, 1, 1, 1, 1, 1};
  spec.num_experts = static_cast<int>(popularity.size());
  spec.top_k = 2;
  std::vector<std::vector<ExpertId>> order(spec.num_layers);
  for (int l = 0; l < spec.num_layers; ++l) {
    for (ExpertId e = 0; e < spec.num_experts; ++e) {
      order[l].push_back((e + l) % spec.num_experts);
    }
  }
  const std::uint64_t exact = 2 * spec.num_experts + spec.tokens_per_rank * spec.top_k;
  const int count = 5;  // records 1 to 5: layers 1, 2, 0, 1, 2
  std::vector<TokenCount> expected(static_cast<std::size_t>(count) * spec.num_ranks *
                                   spec.num_experts);
  SplitMix64 serial(11);
  synthetic_trace_detail::generate_records(spec, popularity, order, 1, count, 1, exact, serial,
                                           expected);
  for (const std::uint64_t guess : {exact, exact - 1, exact + 7, std::uint64_t{0}}) {
    std::vector<TokenCount> values(expected.size());
    SplitMix64 random(11);
    synthetic_trace_detail::generate_records(spec, popularity, order, 1, count, 4, guess, random,
                                             values);
    EXPECT_EQ(values, expected) << "guessing " << guess << " values a task";
    EXPECT_EQ(random.state(), serial.state()) << "guessing " << guess << " values a task";
  }
}

// A hot log-normal expert times a rank noise of many sigma scales a weight past 64 bits (at
// this spec, over a hundred ranks' weights would): the generator then quantises that rank more
// coarsely instead of overflowing, so every rank still draws exactly its tokens x top-k.
TEST(SyntheticTrace, ExtremeSkewAndNoiseStillDrawEveryToken) {
  SyntheticTraceSpec spec = small_spec();
  spec.popularity = Popularity::kLogNormal;
  spec.hot_ratio = spec.num_experts;
  spec.rank_variation = 4;
  spec.tokens_per_rank = 64;
  const auto serial = generate(spec, "extreme.trace");
  const auto parallel = generate(spec, "extreme-parallel.trace", 3);
  ASSERT_EQ(parallel.size(), serial.size());
  for (std::size_t i = 0; i < serial.size(); ++i) {
    EXPECT_EQ(parallel[i].counts.values(), serial[i].counts.values()) << "record " << i;
    for (RankId rank = 0; rank < spec.num_ranks; ++rank) {
      TokenCount row = 0;
      for (ExpertId e = 0; e < spec.num_experts; ++e) row += serial[i].counts.at(rank, e);
      EXPECT_EQ(row, spec.tokens_per_rank * spec.top_k) << "record " << i << ", rank " << rank;
    }
  }
}

TEST(SyntheticTrace, HitsTheCalibratedHotRatio) {
  for (const Popularity popularity : {Popularity::kZipf, Popularity::kLogNormal}) {
    SyntheticTraceSpec spec = small_spec();
    spec.popularity = popularity;
    spec.rank_variation = 0;
    spec.drift_per_step = 0;
    spec.tokens_per_rank = 4096;
    spec.hot_ratio = 5.0;
    for (const TraceRecord& r : generate(spec, "calibrated.trace")) {
      EXPECT_NEAR(busiest_over_mean(r.counts), 5.0, 0.5);  // sampling noise on 16 x 4096 x 8 draws
    }
  }
  EXPECT_NEAR(zipf_exponent_for(64, 1.0), 0.0, 1e-6);  // a ratio of 1 is uniform
}

TEST(SyntheticTrace, CorrelatedLayersAndNoDriftKeepTheHotExpert) {
  SyntheticTraceSpec spec = small_spec();
  spec.layer_correlation = 1.0;
  spec.drift_per_step = 0.0;
  spec.rank_variation = 0.0;
  const auto records = generate(spec, "fixed.trace");
  for (const TraceRecord& r : records) EXPECT_EQ(busiest(r.counts), busiest(records[0].counts));

  spec.layer_correlation = 0.0;
  spec.drift_per_step = 1.0;
  std::vector<ExpertId> hot;
  for (const TraceRecord& r : generate(spec, "moving.trace")) hot.push_back(busiest(r.counts));
  std::sort(hot.begin(), hot.end());
  EXPECT_GT(std::unique(hot.begin(), hot.end()) - hot.begin(), 3);  // the hot expert moves
}

TEST(SyntheticTrace, RejectsParametersOutOfRange) {
  SyntheticTraceSpec spec = small_spec();
  spec.drift_per_step = 1.5;
  EXPECT_THROW(write_synthetic_trace(spec, ::testing::TempDir() + "/bad.trace"), InputError);
  // Each value is named by its own field (the CLI maps them to flags), with what it was.
  const auto field_for = [](auto set) {
    SyntheticTraceSpec bad = small_spec();
    set(bad);
    return testing::input_error_field([&] { check_synthetic_trace_spec(bad); });
  };
  EXPECT_EQ(field_for([](SyntheticTraceSpec&) {}), "<no error>");
  EXPECT_EQ(field_for([](SyntheticTraceSpec& s) { s.hot_ratio = 0.5; }), "hot_ratio");
  EXPECT_EQ(field_for([](SyntheticTraceSpec& s) { s.gpus_per_node = 5; }), "gpus_per_node");
  EXPECT_EQ(field_for([](SyntheticTraceSpec& s) { s.top_k = s.num_experts + 1; }), "top_k");
  EXPECT_EQ(field_for([](SyntheticTraceSpec& s) { s.num_layers = 0; }), "layers");
  EXPECT_EQ(field_for([](SyntheticTraceSpec& s) { s.microbatches = 0; }), "microbatches");
  EXPECT_EQ(field_for([](SyntheticTraceSpec& s) { s.tokens_per_rank = -1; }), "tokens_per_rank");
  EXPECT_EQ(field_for([](SyntheticTraceSpec& s) { s.rank_variation = 5; }), "rank_variation");
  spec = small_spec();
  spec.top_k = spec.num_experts + 1;
  try {
    check_synthetic_trace_spec(spec);
  } catch (const InputError& error) {
    EXPECT_EQ(std::string(error.what()), "top_k: must be 1 to the " +
                                             std::to_string(spec.num_experts) + " experts (got " +
                                             std::to_string(spec.top_k) + ")");
  }
}

}  // namespace
}  // namespace topoep
