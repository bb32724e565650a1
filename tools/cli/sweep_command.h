#pragma once
// `topoep sweep`: run a grid of simulator configurations; `topoep sweep merge`: join shards.

#include <CLI/CLI.hpp>

namespace topoep {

void add_sweep_command(CLI::App& app);

}  // namespace topoep
