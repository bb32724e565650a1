#include "sim/simulation.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <vector>

#include "common/atomic_file.h"
#include "common/file_input_error.h"
#include "sim/csv_rows.h"
#include "sim/pipeline_layout.h"
#include "sim/pipeline_schedule.h"
#include "sim/solver_cost.h"
#include "sim/timeline.h"
#include "solver/input_error.h"
#include "traces/trace_reader.h"

namespace topoep {
namespace {

nlohmann::json ring_traffic_json(const RingTraffic& traffic) {
  return {{"time_us", static_cast<double>(traffic.time_ps) / 1e6},
          {"nvlink_bytes_per_gpu", traffic.nvlink_bytes_per_gpu},
          {"ib_bytes_per_gpu", traffic.ib_bytes_per_gpu}};
}

namespace fs = std::filesystem;

nlohmann::json run_description(const SimulationRequest& request, const TraceMetadata& metadata,
                               const CostModel& cost) {
  const SimConfig& c = request.config;
  const bool deduplicated = c.options.dispatcher == Dispatcher::kDeepEP;
  const CostParams& p = cost.solver_params();
  const AttentionEfficiency attention = attention_efficiency_at(c.topology, c.model);
  nlohmann::json sim_options = sim_options_json(c.options);
  sim_options["data_parallel_routing"] = routing_groups(c, metadata) > 1 ? "per group" : "alike";
  sim_options["pipeline_layers"] = stage_layer_counts(
      metadata.num_layers, c.options.pipeline_chunks(), c.options.pipeline_layers);
  return {
      {"trace", request.trace},
      {"trace_metadata", trace_metadata_to_json(metadata)},
      {"topology", c.topology.name},
      // What the memory a GPU holds is compared with (decimal GB; 0: not known).
      {"gpu_hbm_capacity_gb", c.topology.gpu.hbm_capacity_gb},
      {"model", c.model.name},
      // The model's or --fp8-gemms' (ModelSpec::fp8_gemms).
      {"gemm_precision", c.model.fp8_gemms ? "fp8" : "bf16"},
      // The attention core's fractions of the bf16 peak at the model's sequence length (the
      // topology's curve, or the GEMM curve's best without one).
      {"attention_efficiency",
       {{"forward", attention.forward},
        {"backward", attention.backward},
        {"from", c.topology.attention_efficiency.empty() ? "gemm_curve" : "topology"}}},
      {"planners", c.planners},
      {"slots_per_rank", c.slots_per_rank},
      {"sim_options", sim_options},
      // Each stage's most activations held at once, in layer-microbatches (the same for every
      // planner: the schedule's order decides it).
      {"pipeline_peak_activations",
       pipeline_peak_activations(
           c.options,
           stage_layer_counts(metadata.num_layers, c.options.pipeline_chunks(),
                              c.options.pipeline_layers),
           metadata.microbatches)},
      {"planner_options",
       {{"eplb_period_steps", c.planner_options.eplb_period_steps},
        {"eplb_window_steps", c.planner_options.eplb_window_steps},
        {"eplb_groups", eplb_groups_name(c.planner_options.eplb_groups)},
        {"host_roundtrip_us", c.planner_options.host_roundtrip_us},
        {"eplb_cpu_us_per_layer", c.planner_options.eplb_cpu_us_per_layer},
        {"topoep_solve_us", c.planner_options.topoep_solve_us},
        {"topoep_replica_uses", c.planner_options.topoep_replica_uses},
        {"topoep_ib_load_slack", topoep_ib_load_slack(c.planner_options, deduplicated)},
        {"topoep_ib_opened_run", topoep_ib_opened_run(c.planner_options, deduplicated) ? 1 : 0},
        {"topoep_max_moves", c.planner_options.topoep_max_moves}}},
      {"solver_cost",
       {{"compute_ps_per_token", p.compute_ps_per_token},
        {"dispatch_bytes_per_token", p.dispatch_bytes_per_token},
        {"combine_bytes_per_token", p.combine_bytes_per_token},
        {"replica_weight_bytes", p.replica_weight_bytes},
        {"replica_gradient_bytes", p.replica_gradient_bytes},
        {"backward_compute_factor", p.backward_compute_factor},
        {"backward_bytes_per_token", p.backward_bytes_per_token},
        {"weight_overlap_ps", p.weight_overlap_ps},
        {"gradient_overlap_ps", p.gradient_overlap_ps}}},
      {"dense_sync",
       {{"gradients", ring_traffic_json(cost.dense_gradient_sync())},
        {"parameter_gather", ring_traffic_json(cost.dense_param_gather())},
        {"expert_gradients", ring_traffic_json(cost.expert_gradient_sync())},
        {"expert_parameter_gather", ring_traffic_json(cost.expert_param_gather())}}},
  };
}

// Streams the CSV rows, and the timeline's step, into temporaries.
class OutputObserver : public ReplayObserver {
 public:
  OutputObserver(const SimulationRequest& request, SimulationResult& result)
      : request_(request), result_(result) {
    if (!request.out_dir.empty()) {
      per_layer_ = std::make_unique<AtomicFile>(request.out_dir + "/per_layer.csv");
      per_step_ = std::make_unique<AtomicFile>(request.out_dir + "/per_step.csv");
      per_layer_->write(per_layer_csv_header());
      per_step_->write(per_step_csv_header());
      if (request.rank_loads) {
        rank_loads_ = std::make_unique<AtomicFile>(request.out_dir + "/rank_loads.csv");
        rank_loads_->write(rank_loads_csv_header(request.config.topology.num_gpus()));
      }
    }
    if (!request.timeline.empty()) timeline_ = std::make_unique<AtomicFile>(request.timeline);
  }

  void on_start(const TraceMetadata& metadata, const CostModel& cost) override {
    result_.metadata = metadata;
    result_.run = run_description(request_, metadata, cost);
    cost_.emplace(cost);
    if (request_.config.options.pipeline_stages > 1) {
      profiles_.resize(request_.config.planners.size());
    }
  }

  void on_step(const StepResult& step) override {
    result_.summary.add(step);
    for (std::size_t p = 0; p < profiles_.size(); ++p) {
      if (request_.config.planners[p] != "ideal")
        profiles_[p].add(step, static_cast<int>(p), *cost_);
    }
    if (step.explained) result_.explained = step.explained;
    if (per_layer_) {
      per_layer_->write(per_layer_csv_rows(step, request_.config.planners));
      per_step_->write(per_step_csv_rows(step, request_.config.planners));
    }
    if (rank_loads_) rank_loads_->write(rank_loads_csv_rows(step, request_.config.planners));
    if (timeline_ && step.step == request_.timeline_step) {
      write_step_timeline(step, request_.config.planners, request_.config.topology.view(),
                          [&](const std::string& text) { timeline_->write(text); });
      timeline_written_ = true;
    }
  }

  // Writes the remaining files and renames everything into place.
  void commit() {
    advise_pipeline_layouts();
    std::unique_ptr<AtomicFile> summary;
    if (per_layer_) {
      summary = std::make_unique<AtomicFile>(request_.out_dir + "/summary.json");
      nlohmann::json json = result_.summary.to_json(result_.run);
      add_pipeline_advice(json);
      summary->write(json.dump(2) + "\n");
    }
    if (timeline_ && !timeline_written_) timeline_->write(empty_timeline());
    commit_all(
        {per_layer_.get(), per_step_.get(), rank_loads_.get(), summary.get(), timeline_.get()});
    // The directory holds one run: an earlier run's rank_loads.csv beside this run's tables
    // would be read (by the notebooks and tools/plot) as this run's.
    if (per_layer_ && !rank_loads_) {
      std::error_code ignored;
      result_.removed_stale_rank_loads = fs::remove(request_.out_dir + "/rank_loads.csv", ignored);
    }
  }

 private:
  void advise_pipeline_layouts() {
    const SimOptions& sim = request_.config.options;
    result_.pipeline_advice.assign(profiles_.size(), std::nullopt);
    for (std::size_t p = 0; p < profiles_.size(); ++p) {
      const LayerWorkProfile& profile = profiles_[p];
      if (profile.steps == 0) continue;  // the ideal
      PipelineLayoutAdvice advice;
      const int stages = sim.pipeline_stages;
      const std::vector<int> now = stage_layer_counts(result_.metadata.num_layers,
                                                      sim.pipeline_chunks(), sim.pipeline_layers);
      const int microbatches = result_.metadata.microbatches;
      advice.activations_now = pipeline_layout_activations(now, stages, *cost_, microbatches);
      advice.max_activations = request_.advice_max_activations > 0 ? request_.advice_max_activations
                                                                   : advice.activations_now;
      // What a layout's busiest GPU would hold: its expert activations at the rate this run's
      // layout held them per layer-microbatch, and the most token buffers a stage added.
      const std::vector<StageMemory>& run = result_.summary.planners()[p].stage_memory;
      const Bytes rate = activation_bytes_per_layer_microbatch(
          run, pipeline_peak_activations(sim, now, microbatches));
      Bytes buffers = 0;
      for (const StageMemory& stage : run) buffers = std::max(buffers, stage.token_buffers);
      const int slots =
          planner_reserves_slots(request_.config.planners[p]) ? request_.config.slots_per_rank : 0;
      const auto stage_memory = [&](const std::vector<int>& layout) {
        return pipeline_layout_memory(layout, stages, *cost_, microbatches, slots, rate, buffers);
      };
      const auto memory = [&](const std::vector<int>& layout) {
        const std::vector<Bytes> stages_held = stage_memory(layout);
        return *std::max_element(stages_held.begin(), stages_held.end());
      };
      advice.memory_now = memory(now);
      advice.max_gb = request_.advice_max_gb;
      LayoutExcess excess;
      if (advice.max_gb > 0) {
        const Bytes cap = static_cast<Bytes>(std::floor(advice.max_gb * 1e9));
        // Summed over the stages, so that relieving any stage over the cap ranks a layout
        // closer to fitting.
        excess = [&, cap](const std::vector<int>& layout) {
          Bytes over = 0;
          for (const Bytes held : stage_memory(layout)) over += std::max<Bytes>(0, held - cap);
          return over;
        };
      }
      advice.layers = advised_stage_layers(profile, now, stages, *cost_, kExhaustiveStageLayouts,
                                           advice.max_activations, excess);
      advice.predicted_now = predicted_pipeline_step(profile, now, stages, *cost_);
      if (!advice.layers.empty()) {
        advice.predicted_advised = predicted_pipeline_step(profile, advice.layers, stages, *cost_);
        advice.activations_advised =
            pipeline_layout_activations(advice.layers, stages, *cost_, microbatches);
        advice.memory_advised = memory(advice.layers);
      }
      result_.pipeline_advice[p] = advice;
    }
  }

  // summary.json: each advised planner's advised_pipeline_layers and predicted steps.
  void add_pipeline_advice(nlohmann::json& json) const {
    for (nlohmann::json& entry : json["planners"]) {
      const auto name = entry["planner"].get<std::string>();
      const auto& planners = request_.config.planners;
      const std::size_t p = static_cast<std::size_t>(
          std::find(planners.begin(), planners.end(), name) - planners.begin());
      if (p >= result_.pipeline_advice.size() || !result_.pipeline_advice[p]) continue;
      const PipelineLayoutAdvice& advice = *result_.pipeline_advice[p];
      entry["advised_pipeline_layers"] = advice.layers;
      entry["predicted_step_us"] = {
          {"now", static_cast<double>(advice.predicted_now) / 1e6},
          {"advised", advice.layers.empty()
                          ? nlohmann::json()
                          : nlohmann::json(static_cast<double>(advice.predicted_advised) / 1e6)}};
      entry["pipeline_peak_activations"] = {
          {"cap", advice.max_activations},
          {"now", advice.activations_now},
          {"advised",
           advice.layers.empty() ? nlohmann::json() : nlohmann::json(advice.activations_advised)}};
      entry["pipeline_gpu_memory"] = {
          {"cap_gb", advice.max_gb > 0 ? nlohmann::json(advice.max_gb) : nlohmann::json()},
          {"now", advice.memory_now},
          {"advised",
           advice.layers.empty() ? nlohmann::json() : nlohmann::json(advice.memory_advised)}};
    }
  }

  const SimulationRequest& request_;
  SimulationResult& result_;
  std::unique_ptr<AtomicFile> per_layer_, per_step_, rank_loads_, timeline_;
  bool timeline_written_ = false;
  std::optional<CostModel> cost_;  // a copy of the replay's, which ends before commit()
  // Per planner, with pipeline stages (pipeline_layout.h).
  std::vector<LayerWorkProfile> profiles_;
};

}  // namespace

SimulationResult run_simulation(const SimulationRequest& request) {
  SimulationResult result{TraceMetadata{},
                          nlohmann::json::object(),
                          RunSummary(request.config.planners),
                          0,
                          false,
                          std::nullopt,
                          {}};
  SimConfig config = request.config;
  // Plan hashes are per_layer.csv's column: a run that writes no files need not hash its plans.
  if (request.out_dir.empty()) config.plan_hashes = false;
  if (!request.timeline.empty()) {
    if (request.timeline_step < 0) throw InputError("timeline_step", "must not be negative");
    config.detail_step = request.timeline_step;
  }
  // Every check that can fail before the replay runs first, so a mistake costs no time.
  TraceReader reader(request.trace);
  const TraceMetadata& metadata = reader.metadata();
  check_sim_config(config, metadata);
  if (!request.timeline.empty() && request.timeline_step >= metadata.steps) {
    throw InputError("timeline_step", "the trace has " + std::to_string(metadata.steps) +
                                          " steps (0 to " + std::to_string(metadata.steps - 1) +
                                          ")");
  }
  if (request.rank_loads && request.out_dir.empty()) {
    throw InputError("rank_loads", "needs an output directory (--out)");
  }
  bool created_dir = false;
  if (!request.out_dir.empty()) {
    std::error_code error;
    if (fs::exists(request.out_dir) && !fs::is_directory(request.out_dir)) {
      throw FileInputError(request.out_dir, "", "exists and is not a directory");
    }
    created_dir = fs::create_directories(request.out_dir, error);
    if (error) throw FileInputError(request.out_dir, "", "cannot be created: " + error.message());
  }
  try {
    SimulationRequest effective = request;
    effective.config = config;
    OutputObserver observer(effective, result);
    result.records = replay_trace(reader, config, observer);
    observer.commit();
  } catch (...) {
    if (created_dir) {
      std::error_code ignored;
      fs::remove(request.out_dir, ignored);  // only if still empty
    }
    throw;
  }
  return result;
}

}  // namespace topoep
