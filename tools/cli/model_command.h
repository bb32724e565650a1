#pragma once
// `topoep model list|show|validate`: the MoE models the cost model prices, and what a model
// file implies on a cluster.

#include <CLI/CLI.hpp>
#include <ostream>

#include "models/model.h"
#include "topologies/topology.h"

namespace topoep {

void add_model_command(CLI::App& app);

// One row per built-in preset: experts, top-k, widths, layers, one expert's weights.
void print_model_preset_table(std::ostream& out);

// Every field of `model`, what the cost model derives from it per token and per replica, and,
// with a topology, those quantities as times on its GPUs and links.
void print_model(const ModelSpec& model, const Topology* topology, std::ostream& out);

}  // namespace topoep
