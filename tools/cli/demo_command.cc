#include "tools/cli/demo_command.h"

#include <iostream>

#include "models/model_json.h"
#include "sim/solver_cost.h"
#include "solver/balance_bound.h"
#include "solver/plan_encoding.h"
#include "solver/topoep_solver.h"
#include "tools/cli/table.h"
#include "tools/cli/topology_command.h"
#include "topologies/topology_presets.h"
#include "traces/synthetic_routing.h"

namespace topoep {
namespace {

// The embedded defaults: the paper's 4 x 8 H800 cluster, DeepSeek-V3 dimensions, one spare slot
// per GPU, and four seeded Zipf-skewed microbatch layers (the full replay comes with issue 6).
void run_demo() {
  std::cout << "TopoEP toolkit demo\n\nThe built-in cluster presets:\n\n";
  print_preset_table(std::cout);

  const Topology topology = load_topology("h800-4x8");
  const ModelSpec model = load_model("deepseek-v3");
  const int tokens_per_rank = 1024;
  TopoepProblem problem;
  problem.topology = topology.view();
  problem.placement = Placement::contiguous(model.num_experts, topology.num_gpus(), 1);
  problem.cost = derive_solver_cost(topology, model, tokens_per_rank, true).params;

  std::cout << "\nTopoEP on " << topology.name << " with " << model.name << " (" << tokens_per_rank
            << " tokens per GPU, top-" << model.top_k << ", S = 1), seeded Zipf routing:\n\n";
  TextTable table({"layer", "max/mean static", "TopoEP", "bound", "IB MB static", "TopoEP",
                   "predicted us static", "TopoEP", "new replicas", "plan hash"});
  for (int layer = 0; layer < 4; ++layer) {
    SyntheticRoutingSpec spec;
    spec.num_ranks = topology.num_gpus();
    spec.num_experts = model.num_experts;
    spec.tokens_per_rank = tokens_per_rank;
    spec.top_k = model.top_k;
    spec.seed = 2026 + layer;
    const RoutingCounts counts = generate_routing(spec);
    const LayerPlan result = solve_topoep(problem, counts);
    const double mean = static_cast<double>(counts.total()) / counts.num_ranks();
    table.add_row(
        {std::to_string(layer), format_fixed(result.static_cost.max_mean_load(), 3),
         format_fixed(result.cost.max_mean_load(), 3),
         format_fixed(balance_lower_bound(counts, problem.topology, problem.placement) / mean, 3),
         format_fixed(result.static_cost.ib_dispatch_bytes / 1e6, 1),
         format_fixed(result.cost.ib_dispatch_bytes / 1e6, 1),
         format_fixed(result.static_cost.times.total / 1e6, 1),
         format_fixed(result.cost.times.total / 1e6, 1), std::to_string(result.cost.new_replicas),
         format_plan_hash(plan_hash(result.plan))});
  }
  table.print(std::cout);
  std::cout
      << "\n(predicted us: one MoE layer's forward dispatch + expert compute + combine +\n"
         " exposed replica-weight traffic under the shared cost model; see solver/README.md)\n";
}

}  // namespace

void add_demo_command(CLI::App& app) {
  app.add_subcommand("demo", "Run the main job on the embedded defaults")->callback(run_demo);
}

}  // namespace topoep
