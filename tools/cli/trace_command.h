#pragma once
// `topoep trace import|synth|slice|info|validate`: write, summarise and check routing traces.

#include <CLI/CLI.hpp>

namespace topoep {

void add_trace_command(CLI::App& app);

}  // namespace topoep
