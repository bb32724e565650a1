#include "sim/cost_model.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "sim/deepep_dispatch.h"
#include "sim/memory_bound_kernels.h"
#include "sim/ring_collective.h"
#include "sim/solver_cost.h"
#include "solver/input_error.h"
#include "solver/instance_tally.h"
#include "solver/plan_cost.h"
#include "solver/plan_encoding.h"
#include "solver/static_tally.h"

namespace topoep {
namespace {

// The counts set every time priced here (tokens per instance, per rank, per step).
Picoseconds round_ps(double ps) { return picoseconds_in_range(ps, "counts"); }
// round_ps() of a difference of times, which may be negative.
Picoseconds round_signed_ps(double ps) { return ps < 0 ? -round_ps(-ps) : round_ps(ps); }

// A gradient sync's buffer, `params` parameters at `bytes_per_param`, in whole bytes. Throws
// InputError naming dense_grad_bytes beyond 1000 GB (`what`: whose gradients they are).
Bytes gradient_buffer_bytes(double params, int bytes_per_param, const std::string& what) {
  const double bytes = params * bytes_per_param;
  if (!(bytes < 1e12)) {
    throw InputError("dense_grad_bytes", what + " would be " + std::to_string(bytes / 1e9) +
                                             " GB a layer, at most 1000 GB");
  }
  return std::llround(bytes);
}

// The one of `values` that `name_of` spells `name`, or false.
template <typename Enum>
bool parse_by_name(const std::string& name, std::initializer_list<Enum> values,
                   const char* (*name_of)(Enum), Enum* out) {
  for (const Enum value : values) {
    if (name == name_of(value)) {
      *out = value;
      return true;
    }
  }
  return false;
}

}  // namespace

TokenCount busiest_rank_tokens(const RoutingCounts& counts, int top_k) {
  TokenCount busiest = 0;
  for (RankId src = 0; src < counts.num_ranks(); ++src) {
    TokenCount row = 0;
    for (ExpertId e = 0; e < counts.num_experts(); ++e) row += counts.at(src, e);
    busiest = std::max(busiest, row);
  }
  return (busiest + top_k - 1) / top_k;
}

const char* dispatcher_name(Dispatcher dispatcher) {
  return dispatcher == Dispatcher::kDeepEP ? "deepep" : "alltoall";
}

bool parse_dispatcher(const std::string& name, Dispatcher* out) {
  return parse_by_name(name, {Dispatcher::kPerAssignment, Dispatcher::kDeepEP}, dispatcher_name,
                       out);
}

const char* pipeline_schedule_name(PipelineSchedule schedule) {
  switch (schedule) {
    case PipelineSchedule::kDualPipe:
      return "dualpipe";
    case PipelineSchedule::kDualPipeV:
      return "dualpipev";
    case PipelineSchedule::kOneFOneB:
      break;
  }
  return "1f1b";
}

bool parse_pipeline_schedule(const std::string& name, PipelineSchedule* out) {
  return parse_by_name(
      name,
      {PipelineSchedule::kOneFOneB, PipelineSchedule::kDualPipe, PipelineSchedule::kDualPipeV},
      pipeline_schedule_name, out);
}

const char* dense_sync_name(DenseSync sync) {
  return sync == DenseSync::kDistributedOptimizer ? "distributed" : "allreduce";
}

bool parse_dense_sync(const std::string& name, DenseSync* out) {
  return parse_by_name(name, {DenseSync::kAllReduce, DenseSync::kDistributedOptimizer},
                       dense_sync_name, out);
}

void check_sim_options(const SimOptions& options) {
  if (!(options.weight_overlap_fraction >= 0 && options.weight_overlap_fraction <= 1)) {
    throw InputError("weight_overlap_fraction", "must be in [0, 1]");
  }
  if (!(options.gradient_overlap_fraction >= 0 && options.gradient_overlap_fraction <= 1)) {
    throw InputError("gradient_overlap_fraction", "must be in [0, 1]");
  }
  if (!(options.a2a_overlap_fraction >= 0 && options.a2a_overlap_fraction <= 1)) {
    throw InputError("a2a_overlap_fraction", "must be in [0, 1]");
  }
  if (options.dense_grad_bytes < 0 || options.dense_grad_bytes > 8) {
    throw InputError("dense_grad_bytes", "must be 0 to 8");
  }
  if (options.data_parallel < 1 || options.data_parallel > kMaxDataParallel) {
    throw InputError("data_parallel", "must be 1 to " + std::to_string(kMaxDataParallel));
  }
  if (options.pipeline_stages < 1 || options.pipeline_stages > kMaxPipelineStages) {
    throw InputError("pipeline_stages", "must be 1 to " + std::to_string(kMaxPipelineStages));
  }
  if (options.virtual_stages < 1 ||
      options.virtual_stages > kMaxPipelineStages / options.pipeline_stages) {
    throw InputError("virtual_stages", "must be at least 1, with at most " +
                                           std::to_string(kMaxPipelineStages) +
                                           " chunks in all (pipeline stages x virtual stages)");
  }
  if (options.virtual_stages > 1 && options.pipeline_stages < 2) {
    throw InputError("virtual_stages", "interleaves the chunks of at least 2 pipeline stages");
  }
  if (options.pipeline_schedule == PipelineSchedule::kDualPipe) {
    if (options.pipeline_stages < 2 || options.pipeline_stages % 2 != 0) {
      throw InputError("pipeline_schedule",
                       "dualpipe needs an even number of pipeline stages, at least 2 (got " +
                           std::to_string(options.pipeline_stages) +
                           "): each stage's GPUs also run its mirror's chunk");
    }
  }
  if (options.pipeline_schedule == PipelineSchedule::kDualPipeV) {
    if (options.pipeline_stages < 2 || 2 * options.pipeline_stages > kMaxPipelineStages) {
      throw InputError("pipeline_schedule", "dualpipev needs 2 to " +
                                                std::to_string(kMaxPipelineStages / 2) +
                                                " pipeline stages (got " +
                                                std::to_string(options.pipeline_stages) + ")");
    }
  }
  if (options.pipeline_schedule != PipelineSchedule::kOneFOneB && options.virtual_stages != 1) {
    throw InputError("pipeline_schedule",
                     std::string(pipeline_schedule_name(options.pipeline_schedule)) +
                         " runs no virtual stages: each stage already "
                         "holds two chunks");
  }
  const std::vector<int>& layers = options.pipeline_layers;
  if (!layers.empty() && static_cast<int>(layers.size()) != options.pipeline_chunks()) {
    throw InputError(
        "pipeline_layers",
        "names " + std::to_string(layers.size()) +
            (options.pipeline_schedule == PipelineSchedule::kDualPipeV
                 ? " chunks but DualPipeV's " + std::to_string(options.pipeline_stages) +
                       " pipeline stages hold " + std::to_string(options.pipeline_chunks())
             : options.virtual_stages > 1
                 ? " chunks but " + std::to_string(options.pipeline_stages) +
                       " pipeline stages of " + std::to_string(options.virtual_stages) +
                       " virtual stages make " + std::to_string(options.pipeline_chunks())
                 : " stages but there are " + std::to_string(options.pipeline_stages)));
  }
  if (std::any_of(layers.begin(), layers.end(), [](int n) { return n < 1; })) {
    throw InputError("pipeline_layers", "every stage (chunk) holds at least one layer");
  }
  if (options.activation_grad_bytes < 1 || options.activation_grad_bytes > 8) {
    throw InputError("activation_grad_bytes", "must be 1 to 8");
  }
  if (!(options.optimizer_bytes_per_param >= 0 && options.optimizer_bytes_per_param < 1e3)) {
    throw InputError("optimizer_bytes_per_param", "must be in [0, 1000)");
  }
  if (!(options.optimizer_state_bytes_per_param >= 0 &&
        options.optimizer_state_bytes_per_param < 1e3)) {
    throw InputError("optimizer_state_bytes_per_param", "must be in [0, 1000)");
  }
  if (options.tokens_per_rank < 0) throw InputError("tokens_per_rank", "must not be negative");
  if (options.mtp_layers < 0 || options.mtp_layers > kMaxMtpLayers) {
    throw InputError("mtp_layers", "must be 0 to " + std::to_string(kMaxMtpLayers));
  }
}

CostModel::CostModel(const Topology& topology, const ModelSpec& model, const SimOptions& options,
                     std::int64_t tokens_per_rank)
    : topology_(topology), model_(model), options_(options), tokens_per_rank_(tokens_per_rank) {
  check_sim_options(options);
  // Every price below reads the curve (derive_solver_cost() too): a topology built in code
  // may have skipped the checks of topology_json.h.
  const GemmEfficiencyCurve& curve = topology.gemm_efficiency;
  if (curve.efficiency.empty() || curve.efficiency.size() != curve.tokens_per_expert.size()) {
    throw InputError("grouped_gemm_efficiency",
                     "needs as many efficiencies as points, at least one");
  }
  const AttentionEfficiencyCurve& attention = topology.attention_efficiency;
  const std::size_t lengths = attention.sequence_length.size();
  const auto in_range = [](double e) { return e > 0 && e <= 1; };
  if (attention.forward.size() != lengths || attention.backward.size() != lengths ||
      !std::all_of(attention.forward.begin(), attention.forward.end(), in_range) ||
      !std::all_of(attention.backward.begin(), attention.backward.end(), in_range)) {
    throw InputError("attention_efficiency",
                     "needs a forward and a backward efficiency in (0, 1] for every length");
  }
  if (tokens_per_rank < 1 || tokens_per_rank > std::numeric_limits<int>::max()) {
    throw InputError("tokens_per_rank",
                     "must be in [1, 2^31 - 1] (got " + std::to_string(tokens_per_rank) + ")");
  }
  const int mtp = options.mtp_layers;
  if (mtp > 0 && model.vocab_size <= 0) {
    throw InputError("mtp_layers", "each module passes through the output head, and model '" +
                                       model.name + "' has none (its vocab_size is 0)");
  }
  if (options.memory_bound_kernels) set_memory_bound_rates();
  SolverCostDerivation derived = derive_solver_cost(topology, model, tokens_per_rank, true);
  // The planners weigh an assignment's memory-bound kernels with its GEMMs, and the dense
  // part's in the weights' window, as the records are priced.
  derived.params.compute_ps_per_token += round_ps(expert_hbm_ps_per_token_);
  derived.params.weight_overlap_ps +=
      round_ps(dense_hbm_ps_per_token_ * static_cast<double>(tokens_per_rank));
  solver_params_ = derived.params;
  solver_params_.weight_overlap_ps =
      planner_weight_window_ps(round_ps(static_cast<double>(derived.params.weight_overlap_ps) *
                                        options.weight_overlap_fraction),
                               derived.params.weight_overlap_ps, tokens_per_rank);
  flop_per_token_ = model.expert_flops_per_token();
  expert_peak_tflops_ = gemm_peak_tflops(topology, model);
  const double speedup = gemm_speedup(topology, model);
  dense_times_ = dense_times_per_token(topology, model, mtp);
  if (options.recompute_mla_up_proj) {
    if (!model.multi_latent_attention()) {
      throw InputError("recompute_mla_up_proj",
                       "applies to multi-head latent attention, and model '" + model.name +
                           "' has none (its attention_kv_lora_rank is 0)");
    }
    recompute_flop_per_token_ = model.up_projection_flops_per_token() *
                                (1.0 + model.dense_layers_per_moe_layer(mtp)) / speedup;
  }
  dense_gemm_flop_per_ps_ = dense_gemm_flop_per_ps(topology);
  // The first point of the curve's flat tail: there and beyond, gemm_efficiency_at()
  // interpolates between equal values (or returns the last), so gives that value bit for bit.
  std::size_t flat = curve.efficiency.size() - 1;
  while (flat > 0 && curve.efficiency[flat - 1] == curve.efficiency.back()) --flat;
  saturated_tokens_ = curve.tokens_per_expert[flat];
  saturated_flop_per_ps_ = expert_peak_tflops_ * curve.efficiency.back();
  grad_bytes_per_token_ = static_cast<Bytes>(model.hidden_size) * options.activation_grad_bytes;
  solver_params_.backward_bytes_per_token = grad_bytes_per_token_;
  // The data-parallel sync (sim/ring_collective.h): no traffic where dense_grad_bytes is 0.
  const double dense_params = model.dense_and_shared_params(mtp);
  const Bytes dense_grad_bytes =
      gradient_buffer_bytes(dense_params, options.dense_grad_bytes, "the model's dense gradients");
  // The copies of the parameters side by side (the D groups, and under DualPipe each stage's
  // GPUs and its mirror's): copies times the nodes, each copy's own.
  const int copies = options.parameter_copies();
  const std::int64_t all_nodes = static_cast<std::int64_t>(topology.nodes) * copies;
  if (all_nodes * topology.gpus_per_node > std::numeric_limits<int>::max()) {
    throw InputError("data_parallel", std::to_string(copies) + " copies of " +
                                          std::to_string(topology.num_gpus()) +
                                          " GPUs would be more than 2^31 - 1 GPUs");
  }
  const TopologyView all_groups{static_cast<int>(all_nodes), topology.gpus_per_node};
  // One GPU of each copy, each on its own node and NIC.
  const TopologyView peers{copies, 1};
  const bool distributed = options.dense_sync == DenseSync::kDistributedOptimizer;
  const RingCollective reduce =
      distributed ? RingCollective::kReduceScatter : RingCollective::kAllReduce;
  gradient_sync_ = ring_collective(reduce, all_groups, dense_grad_bytes, solver_params_);
  most_homed_ = (model.num_experts + topology.num_gpus() - 1) / topology.num_gpus();
  const double home_expert_params = model.expert_params() * most_homed_;
  expert_sync_ = ring_collective(reduce, peers,
                                 gradient_buffer_bytes(home_expert_params, options.dense_grad_bytes,
                                                       "a GPU's home experts' gradients"),
                                 solver_params_);
  if (distributed && options.dense_grad_bytes > 0) {
    param_gather_ =
        ring_collective(RingCollective::kAllGather, all_groups,
                        std::llround(dense_params * model.weight_bytes), solver_params_);
    expert_gather_ =
        ring_collective(RingCollective::kAllGather, peers,
                        std::llround(home_expert_params * model.weight_bytes), solver_params_);
  }
}

void CostModel::set_memory_bound_rates() {
  const double bandwidth = topology_.gpu.hbm_bandwidth_gb_per_s;
  if (!(bandwidth > 0)) {
    throw InputError(
        "hbm_bandwidth_gb_per_s",
        "the memory-bound kernels run at the GPU's HBM bandwidth: it must be positive");
  }
  const MemoryBoundBytes bytes = memory_bound_bytes(model_, options_);
  // 1 GB/s is 1e-3 bytes per ps. The backward is priced at twice its forward: a pass's
  // forward takes a third of its forward and backward bytes' time, so that the pair is exact.
  const double ps_per_byte = 1000.0 / bandwidth / 3.0;
  expert_hbm_ps_per_token_ = bytes.expert_assignment * ps_per_byte;
  dense_hbm_ps_per_token_ = bytes.moe_layer * ps_per_byte;
  const int mtp = options_.mtp_layers, routed = model_.routed_layers(mtp);
  if (routed <= 0) return;
  // Shared among the routed layers as the FLOPs outside them are (outside_forward_ps()).
  head_end_hbm_ps_per_token_ =
      ((1.0 + mtp) * bytes.head_pass + mtp * bytes.mtp_module) / routed * ps_per_byte;
  outside_hbm_ps_per_token_ =
      (model_.dense_layers_per_moe_layer(mtp) * bytes.dense_only_layer + bytes.embedding / routed) *
          ps_per_byte +
      head_end_hbm_ps_per_token_;
}

Picoseconds CostModel::instance_compute_ps(TokenCount tokens) const {
  if (tokens <= 0) return 0;
  const double t = static_cast<double>(tokens);
  // 1 TFLOP/s is 1 FLOP per picosecond.
  const double kernels = expert_hbm_ps_per_token_ * t;
  if (t >= saturated_tokens_) {
    return round_ps(flop_per_token_ * t / saturated_flop_per_ps_ + kernels);
  }
  return round_ps(flop_per_token_ * t /
                      (expert_peak_tflops_ * gemm_efficiency_at(topology_.gemm_efficiency, t)) +
                  kernels);
}

// dense_forward_time_ps() and outside_forward_time_ps() with their rates computed once: both are
// priced on every record, and the curve's best efficiency is a scan of all its points.
Picoseconds CostModel::dense_forward_ps(TokenCount tokens_on_rank) const {
  const double t = static_cast<double>(tokens_on_rank);
  return round_ps((dense_times_.layer_forward + dense_hbm_ps_per_token_) * t);
}

Picoseconds CostModel::dense_backward_extra_ps(TokenCount tokens_on_rank) const {
  return round_signed_ps(dense_times_.layer_backward_extra * static_cast<double>(tokens_on_rank));
}

Picoseconds CostModel::outside_backward_extra_ps(TokenCount tokens_on_rank) const {
  return round_signed_ps(dense_times_.outside_backward_extra * static_cast<double>(tokens_on_rank));
}

Picoseconds CostModel::dense_recompute_ps(TokenCount tokens_on_rank) const {
  if (recompute_flop_per_token_ == 0) return 0;
  return round_ps(recompute_flop_per_token_ * static_cast<double>(tokens_on_rank) /
                  dense_gemm_flop_per_ps_);
}

Picoseconds CostModel::outside_forward_ps(TokenCount tokens_on_rank) const {
  const double t = static_cast<double>(tokens_on_rank);
  return round_ps((dense_times_.outside_forward + outside_hbm_ps_per_token_) * t);
}

Picoseconds CostModel::outside_head_part(Picoseconds outside) const {
  // In proportion to each part's time a token.
  return part_of(outside, dense_times_.head_forward + head_end_hbm_ps_per_token_,
                 dense_times_.outside_forward + outside_hbm_ps_per_token_);
}

Picoseconds CostModel::part_of(Picoseconds whole, double part_per_token, double whole_per_token) {
  if (whole_per_token <= 0) return 0;
  return round_ps(static_cast<double>(whole) * part_per_token / whole_per_token);
}

CostModel::PipelineShares CostModel::pipeline_shares(const LayerCost& cost) const {
  PipelineShares shares;
  shares.head_forward = outside_head_part(cost.outside_forward);
  shares.dense_only_forward = cost.outside_forward - shares.head_forward;
  shares.dense_only_backward = 2 * shares.dense_only_forward + cost.outside_backward_extra;
  shares.forward = cost.forward_path() - cost.outside_forward;
  shares.backward = cost.critical_path() - cost.forward_path() - cost.outside_backward();
  // The attention cores hold no weights: their backward is all input gradients.
  const double core = dense_times_.core_forward;
  const Picoseconds dense_weights =
      cost.dense_forward -
      part_of(cost.dense_forward, core, dense_times_.layer_forward + dense_hbm_ps_per_token_);
  shares.weight_grad = std::min(shares.backward, dense_weights + cost.compute_grad / 2);
  const double outside_core = core * model_.dense_layers_per_moe_layer(options_.mtp_layers);
  const double dense_only_per_token = dense_times_.outside_forward + outside_hbm_ps_per_token_ -
                                      dense_times_.head_forward - head_end_hbm_ps_per_token_;
  shares.dense_only_weight_grad =
      shares.dense_only_forward -
      part_of(shares.dense_only_forward, outside_core, dense_only_per_token);
  return shares;
}

Picoseconds CostModel::pipeline_handover_ps() const {
  const Bytes bytes_per_token =
      static_cast<Bytes>(model_.hidden_size) * options_.activation_grad_bytes;
  return link_phase_ps(0, 0, tokens_per_rank_, tokens_per_rank_, bytes_per_token, solver_params_);
}

Picoseconds CostModel::optimizer_ps(int layers) const {
  return stage_optimizer_ps(layers, layers, true, true);
}

Picoseconds CostModel::stage_optimizer_ps(int layers, int all_layers, bool first_stage,
                                          bool last_stage) const {
  return optimizer_ps_for(stage_parameters(layers, all_layers, first_stage, last_stage).owned);
}

StageParameters CostModel::stage_parameters(int layers, int all_layers, bool first_stage,
                                            bool last_stage) const {
  // One stage holding every layer carries each layer's whole share of the parameters outside
  // the MoE layers (ModelSpec::dense_and_shared_params()).
  const int mtp = options_.mtp_layers;
  double dense_per_layer = model_.dense_and_shared_params(mtp);
  double besides = 0.0;
  if (!(first_stage && last_stage && layers == all_layers)) {
    // The simulated layers stand for the model's as outside_forward_ps() has them: each carries
    // 1/routed_layers() of the dense-only layers and the model's ends, all on the stage that has
    // them.
    // A stage that holds both ends (DualPipeV's first) keeps one matrix where they are tied.
    dense_per_layer = model_.moe_layer_dense_params();
    const double shares = model_.routed_share(all_layers, mtp);
    if (first_stage) {
      besides +=
          (model_.dense_layers * model_.dense_only_layer_params() + model_.embedding_params()) *
          shares;
    }
    if (last_stage) {
      // The head, and the MTP modules' projections. The modules embed the next tokens: a last
      // stage without the first's embedding (nor the head as it, tied) builds its own, as
      // Megatron-LM's does.
      double end = mtp * model_.mtp_projection_params();
      if (!(first_stage && model_.tied_embeddings)) end += model_.embedding_params();
      if (mtp > 0 && !first_stage && !model_.tied_embeddings) end += model_.embedding_params();
      besides += end * shares;
    }
  }
  // The distributed optimizer keeps 1/(D R) of the dense parameters' state on each GPU, and 1/D
  // of its home experts' (D = parameter_copies(): the data-parallel groups, twice as many
  // under DualPipe). The GPU that homes the most experts waits longest and holds the most.
  const double homes = model_.expert_params() * most_homed_;
  const bool distributed = options_.dense_sync == DenseSync::kDistributedOptimizer;
  const double groups = options_.parameter_copies();
  const double dense_share = distributed ? 1.0 / (groups * topology_.num_gpus()) : 1.0;
  const double expert_share = distributed ? 1.0 / groups : 1.0;
  StageParameters parameters;
  parameters.layers = layers;
  parameters.held = layers * (dense_per_layer + homes) + besides;
  parameters.owned =
      layers * (dense_per_layer * dense_share + homes * expert_share) + besides * dense_share;
  return parameters;
}

Picoseconds CostModel::pipeline_optimizer_ps(const std::vector<int>& layers_per_chunk,
                                             int stages) const {
  Picoseconds slowest = 0;
  for (const StageParameters& stage : pipeline_parameters(layers_per_chunk, stages)) {
    slowest = std::max(slowest, optimizer_ps_for(stage.owned));
  }
  return slowest;
}

std::vector<StageParameters> CostModel::pipeline_parameters(
    const std::vector<int>& layers_per_chunk, int stages) const {
  const int all = std::accumulate(layers_per_chunk.begin(), layers_per_chunk.end(), 0);
  const PipelineSchedule schedule = options_.pipeline_schedule;
  const int chunks = static_cast<int>(layers_per_chunk.size());
  std::vector<int> stage_layers(static_cast<std::size_t>(stages), 0);
  for (int c = 0; c < chunks; ++c) {
    stage_layers[pipeline_chunk_stage(schedule, c, stages)] += layers_per_chunk[c];
  }
  // The stages that hold the first chunk (the dense-only layers, the embedding) and the last
  // (the head): 0 and P - 1, or both 0 under DualPipeV.
  const int first = pipeline_chunk_stage(schedule, 0, stages);
  const int last = pipeline_chunk_stage(schedule, chunks - 1, stages);
  // Under DualPipe stage s's GPUs also hold chunk P - 1 - s's layers (chunks == stages), so
  // stages 0 and P - 1 each hold both ends: one matrix where the embeddings are tied.
  const bool dual = schedule == PipelineSchedule::kDualPipe;
  std::vector<StageParameters> parameters;
  for (int s = 0; s < stages; ++s) {
    const int mirror = dual ? stages - 1 - s : s;
    const int layers = stage_layers[s] + (dual ? stage_layers[mirror] : 0);
    parameters.push_back(
        stage_parameters(layers, all, s == first || mirror == first, s == last || mirror == last));
  }
  return parameters;
}

Picoseconds CostModel::optimizer_ps_for(double owned_params) const {
  const double bytes = owned_params * options_.optimizer_bytes_per_param;
  // GB/s x 1e9 bytes/s = bytes per 1e12 ps x 1e3: ps = bytes / (GB/s) x 1000.
  return round_ps(bytes / topology_.gpu.hbm_bandwidth_gb_per_s * 1000.0);
}

LayerCost CostModel::price(const PlannerDecision& decision, const RoutingCounts& counts,
                           Detail detail, TokenCount busiest_tokens) const {
  const TopologyView view = topology_.view();
  const int num_ranks = view.num_ranks();
  const int num_experts = counts.num_experts();
  if (busiest_tokens < 0) busiest_tokens = busiest_rank_tokens(counts, model_.top_k);
  const Picoseconds dense = dense_forward_ps(busiest_tokens);
  const Picoseconds dense_extra = dense_backward_extra_ps(busiest_tokens);
  const CostParams params = params_for(dense, dense_extra);

  // Expert compute per rank: each instance's grouped-GEMM share at its own tokens, from the
  // planner's sums where it has them, else tallied in the same pass over the routes as the
  // link counters, in a tally the thread reuses.
  std::vector<Picoseconds> compute(num_ranks, 0);
  auto add_instance = [&](RankId rank, TokenCount tokens) {
    compute[rank] += instance_compute_ps(tokens);
  };
  PlanCost plan_cost;
  if (!decision.tally.empty()) {
    plan_cost = plan_cost_from_tally(view, decision.placement, decision.plan, decision.resident,
                                     params, decision.tally, decision.weight_delivery);
    for (const auto& [rank, tokens] : decision.tally.instances) add_instance(rank, tokens);
  } else {
    thread_local InstanceTally instances;
    instances.reset(num_ranks, num_experts);
    plan_cost = predict_plan_cost_visiting(view, decision.placement, decision.plan,
                                           decision.resident, params, decision.weight_delivery,
                                           [&](const Route& route) { instances.add(route); });
    instances.drain(add_instance);
  }
  if (options_.dispatcher == Dispatcher::kDeepEP) {
    const bool routed = !decision.plan.routes.empty();
    price_deepep(decision.placement, routed ? &decision.plan : nullptr, counts, params, plan_cost);
  }
  LayerCost cost = layer_cost(decision, plan_cost, compute, dense, params);
  set_dense_backward(busiest_tokens, dense_extra, cost);
  if (detail != Detail::kTimes) cost.plan_hash = plan_hash(decision.plan);
  if (detail == Detail::kPerRank) fill_rank_times(plan_cost, compute, params, cost.ranks);
  return cost;
}

LayerCost CostModel::price_all_home(const PlannerDecision& layout,
                                    const RoutingCounts& counts) const {
  thread_local PlanTally tally;  // the replay prices a fallback on every record
  const TopologyView view = topology_.view();
  const TokenCount busiest_row =
      static_plan_tally(view, layout.placement, counts, &tally).busiest_row;
  const TokenCount busiest_tokens = (busiest_row + model_.top_k - 1) / model_.top_k;
  const Picoseconds dense = dense_forward_ps(busiest_tokens);
  const Picoseconds dense_extra = dense_backward_extra_ps(busiest_tokens);
  const CostParams params = params_for(dense, dense_extra);
  PlanCost plan_cost =
      plan_cost_from_tally(view, layout.placement, layout.plan, layout.resident, params, tally);
  std::vector<Picoseconds> compute(view.num_ranks(), 0);
  for (const auto& [rank, tokens] : tally.instances) compute[rank] += instance_compute_ps(tokens);
  if (options_.dispatcher == Dispatcher::kDeepEP) {
    price_deepep(layout.placement, nullptr, counts, params, plan_cost);
  }
  LayerCost cost = layer_cost(layout, plan_cost, compute, dense, params);
  set_dense_backward(busiest_tokens, dense_extra, cost);
  return cost;
}

void CostModel::set_dense_backward(TokenCount busiest_tokens, Picoseconds dense_extra,
                                   LayerCost& cost) const {
  cost.dense_backward_extra = dense_extra;
  cost.outside_forward = outside_forward_ps(busiest_tokens);
  cost.outside_backward_extra = outside_backward_extra_ps(busiest_tokens);
  cost.dense_recompute = dense_recompute_ps(busiest_tokens);
}

void CostModel::price_deepep(const Placement& placement, const Plan* routed,
                             const RoutingCounts& counts, const CostParams& params,
                             PlanCost& plan_cost) const {
  DeepepTraffic traffic(topology_.view(), counts, model_.top_k, expert_groups(model_));
  if (routed == nullptr) {
    const std::vector<RankId>& home = placement.home_rank;
    for (RankId src = 0; src < counts.num_ranks(); ++src) {
      for (ExpertId e = 0; e < counts.num_experts(); ++e) {
        traffic.add_instance(src, home[e], counts.at(src, e), e);
      }
    }
  } else {
    for (const Route& route : routed->routes) {
      traffic.add_instance(route.src, route.dst, route.tokens, route.expert);
    }
  }
  traffic.apply(params, plan_cost);
}

CostParams CostModel::params_for(Picoseconds dense_forward, Picoseconds dense_extra) const {
  CostParams params = solver_params_;
  // Compute is priced here per instance on the GEMM curve (instance_compute_ps()), not by the
  // solver's approximation of it: predict_plan_cost() need not tally instances again.
  params.instance_min_tokens = 0;
  params.weight_overlap_ps = forward_window_ps(dense_forward);
  params.gradient_overlap_ps = backward_idle_ps(2 * dense_forward + dense_extra);
  return params;
}

Picoseconds CostModel::forward_window_ps(Picoseconds compute) const {
  return round_ps(static_cast<double>(compute) * options_.weight_overlap_fraction);
}

Picoseconds CostModel::backward_idle_ps(Picoseconds compute) const {
  return round_ps(static_cast<double>(compute) * options_.gradient_overlap_fraction);
}

Picoseconds CostModel::forward_idle_ps(const LayerCost& cost) const {
  const Picoseconds window_left =
      std::max<Picoseconds>(0, forward_window_ps(cost.dense_forward) - cost.weight_window_used);
  return window_left + forward_window_ps(cost.compute + cost.outside_forward);
}

Picoseconds CostModel::exposed_param_gather_ps(Picoseconds idle) const {
  return std::max<Picoseconds>(0, param_gather_.time_ps - idle);
}

Picoseconds CostModel::exposed_expert_gather_ps(Picoseconds idle) const {
  const Picoseconds left = std::max<Picoseconds>(0, idle - param_gather_.time_ps);
  return std::max<Picoseconds>(0, expert_gather_.time_ps - left);
}

LayerSyncWork CostModel::backward_sync_work(const LayerCost& cost) const {
  LayerSyncWork work;
  work.expert_compute_idle = backward_idle_ps(cost.compute_grad);
  // What the backward recomputes keeps the links as idle, but the windows are its own
  // backward's (sim/README.md, "The gradient syncs' overlap").
  work.attention_idle = backward_idle_ps(2 * cost.dense_forward + cost.dense_backward_extra);
  work.outside_idle = backward_idle_ps(cost.outside_backward());
  work.replica_reduction = cost.replica_reduction;
  work.expert_sync = expert_sync_.time_ps;
  work.dense_sync = gradient_sync_.time_ps;
  work.combine_grad = cost.combine_grad;
  work.compute_grad = cost.compute_grad;
  work.dispatch_grad = cost.dispatch_grad;
  work.attention = cost.dense_backward();
  work.outside = cost.outside_backward();
  return work;
}

Picoseconds CostModel::planner_weight_window_ps(Picoseconds window, Picoseconds dense_forward,
                                                std::int64_t tokens_per_rank) const {
  const double fraction = options_.a2a_overlap_fraction;
  if (fraction == 0) return window;
  // Uniform routing: each GPU sends and receives tokens x top-k assignments, an even share of
  // them to each GPU; a lower bound of the busiest GPU's transfers, so the window is not
  // underestimated.
  const TopologyView view = topology_.view();
  const double assignments = static_cast<double>(tokens_per_rank) * model_.top_k;
  const double ranks = view.num_ranks(), per_node = view.gpus_per_node;
  const auto tokens = [&](double share) { return static_cast<TokenCount>(assignments * share); };
  const Picoseconds transfers =
      2 * link_phase_ps(tokens((per_node - 1) / ranks), 0, tokens((ranks - per_node) / ranks), 0,
                        solver_params_.backward_bytes_per_token, solver_params_);
  const Picoseconds compute =
      static_cast<Picoseconds>(assignments) * solver_params_.compute_ps_per_token;
  const Picoseconds free = std::clamp<Picoseconds>(dense_forward + compute - transfers, 0, window);
  return round_ps((1 - fraction) * static_cast<double>(window) +
                  fraction * static_cast<double>(free));
}

void CostModel::overlap_all_to_alls(int microbatch, int microbatches, LayerCost& cost) const {
  cost.a2a_hidden_forward = cost.a2a_hidden_backward = 0;
  const double fraction = options_.a2a_overlap_fraction;
  if (fraction == 0) return;
  auto hidden = [&](Picoseconds transfers, Picoseconds compute) {
    return round_ps(fraction * static_cast<double>(std::min(transfers, compute)));
  };
  if (microbatch > 0) {
    // The paired backward's transfers (taken to be this record's) run while this forward
    // computes; its replica weights are needed before its expert compute and keep their share
    // of its link-idle time.
    const Picoseconds link_idle =
        std::max<Picoseconds>(0, cost.dense_forward + cost.compute - cost.weight_window_used);
    cost.a2a_hidden_forward = hidden(cost.combine_grad + cost.dispatch_grad, link_idle);
  }
  if (microbatch + 1 < microbatches) {
    // The paired forward's dispatch and combine run while this backward computes: before the
    // step's last microbatch a backward carries no gradient syncs.
    cost.a2a_hidden_backward =
        hidden(cost.dispatch + cost.combine, cost.dense_backward() + cost.compute_grad);
  }
}

LayerCost CostModel::layer_cost(const PlannerDecision& decision, const PlanCost& plan_cost,
                                const std::vector<Picoseconds>& compute, Picoseconds dense_forward,
                                const CostParams& params) const {
  const int num_ranks = static_cast<int>(compute.size());
  LayerCost cost;
  cost.dense_forward = dense_forward;
  cost.dispatch = plan_cost.times.dispatch;
  cost.combine = plan_cost.times.combine;
  cost.weight_exposed = plan_cost.times.weight_exposed;
  cost.max_mean_load = plan_cost.max_mean_load();
  cost.loads = plan_cost.loads;
  cost.nvlink_dispatch_bytes = plan_cost.nvlink_dispatch_bytes;
  cost.ib_dispatch_bytes = plan_cost.ib_dispatch_bytes;
  cost.new_replicas = plan_cost.new_replicas;
  cost.overhead = overhead_time_ps(decision.overhead, plan_cost, params);
  // Migrations follow the new replicas' weights on the same links (overhead_time_ps()).
  cost.weight_window_used = std::min(params.weight_overlap_ps,
                                     plan_cost.weight_transfer + decision.overhead.migration_ps);
  cost.nvlink_weight_bytes =
      plan_cost.nvlink_weight_bytes + decision.overhead.migration_nvlink_bytes;
  cost.ib_weight_bytes = plan_cost.ib_weight_bytes + decision.overhead.migration_ib_bytes;
  Picoseconds compute_sum = 0;
  for (RankId rank = 0; rank < num_ranks; ++rank) {
    compute_sum += compute[rank];
    cost.compute = std::max(cost.compute, compute[rank]);
  }
  cost.compute_mean = (compute_sum + num_ranks - 1) / num_ranks;
  cost.compute_grad = 2 * cost.compute;
  // The shared model prices the two activation-gradient transfers at grad_bytes_per_token_
  // (solver_params_.backward_bytes_per_token): each is half its backward_transfer.
  cost.combine_grad = plan_cost.times.backward_transfer / 2;
  cost.dispatch_grad = cost.combine_grad;
  return cost;
}

void CostModel::fill_rank_times(const PlanCost& plan_cost, const std::vector<Picoseconds>& compute,
                                const CostParams& params, RankPhaseTimes& r) const {
  const int num_ranks = static_cast<int>(compute.size());
  for (auto* phase : {&r.dispatch, &r.compute, &r.combine, &r.weight_exposed, &r.combine_grad,
                      &r.dispatch_grad}) {
    phase->assign(num_ranks, 0);
  }
  for (RankId rank = 0; rank < num_ranks; ++rank) {
    auto link = [&](Bytes per_token) {
      return link_phase_ps(plan_cost.nvlink_tokens_out[rank], plan_cost.nvlink_tokens_in[rank],
                           plan_cost.ib_tokens_out[rank], plan_cost.ib_tokens_in[rank], per_token,
                           params);
    };
    r.dispatch[rank] = link(params.dispatch_bytes_per_token);
    r.combine[rank] = link(params.combine_bytes_per_token);
    r.combine_grad[rank] = r.dispatch_grad[rank] = link(grad_bytes_per_token_);
    r.compute[rank] = compute[rank];
    const Picoseconds weight =
        link_phase_ps(plan_cost.weight_nvlink_out[rank], plan_cost.weight_nvlink_in[rank],
                      plan_cost.weight_ib_out[rank], plan_cost.weight_ib_in[rank],
                      params.replica_weight_bytes, params);
    r.weight_exposed[rank] = std::max<Picoseconds>(0, weight - params.weight_overlap_ps);
  }
}

}  // namespace topoep
