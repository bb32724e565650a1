#include "tools/cli/demo_command.h"

#include <iostream>
#include <memory>

#include "common/parallel_tasks.h"
#include "common/temp_path.h"
#include "models/model_json.h"
#include "sim/simulation.h"
#include "tools/cli/simulation_table.h"
#include "topologies/topology_presets.h"
#include "traces/synthetic_trace.h"

namespace topoep {
namespace {

struct DemoOptions {
  std::string out = "topoep-demo";
  int threads = hardware_threads();
  int steps = 16;
};

// The embedded default trace: DeepSeek-V3's shape (256 experts, top-8, its 58 MoE layers) on the
// paper's 32 GPUs, 4096 tokens per GPU per microbatch (the model preset's), with the generator's
// calibrated skew, drift and layer correlation (traces/README.md). Seeded: the same trace on
// every machine.
SyntheticTraceSpec demo_trace_spec() {
  SyntheticTraceSpec spec;
  spec.num_ranks = 32;
  spec.gpus_per_node = 8;
  spec.num_experts = 256;
  spec.top_k = 8;
  spec.num_layers = 58;
  spec.microbatches = 2;
  spec.steps = 16;
  spec.tokens_per_rank = 4096;
  spec.seed = 2026;
  return spec;
}

void run_demo(const DemoOptions& options) {
  SyntheticTraceSpec spec = demo_trace_spec();
  spec.steps = options.steps;
  const TempPath trace("topoep-demo-trace");
  write_synthetic_trace(spec, trace.path(), options.threads, ProgressDisplay::kTerminal);

  SimulationRequest request;
  request.trace = trace.path();
  request.config.topology = load_topology("h800-4x8");
  request.config.model = load_model("deepseek-v3");
  request.config.planners = {"topoep",    "topoep-flat", "eplb", "eplb-microbatch",
                             "shadowing", "static",      "ideal"};
  request.config.slots_per_rank = 1;
  request.config.threads = options.threads;
  request.config.progress = ProgressDisplay::kTerminal;
  // The default trace is 16 steps long: EPLB replans every 4 steps from the last 4 so that it
  // adapts within it (the toolkit's default is every 10 steps, SGLang's every 1000).
  request.config.planner_options.eplb_period_steps = 4;
  request.config.planner_options.eplb_window_steps = 4;
  request.out_dir = options.out;
  request.timeline = options.out + "/timeline.json";
  request.rank_loads = true;
  request.timeline_step = 1;

  std::cout
      << "TopoEP toolkit demo: " << spec.steps << " training steps x " << spec.microbatches
      << " microbatches x " << spec.num_layers << " MoE layers of seeded synthetic routing\n"
      << "(DeepSeek-V3 shape: " << spec.num_experts << " experts, top-" << spec.top_k << ", "
      << spec.tokens_per_rank << " tokens per GPU per microbatch, busiest expert " << spec.hot_ratio
      << "x the mean)\n"
      << "replayed on h800-4x8 (4 nodes x 8 H800, NVLink 160 GB/s, IB 48.5 GB/s per GPU) "
         "with one spare expert slot per GPU.\nEPLB replans every 4 steps from the last 4.\n\n";
  const SimulationResult result = run_simulation(request);
  print_simulation_table(result.summary, std::cout);
  print_gpu_memory(result.summary, request.config, std::cout);
  std::cout << "(The demo puts every MoE layer on one group of 32 GPUs, the paper's cluster;\n"
               "DeepSeek-V3 trained on 2048 H800s in 16 pipeline stages. The step times compare\n"
               "the planners on those layers; a layout that fits: sim/README.md.)\n";
  print_planner_notes(result.summary, result.metadata.steps, request.config, std::cout);
  std::cout
      << "\nstep ms: one training step's critical path (forward and backward of every MoE\n"
         "layer, dense compute with the model's dense-only layers, planner overhead,\n"
         "optimizer; replica weights where they outlast the attention they hide behind, and\n"
         "the dense gradients' data-parallel all-reduce and the replica gradients' reduction\n"
         "where they outlast the backward's link-idle compute: --weight-overlap,\n"
         "--gradient-overlap, --dense-grad-bytes, --dense-sync, --data-parallel; every\n"
         "all-to-all on the path unless --a2a-overlap runs it behind another microbatch's\n"
         "compute); formulas and the source of every constant: sim/README.md.\n"
         "IB, NVLink GB/step: token dispatch plus replica weights and their gradient\n"
         "reduction; summary.json splits them (TopoEP's IB dispatch is never above static's).\n"
      << "\nWrote " << options.out << "/summary.json, per_layer.csv, per_step.csv, "
      << "rank_loads.csv and timeline.json (step 1; open it in ui.perfetto.dev).\n"
      << "Replay your own trace: tools/topoep simulate --trace DIR --out DIR\n";
}

}  // namespace

void add_demo_command(CLI::App& app) {
  CLI::App* demo = app.add_subcommand(
      "demo", "Run the main job on the embedded defaults: generate a trace, compare every planner");
  auto options = std::make_shared<DemoOptions>();
  demo->add_option("--out", options->out, "Output directory")->capture_default_str();
  demo->add_option("--steps", options->steps, "Training steps in the generated trace")
      ->capture_default_str()
      ->check(CLI::Range(2, 1000));
  demo->add_option("--threads", options->threads, "Host threads (results do not depend on it)")
      ->capture_default_str();
  demo->callback([options] { run_demo(*options); });
}

}  // namespace topoep
