#include "tools/cli/eplb_command.h"

#include <cmath>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "common/flag_errors.h"
#include "common/json_fields.h"
#include "solver/eplb/eplb.h"
#include "tools/cli/table.h"

namespace topoep {
namespace {

struct EplbOptions {
  std::string weights_path;
  EplbParams params;
  bool json = false;
};

// {"weight": [[...experts...], ...layers]}, integers or floats; errors name file and field.
EplbWeights read_weights(const std::string& path) {
  const nlohmann::json document = parse_json_text(read_text_file(path), path);
  JsonObjectReader root(document, path, "");
  if (!root.has("weight")) root.fail("weight", "is missing");
  const nlohmann::json& rows = document["weight"];
  if (!rows.is_array() || rows.empty()) root.fail("weight", "must be a non-empty array of layers");
  EplbWeights weights;
  weights.num_layers = static_cast<int>(rows.size());
  for (std::size_t layer = 0; layer < rows.size(); ++layer) {
    const std::string field = "weight[" + std::to_string(layer) + "]";
    if (!rows[layer].is_array() || rows[layer].empty() || rows[layer].size() != rows[0].size()) {
      throw FileInputError(path, field,
                           "must be an array of one load per expert, as long as weight[0]");
    }
    for (std::size_t e = 0; e < rows[layer].size(); ++e) {
      const nlohmann::json& value = rows[layer][e];
      // EPLB computes in float32 (as the reference's weight.float()): the load must fit it.
      if (!value.is_number() || !std::isfinite(value.get<float>()) || value.get<double>() < 0) {
        throw FileInputError(
            path, field + "[" + std::to_string(e) + "]",
            "must be a non-negative number that float32 holds, got " + value.dump());
      }
      weights.values.push_back(value.get<float>());
    }
  }
  weights.num_experts = static_cast<int>(rows[0].size());
  for (const auto& item : document.items()) {
    if (item.key() != "weight" && item.key() != "comment")
      root.fail(item.key(), "is not a known field");
  }
  return weights;
}

nlohmann::json rows_of(const std::vector<int>& flat, int num_rows, int row_length) {
  nlohmann::json rows = nlohmann::json::array();
  for (int r = 0; r < num_rows; ++r) {
    rows.push_back(
        std::vector<int>(flat.begin() + static_cast<std::ptrdiff_t>(r) * row_length,
                         flat.begin() + static_cast<std::ptrdiff_t>(r + 1) * row_length));
  }
  return rows;
}

void run_eplb(const EplbOptions& options) {
  const EplbWeights weights = read_weights(options.weights_path);
  const EplbResult r = rebalance_experts(weights, options.params);
  if (options.json) {
    nlohmann::json log2phy = nlohmann::json::array();
    for (int layer = 0; layer < r.num_layers; ++layer) {
      log2phy.push_back(rows_of(
          std::vector<int>(r.logical_to_physical.begin() +
                               static_cast<std::ptrdiff_t>(layer) * r.num_experts * r.max_count,
                           r.logical_to_physical.begin() + static_cast<std::ptrdiff_t>(layer + 1) *
                                                               r.num_experts * r.max_count),
          r.num_experts, r.max_count));
    }
    std::cout << nlohmann::json{{"phy2log",
                                 rows_of(r.physical_to_logical, r.num_layers, r.num_replicas)},
                                {"log2phy", log2phy},
                                {"logcnt", rows_of(r.logical_count, r.num_layers, r.num_experts)}}
                     .dump()
              << "\n";
    return;
  }
  const int per_gpu = r.num_replicas / options.params.num_gpus;
  std::cout << "EPLB (" << (r.hierarchical ? "hierarchical" : "global")
            << " policy): " << r.num_experts << " experts onto " << r.num_replicas << " slots, "
            << options.params.num_gpus << " GPUs\n";
  for (int layer = 0; layer < r.num_layers; ++layer) {
    std::cout << "\nlayer " << layer << "\n";
    TextTable table({"GPU", "experts (physical slots in order)", "load"});
    for (int gpu = 0; gpu < options.params.num_gpus; ++gpu) {
      std::string experts;
      double load = 0;
      for (int k = 0; k < per_gpu; ++k) {
        const int p = gpu * per_gpu + k;
        const int e = r.physical_to_logical[static_cast<std::size_t>(layer) * r.num_replicas + p];
        experts += (k > 0 ? " " : "") + std::to_string(e);
        load += weights.values[static_cast<std::size_t>(layer) * r.num_experts + e] /
                r.logical_count[static_cast<std::size_t>(layer) * r.num_experts + e];
      }
      table.add_row({std::to_string(gpu), experts, format_fixed(load, 1)});
    }
    table.print(std::cout);
  }
}

}  // namespace

void add_eplb_command(CLI::App& app) {
  CLI::App* eplb =
      app.add_subcommand("eplb", "DeepSeek's EPLB (rebalance_experts) on a weight file");
  auto options = std::make_shared<EplbOptions>();
  eplb->add_option("--weights", options->weights_path,
                   "JSON {\"weight\": [[...], ...]} (layers x experts)")
      ->required();
  eplb->add_option("--replicas", options->params.num_replicas, "Physical expert slots in total")
      ->required();
  eplb->add_option("--groups", options->params.num_groups, "Expert groups")->required();
  eplb->add_option("--nodes", options->params.num_nodes, "Nodes")->required();
  eplb->add_option("--gpus", options->params.num_gpus, "GPUs in total")->required();
  eplb->add_flag("--json", options->json, "Print phy2log, log2phy and logcnt as JSON");
  eplb->callback([options] {
    naming_flags({{"num_replicas", "--replicas"},
                  {"num_groups", "--groups"},
                  {"num_nodes", "--nodes"},
                  {"num_gpus", "--gpus"}},
                 [&] { run_eplb(*options); });
  });
}

}  // namespace topoep
