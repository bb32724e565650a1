// Trace I/O throughput in MB/s of trace data (the chunk files' bytes): the writer (import's
// output side) and the streaming reader (trace info, validate, replays). One core.

#include <benchmark/benchmark.h>

#include <filesystem>

#include "traces/synthetic_routing.h"
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
  for (const auto& entry : fs::directory_iterator(path)) bytes += static_cast<std::int64_t>(entry.file_size());
  return bytes;
}

void BM_TraceWrite(benchmark::State& state) {
  const std::vector<RoutingCounts> records = bench_records();
  const std::string path = (fs::temp_directory_path() / "topoep_bench_write.trace").string();
  std::int64_t bytes = 0;
  for (auto _ : state) {
    fs::remove_all(path);
    TraceWriter writer(path, bench_metadata());
    for (std::int64_t i = 0; i < writer.metadata().num_records(); ++i) writer.add(records[i % records.size()]);
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
    for (std::int64_t i = 0; i < writer.metadata().num_records(); ++i) writer.add(records[i % records.size()]);
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

}  // namespace
}  // namespace topoep

BENCHMARK_MAIN();
