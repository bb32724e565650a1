#pragma once
// The simulator's cost model: what one planner decision costs on one MoE layer and microbatch,
// forward and backward, on a topology and model. Every constant comes from the topology and
// model files or SimOptions; the formulas are in sim/README.md.
//
// Units: time in integer picoseconds (reported as µs), bytes, decimal GB/s in the files
// (1 GB/s = 1000 bytes/µs). Deterministic: the same decision and counts give the same integers.

#include <cstdint>
#include <vector>

#include "models/model.h"
#include "sim/backward_sync.h"
#include "sim/ring_collective.h"
#include "sim/sim_options.h"
#include "sim/solver_cost.h"
#include "solver/plan_cost.h"
#include "solver/planners/planner.h"
#include "topologies/topology.h"

namespace topoep {

// Per-rank phase times of one decision, [num_ranks] each (the timeline draws them).
struct RankPhaseTimes {
  std::vector<Picoseconds> dispatch, compute, combine, weight_exposed, combine_grad, dispatch_grad;
};

// The parameters one GPU of a pipeline stage keeps (counts, not bytes): what the optimizer
// updates and what sim/gpu_memory.h counts. Deterministic doubles.
struct StageParameters {
  int layers = 0;    // the trace's MoE layers on its GPUs (under DualPipe, both its chunks')
  double held = 0;   // every parameter it computes with: its layers' dense parameters and home
                     // experts, and the stage's share of the dense-only layers and embeddings
  double owned = 0;  // of them, those it keeps optimizer state for (all of them, or its share
                     // under the distributed optimizer)
};

struct LayerCost {
  // Forward phases, each the maximum over ranks (every phase waits for its slowest rank).
  Picoseconds dispatch = 0;
  Picoseconds compute = 0;
  Picoseconds combine = 0;
  Picoseconds weight_exposed = 0;  // new replicas' weights beyond the overlap window
  // With the distributed optimizer, on the step's first microbatch: what the link-idle forward
  // of the layer before does not hide of the all-gather of this layer's updated dense
  // parameters (one bucket of prefetch: CostModel::exposed_param_gather_ps(); set by the replay
  // once the layer before is priced).
  Picoseconds dense_param_gather = 0;
  // With data_parallel > 1, on the same microbatch: what that idle time leaves unhidden of the
  // all-gather of the layer's updated home experts across the groups (after the dense one).
  Picoseconds expert_param_gather = 0;
  // Backward: the combine's gradient travels like the dispatch, expert dgrad + wgrad is twice
  // the forward compute, then the dispatch's gradient travels like the combine.
  Picoseconds combine_grad = 0;
  Picoseconds compute_grad = 0;
  Picoseconds dispatch_grad = 0;
  // The step-end gradient syncs of this layer, set on the step's last microbatch: what of each
  // is still running when the backward pass ends (sim/backward_sync.h): the data-parallel sync
  // of its dense gradients, its replicas' gradients into their homes, and with data_parallel >
  // 1 its home experts' sync between the groups.
  Picoseconds dense_grad_reduce = 0;
  Picoseconds grad_reduce = 0;
  Picoseconds expert_grad_sync = 0;
  Picoseconds replica_reduction = 0;  // the replica gradients' own reduction time, whole
  Picoseconds overhead = 0;       // planner time on the forward critical path (solve, migration)
  Picoseconds dense_forward = 0;  // attention/dense compute before the layer
  // What the layer's dense backward takes beyond twice dense_forward: its attention core's
  // backward, 2.5 x the core's forward FLOPs at the backward's efficiency, less twice the
  // core's forward (CostModel::dense_backward_extra_ps()).
  Picoseconds dense_backward_extra = 0;
  // What the dense backward recomputes before it runs, on the busiest rank
  // (CostModel::dense_recompute_ps()): 0 unless MLA's up-projections are recomputed.
  Picoseconds dense_recompute = 0;
  // This MoE layer's share of the model's work outside its routed layers, forward on the
  // busiest rank: of the R = ModelSpec::routed_layers(), dense_layers / R of a dense-only layer
  // and 1 / R of the output head (and of the MTP modules' projections and head passes);
  // backward 2x and its dense-only layers' attention cores' extra (outside_backward_extra, as
  // dense_backward_extra). On the critical path, but no overlap window.
  Picoseconds outside_forward = 0;
  Picoseconds outside_backward_extra = 0;
  Picoseconds compute_mean = 0;  // forward compute averaged over ranks (the ideal's)
  double max_mean_load = 1.0;
  Bytes nvlink_dispatch_bytes = 0;  // forward dispatch, summed over ranks
  Bytes ib_dispatch_bytes = 0;
  Bytes nvlink_weight_bytes = 0;  // new replicas' weights and migrations
  Bytes ib_weight_bytes = 0;
  Bytes grad_reduce_nvlink_bytes = 0;  // replica gradients, summed over hops
  Bytes grad_reduce_ib_bytes = 0;
  Bytes dense_sync_nvlink_bytes = 0;  // the data-parallel sync's, summed over GPUs
  Bytes dense_sync_ib_bytes = 0;
  Bytes expert_sync_ib_bytes = 0;  // the expert gradients' sync across groups, summed over GPUs
  int new_replicas = 0;
  std::uint64_t plan_hash = 0;    // 0 for the ideal
  std::vector<TokenCount> loads;  // tokens each rank processes, [num_ranks] (empty: the ideal)
  RankPhaseTimes ranks;           // filled only when asked for
  // Of the weights' overlap window (weight_overlap_fraction x dense_forward), what the new
  // replicas' weights and the planner's migrations take; the next layer's parameter all-gather
  // has the rest (earliest deadline first: these are needed sooner).
  Picoseconds weight_window_used = 0;
  // The data-parallel group whose routing this is (sim/replay.h, routing_groups()): the
  // planner's slowest; 0 where the trace stands for every group; -1 for the ideal, a bound on
  // the planners' records.
  int group = 0;
  // With SimOptions::a2a_overlap_fraction (CostModel::overlap_all_to_alls()): the all-to-all
  // time of the paired microbatch that runs while this record's forward computes (the backward
  // of the microbatch before), and while its backward computes (the forward of the microbatch
  // after). The phases above stay whole; moe_forward() and moe_backward() leave these out.
  Picoseconds a2a_hidden_forward = 0;
  Picoseconds a2a_hidden_backward = 0;

  Picoseconds moe_forward() const {
    return dispatch + compute + combine + weight_exposed - a2a_hidden_forward;
  }
  Picoseconds moe_backward() const {
    return combine_grad + compute_grad + dispatch_grad - a2a_hidden_backward;
  }
  // The straggler time of the MoE layer, forward and backward.
  Picoseconds moe() const { return moe_forward() + moe_backward(); }
  // What of critical_path() comes before the record's backward.
  Picoseconds forward_path() const {
    return dense_forward + outside_forward + overhead + dense_param_gather + expert_param_gather +
           moe_forward();
  }
  // The layer's own dense backward: twice its forward and its attention core's extra, and
  // what it recomputes first.
  Picoseconds dense_backward() const {
    return 2 * dense_forward + dense_backward_extra + dense_recompute;
  }
  // The backward of its share outside the MoE layers.
  Picoseconds outside_backward() const { return 2 * outside_forward + outside_backward_extra; }
  // What of this record's step-end syncs the backward leaves exposed.
  Picoseconds step_end_syncs() const { return dense_grad_reduce + grad_reduce + expert_grad_sync; }
  // Everything this record puts on the step's critical path.
  Picoseconds critical_path() const {
    return forward_path() + dense_backward() + outside_backward() + moe_backward() +
           step_end_syncs();
  }
};

// Tokens on the busiest source rank: its token-expert assignments over top-k, rounded up.
TokenCount busiest_rank_tokens(const RoutingCounts& counts, int top_k);

class CostModel {
 public:
  // `tokens_per_rank` (per microbatch) sets the dense window the weights can hide behind.
  // Throws InputError for bad options.
  CostModel(const Topology& topology, const ModelSpec& model, const SimOptions& options,
            std::int64_t tokens_per_rank);

  const Topology& topology() const { return topology_; }
  const ModelSpec& model() const { return model_; }
  const SimOptions& options() const { return options_; }
  // The integer parameters planners decide with (sim/solver_cost.h), the weights' overlap
  // window scaled (and, with the all-to-alls behind compute, what they leave of it:
  // planner_weight_window_ps()); no gradient window.
  const CostParams& solver_params() const { return solver_params_; }
  // Tokens a GPU holds per microbatch, as the model was built with.
  std::int64_t tokens_per_rank() const { return tokens_per_rank_; }

  // Forward gate/up/down GEMMs of one expert instance over `tokens` tokens:
  // 6 x hidden x ffn x tokens FLOP / (gemm_peak_tflops() x efficiency(tokens)), and with
  // SimOptions::memory_bound_kernels a third of its token assignments' memory-bound bytes at
  // the HBM bandwidth (the backward, twice the forward, has the rest); 0 for no tokens.
  Picoseconds instance_compute_ps(TokenCount tokens) const;
  // Dense forward of one layer on the busiest rank: dense_forward_time_ps() (dense parameters
  // and shared experts at their GEMMs' peak x the curve's best efficiency, the attention core at
  // bf16's x its own efficiency), and with SimOptions::memory_bound_kernels a third of the
  // layer's other memory-bound bytes a token at the HBM bandwidth.
  Picoseconds dense_forward_ps(TokenCount tokens_on_rank) const;
  // LayerCost::dense_backward_extra and outside_backward_extra on the busiest rank
  // (DenseTimesPerToken's, sim/solver_cost.h); may be negative.
  Picoseconds dense_backward_extra_ps(TokenCount tokens_on_rank) const;
  Picoseconds outside_backward_extra_ps(TokenCount tokens_on_rank) const;
  // What the backward recomputes of a MoE layer's dense forward on the busiest rank, and of its
  // share of the dense-only layers (charged with the layer: a twentieth of it for DeepSeek-V3):
  // with SimOptions::recompute_mla_up_proj, MLA's up-projections
  // (ModelSpec::up_projection_flops_per_token()) at the dense GEMMs' rate; else 0.
  Picoseconds dense_recompute_ps(TokenCount tokens_on_rank) const;
  // A routed layer's share of the dense-only layers' and the model's end's forward on the
  // busiest rank (ModelSpec::outside_flops_per_token() with SimOptions::mtp_layers, at the dense
  // GEMMs' rate; with memory_bound_kernels, their kernels' share as dense_forward_ps() adds).
  Picoseconds outside_forward_ps(TokenCount tokens_on_rank) const;
  // Of a record's `outside` (its outside_forward_ps()), the model's end's part (the output head,
  // and the MTP modules' projections and passes through it), rounded; the rest is the
  // dense-only layers'. Pipeline stages put the two on the last and the first stage.
  Picoseconds outside_head_part(Picoseconds outside) const;
  // A record's work as a pipeline stage runs it, in ps: the MoE layer's own forward and
  // backward (its critical path less its share outside the MoE layers), and that share's
  // forward, split into the dense-only layers' part (run on the first stage) and the head's (on
  // the last); the head's backward is twice its forward, the dense-only layers' twice theirs
  // and their attention cores' extra. `weight_grad`: of `backward`, the weight gradients'
  // compute (as long as the dense forward's GEMMs: the attention core has no weights; and half
  // the expert backward compute), which a zero-bubble split runs apart; the outside parts'
  // likewise as long as their forward's GEMMs.
  struct PipelineShares {
    Picoseconds forward = 0, backward = 0;
    Picoseconds dense_only_forward = 0, head_forward = 0;
    Picoseconds dense_only_backward = 0;
    Picoseconds weight_grad = 0, dense_only_weight_grad = 0;
  };
  PipelineShares pipeline_shares(const LayerCost& cost) const;
  // Optimizer step for `layers` MoE layers: (dense and shared-expert params, the layers' share
  // of the dense-only layers' and the embeddings' (1/(D R) of them with the distributed
  // optimizer, D = data_parallel) + ceil(E/R) home experts' params (1/D of them with the
  // distributed optimizer): the GPU that homes the most) per GPU x optimizer_bytes_per_param at
  // HBM bandwidth. Replicas hold no optimizer state.
  Picoseconds optimizer_ps(int layers) const;
  // The same for one pipeline stage of `layers` of the trace's `all_layers` MoE layers: each
  // layer's own dense parameters; the first stage also every layer's share of the dense-only
  // layers and the embedding, the last every layer's share of the output head (a copy of the
  // embedding where tied, as Megatron-LM keeps one there; one matrix where tied and the stage
  // is both, as DualPipeV's first and DualPipe's outer ones). optimizer_ps() where one stage
  // holds every layer.
  Picoseconds stage_optimizer_ps(int layers, int all_layers, bool first_stage,
                                 bool last_stage) const;
  // The slowest stage's stage_optimizer_ps() where the layers lie in chunks of
  // `layers_per_chunk`, chunk c on stage c mod `stages`; under DualPipe each stage s also
  // updates its copy of stage P - 1 - s's layers.
  Picoseconds pipeline_optimizer_ps(const std::vector<int>& layers_per_chunk, int stages) const;
  // The parameters stage_optimizer_ps() updates, for one GPU of that stage: `owned` what it
  // updates, `held` every parameter it holds (the distributed optimizer shares the updates, not
  // the parameters or their gradients).
  StageParameters stage_parameters(int layers, int all_layers, bool first_stage,
                                   bool last_stage) const;
  // Each stage's, laid out as pipeline_optimizer_ps() lays them out.
  std::vector<StageParameters> pipeline_parameters(const std::vector<int>& layers_per_chunk,
                                                   int stages) const;
  // One microbatch's hand-over between pipeline stages: each GPU sends its tokens (the
  // tokens_per_rank the model was built with) as hidden states (forward; their gradients
  // backward) at activation_grad_bytes to the GPU of its rank in the next stage, which is on
  // other nodes: one IB phase.
  Picoseconds pipeline_handover_ps() const;
  // Experts homed on the GPU that homes the most (Placement::contiguous): ceil(E / R). The
  // optimizer and the experts' sync between data-parallel groups wait for that GPU.
  int most_homed_experts() const { return most_homed_; }
  // The data-parallel sync of one layer's dense parameters (SimOptions::dense_sync and
  // dense_grad_bytes; zeros for 0 bytes or one GPU): its gradients' all-reduce or
  // reduce-scatter over the D x R GPUs of the D = parameter_copies() copies (the data-parallel
  // groups, and under DualPipe each stage's mirror too) at the end of the step's
  // last microbatch, and with the distributed optimizer its updated parameters' all-gather (at
  // the model's weight_bytes) before the step's first.
  const RingTraffic& dense_gradient_sync() const { return gradient_sync_; }
  const RingTraffic& dense_param_gather() const { return param_gather_; }
  // The same for one layer's expert parameters of the GPU that homes the most (ceil(E/R)
  // experts) with its peers of the same rank in the other copies: a ring of D GPUs on D nodes,
  // all of it over IB (zeros for D = 1).
  const RingTraffic& expert_gradient_sync() const { return expert_sync_; }
  const RingTraffic& expert_param_gather() const { return expert_gather_; }
  // The link-idle forward of a layer priced `cost` that the next layer's parameter all-gathers
  // may hide in (Megatron-LM prefetches one bucket ahead: a layer's gather starts as the layer
  // before begins its forward): what the weights leave of their window, the expert compute
  // between the two all-to-alls and the layer's share outside the MoE layers, all scaled by
  // weight_overlap_fraction.
  Picoseconds forward_idle_ps(const LayerCost& cost) const;
  // What of the dense parameters' all-gather stays on the critical path given `idle` of
  // link-idle forward before the layer (forward_idle_ps() of the layer before; 0 for the first
  // MoE layer, whose bucket the step's optimizer leaves to its forward).
  Picoseconds exposed_param_gather_ps(Picoseconds idle) const;
  // The experts' all-gather runs after the dense one: what is left of `idle` hides it.
  Picoseconds exposed_expert_gather_ps(Picoseconds idle) const;
  // The step-end syncs of a layer priced `cost` on the step's last microbatch, whose replica
  // gradients take `cost.replica_reduction` to reach their homes, and the link-idle compute
  // they may hide in (gradient_overlap_fraction of it): expose_backward_syncs() runs them. The
  // planners decide without it (solver_params(): sim/solver_cost.h says why).
  LayerSyncWork backward_sync_work(const LayerCost& cost) const;
  // Sets `cost`'s a2a_hidden_forward and a2a_hidden_backward for microbatch `microbatch` of
  // `microbatches` in a step (sim/README.md, "All-to-alls behind compute"). A step's first
  // forward and last backward have no partner; the partner's transfers are taken to be this
  // record's (the same layer and planner, one microbatch away). A forward hides the partner's
  // two backward transfers behind its compute (attention and experts) less what its replica
  // weights take of the links; a backward before the step's last carries no syncs and hides
  // the partner's dispatch and combine behind its compute. Zeros with a fraction of 0.
  void overlap_all_to_alls(int microbatch, int microbatches, LayerCost& cost) const;

  enum class Detail { kTimes, kWithHash, kPerRank };
  // Prices `decision` on `counts`. kTimes skips the plan hash; kPerRank also fills `ranks`.
  // The parameter all-gathers are not priced here: they depend on the layer before
  // (forward_idle_ps()).
  // With the DeepEP dispatcher the decision's routes are read (the planners must write them:
  // PlannerContext::routes); a decision without routes is priced as all-home.
  // `busiest_tokens` is busiest_rank_tokens(counts, top-k) when the caller knows it (a trace
  // that declares tokens_per_rank: every row sums to it), -1 to compute it here (one more pass
  // over the counts: 7.5% of a static-plan record in sim_bench).
  LayerCost price(const PlannerDecision& decision, const RoutingCounts& counts,
                  Detail detail = Detail::kWithHash, TokenCount busiest_tokens = -1) const;
  // What price(layout, counts, Detail::kTimes) returns once `layout.plan` routes every token to
  // its expert's home rank (route_all_home()), computed from the counts alone: `layout.plan`'s
  // routes are ignored, its replicas idle. The replay prices a planner's static fallback this
  // way on every record without building its routes.
  LayerCost price_all_home(const PlannerDecision& layout, const RoutingCounts& counts) const;

 private:
  // The optimizer's time over `owned_params` parameters (StageParameters::owned).
  Picoseconds optimizer_ps_for(double owned_params) const;
  // SimOptions::memory_bound_kernels: the *_hbm_ps_per_token_ rates below.
  void set_memory_bound_rates();
  // SimOptions::dispatcher kDeepEP: replaces `plan_cost`'s token link counters and times by
  // DeepEP's (sim/deepep_dispatch.h), from `routed`'s routes, or, for null, from the counts at
  // their experts' home ranks in `placement` (the all-home layout price_all_home() prices).
  void price_deepep(const Placement& placement, const Plan* routed, const RoutingCounts& counts,
                    const CostParams& params, PlanCost& plan_cost) const;
  // The planners' parameters with the weight- and gradient-overlap windows of a layer whose
  // dense forward (before it, on the busiest rank) takes `dense_forward` and whose dense
  // backward twice that and `dense_extra`.
  CostParams params_for(Picoseconds dense_forward, Picoseconds dense_extra) const;
  // The weights' window `window` the planners decide with, of a layer whose dense forward takes
  // `dense_forward`: with the all-to-alls behind compute, a forward's link-idle time also
  // carries the paired backward's transfers (overlap_all_to_alls()), so a replica's weights
  // there cost the transfers they displace. The planners get what the transfers leave free
  // (estimated on uniform routing at `tokens_per_rank`), blended with the whole window by
  // a2a_overlap_fraction: the window itself at 0.
  Picoseconds planner_weight_window_ps(Picoseconds window, Picoseconds dense_forward,
                                       std::int64_t tokens_per_rank) const;
  // weight_overlap_fraction x `compute` of link-idle forward compute (the weights' window: x the
  // attention forward).
  Picoseconds forward_window_ps(Picoseconds compute) const;
  // gradient_overlap_fraction x `compute` of link-idle backward compute.
  Picoseconds backward_idle_ps(Picoseconds compute) const;
  // The phase maxima, bytes and loads of a plan priced with `params`; `compute` is each rank's
  // expert compute.
  LayerCost layer_cost(const PlannerDecision& decision, const PlanCost& plan_cost,
                       const std::vector<Picoseconds>& compute, Picoseconds dense_forward,
                       const CostParams& params) const;
  void fill_rank_times(const PlanCost& plan_cost, const std::vector<Picoseconds>& compute,
                       const CostParams& params, RankPhaseTimes& ranks) const;
  // The dense backward's parts of a record whose busiest rank holds `busiest_tokens`, and its
  // share outside the MoE layers.
  void set_dense_backward(TokenCount busiest_tokens, Picoseconds dense_extra,
                          LayerCost& cost) const;
  // `whole` x part_per_token / whole_per_token, rounded; 0 where whole_per_token is not positive.
  static Picoseconds part_of(Picoseconds whole, double part_per_token, double whole_per_token);

  Topology topology_;
  ModelSpec model_;
  SimOptions options_;
  CostParams solver_params_;
  double flop_per_token_ = 0;      // forward FFN FLOP of one token at one expert
  double expert_peak_tflops_ = 0;  // gemm_peak_tflops(): the experts' GEMMs' peak
  // The time a token brings to the layer's dense part and its share outside the MoE layers,
  // forward and the attention cores' backward extra (sim/solver_cost.h).
  DenseTimesPerToken dense_times_;
  double dense_gemm_flop_per_ps_ = 0;    // dense_recompute_ps()'s rate
  double recompute_flop_per_token_ = 0;  // of dense_recompute_ps()
  // With SimOptions::memory_bound_kernels, the forward ps a token (an assignment at an expert)
  // adds through the memory-bound kernels (sim/memory_bound_kernels.h) to the expert compute,
  // the dense forward, the share outside the MoE layers and, of it, the last stage's part;
  // zeros without.
  double expert_hbm_ps_per_token_ = 0, dense_hbm_ps_per_token_ = 0;
  double outside_hbm_ps_per_token_ = 0, head_end_hbm_ps_per_token_ = 0;
  // From `saturated_tokens_` tokens on, the curve's efficiency is its last value exactly, and
  // peak x efficiency is `saturated_flop_per_ps_` (the replay prices every instance: most of
  // them past the knee need no search of the curve).
  double saturated_tokens_ = 0;
  double saturated_flop_per_ps_ = 0;
  Bytes grad_bytes_per_token_ = 0;
  int most_homed_ = 0;
  RingTraffic gradient_sync_, param_gather_, expert_sync_, expert_gather_;
  std::int64_t tokens_per_rank_ = 0;
};

}  // namespace topoep
