#pragma once
// `topoep topology list|show|validate`.

#include <CLI/CLI.hpp>

#include "topologies/topology.h"

namespace topoep {

void add_topology_command(CLI::App& app);

// One row per built-in preset: shape, GPU and link speeds.
void print_preset_table(std::ostream& out);

// The human-readable description of one topology, constants with their sources.
void print_topology(const Topology& topology, std::ostream& out);

}  // namespace topoep
