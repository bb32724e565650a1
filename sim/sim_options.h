#pragma once
// The simulator's own assumptions, beyond the topology and model files. Each default is
// documented with its source in sim/README.md.

#include <string>
#include <vector>

namespace topoep {

// How the MoE layer's all-to-alls move tokens (sim/README.md, "Dispatchers").
enum class Dispatcher {
  // Every token-expert assignment on its own, to its instance's GPU (Megatron-LM's all-to-all
  // token dispatcher: a token routed to two experts on one GPU is sent twice).
  kPerAssignment,
  // DeepEP's kernels: a token crosses IB once to each other node holding any of its experts, to
  // the GPU with its source's local index, which forwards it over NVLink once to each GPU of
  // the node that holds any of them; inside the source's node, once to each such GPU. The
  // trace holds counts, not which experts a token chose together: the distinct tokens are
  // estimated from them (sim/deepep_dispatch.h).
  kDeepEP,
};

// How the data-parallel group syncs the dense parameters every GPU holds (sim/README.md, "The
// data-parallel sync"; sim/ring_collective.h).
enum class DenseSync {
  // Plain data parallelism (Megatron-LM's default, PyTorch DDP): every GPU all-reduces the
  // gradients and updates every parameter.
  kAllReduce,
  // Megatron-LM's distributed optimizer (ZeRO-1, as DeepSeek-V3 trained): the gradients are
  // reduce-scattered, each GPU updates 1/R of the parameters and holds their optimizer state,
  // and the updated parameters are all-gathered before the next step's forward.
  kDistributedOptimizer,
};

// Which schedule runs a step's microbatches through the pipeline stages (sim/README.md,
// "Pipeline stages"; sim/pipeline_schedule.h).
enum class PipelineSchedule {
  // Megatron-LM's 1F1B, interleaved where SimOptions::virtual_stages is above 1.
  kOneFOneB,
  // DeepSeek-V3's DualPipe: half the microbatches enter at the first stage and half at the
  // last, so each stage's GPUs hold two chunks of the layers (the stage's own and its
  // mirror's: two copies of the parameters, whose gradients are summed as data-parallel
  // copies), pair a forward with a backward and defer weight gradients into the drain.
  kDualPipe,
  // DualPipe cut in half (DeepSeek's DualPipeV): the layers in 2P chunks laid out as a V, stage
  // s holding chunks s and 2P - 1 - s, every microbatch down the first P chunks and back up
  // the last P, with DualPipe's pairing and deferred weight gradients: one copy of the
  // parameters.
  kDualPipeV,
};

// The stage that runs chunk `chunk` of `stages` stages' chunks: chunk mod `stages`, or under
// DualPipeV the V's (chunks 0 to P - 1 down, P to 2P - 1 back up).
inline int pipeline_chunk_stage(PipelineSchedule schedule, int chunk, int stages) {
  if (schedule == PipelineSchedule::kDualPipeV && chunk >= stages) return 2 * stages - 1 - chunk;
  return chunk % stages;
}

// The most expert-parallel groups SimOptions::data_parallel accepts.
constexpr int kMaxDataParallel = 65536;
// The most multi-token-prediction modules SimOptions::mtp_layers accepts.
constexpr int kMaxMtpLayers = 64;

struct SimOptions {
  // Fraction of the dense (attention) forward compute before a MoE layer during which replica
  // weights move without delaying it. 1: the copy engines and NICs move weights while the SMs
  // run attention (DeepSeek-V3's DualPipe overlaps its all-to-alls with compute the same way).
  double weight_overlap_fraction = 1.0;
  // Fraction of the dense (attention) backward compute of a MoE layer's block, after its MoE
  // backward on the step's last microbatch, during which the layer's replica gradients reduce
  // into their homes without delaying it. 1: the same engines reduce while the SMs run the
  // attention backward (LayerCost::dense_backward() less what it recomputes), as data-parallel
  // gradient reductions overlap the backward pass (Megatron-LM's overlapped gradient reduce,
  // PyTorch DDP's buckets).
  double gradient_overlap_fraction = 1.0;
  // Bytes per parameter of the dense gradients the data-parallel sync carries at the end of the
  // step's last microbatch, in the same window as the replica gradients: 2, bf16 (Megatron-LM's
  // --grad-reduce-in-bf16), 4 for fp32 (Megatron-LM's default for bf16 training: it accumulates
  // and reduces gradients in fp32); 0 leaves the data-parallel traffic out of the step (the
  // optimizer still follows `dense_sync`). The gradient buffers a GPU holds are this wide (the
  // model's weight_bytes where 0: sim/gpu_memory.h).
  // With data_parallel > 1 the expert gradients' sync across the groups carries the same.
  int dense_grad_bytes = 2;
  DenseSync dense_sync = DenseSync::kAllReduce;
  // Copies of the simulated expert-parallel group that train data-parallel (Megatron-LM's
  // expert data parallelism), each on its own nodes, each routing its own tokens like the
  // trace's. Above 1, the dense sync spans all of their GPUs, and each GPU's home experts'
  // gradients are synced with the GPUs of the same rank in the other groups over IB, after its
  // replicas' gradients reach it (sim/README.md, "The data-parallel sync"). 1: one group.
  int data_parallel = 1;
  // Bytes per element of the activation gradients the backward all-to-alls carry (bf16).
  int activation_grad_bytes = 2;
  // HBM bytes the optimizer moves per parameter: AdamW in mixed precision reads the fp32 master
  // weight, both fp32 moments and the bf16 gradient (14 B) and writes the master, the moments
  // and the bf16 weight (14 B).
  double optimizer_bytes_per_param = 28;
  // Tokens per rank per microbatch for the solver's compute rate; 0: the trace's metadata, else
  // the first record's busiest rank.
  long long tokens_per_rank = 0;
  Dispatcher dispatcher = Dispatcher::kPerAssignment;
  // Fraction of a MoE layer's token all-to-alls that run while the SMs compute another
  // microbatch's chunk of the layer (sim/README.md, "All-to-alls behind compute"): Megatron-LM's
  // --overlap-moe-expert-parallel-comm and DeepSeek-V3's DualPipe pair the forward of
  // microbatch m + 1 with the backward of microbatch m. 0: every all-to-all on the critical path
  // (the default schedule); 1: as much as the paired compute covers. Above 0, pipeline stages
  // run Megatron-LM's combined 1F1B (sim/pipeline_schedule.h, run_one_f_one_b()).
  double a2a_overlap_fraction = 0.0;
  // Pipeline stages the trace's MoE layers are split into, contiguously (the first layers % P
  // stages hold one more), each on its own copy of the topology's GPUs, run by Megatron-LM's
  // 1F1B schedule, interleaved where virtual_stages is above 1 (sim/pipeline_schedule.h;
  // sim/README.md, "Pipeline stages"). 1: every layer on the topology's GPUs, one microbatch
  // after the other.
  int pipeline_stages = 1;
  // MoE layers on each stage, first to last, where not an even split (Megatron-LM's
  // --decoder-first-pipeline-num-layers and --decoder-last-pipeline-num-layers lighten the
  // stages that hold the dense-only layers and the head): pipeline_stages counts, each at least
  // 1, summing to the trace's layers. Empty: the even split.
  std::vector<int> pipeline_layers;
  // Chunks a pipeline stage holds (Megatron-LM's virtual pipeline stages,
  // --num-virtual-stages-per-pipeline-rank): the layers split into pipeline_stages x
  // virtual_stages contiguous chunks, chunk c on stage c mod pipeline_stages, run by the
  // interleaved 1F1B schedule. With more than 1, pipeline_layers gives each chunk's layers
  // (pipeline_chunks() counts), pipeline_stages is at least 2 and the microbatches a multiple
  // of it. 1: each stage one contiguous share of the layers.
  int virtual_stages = 1;
  // kDualPipe needs pipeline_stages even and at least 2, virtual_stages 1 and the microbatches
  // a step even and at least 2 x pipeline_stages (as DeepSeek's DualPipe asserts); kDualPipeV
  // at least 2 stages, virtual_stages 1 (it makes 2 chunks a stage itself) and at least 2 x
  // pipeline_stages microbatches.
  PipelineSchedule pipeline_schedule = PipelineSchedule::kOneFOneB;
  // The experts' gated activation is recomputed in the backward instead of kept (Megatron-LM's
  // --recompute-modules moe_act; DeepSeek-V3 recomputes its SwiGLU so): the expert activations
  // a GPU holds shrink by f a token assignment (ModelSpec::expert_activation_bytes_per_token()).
  // The recomputation's time, an elementwise pass, is charged with memory_bound_kernels.
  bool recompute_moe_activation = false;
  // Bytes of optimizer state a GPU keeps per parameter it updates (sim/gpu_memory.h): AdamW's
  // fp32 master weight and two fp32 moments, 12 (Megatron-LM's distributed-optimizer table:
  // 18 bytes a parameter with the bf16 weight and fp32 gradient); 8 with bf16 moments, as
  // DeepSeek-V3 trained. Memory only: the optimizer's time follows optimizer_bytes_per_param.
  double optimizer_state_bytes_per_param = 12;
  // The backward recomputes every norm's output from its input instead of keeping it
  // (Megatron-LM's --recompute-modules layernorm; DeepSeek-V3 recomputes its RMSNorms): the
  // dense activations a GPU holds shrink (ModelSpec::attention_activation_bytes_per_token()).
  // Its time, an elementwise pass, is charged with memory_bound_kernels.
  bool recompute_layernorm = false;
  // The backward recomputes MLA's up-projections (the query's and the keys' and values') from
  // the latents instead of keeping their outputs (Megatron-LM's --recompute-modules
  // mla_up_proj; DeepSeek-V3 does): the dense activations shrink and each dense backward first
  // reruns those GEMMs (CostModel::dense_recompute_ps()). Only for MLA models.
  bool recompute_mla_up_proj = false;
  // Multi-token-prediction modules trained with the model (Megatron-LM's --mtp-num-layers;
  // DeepSeek-V3 trains 1, its config's num_nextn_predict_layers): each a projection, a MoE
  // transformer block and another pass through the shared output head, on the last pipeline
  // stage. The trace's layers then sample the model's MoE layers and the modules' blocks
  // (ModelSpec::routed_layers()): a whole trace records them last, each priced as routed. Needs
  // the model's vocab_size (the head). 0: none.
  int mtp_layers = 0;
  // The memory-bound kernels (norms, residual adds, RoPE, the router, gated activations, the
  // tokens' permutations, the embedding lookup, the loss's softmax) take their HBM bytes'
  // time at the GPU's HBM bandwidth (sim/memory_bound_kernels.h): each expert instance's per
  // token assignment, which the planners weigh, the dense part's and the model's ends' per
  // token. false: only the GEMMs and the attention core take time, as before.
  bool memory_bound_kernels = false;

  // The chunks each stage holds: virtual_stages, 2 under DualPipeV.
  int chunks_per_stage() const {
    return pipeline_schedule == PipelineSchedule::kDualPipeV ? 2 : virtual_stages;
  }
  // The contiguous shares the layers split into: each stage's chunks.
  int pipeline_chunks() const { return pipeline_stages * chunks_per_stage(); }
  // The stage that runs chunk `chunk` (pipeline_chunk_stage()).
  int chunk_stage(int chunk) const {
    return pipeline_chunk_stage(pipeline_schedule, chunk, pipeline_stages);
  }
  // Copies of every parameter the data-parallel syncs and the distributed optimizer span:
  // data_parallel, twice it under DualPipe (each chunk on two stages' GPUs).
  int parameter_copies() const {
    return data_parallel * (pipeline_schedule == PipelineSchedule::kDualPipe ? 2 : 1);
  }
};

// The most pipeline stages SimOptions::pipeline_stages accepts, and the most chunks
// (pipeline_chunks()); no more than the layers either way.
constexpr int kMaxPipelineStages = 1024;

// "allreduce" or "distributed", as the CLI and the sweep spell them.
const char* dense_sync_name(DenseSync sync);
// The sync named `name`, or false for an unknown name.
bool parse_dense_sync(const std::string& name, DenseSync* out);

// "1f1b", "dualpipe" or "dualpipev", as the CLI and the sweep spell them.
const char* pipeline_schedule_name(PipelineSchedule schedule);
// The schedule named `name`, or false for an unknown name.
bool parse_pipeline_schedule(const std::string& name, PipelineSchedule* out);

// "alltoall" or "deepep", as the CLI and the sweep spell them.
const char* dispatcher_name(Dispatcher dispatcher);
// The dispatcher named `name`, or false for an unknown name.
bool parse_dispatcher(const std::string& name, Dispatcher* out);

// Throws InputError naming the field for a value outside its range.
void check_sim_options(const SimOptions& options);

}  // namespace topoep
