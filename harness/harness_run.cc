#include "harness/harness_run.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "common/atomic_file.h"
#include "harness/cuda/device_planner.h"
#include "sim/home_layout_check.h"
#include "sim/per_layer_schema.h"
#include "sim/replay.h"
#include "sim/solver_cost.h"
#include "solver/input_error.h"
#include "solver/plan_encoding.h"
#include "solver/planners/planner.h"
#include "solver/static_plan.h"
#include "traces/trace_reader.h"

namespace topoep {
namespace {

std::string us(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", value);
  return text;
}

std::string record_name(const TraceRecord& r, std::int64_t index) {
  return "record " + std::to_string(index) + " (step " + std::to_string(r.step) + ", microbatch " +
         std::to_string(r.microbatch) + ", layer " + std::to_string(r.layer) + ")";
}

// The global counts, each rank contributing its own row, as a real system all-gathers them.
RoutingCounts gather_counts(Comm& comm, const RoutingCounts& local) {
  const int E = local.num_experts();
  std::vector<std::int64_t> row(
      local.values().begin() + static_cast<std::ptrdiff_t>(comm.rank()) * E,
      local.values().begin() + static_cast<std::ptrdiff_t>(comm.rank() + 1) * E);
  const std::vector<std::int64_t> all = comm.allgather(row);
  return RoutingCounts(comm.size(), E, std::vector<TokenCount>(all.begin(), all.end()));
}

void check_hashes(Comm& comm, std::uint64_t hash, const std::string& where) {
  const std::vector<std::int64_t> hashes = comm.allgather({static_cast<std::int64_t>(hash)});
  std::string differ;
  for (int r = 1; r < comm.size(); ++r) {
    if (hashes[r] != hashes[0]) {
      differ += " rank " + std::to_string(r) + " " +
                format_plan_hash(static_cast<std::uint64_t>(hashes[r])) + ";";
    }
  }
  if (!differ.empty()) {
    throw HarnessCheckError(where + ": plan hashes differ from rank 0's " +
                            format_plan_hash(static_cast<std::uint64_t>(hashes[0])) + ":" + differ);
  }
}

}  // namespace

std::int64_t run_harness(const HarnessConfig& config, Comm& comm, const LayerFactory& make_layer,
                         const PlannerFactory& make_layer_planner) {
  TraceReader reader(config.trace);
  const TraceMetadata& m = reader.metadata();
  const int R = comm.size();
  if (m.num_ranks != R || config.topology.num_gpus() != R) {
    throw InputError("ranks", "the harness runs one rank per GPU: " + std::to_string(R) +
                                  " MPI ranks, the trace has " + std::to_string(m.num_ranks) +
                                  ", the topology " + std::to_string(config.topology.num_gpus()));
  }
  check_model_fits_trace(config.model, m);
  require_homes_fit(config.homes, m.num_experts, R, "num_experts",
                    "the trace's " + std::to_string(m.num_experts) + " experts", "");
  const TopologyView view = config.topology.view();
  const std::int64_t tokens_per_rank = m.tokens_per_rank > 0 ? m.tokens_per_rank : 1;
  PlannerContext context{
      view, Placement::contiguous(m.num_experts, R, config.slots_per_rank, config.homes),
      derive_solver_cost(config.topology, config.model, tokens_per_rank, true).params,
      m.microbatches};
  context.expert_groups = config.model.expert_groups;
  std::vector<std::unique_ptr<Planner>> planners;  // one per layer: planners keep state
  for (int l = 0; l < m.num_layers; ++l) {
    planners.push_back(make_layer_planner(context));
  }
  // Per layer: the executor that runs the plans, the one that runs the static reference, and
  // the home layout each holds, so that home weights are built only when the layout changes.
  struct LayerState {
    std::unique_ptr<LayerExecutor> planned, reference;
    std::vector<RankId> planned_homes, reference_homes;
  };
  std::vector<LayerState> layers(m.num_layers);
  for (LayerState& state : layers) {
    state.planned = make_layer();
    state.reference = make_layer();
  }
  const auto hold_homes = [](LayerExecutor& executor, std::vector<RankId>& held,
                             const Placement& placement) {
    if (held == placement.home_rank) return;
    executor.set_home(placement);
    held = placement.home_rank;
  };

  std::unique_ptr<AtomicFile> per_layer, per_rank;
  if (comm.rank() == 0 && !config.out_dir.empty()) {
    std::filesystem::create_directories(config.out_dir);
    per_layer = std::make_unique<AtomicFile>(config.out_dir + "/per_layer.csv");
    per_rank = std::make_unique<AtomicFile>(config.out_dir + "/per_rank.csv");
    per_layer->write(per_layer_csv_header());
    per_rank->write(
        "step,microbatch,layer,planner,rank,solve_us,plan_copy_us,weights_us,dispatch_us,"
        "compute_us,combine_us,tokens,nvlink_bytes_out,ib_bytes_out,replicas_received\n");
  }

  TraceRecord record;
  std::int64_t index = 0;
  while ((config.max_records == 0 || index < config.max_records) && reader.next(record)) {
    const std::string where = record_name(record, index);
    RoutingCounts counts = gather_counts(comm, record.counts);
    if (comm.rank() == config.perturb_rank) {
      counts.set(0, 0, counts.at(0, 0) + 1);  // one token more: this rank's plan must differ
    }
    LayerState& state = layers[record.layer];
    LayerExecutor& layer = *state.planned;
    const double solve_start = comm.now_us();
    const PlannerDecision decision =
        planners[record.layer]->plan(RecordId{record.step, record.microbatch}, counts);
    double solve_us = comm.now_us() - solve_start, plan_copy_us = 0;
    // On the device: the solve by CUDA events, and the plan's copy to the host (the host sync
    // that remains) apart.
    if (const auto* device =
            dynamic_cast<const DeviceTopoepPlanner*>(planners[record.layer].get())) {
      solve_us = device->last_times().solve_us;
      plan_copy_us = device->last_times().plan_copy_us;
    }
    const std::uint64_t hash = plan_hash(decision.plan);
    check_hashes(comm, hash, where);

    hold_homes(layer, state.planned_homes, decision.placement);
    // Exactly the replicas the planner counts as in place, as the simulator prices the record:
    // TopoEP's from the step's earlier microbatches, EPLB's layout; shadowing's none, so its
    // shadows are broadcast again on every microbatch, as FasterMoE does. The rest move.
    layer.keep_replicas(decision.resident, decision.plan.slots_per_rank);
    std::vector<float> planned, reference;
    const LayerTimes t = layer.run(decision.plan, decision.placement, decision.weight_delivery,
                                   counts, index, &planned);
    // The same layer with every token at home (untimed): the outputs must agree.
    hold_homes(*state.reference, state.reference_homes, decision.placement);
    state.reference->run(static_plan(counts, decision.placement), decision.placement,
                         WeightDelivery::kFromHome, counts, index, &reference);
    double scale = 1e-30, difference = 0;
    for (std::size_t i = 0; i < planned.size(); ++i) {
      scale = std::max(scale, static_cast<double>(std::abs(reference[i])));
      difference = std::max(difference, static_cast<double>(std::abs(planned[i] - reference[i])));
    }
    const double error = difference / scale;
    const double worst = comm.max(error);
    if (worst > config.tolerance) {
      throw HarnessCheckError(where + ": outputs with the plan differ from the static plan's by " +
                              std::to_string(worst) + " (relative), above the tolerance " +
                              std::to_string(config.tolerance));
    }

    // Phase times: each rank's own, and the slowest rank's (what the simulator predicts).
    const double phases[] = {solve_us,     t.weights_us, t.dispatch_us,
                             t.compute_us, t.combine_us, plan_copy_us};
    double slowest[6];
    for (int i = 0; i < 6; ++i) slowest[i] = comm.max(phases[i]);
    const std::vector<double> tokens = comm.gather(static_cast<double>(t.tokens_processed));
    const std::vector<double> nvlink = comm.gather(static_cast<double>(t.nvlink_bytes_out));
    const std::vector<double> ib = comm.gather(static_cast<double>(t.ib_bytes_out));
    std::vector<std::vector<double>> each(6);
    for (int i = 0; i < 6; ++i) each[i] = comm.gather(phases[i]);
    const std::vector<double> received = comm.gather(t.replicas_received);
    if (per_layer) {
      const std::string id = std::to_string(record.step) + "," + std::to_string(record.microbatch) +
                             "," + std::to_string(record.layer) + "," + config.planner;
      double total_tokens = 0, max_tokens = 0, nvlink_total = 0, ib_total = 0, new_replicas = 0;
      for (int r = 0; r < R; ++r) {
        total_tokens += tokens[r];
        max_tokens = std::max(max_tokens, tokens[r]);
        nvlink_total += nvlink[r];
        ib_total += ib[r];
        new_replicas += received[r];
        per_rank->write(id + "," + std::to_string(r) + "," + us(each[0][r]) + "," + us(each[5][r]) +
                        "," + us(each[1][r]) + "," + us(each[2][r]) + "," + us(each[3][r]) + "," +
                        us(each[4][r]) + "," +
                        std::to_string(static_cast<std::int64_t>(tokens[r])) + "," +
                        std::to_string(static_cast<std::int64_t>(nvlink[r])) + "," +
                        std::to_string(static_cast<std::int64_t>(ib[r])) + "," +
                        std::to_string(static_cast<int>(received[r])) + "\n");
      }
      const double moe = slowest[1] + slowest[2] + slowest[3] + slowest[4];
      const double max_mean = total_tokens > 0 ? max_tokens * R / total_tokens : 1.0;
      // Forward only: moe_us (forward and backward) and the backward columns are left empty
      // (not measured); moe_forward_us is the forward's. No dense compute runs: its columns,
      // dense_forward_us and the last, outside_forward_us, are empty too.
      per_layer->write(
          id + "," + "," + us(slowest[2]) + "," + us(slowest[3]) + "," + us(slowest[4]) + "," +
          us(slowest[1]) + ",,,,,,,,," + us(slowest[0]) + ",," + us(moe + slowest[0]) + "," +
          std::to_string(max_mean) + "," + std::to_string(static_cast<std::int64_t>(nvlink_total)) +
          "," + std::to_string(static_cast<std::int64_t>(ib_total)) + ",,," +
          std::to_string(static_cast<int>(new_replicas)) + "," + format_plan_hash(hash) + ",0,0," +
          us(moe) + ",\n");  // one group; no overlap
    }
    ++index;
  }
  if (per_layer) commit_all({per_layer.get(), per_rank.get()});
  return index;
}

}  // namespace topoep
