// Trace I/O throughput in MB/s of trace data (the chunk files' bytes): the writer (import's
// output side) and the streaming reader (trace info, validate, replays). One core.

#include <benchmark/benchmark.h>

#include <filesystem>
#include <fstream>

#include "bench/topk_fixture.h"
#include "traces/sglang_stats.h"
#include "traces/splitmix64.h"
#include "traces/synthetic_routing.h"
#include "traces/synthetic_trace.h"
#include "traces/trace_import.h"
#include "traces/trace_reader.h"
#include "traces/trace_writer.h"

namespace topoep {
namespace {

namespace fs = std::filesystem;

// 64 ranks x 256 experts, 4096 tokens x top-8 per rank (U16): 32 KiB per record; 512 records.
TraceMetadata bench_metadata() {
  TraceMetadata m;
  m.model = "bench";
  m.num_experts = 256;
  m.top_k = 8;
  m.num_ranks = 64;
  m.gpus_per_node = 8;
  m.num_layers = 16;
  m.microbatches = 4;
  m.steps = 8;
  m.tokens_per_rank = 4096;
  m.source = "bench";
  return m;
}

std::vector<RoutingCounts> bench_records() {
  std::vector<RoutingCounts> records;
  for (int i = 0; i < 16; ++i) {
    SyntheticRoutingSpec spec;
    spec.num_ranks = 64;
    spec.num_experts = 256;
    spec.tokens_per_rank = 4096;
    spec.top_k = 8;
    spec.seed = i;
    records.push_back(generate_routing(spec));
  }
  return records;
}

std::int64_t trace_bytes(const std::string& path) {
  std::int64_t bytes = 0;
  for (const auto& entry : fs::directory_iterator(path))
    bytes += static_cast<std::int64_t>(entry.file_size());
  return bytes;
}

void BM_TraceWrite(benchmark::State& state) {
  const std::vector<RoutingCounts> records = bench_records();
  const std::string path = (fs::temp_directory_path() / "topoep_bench_write.trace").string();
  std::int64_t bytes = 0;
  for (auto _ : state) {
    fs::remove_all(path);
    TraceWriter writer(path, bench_metadata());
    for (std::int64_t i = 0; i < writer.metadata().num_records(); ++i)
      writer.add(records[i % records.size()]);
    writer.finish();
    bytes = trace_bytes(path);
  }
  state.SetBytesProcessed(state.iterations() * bytes);
  fs::remove_all(path);
}
BENCHMARK(BM_TraceWrite)->Unit(benchmark::kMillisecond);

void BM_TraceRead(benchmark::State& state) {
  const std::vector<RoutingCounts> records = bench_records();
  const std::string path = (fs::temp_directory_path() / "topoep_bench_read.trace").string();
  fs::remove_all(path);
  {
    TraceWriter writer(path, bench_metadata());
    for (std::int64_t i = 0; i < writer.metadata().num_records(); ++i)
      writer.add(records[i % records.size()]);
    writer.finish();
  }
  const std::int64_t bytes = trace_bytes(path);
  for (auto _ : state) {
    TraceReader reader(path);
    TraceRecord record;
    std::int64_t total = 0;
    while (reader.next(record)) total += record.counts.at(0, 0);
    benchmark::DoNotOptimize(total);
  }
  state.SetBytesProcessed(state.iterations() * bytes);
  fs::remove_all(path);
}
BENCHMARK(BM_TraceRead)->Unit(benchmark::kMillisecond);

// Import of per-token top-k ids (.npy, 8 layers x 262,144 tokens x top-8 int32: 67 MB of input)
// packed onto 64 ranks x 4096 tokens: parse, pack, write. Throughput in MB/s of input read (the
// counts written are far smaller than per-token input).
void BM_ImportTopkNpy(benchmark::State& state) {
  const std::string dir = (fs::temp_directory_path() / "topoep_bench_npy").string();
  fs::remove_all(dir);
  const std::int64_t tokens = 262144, top_k = 8;
  bench::write_topk_npy_layers(dir, 8, tokens, top_k, 256);
  const std::string trace = (fs::temp_directory_path() / "topoep_bench_import.trace").string();
  for (auto _ : state) {
    fs::remove_all(trace);
    import_token_files("topk-npy", dir, 256, 8, ImportShape{64, 8, 4096, 1}, PackingOptions{},
                       trace);
  }
  state.SetBytesProcessed(state.iterations() * 8 * tokens * top_k * 4);
  fs::remove_all(trace);
  fs::remove_all(dir);
}
BENCHMARK(BM_ImportTopkNpy)->Unit(benchmark::kMillisecond);

// The same ids as comma-separated text (8 layers x 262,144 lines, about 19 MB a layer): the
// text importers' parsing. Throughput in MB/s of input read.
void BM_ImportTopkCsv(benchmark::State& state) {
  const std::string dir = (fs::temp_directory_path() / "topoep_bench_csv").string();
  fs::remove_all(dir);
  const std::int64_t bytes = bench::write_topk_csv_layers(dir, 8, 262144, 8, 256);
  const std::string trace = (fs::temp_directory_path() / "topoep_bench_import_csv.trace").string();
  for (auto _ : state) {
    fs::remove_all(trace);
    import_token_files("topk-csv", dir, 256, 8, ImportShape{64, 8, 4096, 1}, PackingOptions{},
                       trace);
  }
  state.SetBytesProcessed(state.iterations() * bytes);
  fs::remove_all(trace);
  fs::remove_all(dir);
}
BENCHMARK(BM_ImportTopkCsv)->Unit(benchmark::kMillisecond);

// The seeded generators, in token-expert assignments drawn per second: a synthetic trace at
// DeepSeek-V3's shape on 32 GPUs (8 layers x 2 microbatches x 2 steps, 4096 tokens x top-8 per
// GPU: 33.5 M draws), and one layer's counts sampled from expert shares (sglang-stats import).
void BM_SynthesizeTrace(benchmark::State& state) {
  SyntheticTraceSpec spec;  // 32 ranks, 256 experts, top-8: the defaults
  spec.num_layers = 8;
  spec.microbatches = 2;
  spec.steps = 2;
  spec.tokens_per_rank = 4096;
  const std::string path = (fs::temp_directory_path() / "topoep_bench_synth.trace").string();
  for (auto _ : state) {
    fs::remove_all(path);
    write_synthetic_trace(spec, path);
  }
  state.counters["assignments_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * spec.num_layers * spec.microbatches * spec.steps *
          spec.num_ranks * spec.tokens_per_rank * spec.top_k,
      benchmark::Counter::kIsRate);
  fs::remove_all(path);
}
BENCHMARK(BM_SynthesizeTrace)->Unit(benchmark::kMillisecond);

void BM_SampleShares(benchmark::State& state) {
  // Zipf-like shares over 256 experts, some of them empty (as in the SGLang files' dense rows).
  std::vector<std::int64_t> shares(256);
  for (int e = 0; e < 256; ++e) shares[e] = e % 17 == 0 ? 0 : 1000000 / (e + 1);
  std::uint64_t seed = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(sample_counts_from_shares(shares, 32, 4096, 8, ++seed));
  }
  state.counters["assignments_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * 32 * 4096 * 8, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SampleShares)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace topoep

BENCHMARK_MAIN();
