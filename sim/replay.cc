#include "sim/replay.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>

#include "common/file_input_error.h"
#include "common/parallel_tasks.h"
#include "common/progress.h"
#include "sim/expert_activations.h"
#include "sim/gradient_reduction.h"
#include "sim/pipeline_schedule.h"
#include "sim/plan_check.h"
#include "solver/input_error.h"
#include "solver/placement.h"
#include "solver/static_plan.h"
#include "traces/trace_reader.h"

namespace topoep {
namespace {

constexpr const char* kIdeal = "ideal";

// One planner instance on one layer, and the replicas it used in the current step (their
// gradients are reduced once, at the step's end).
struct LayerPlanner {
  std::unique_ptr<Planner> planner;
  std::vector<ReplicaInstance> step_replicas;
};

void note_replicas(const PlannerDecision& decision, std::vector<ReplicaInstance>& replicas) {
  const Plan& plan = decision.plan;
  for (RankId rank = 0; rank < plan.num_ranks; ++rank) {
    for (int slot = 0; slot < plan.slots_per_rank; ++slot) {
      const ExpertId expert = plan.replica_at(rank, slot);
      if (expert != kNoExpert) {
        replicas.push_back({expert, decision.placement.home_rank[expert], rank});
      }
    }
  }
}

// The force-balanced bound for one record: compute at the best planner's mean, every transfer
// and every exposed sync or gather no worse than the best planner's, no replicas (see
// solver/planners/ideal.h).
LayerCost ideal_cost(const std::vector<const LayerCost*>& planned) {
  LayerCost ideal = *planned.front();
  for (const LayerCost* cost : planned) {
    ideal.dispatch = std::min(ideal.dispatch, cost->dispatch);
    ideal.combine = std::min(ideal.combine, cost->combine);
    ideal.combine_grad = std::min(ideal.combine_grad, cost->combine_grad);
    ideal.dispatch_grad = std::min(ideal.dispatch_grad, cost->dispatch_grad);
    ideal.compute_mean = std::min(ideal.compute_mean, cost->compute_mean);
    ideal.nvlink_dispatch_bytes =
        std::min(ideal.nvlink_dispatch_bytes, cost->nvlink_dispatch_bytes);
    ideal.ib_dispatch_bytes = std::min(ideal.ib_dispatch_bytes, cost->ib_dispatch_bytes);
    ideal.dense_grad_reduce = std::min(ideal.dense_grad_reduce, cost->dense_grad_reduce);
    ideal.expert_grad_sync = std::min(ideal.expert_grad_sync, cost->expert_grad_sync);
    ideal.dense_param_gather = std::min(ideal.dense_param_gather, cost->dense_param_gather);
    ideal.expert_param_gather = std::min(ideal.expert_param_gather, cost->expert_param_gather);
  }
  ideal.compute = ideal.compute_mean;
  ideal.compute_grad = 2 * ideal.compute;
  ideal.weight_exposed = ideal.grad_reduce = ideal.replica_reduction = ideal.overhead = 0;
  ideal.weight_window_used = 0;
  ideal.group = -1;
  ideal.max_mean_load = 1.0;
  ideal.nvlink_weight_bytes = ideal.ib_weight_bytes = 0;
  ideal.grad_reduce_nvlink_bytes = ideal.grad_reduce_ib_bytes = 0;
  ideal.new_replicas = 0;
  ideal.plan_hash = 0;
  ideal.ranks = RankPhaseTimes{};
  ideal.loads.clear();
  return ideal;
}

class Replay {
 public:
  Replay(const SimConfig& config, const TraceMetadata& metadata, std::int64_t tokens_per_rank)
      : config_(config),
        metadata_(metadata),
        cost_(config.topology, config.model, config.options, tokens_per_rank) {
    const PlannerOptions& options = config.planner_options;
    // Plans are read for their routes only to hash or check them, or to count DeepEP's sends.
    const PlannerContext context{
        config.topology.view(),
        Placement::contiguous(metadata.num_experts, config.topology.num_gpus(),
                              config.slots_per_rank, config.homes),
        cost_.solver_params(),
        metadata.microbatches,
        config.plan_hashes || config.check_plans ||
            config.options.dispatcher == Dispatcher::kDeepEP,
        config.model.expert_groups,
        config.options.dispatcher == Dispatcher::kDeepEP};
    for (std::size_t p = 0; p < config.planners.size(); ++p) {
      if (config.planners[p] == kIdeal) {
        ideal_index_ = static_cast<int>(p);
      } else {
        planned_.push_back(static_cast<int>(p));
      }
    }
    groups_.resize(routing_groups(config, metadata));
    for (Group& group : groups_) {
      group.layers.resize(metadata.num_layers);
      for (auto& layer : group.layers) {
        for (const int p : planned_) {
          layer.push_back({make_planner(config.planners[p], context, options), {}});
        }
      }
    }
    split_.resize(groups_.size() > 1 ? groups_.size() : 0);
    // Chunk c of the layers runs on pipeline stage c mod P (under DualPipeV, the V's stage:
    // SimOptions::chunk_stage()); each stage's GPUs update their own layers (the first chunk's
    // stage the dense-only layers and embedding too, the last chunk's the head), and the step
    // waits for the slowest.
    const SimOptions& sim = config.options;
    chunk_first_ =
        stage_first_layers(metadata.num_layers, sim.pipeline_chunks(), sim.pipeline_layers);
    stage_layers_.resize(static_cast<std::size_t>(sim.pipeline_stages));
    for (int c = 0; c + 1 < static_cast<int>(chunk_first_.size()); ++c) {
      for (int layer = chunk_first_[c]; layer < chunk_first_[c + 1]; ++layer) {
        stage_layers_[sim.chunk_stage(c)].push_back(layer);
      }
    }
    const std::vector<int> chunk_layers =
        stage_layer_counts(metadata.num_layers, sim.pipeline_chunks(), sim.pipeline_layers);
    optimizer_ps_ = cost_.pipeline_optimizer_ps(chunk_layers, sim.pipeline_stages);
    // What each stage's GPUs hold whatever the routing, planner by planner: the model state,
    // the dense activations, and under the planners that place replicas, the spare slots.
    const PipelineTimes order =
        schedule_order(sim, static_cast<int>(chunk_layers.size()), metadata.microbatches);
    const int ranks = config.topology.num_gpus();
    const int most_homed = (metadata.num_experts + ranks - 1) / ranks;
    for (const std::string& planner : config.planners) {
      const int slots = planner_reserves_slots(planner) ? config.slots_per_rank : 0;
      resident_memory_.push_back(
          resident_stage_memory(cost_, chunk_layers, sim.pipeline_stages, slots, order));
      token_buffer_bytes_.push_back(
          token_buffer_bytes(config.model, sim.dispatcher, most_homed + slots));
    }
    if (sim.pipeline_stages > 1) handover_ps_ = cost_.pipeline_handover_ps();
    // One stage's step is its records one after the other, with no operations to walk for the
    // activations held: its schedule's order stands for it (each microbatch's forward, then its
    // backward; with the all-to-alls behind compute, paired, a pair holding both).
    if (chunk_first_.size() == 2) one_stage_order_ = schedule_order(sim, 1, metadata.microbatches);
  }

  const CostModel& cost() const { return cost_; }

  // Opens a step: its records' results are filled microbatch by microbatch.
  void start_step(int step) {
    const std::size_t records =
        static_cast<std::size_t>(metadata_.microbatches) * metadata_.num_layers;
    for (Group& group : groups_) {
      group.step = StepResult{};
      group.step.step = step;
      group.step.records.resize(records);
      for (RecordResult& record : group.step.records) {
        record.planners.resize(config_.planners.size());
      }
    }
    step_tokens_ = 0;
  }

  // Plans and prices one microbatch's records (its layers in order) on config_.threads threads:
  // one task per (group, layer, planner). A planner instance serves one layer of one group and
  // sees its records in microbatch order, whatever the thread count.
  void run_microbatch(const std::vector<TraceRecord>& records) {
    const int num_layers = metadata_.num_layers;
    const int planners = static_cast<int>(planned_.size());
    const int groups = static_cast<int>(groups_.size());
    const int tasks = groups * num_layers * planners;
    const bool detail = groups_.front().step.step == config_.detail_step;
    for (const TraceRecord& record : records) {
      for (Group& group : groups_) {
        RecordResult& result = group.step.records[result_index(record)];
        result.step = record.step;
        result.microbatch = record.microbatch;
        result.layer = record.layer;
      }
      // A trace that stands for every group holds one group's tokens.
      if (record.layer == 0) {
        step_tokens_ += record.counts.total() / metadata_.top_k *
                        (groups == 1 ? config_.options.data_parallel : 1);
      }
    }
    if (groups > 1) {
      split_records(records);
      for (const TraceRecord& record : records) {
        const std::vector<TokenCount> loads = record.counts.expert_totals();
        for (Group& group : groups_) {
          for (LayerPlanner& state : group.layers[record.layer]) {
            state.planner->set_all_groups_loads(loads);
          }
        }
      }
    }
    // An error is the first failing task's, whatever the thread count.
    run_tasks(tasks, config_.threads, [&](std::int64_t task, int) {
      const int group = static_cast<int>(task / (num_layers * planners));
      const int layer = static_cast<int>(task / planners % num_layers);
      const TraceRecord& record = groups == 1 ? records[layer] : split_[group][layer];
      run_task(group, record, static_cast<int>(task % planners), detail);
    });
  }

  // Closes the step: what each planner's parameter gathers and gradient syncs leave exposed,
  // each planner's slowest group, the ideal bound of each record and every planner's totals.
  StepResult finish_step() {
    for (const int p : planned_) {
      expose_param_gathers(p);
      expose_gradient_syncs(p);
    }
    StepResult result = take_slowest_groups();
    result.tokens = step_tokens_;
    // The bound of what the planners are charged: on their slowest groups' records.
    if (ideal_index_ >= 0) {
      for (RecordResult& record : result.records) {
        std::vector<const LayerCost*> planned;
        for (const int p : planned_) planned.push_back(&record.planners[p]);
        LayerCost& ideal = record.planners[ideal_index_];
        ideal = ideal_cost(planned);
        cost_.overlap_all_to_alls(record.microbatch, metadata_.microbatches, ideal);
      }
    }
    result.planners.resize(config_.planners.size());
    for (std::size_t p = 0; p < config_.planners.size(); ++p) {
      StepTotals& totals = result.planners[p];
      for (const RecordResult& record : result.records) {
        const LayerCost& cost = record.planners[p];
        totals.moe += cost.moe();
        totals.moe_forward += cost.moe_forward();
        totals.overhead += cost.overhead;
        totals.dense += cost.dense_forward + cost.dense_backward() + cost.outside_forward +
                        cost.outside_backward();
        totals.outside += cost.outside_forward + cost.outside_backward();
        totals.grad_reduce += cost.grad_reduce;
        totals.dense_grad_reduce += cost.dense_grad_reduce;
        totals.dense_param_gather += cost.dense_param_gather;
        totals.expert_grad_sync += cost.expert_grad_sync;
        totals.expert_param_gather += cost.expert_param_gather;
        totals.nvlink_dispatch_bytes += cost.nvlink_dispatch_bytes;
        totals.ib_dispatch_bytes += cost.ib_dispatch_bytes;
        totals.nvlink_weight_bytes += cost.nvlink_weight_bytes;
        totals.ib_weight_bytes += cost.ib_weight_bytes;
        totals.max_mean_load_mean += cost.max_mean_load;
      }
      totals.max_mean_load_mean /= static_cast<double>(result.records.size());
      PipelineTimes span = step_span(result.records, static_cast<int>(p));
      totals.pipeline_idle = span.mean_idle();
      totals.a2a_unhidden = span.unhidden_forward + span.unhidden_backward;
      totals.moe += totals.a2a_unhidden;
      totals.moe_forward += span.unhidden_forward;
      totals.optimizer = optimizer_ps_;
      totals.step_time = span.makespan + optimizer_ps_;
      const int reference = planned_.empty() ? -1 : planned_.front();
      const PipelineTimes& order = span.ops.empty() ? one_stage_order_ : span;
      const std::vector<TokenCount> stages = peak_expert_tokens(
          result.records, static_cast<int>(p), reference, gpus(), chunk_first_, order);
      const Bytes per_token =
          cost_.model().expert_activation_bytes_per_token(config_.options.recompute_moe_activation);
      const std::vector<Bytes> with_buffers =
          peak_expert_bytes(result.records, static_cast<int>(p), reference, gpus(), chunk_first_,
                            order, per_token, token_buffer_bytes_[p]);
      totals.peak_expert_tokens = *std::max_element(stages.begin(), stages.end());
      totals.stage_memory = resident_memory_[p];
      for (std::size_t s = 0; s < stages.size(); ++s) {
        StageMemory& memory = totals.stage_memory[s];
        memory.expert_activations = stages[s] * per_token;
        memory.token_buffers = with_buffers[s] - memory.expert_activations;
      }
      if (result.step == config_.detail_step && !span.ops.empty()) {
        totals.schedule = std::move(span);
      }
      totals.tokens_per_s = static_cast<double>(result.tokens) * 1e12 / totals.step_time;
    }
    return result;
  }

 private:
  // One expert-parallel group's planners and the step being replayed on it.
  struct Group {
    std::vector<std::vector<LayerPlanner>> layers;  // [layer][planned_ index]
    StepResult step;
  };

  // The first group's step, each planner's records replaced by those of the group whose
  // records take it longest: the data-parallel syncs end a step for every group together, so it
  // waits for the slowest. Groups that end together (the last sync between them ends every
  // group's step at once) are told apart by their own work, the syncs left out: the group the
  // others waited for. Ties: the lower group. One group: its step as it is.
  StepResult take_slowest_groups() {
    const auto path = [&](const std::vector<RecordResult>& records, int p) {
      Picoseconds work = 0;
      for (const RecordResult& record : records) {
        work += record.planners[p].critical_path() - record.planners[p].step_end_syncs();
      }
      return std::make_pair(step_span(records, p).makespan, work);
    };
    StepResult result = std::move(groups_.front().step);
    for (std::size_t g = 1; g < groups_.size(); ++g) {
      if (groups_[g].step.explained) result.explained = std::move(groups_[g].step.explained);
      std::vector<RecordResult>& records = groups_[g].step.records;
      for (const int p : planned_) {
        if (path(records, p) <= path(result.records, p)) continue;
        for (std::size_t i = 0; i < records.size(); ++i) {
          result.records[i].planners[p] = std::move(records[i].planners[p]);
        }
      }
    }
    return result;
  }

  // Group g's rows of each record of a microbatch (routing_groups()): split_[g][layer].
  void split_records(const std::vector<TraceRecord>& records) {
    const int ranks = config_.topology.num_gpus();
    const int experts = metadata_.num_experts;
    const std::size_t cells = static_cast<std::size_t>(ranks) * experts;
    for (std::size_t g = 0; g < split_.size(); ++g) {
      split_[g].resize(records.size());
      for (std::size_t i = 0; i < records.size(); ++i) {
        const TraceRecord& record = records[i];
        TraceRecord& part = split_[g][i];
        part.step = record.step;
        part.microbatch = record.microbatch;
        part.layer = record.layer;
        std::vector<TokenCount> values = std::move(part.counts).release_values();
        const auto first = record.counts.values().begin() + static_cast<std::ptrdiff_t>(g * cells);
        values.assign(first, first + static_cast<std::ptrdiff_t>(cells));
        part.counts = RoutingCounts(ranks, experts, std::move(values));
      }
    }
  }

  // Results are kept in (microbatch, layer) order.
  std::size_t result_index(const TraceRecord& record) const {
    return static_cast<std::size_t>(record.microbatch) * metadata_.num_layers + record.layer;
  }

  // What CostModel::price() needs the busiest source rank's tokens for (the dense forward): a
  // trace that declares tokens_per_rank has every row summing to it times top-k (the reader
  // checks), so it is known without a pass over the counts; -1 otherwise (price() finds it).
  TokenCount busiest_tokens() const {
    return metadata_.tokens_per_rank > 0 ? metadata_.tokens_per_rank : -1;
  }

  // A planner that decides with a coarser model than this one (TopoEP) runs its static
  // fallback (every token at home) whenever this model prices that strictly lower, forward and
  // backward MoE time: it is never slower than its fallback on any record, under the model it
  // is reported with. The fallback is priced from the planner's sums of it or else from the
  // counts; its routes are written only when it runs.
  // Returns whether it ran the fallback.
  bool overrule_if_slower(Planner& planner, const TraceRecord& record, CostModel::Detail level,
                          PlannerDecision& decision, LayerCost& cost) const {
    const RoutingCounts& counts = record.counts;
    PlannerDecision fallback;
    if (!planner.static_fallback(&fallback)) return false;
    LayerCost fallback_cost =
        fallback.tally.empty()
            ? cost_.price_all_home(fallback, counts)
            : cost_.price(fallback, counts, CostModel::Detail::kTimes, busiest_tokens());
    overlap_all_to_alls(record, fallback_cost);
    if (fallback_cost.moe() >= cost.moe()) return false;
    route_all_home(counts, fallback.placement, &fallback.plan);
    if (level != CostModel::Detail::kTimes) {
      fallback_cost = cost_.price(fallback, counts, level, busiest_tokens());
      overlap_all_to_alls(record, fallback_cost);
    }
    planner.ran_fallback(fallback);
    decision = std::move(fallback);
    cost = std::move(fallback_cost);
    return true;
  }

  void overlap_all_to_alls(const TraceRecord& record, LayerCost& cost) const {
    cost_.overlap_all_to_alls(record.microbatch, metadata_.microbatches, cost);
  }

  bool explains(int group, const TraceRecord& record, int p) const {
    const RecordKey& wanted = config_.explain;
    return group == wanted.group && wanted.step == record.step &&
           wanted.microbatch == record.microbatch && wanted.layer == record.layer &&
           config_.planners[p] == "topoep";
  }

  void run_task(int group, const TraceRecord& record, int planner, bool detail) {
    StepResult& step = groups_[group].step;
    LayerPlanner& state = groups_[group].layers[record.layer][planner];
    const int p = planned_[planner];
    const CostModel::Detail level = detail                ? CostModel::Detail::kPerRank
                                    : config_.plan_hashes ? CostModel::Detail::kWithHash
                                                          : CostModel::Detail::kTimes;
    PlannerDecision decision =
        state.planner->plan(RecordId{record.step, record.microbatch}, record.counts);
    // Read before anything else solves on this thread; only this task writes step.explained.
    KeptMoves kept;
    const bool explain = explains(group, record, p) && state.planner->last_kept_moves(&kept);
    LayerCost cost = cost_.price(decision, record.counts, level, busiest_tokens());
    overlap_all_to_alls(record, cost);
    const bool overruled = overrule_if_slower(*state.planner, record, level, decision, cost);
    if (explain) {
      step.explained = ExplainedRecord{
          {record.step, record.microbatch, record.layer, group}, std::move(kept), overruled};
    }
    if (config_.check_plans) {
      check_priced_plan(
          "planner '" + config_.planners[p] + "', " +
              (groups_.size() > 1 ? "group " + std::to_string(group) + ", " : "") + "step " +
              std::to_string(record.step) + " microbatch " + std::to_string(record.microbatch) +
              " layer " + std::to_string(record.layer),
          PricedPlan{record.counts, decision, cost.loads, cost.nvlink_dispatch_bytes,
                     cost.ib_dispatch_bytes},
          config_.topology.view(), cost_.solver_params().dispatch_bytes_per_token,
          config_.options.dispatcher, config_.model.top_k, expert_groups(config_.model));
    }
    note_replicas(decision, state.step_replicas);
    if (record.microbatch == metadata_.microbatches - 1) {
      const GradientReduction reduction = reduce_replica_gradients(
          std::move(state.step_replicas), config_.topology.view(),
          cost_.solver_params().replica_weight_bytes, cost_.solver_params());
      state.step_replicas.clear();
      // What of it shows is known once the whole backward is: finish_step().
      cost.replica_reduction = reduction.time_ps;
      cost.grad_reduce_nvlink_bytes = reduction.nvlink_bytes;
      cost.grad_reduce_ib_bytes = reduction.ib_bytes;
      add_dense_sync_bytes(cost_.dense_gradient_sync(), cost);
      cost.expert_sync_ib_bytes += cost_.expert_gradient_sync().ib_bytes_per_gpu * gpus();
    }
    if (record.microbatch == 0) {
      // What of the gathers shows is known once the layer before is priced: finish_step().
      add_dense_sync_bytes(cost_.dense_param_gather(), cost);
      cost.expert_sync_ib_bytes += cost_.expert_param_gather().ib_bytes_per_gpu * gpus();
    }
    cost.group = group;
    step.records[result_index(record)].planners[p] = std::move(cost);
  }

  // The distributed optimizer's parameter all-gathers on planner `p`'s first microbatch in each
  // group, one bucket ahead: each layer's hides in the link-idle forward of the layer before;
  // the first layer's, started as the step's optimizer ends, in nothing. They are collectives
  // between the groups: a layer's starts when the last group begins the layer before (past that
  // layer's own gathers), and a group that began it earlier forgoes the idle time before then,
  // spread evenly over that forward; one past it waits, exposed.
  void expose_param_gathers(int p) {
    // Each pipeline stage's layers, on its own GPUs and clock. A stage's first layer has no
    // layer before it on its GPUs: its gathers start as the step's optimizer ends. A later
    // chunk's first layer hides its gathers behind the stage's layer before it, the last of its
    // chunk before (the other microbatches' forwards between them are not counted).
    for (const std::vector<int>& layers : stage_layers_) expose_param_gathers(p, layers);
  }

  // The same over one stage's `layers`, in forward order.
  void expose_param_gathers(int p, const std::vector<int>& layers) {
    const bool gathers =
        cost_.dense_param_gather().time_ps > 0 || cost_.expert_param_gather().time_ps > 0;
    // A layer's forward past its own gathers: where the next layer's gathers may hide.
    const auto span_of = [](const LayerCost& cost) {
      return cost.forward_path() - cost.dense_param_gather - cost.expert_param_gather;
    };
    // Where each group begins the layer before, past its gathers, on its own clock.
    std::vector<Picoseconds> begins(groups_.size(), 0);
    for (std::size_t i = 0; i < layers.size(); ++i) {
      const bool first = i == 0;
      const Picoseconds last = *std::max_element(begins.begin(), begins.end());
      for (std::size_t g = 0; g < groups_.size(); ++g) {
        std::vector<RecordResult>& records = groups_[g].step.records;
        LayerCost& cost = records[layers[i]].planners[p];
        Picoseconds idle = 0, late = 0;
        if (!first) {
          const LayerCost& before = records[layers[i - 1]].planners[p];
          const Picoseconds span = span_of(before), wait = last - begins[g];
          begins[g] += span;  // this layer begins
          if (gathers) {
            idle = cost_.forward_idle_ps(before);
            if (wait > 0) {
              idle = span > 0
                         ? static_cast<Picoseconds>(static_cast<__int128>(idle) *
                                                    std::max<Picoseconds>(0, span - wait) / span)
                         : 0;
              late = std::max<Picoseconds>(0, wait - span);
            }
          }
        }
        cost.dense_param_gather = late + cost_.exposed_param_gather_ps(idle);
        cost.expert_param_gather = cost_.exposed_expert_gather_ps(idle);
        // The next layer's gathers start as this one begins, past its own.
        begins[g] += cost.dense_param_gather + cost.expert_param_gather;
      }
    }
  }

  // The step-end syncs of planner `p`'s last microbatch in each group, run as the group's
  // backward leaves the links idle, those between the groups together (sim/backward_sync.h):
  // what of each is left when a group's backward ends goes onto its layer's record. Each
  // pipeline stage runs its own layers' syncs on its own GPUs, on its own clock.
  void expose_gradient_syncs(int p) {
    const int num_layers = metadata_.num_layers;
    const std::size_t last = static_cast<std::size_t>(metadata_.microbatches - 1) * num_layers;
    // A stage's layers as one run, its chunks' in forward order: between its chunks the stage
    // runs other microbatches, which leave the links more idle time than counted here.
    for (const std::vector<int>& layers : stage_layers_) {
      std::vector<GroupBackward> backward(groups_.size());
      for (std::size_t g = 0; g < groups_.size(); ++g) {
        const std::vector<RecordResult>& records = groups_[g].step.records;
        // The stage's layers of every microbatch before the last, forward and backward, then
        // of the last one, forward.
        for (std::size_t first = 0; first <= last; first += num_layers) {
          for (const int layer : layers) {
            const LayerCost& cost = records[first + layer].planners[p];
            backward[g].start += first < last ? cost.critical_path() : cost.forward_path();
            if (first == last) backward[g].layers.push_back(cost_.backward_sync_work(cost));
          }
        }
      }
      const std::vector<std::vector<LayerSyncExposed>> exposed =
          expose_group_backward_syncs(backward);
      for (std::size_t g = 0; g < groups_.size(); ++g) {
        for (std::size_t i = 0; i < layers.size(); ++i) {
          LayerCost& cost = groups_[g].step.records[last + layers[i]].planners[p];
          const LayerSyncExposed& sync = exposed[g][i];
          cost.grad_reduce = sync.replica_reduction;
          cost.expert_grad_sync = sync.expert_sync;
          cost.dense_grad_reduce = sync.dense_sync;
        }
      }
    }
  }

  // The time planner `p`'s `records` (one step's, in (microbatch, layer) order) keep the
  // cluster busy before the optimizer: their critical paths one after the other, or through
  // the pipeline stages' chunks (pipeline_schedule.h).
  PipelineTimes step_span(const std::vector<RecordResult>& records, int p) const {
    const int stages = static_cast<int>(stage_layers_.size());
    const int chunks = static_cast<int>(chunk_first_.size()) - 1;
    PipelineTimes times;
    if (chunks == 1) {
      for (const RecordResult& record : records)
        times.makespan += record.planners[p].critical_path();
      times.busy = {times.makespan};
      return times;
    }
    const int num_layers = metadata_.num_layers;
    const int last = metadata_.microbatches - 1;
    std::vector<std::vector<StageWork>> work(chunks,
                                             std::vector<StageWork>(metadata_.microbatches));
    std::vector<StageEnds> ends(stages);
    for (int chunk = 0; chunk < chunks; ++chunk) {
      const int stage = config_.options.chunk_stage(chunk);
      for (int m = 0; m <= last; ++m) {
        StageWork& w = work[chunk][m];
        for (int layer = chunk_first_[chunk]; layer < chunk_first_[chunk + 1]; ++layer) {
          const LayerCost& cost =
              records[static_cast<std::size_t>(m) * num_layers + layer].planners[p];
          // The first layer's gathers run from the step's start, while the stage waits for its
          // first microbatch; the syncs the last backward leaves run after it, holding up no
          // other stage.
          const Picoseconds gathers = m == 0 && layer == stage_layers_[stage].front()
                                          ? cost.dense_param_gather + cost.expert_param_gather
                                          : 0;
          const Picoseconds syncs = m == last ? cost.step_end_syncs() : 0;
          ends[stage].lead += gathers;
          ends[stage].tail += syncs;
          add_record_work(cost_, cost, gathers, syncs, w, work[0][m], work[chunks - 1][m]);
        }
      }
    }
    return run_pipeline_schedule(config_.options, work, handover_ps_, ends);
  }

  int gpus() const { return config_.topology.num_gpus(); }
  // A data-parallel collective's bytes on `cost`, summed over the group's GPUs.
  void add_dense_sync_bytes(const RingTraffic& traffic, LayerCost& cost) const {
    cost.dense_sync_nvlink_bytes += traffic.nvlink_bytes_per_gpu * gpus();
    cost.dense_sync_ib_bytes += traffic.ib_bytes_per_gpu * gpus();
  }

  const SimConfig& config_;
  TraceMetadata metadata_;
  CostModel cost_;
  std::vector<int> planned_;  // SimConfig indices of the planners that plan
  int ideal_index_ = -1;
  std::vector<Group> groups_;  // routing_groups() of them
  // A microbatch's records split into the groups' rows, [group][layer] (only with groups).
  std::vector<std::vector<TraceRecord>> split_;
  std::int64_t step_tokens_ = 0;  // every group's tokens so far in the step
  Picoseconds optimizer_ps_ = 0;
  // Each planner's (SimConfig order) resident_stage_memory(): one GPU of each stage.
  std::vector<std::vector<StageMemory>> resident_memory_;
  // Each planner's (SimConfig order) token buffers a token assignment (token_buffer_bytes(),
  // its GPUs' local experts: the most homed and the spare slots where it reserves them).
  std::vector<TokenBufferBytes> token_buffer_bytes_;
  // The first layer of each chunk of the pipeline stages, and the layer count last
  // (stage_first_layers() over SimOptions::pipeline_chunks()).
  std::vector<int> chunk_first_;
  // Each pipeline stage's layers, in forward order: its chunks', chunk c on stage
  // SimOptions::chunk_stage(c).
  std::vector<std::vector<int>> stage_layers_;
  Picoseconds handover_ps_ = 0;  // one microbatch's activations from one stage to the next
  // On one stage, the order its operations run in (for the activations held); empty with
  // pipeline stages, whose step spans give theirs.
  PipelineTimes one_stage_order_;
};

}  // namespace

Bytes StepTotals::peak_expert_activation_bytes() const {
  return most_expert_activations(stage_memory);
}

std::int64_t replay_trace(const std::string& path, const SimConfig& config,
                          ReplayObserver& observer) {
  TraceReader reader(path);
  return replay_trace(reader, config, observer);
}

void add_record_work(const CostModel& model, const LayerCost& cost, Picoseconds gathers,
                     Picoseconds syncs, StageWork& own, StageWork& first, StageWork& last) {
  const CostModel::PipelineShares shares = model.pipeline_shares(cost);
  own += {shares.forward - gathers, shares.backward - syncs, shares.weight_grad,
          cost.a2a_hidden_forward, cost.a2a_hidden_backward};
  first += {shares.dense_only_forward, shares.dense_only_backward, shares.dense_only_weight_grad};
  last += {shares.head_forward, 2 * shares.head_forward, shares.head_forward};
}

PipelineTimes run_pipeline_schedule(const SimOptions& options,
                                    const std::vector<std::vector<StageWork>>& work,
                                    Picoseconds handover, const std::vector<StageEnds>& ends) {
  if (options.pipeline_schedule == PipelineSchedule::kDualPipe) {
    return run_dualpipe(work, handover, ends);
  }
  if (options.pipeline_schedule == PipelineSchedule::kDualPipeV) {
    return run_dualpipe_v(work, handover, ends);
  }
  // With the all-to-alls behind compute Megatron-LM runs its combined 1F1B: only the pairs in
  // it hide them.
  return run_interleaved_one_f_one_b(work, options.pipeline_stages, handover, ends,
                                     /*combined=*/options.a2a_overlap_fraction > 0);
}

PipelineTimes schedule_order(const SimOptions& options, int chunks, int microbatches) {
  // Any work will do: the orders do not depend on it.
  StageWork unit{1, 2, 1};
  const std::vector<std::vector<StageWork>> work(chunks,
                                                 std::vector<StageWork>(microbatches, unit));
  return run_pipeline_schedule(options, work, 0);
}

std::vector<int> pipeline_peak_activations(const SimOptions& options,
                                           const std::vector<int>& chunk_layers, int microbatches) {
  return peak_activations(
      schedule_order(options, static_cast<int>(chunk_layers.size()), microbatches), chunk_layers);
}

std::int64_t replay_trace(TraceReader& reader, const SimConfig& config, ReplayObserver& observer) {
  const TraceMetadata& metadata = reader.metadata();
  check_sim_config(config, metadata);
  TraceRecord record;
  bool more = reader.next(record);
  // Every time the simulator prices is a 64-bit count of picoseconds: counts that the cluster
  // could not process within that range are refused, naming where they come from. Rows of a
  // declared tokens_per_rank all sum to it, so one check then covers every record; otherwise
  // each record is checked as it is read.
  const bool declared = metadata.tokens_per_rank > 0;
  auto located = [&](const InputError& error, const std::string& where) {
    return FileInputError(reader.path(), where, error.what());
  };
  std::int64_t tokens_per_rank = config.options.tokens_per_rank;
  if (tokens_per_rank == 0) tokens_per_rank = metadata.tokens_per_rank;
  if (tokens_per_rank == 0)
    tokens_per_rank =
        more ? std::max<std::int64_t>(1, busiest_rank_tokens(record.counts, metadata.top_k)) : 1;
  std::unique_ptr<Replay> replay;
  try {
    replay = std::make_unique<Replay>(config, metadata, tokens_per_rank);
  } catch (const InputError& error) {
    // Only a tokens_per_rank taken from the trace is the trace's fault.
    if (error.field() != "tokens_per_rank" || config.options.tokens_per_rank > 0) throw;
    throw located(error, declared ? "metadata.tokens_per_rank" : "record 0 counts");
  }
  const CostModel& cost = replay->cost();
  const std::int64_t replicas =
      static_cast<std::int64_t>(config.topology.num_gpus()) * config.slots_per_rank;
  try {
    if (declared) {
      check_cost_range(cost.solver_params(),
                       static_cast<long double>(config.topology.num_gpus()) *
                           metadata.tokens_per_rank * metadata.top_k,
                       replicas);
      cost.dense_forward_ps(metadata.tokens_per_rank);
    }
  } catch (const InputError& error) {
    throw located(error, "metadata.tokens_per_rank");
  }
  observer.on_start(metadata, cost);

  ProgressBar progress("records",
                       config.progress == ProgressDisplay::kTerminal ? metadata.num_records() : 0);
  std::int64_t done = 0;
  // One microbatch of counts in memory at a time (its layers), besides the reader's chunk. The
  // records are swapped in, not moved: the reader refills the last microbatch's buffers.
  std::vector<TraceRecord> microbatch;
  while (more) {
    const int step = record.step;
    replay->start_step(step);
    while (more && record.step == step) {
      std::size_t used = 0;
      const int current = record.microbatch;
      while (more && record.step == step && record.microbatch == current) {
        if (!declared) {
          try {
            check_cost_range(cost.solver_params(), record.counts, replicas);
            cost.dense_forward_ps(busiest_rank_tokens(record.counts, metadata.top_k));
          } catch (const InputError& error) {
            throw located(error, "record " + std::to_string(done) + " counts");
          }
        }
        if (used == microbatch.size()) microbatch.emplace_back();
        std::swap(microbatch[used++], record);
        more = reader.next(record);
        ++done;
      }
      microbatch.resize(used);
      replay->run_microbatch(microbatch);
      progress.update(done);
    }
    observer.on_step(replay->finish_step());
  }
  return done;
}

}  // namespace topoep
