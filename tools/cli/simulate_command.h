#pragma once
// `topoep simulate`: replay a trace through planners and the cluster cost model.

#include <CLI/CLI.hpp>

namespace topoep {

void add_simulate_command(CLI::App& app);

}  // namespace topoep
