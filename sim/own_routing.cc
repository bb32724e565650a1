#include "sim/own_routing.h"

#include <algorithm>
#include <filesystem>

#include "common/preset_source.h"
#include "common/text_list.h"
#include "models/model_json.h"
#include "sim/home_layout_check.h"
#include "sim/solver_cost.h"
#include "solver/input_error.h"
#include "topologies/topology_presets.h"
#include "traces/counts_json.h"
#include "traces/trace_reader.h"

namespace topoep {

std::vector<RoutingCounts> read_routing_layers(const std::string& path, int max_records,
                                               std::int64_t* trace_records) {
  if (trace_records != nullptr) *trace_records = 0;
  if (!std::filesystem::is_directory(path)) return read_counts_json(path);
  TraceReader reader(path);
  if (trace_records != nullptr) *trace_records = reader.metadata().num_records();
  std::vector<RoutingCounts> layers;
  TraceRecord record;
  while (static_cast<int>(layers.size()) < max_records && reader.next(record)) {
    layers.push_back(record.counts);
  }
  if (layers.empty()) throw InputError("counts", path + " holds no record");
  return layers;
}

TopoepProblem problem_for_routing(const std::vector<RoutingCounts>& layers,
                                  const Topology& topology, const ModelSpec& model, int slots,
                                  const RoutingInputNames& names, bool weight_cost,
                                  HomeLayout homes) {
  if (layers.empty()) throw InputError("counts", names.routing + " holds no layer");
  const RoutingCounts& first = layers.front();
  if (first.num_experts() != model.num_experts) {
    const std::string experts = std::to_string(first.num_experts()) + " experts";
    throw InputError(names.model,
                     names.routing + " has " + experts + ", model " +
                         quoted_with_origin(model.name, model.origin) + " has " +
                         std::to_string(model.num_experts) +
                         preset_hint(model_presets_fitting(first.num_experts(), 0), experts,
                                     show_command("model", model.name, model.origin)));
  }
  if (first.num_ranks() != topology.num_gpus()) {
    const std::string ranks = std::to_string(first.num_ranks());
    throw InputError(names.topology,
                     names.routing + " has " + ranks + " source ranks (rows), topology " +
                         quoted_with_origin(topology.name, topology.origin) + " has " +
                         std::to_string(topology.num_gpus()) + " GPUs" +
                         preset_hint(topology_presets_with_gpus(first.num_ranks()), ranks + " GPUs",
                                     show_command("topology", topology.name, topology.origin)));
  }
  // Tokens per rank as the counts imply, for the dense window that new replicas' weights hide
  // behind.
  const TokenCount tokens_per_rank = std::max<TokenCount>(
      1, first.total() / (static_cast<TokenCount>(first.num_ranks()) * model.top_k));
  TopoepProblem problem;
  problem.topology = topology.view();
  const int experts = first.num_experts(), gpus = topology.num_gpus();
  require_homes_fit(homes, experts, gpus, names.topology,
                    names.routing + " has " + std::to_string(experts) + " experts, which",
                    " of topology " + quoted_with_origin(topology.name, topology.origin));
  try {
    problem.placement = Placement::contiguous(experts, gpus, slots, homes);
  } catch (const InputError& error) {
    if (error.field() != "slots_per_rank") throw;
    // The same sentence, about the input the caller knows the slots by.
    const std::string what = error.what();
    throw InputError(names.slots, what.substr(error.field().size() + 2));
  }
  problem.cost = derive_solver_cost(topology, model, tokens_per_rank, weight_cost).params;
  for (const RoutingCounts& counts : layers) check_topoep_inputs(problem, counts, {});
  return problem;
}

}  // namespace topoep
