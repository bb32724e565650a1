// Memory of a simulation as `topoep simulate --out DIR` runs it (sim/simulation.h: replay,
// summary, per_layer.csv and per_step.csv), on one thread: the most heap it holds at once
// above what was live before it began (bench/heap_peak.h), for traces of growing length and
// growing chunks. Issue 6 asks for memory bounded by the trace chunk size: the peak should
// follow the chunk and not the number of records.

#include <benchmark/benchmark.h>

#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "bench/heap_peak.h"
#include "common/temp_path.h"
#include "models/model_json.h"
#include "sim/simulation.h"
#include "topologies/topology_presets.h"
#include "traces/safetensors.h"
#include "traces/synthetic_trace.h"
#include "traces/trace_reader.h"
#include "traces/trace_writer.h"

namespace topoep {
namespace {

// A cluster and a model depth at DeepSeek-V3's expert shape (256 experts, top-8).
struct Shape {
  const char* topology;  // preset
  int ranks;             // its GPUs
  int layers;            // MoE layers a microbatch
};
// The paper's 32 GPUs with 8 layers, and 64 GPUs with DeepSeek-V3's 58 MoE layers, where one
// microbatch of counts (58 x 64 x 256 counts) outweighs the chunk.
constexpr Shape kSmall{"h800-4x8", 32, 8};
constexpr Shape kDeep{"h100-8x8", 64, 58};

// The synthetic trace of `steps` steps of `shape` (2 microbatches a step, 1,024 tokens per GPU;
// U16 counts: 512 bytes per rank of a record), rewritten in chunks of `records_per_chunk`
// records. Made once per shape, removed at exit.
const std::string& bench_trace(const Shape& shape, int steps, int records_per_chunk) {
  static std::map<std::tuple<int, int, int, int>, std::unique_ptr<TempPath>> traces;
  std::unique_ptr<TempPath>& trace = traces[{shape.ranks, shape.layers, steps, records_per_chunk}];
  if (trace == nullptr) {
    const TempPath synthetic("topoep-sim-memory-synth");
    SyntheticTraceSpec spec;  // 256 experts, top-8, 8 GPUs a node: the defaults
    spec.num_ranks = shape.ranks;
    spec.num_layers = shape.layers;
    spec.microbatches = 2;
    spec.steps = steps;
    spec.tokens_per_rank = 1024;
    spec.seed = 5;
    write_synthetic_trace(spec, synthetic.path());
    TraceReader reader(synthetic.path());
    TraceMetadata metadata = reader.metadata();
    metadata.records_per_chunk = records_per_chunk;
    trace = std::make_unique<TempPath>("topoep-sim-memory-trace");
    TraceWriter writer(trace->path(), metadata);
    for (TraceRecord record; reader.next(record);) writer.add(record.counts);
    writer.finish();
  }
  return trace->path();
}

// Args: steps, records per chunk. The peak is counted from what was live before the first
// simulation: buffers a simulation leaves for the next on its thread (the TopoEP solver's
// workspace, solver/README.md) count in every run, not only in the first.
void BM_SimulatePeakHeap(benchmark::State& state, Shape shape, std::vector<std::string> planners) {
  static const std::int64_t baseline = bench::live_heap_bytes();
  const int steps = static_cast<int>(state.range(0));
  const int records_per_chunk = static_cast<int>(state.range(1));
  const TempPath out("topoep-sim-memory-out");
  SimulationRequest request;
  request.trace = bench_trace(shape, steps, records_per_chunk);
  request.config.topology = load_topology(shape.topology);
  request.config.model = load_model("deepseek-v3");
  request.config.planners = std::move(planners);
  // Each thread holds the tasks it runs: with more, the peak would follow their scheduling.
  request.config.threads = 1;
  request.out_dir = out.path();
  std::int64_t peak = 0, records = 0;
  for (auto _ : state) {
    bench::reset_heap_peak();
    const SimulationResult result = run_simulation(request);
    peak = bench::peak_heap_bytes() - baseline;
    records = result.records;
  }
  const TraceMetadata metadata = TraceReader(request.trace).metadata();
  const double mib = 1 << 20;
  state.counters["records"] = static_cast<double>(records);
  state.counters["chunk_MiB"] = static_cast<double>(records_per_chunk) * metadata.num_ranks *
                                metadata.num_experts * dtype_size(metadata.dtype) / mib;
  state.counters["peak_heap_MiB"] = static_cast<double>(peak) / mib;
}
// As the demo runs them.
std::vector<std::string> every_planner() {
  return {"topoep", "eplb", "eplb-microbatch", "shadowing", "static", "ideal"};
}

// The static planner alone, first (the TopoEP solver's workspace, once made, stays with the
// thread): what the replay holds whatever the planners.
BENCHMARK_CAPTURE(BM_SimulatePeakHeap, static, kSmall, std::vector<std::string>{"static"})
    ->Args({64, 64})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

// Every planner: 64 to 1,024 records in chunks of 64, then 1,024 records in chunks of 16 to 256.
BENCHMARK_CAPTURE(BM_SimulatePeakHeap, all, kSmall, every_planner())
    ->Args({4, 64})
    ->Args({16, 64})
    ->Args({64, 64})
    ->Args({64, 16})
    ->Args({64, 256})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

// Every planner on 64 GPUs with 58 layers: 232 to 3,712 records in chunks of one microbatch
// (58 records, 1.8 MiB). EPLB's window of per-step loads (10 steps by default) fills at the
// tenth step.
BENCHMARK_CAPTURE(BM_SimulatePeakHeap, all_64gpus_58layers, kDeep, every_planner())
    ->Args({2, 58})
    ->Args({8, 58})
    ->Args({16, 58})
    ->Args({32, 58})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace topoep

BENCHMARK_MAIN();
