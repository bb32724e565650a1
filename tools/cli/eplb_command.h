#pragma once
// `topoep eplb`: DeepSeek's EPLB (C++ reimplementation) on a weight file.

#include <CLI/CLI.hpp>

namespace topoep {

void add_eplb_command(CLI::App& app);

}  // namespace topoep
