#pragma once
// `topoep solve`: plans routing counts read from a file and prints the plans.

#include <CLI/CLI.hpp>

namespace topoep {

void add_solve_command(CLI::App& app);

}  // namespace topoep
