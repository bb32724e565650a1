// Replay throughput of the simulator, one core: layer-records per second through one planner
// (read, plan, price, aggregate), on a seeded synthetic trace at DeepSeek-V3's shape on the
// paper's cluster (E = 256, R = 32, top-8, 4096 tokens per GPU).

#include <benchmark/benchmark.h>

#include <filesystem>

#include "models/model_json.h"
#include "sim/replay.h"
#include "topologies/topology_presets.h"
#include "traces/synthetic_trace.h"

namespace topoep {
namespace {

class Discard : public ReplayObserver {
 public:
  void on_start(const TraceMetadata&, const CostModel&) override {}
  void on_step(const StepResult& step) override { benchmark::DoNotOptimize(step.planners.data()); }
};

const std::string& bench_trace() {
  static const std::string path = [] {
    const std::string out =
        (std::filesystem::temp_directory_path() / "topoep-sim-bench-trace").string();
    std::filesystem::remove_all(out);
    SyntheticTraceSpec spec;  // 32 ranks, 256 experts, top-8: the defaults
    spec.num_layers = 8;
    spec.microbatches = 2;
    spec.steps = 2;
    spec.tokens_per_rank = 4096;
    spec.seed = 3;
    write_synthetic_trace(spec, out);
    return out;
  }();
  return path;
}

void time_replay(benchmark::State& state, const std::string& planner, bool plan_hashes,
                 const PlannerOptions& options) {
  SimConfig config;
  config.plan_hashes = plan_hashes;
  config.topology = load_topology("h800-4x8");
  config.model = load_model("deepseek-v3");
  config.planners = {planner};
  config.planner_options = options;
  config.threads = 1;
  const std::string& trace = bench_trace();
  std::int64_t records = 0;
  for (auto _ : state) {
    Discard discard;
    records += replay_trace(trace, config, discard);
  }
  state.counters["records_per_s"] =
      benchmark::Counter(static_cast<double>(records), benchmark::Counter::kIsRate);
}

void BM_Replay(benchmark::State& state, const std::string& planner, bool plan_hashes) {
  time_replay(state, planner, plan_hashes, PlannerOptions{});
}
// With plan hashes (simulate's per_layer.csv) and without (a sweep's totals).
BENCHMARK_CAPTURE(BM_Replay, topoep, std::string("topoep"), true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Replay, topoep_no_hash, std::string("topoep"), false)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Replay, static, std::string("static"), true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Replay, static_no_hash, std::string("static"), false)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Replay, eplb, std::string("eplb"), true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Replay, eplb_no_hash, std::string("eplb"), false)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Replay, shadowing, std::string("shadowing"), true)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Replay, shadowing_no_hash, std::string("shadowing"), false)
    ->Unit(benchmark::kMillisecond);

// TopoEP with each search capped at this many moves (PlannerOptions::topoep_max_moves,
// `simulate --topoep-max-moves`), without plan hashes: the solver's work against the step time
// its plans reach (bench/README.md). The default cap, 4 R (S + 1), is 256 moves here.
void BM_ReplayTopoepCapped(benchmark::State& state) {
  PlannerOptions options;
  options.topoep_max_moves = static_cast<int>(state.range(0));
  time_replay(state, "topoep", false, options);
}
BENCHMARK(BM_ReplayTopoepCapped)
    ->Arg(4)
    ->Arg(8)
    ->Arg(16)
    ->Arg(32)
    ->Arg(64)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace topoep

BENCHMARK_MAIN();
