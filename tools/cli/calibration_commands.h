#pragma once
// `topoep calibrate` (fit the simulator's constants from harness measurements) and
// `topoep compare` (the simulator's per-phase error against them).

#include <CLI/CLI.hpp>

namespace topoep {

void add_calibration_commands(CLI::App& app);

}  // namespace topoep
