#pragma once
// `topoep demo`: the README's main job, on the toolkit's embedded defaults.

#include <CLI/CLI.hpp>

namespace topoep {

void add_demo_command(CLI::App& app);

}  // namespace topoep
