#include "tools/cli/demo_command.h"

#include <iostream>

#include "tools/cli/topology_command.h"
#include "topologies/topology_presets.h"

namespace topoep {

// For now the demo shows the clusters the toolkit models: the TopoEP-vs-EPLB replay joins it
// once the solver, baselines, traces and simulator exist (issues 3-6).
void add_demo_command(CLI::App& app) {
  app.add_subcommand("demo", "Run the main job on the embedded defaults")->callback([] {
    std::cout << "TopoEP toolkit demo: the built-in cluster presets\n\n";
    print_preset_table(std::cout);
    std::cout << "\nThe paper's cluster in full:\n\n";
    print_topology(load_topology("h800-4x8"), std::cout);
  });
}

}  // namespace topoep
