#include "tools/cli/topology_command.h"

#include <iostream>
#include <memory>
#include <string>

#include "tools/cli/table.h"
#include "tools/cli/topology_flags.h"
#include "topologies/topology_json.h"
#include "topologies/topology_presets.h"

namespace topoep {
namespace {

std::string link_row_value(const LinkSpec& link) {
  return format_fixed(link.bandwidth_gb_per_s, 1) + " GB/s achieved of " +
         format_fixed(link.spec_gb_per_s, 1) + " spec, alpha " + format_fixed(link.latency_us, 1) +
         " us";
}

}  // namespace

void print_preset_table(std::ostream& out) {
  TextTable table({"preset", "nodes x GPUs", "GPU", "NVLink GB/s", "IB GB/s", "NVLink/IB"});
  for (const std::string& name : topology_preset_names()) {
    const Topology topology = load_topology(name);
    table.add_row(
        {name, std::to_string(topology.nodes) + " x " + std::to_string(topology.gpus_per_node),
         topology.gpu.name, format_fixed(topology.scale_up.bandwidth_gb_per_s, 1),
         format_fixed(topology.scale_out.bandwidth_gb_per_s, 1),
         format_fixed(topology.scale_up.bandwidth_gb_per_s / topology.scale_out.bandwidth_gb_per_s,
                      1) +
             "x"});
  }
  table.print(out);
  out << "\nAny of them on another number of nodes or GPUs per node: --nodes N, --gpus-per-node G\n"
         "(simulate, solve, topology show, calibrate and the harness; topologies/README.md,\n"
         "\"Reshaping a topology\").\n";
}

void print_topology(const Topology& topology, std::ostream& out) {
  out << topology.name << ": " << topology.description << "\n\n";
  TextTable table({"field", "value"});
  table.add_row({"shape", std::to_string(topology.nodes) + " nodes x " +
                              std::to_string(topology.gpus_per_node) +
                              " GPUs = " + std::to_string(topology.num_gpus()) + " GPUs"});
  table.add_row({"scale-up", topology.scale_up.name});
  table.add_row({"  per GPU, one way", link_row_value(topology.scale_up)});
  table.add_row({"scale-out", topology.scale_out.name});
  table.add_row({"  per GPU, one way", link_row_value(topology.scale_out)});
  table.add_row({"GPU", topology.gpu.name});
  table.add_row(
      {"  peak dense", format_fixed(topology.gpu.peak_tflops_bf16, 1) + " TFLOP/s bf16, " +
                           (topology.gpu.peak_tflops_fp8 > 0
                                ? format_fixed(topology.gpu.peak_tflops_fp8, 1) + " TFLOP/s fp8"
                                : std::string("no fp8 tensor cores"))});
  table.add_row({"  HBM", format_fixed(topology.gpu.hbm_bandwidth_gb_per_s, 0) + " GB/s, " +
                              format_fixed(topology.gpu.hbm_capacity_gb, 0) + " GB"});
  const GemmEfficiencyCurve& curve = topology.gemm_efficiency;
  std::string points;
  for (std::size_t i = 0; i < curve.tokens_per_expert.size(); ++i) {
    if (i > 0) points += " ";
    points +=
        format_fixed(curve.tokens_per_expert[i], 0) + ":" + format_fixed(curve.efficiency[i], 3);
  }
  table.add_row({"grouped GEMM efficiency", points});
  const AttentionEfficiencyCurve& attention = topology.attention_efficiency;
  if (attention.empty()) {
    table.add_row(
        {"attention core efficiency", "none given: the GEMM curve's best, forward and backward"});
  } else {
    std::string forward, backward;
    for (std::size_t i = 0; i < attention.sequence_length.size(); ++i) {
      const std::string length = format_fixed(attention.sequence_length[i], 0) + ":";
      forward += (i > 0 ? " " : "") + length + format_fixed(attention.forward[i], 3);
      backward += (i > 0 ? " " : "") + length + format_fixed(attention.backward[i], 3);
    }
    table.add_row({"attention core efficiency", "forward " + forward});
    table.add_row({"  by sequence length", "backward " + backward});
  }
  table.print(out);
  out << "\nsources\n"
      << "  scale-up:  " << topology.scale_up.source << "\n"
      << "  scale-out: " << topology.scale_out.source << "\n"
      << "  GPU:       " << topology.gpu.source << "\n"
      << "  GEMM:      " << curve.source << "\n";
  if (!attention.empty()) out << "  attention: " << attention.source << "\n";
}

void add_topology_command(CLI::App& app) {
  CLI::App* topology = app.add_subcommand("topology", "List, show and validate cluster topologies");
  topology->require_subcommand(1);

  topology->add_subcommand("list", "List the built-in topology presets")->callback([] {
    print_preset_table(std::cout);
  });

  CLI::App* show = topology->add_subcommand("show", "Print a topology preset or file");
  auto show_target = std::make_shared<TopologyFlags>();
  auto show_json = std::make_shared<bool>(false);
  CLI::Option* target =
      show->add_option("topology", show_target->topology, "Preset name or JSON file")->required();
  add_reshape_flags(show, *show_target, target);
  show->add_flag("--json", *show_json,
                 "Print the canonical JSON instead of a table (reshaped: a file to edit)");
  show->callback([show_target, show_json] {
    const Topology loaded = load_topology_flags(*show_target, 0);
    if (*show_json) {
      std::cout << topology_to_json(loaded).dump(2) << "\n";
    } else {
      print_topology(loaded, std::cout);
    }
  });

  CLI::App* validate = topology->add_subcommand("validate", "Check a topology file");
  auto validate_path = std::make_shared<std::string>();
  validate->add_option("file", *validate_path, "Topology JSON file")->required();
  validate->callback([validate_path] {
    const Topology loaded = load_topology_file(*validate_path);
    std::cout << *validate_path << ": valid topology '" << loaded.name << "' (" << loaded.nodes
              << " nodes x " << loaded.gpus_per_node << " GPUs)\n";
  });
}

}  // namespace topoep
