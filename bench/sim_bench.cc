// Replay throughput of the simulator, one core: layer-records per second through one planner
// (read, plan, price, aggregate), on a seeded synthetic trace at DeepSeek-V3's shape on the
// paper's cluster (E = 256, R = 32, top-8, 4096 tokens per GPU). With TOPOEP_BENCH_TRACE set,
// also on your own trace (register_own_trace_benchmarks()).

#include <benchmark/benchmark.h>

#include <exception>
#include <filesystem>
#include <iostream>

#include "bench/own_inputs.h"
#include "common/temp_path.h"
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

// Generated once per run, removed when the program exits (TempPath).
const std::string& bench_trace() {
  static const TempPath trace("topoep-sim-bench-trace");
  static const std::string path = [] {
    const std::string& out = trace.path();
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
                 const PlannerOptions& options,
                 Dispatcher dispatcher = Dispatcher::kPerAssignment) {
  SimConfig config;
  config.plan_hashes = plan_hashes;
  config.options.dispatcher = dispatcher;
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

// DeepEP's dispatch (sim/README.md, "Dispatchers"), without plan hashes: its sends are counted
// from each plan's routes, which the planners then write.
void BM_ReplayDeepep(benchmark::State& state, const std::string& planner) {
  time_replay(state, planner, false, PlannerOptions{}, Dispatcher::kDeepEP);
}
BENCHMARK_CAPTURE(BM_ReplayDeepep, topoep_no_hash, std::string("topoep"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ReplayDeepep, static_no_hash, std::string("static"))
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

// TopoEP at the solver's 1% IB slack and at `simulate`'s default 5% per assignment
// (PlannerOptions::topoep_ib_load_slack, in thousandths), without plan hashes: what the
// relaxed pass's longer trades cost the solver (solver/DECISIONS.md, "The planners' slack").
void BM_ReplayTopoepSlack(benchmark::State& state) {
  PlannerOptions options;
  options.topoep_ib_load_slack = static_cast<double>(state.range(0)) / 1000;
  time_replay(state, "topoep", false, options);
}
BENCHMARK(BM_ReplayTopoepSlack)->Arg(10)->Arg(50)->Unit(benchmark::kMillisecond);

// Whether a replay of your own trace failed (a bad record): the program then exits 1.
bool own_trace_failed = false;

// Your own trace: TOPOEP_BENCH_TRACE names a trace directory, replayed whole through each
// planner in turn (without plan hashes, as a sweep runs) on the cluster, model and spare slots
// of bench/own_inputs.h. Returns false, having said why on stderr, where the trace does not fit
// them (checked against its metadata before anything is timed); a bad record ends its
// benchmark with the reader's error.
bool register_own_trace_benchmarks() {
  const std::string path = env_or("TOPOEP_BENCH_TRACE", "");
  if (path.empty()) return true;
  static SimConfig config;
  try {
    config.topology = own_topology();
    config.model = own_model();
    config.slots_per_rank = own_slots();
    config.plan_hashes = false;
    config.threads = 1;
    config.planners = {"topoep"};
    check_sim_config(config, TraceReader(path).metadata());
  } catch (const std::exception& error) {
    std::cerr << "sim_bench: TOPOEP_BENCH_TRACE=" << path << ": " << error.what() << "\n";
    return false;
  }
  for (const char* planner : {"topoep", "static", "eplb", "eplb-microbatch", "shadowing"}) {
    auto replay = [path, planner](benchmark::State& state) {
      SimConfig own = config;
      own.planners = {planner};
      std::int64_t records = 0;
      for (auto _ : state) {
        Discard discard;
        try {
          records += replay_trace(path, own, discard);
        } catch (const std::exception& error) {
          own_trace_failed = true;
          state.SkipWithError(error.what());
          break;
        }
      }
      state.counters["records_per_s"] =
          benchmark::Counter(static_cast<double>(records), benchmark::Counter::kIsRate);
    };
    benchmark::RegisterBenchmark((std::string("BM_ReplayOwnTrace/") + planner).c_str(), replay)
        ->Unit(benchmark::kMillisecond);
  }
  return true;
}

}  // namespace
}  // namespace topoep

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (!topoep::register_own_trace_benchmarks()) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return topoep::own_trace_failed ? 1 : 0;
}
