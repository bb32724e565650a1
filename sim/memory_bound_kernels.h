#pragma once
// HBM bytes a token moves through the memory-bound kernels of a training step: the norms,
// residual adds, RoPE, the router's scores, the gated activations (SwiGLU), the tokens'
// permutations around the all-to-alls, the embedding lookup and the loss's softmax. The GEMMs
// and FlashAttention are priced by their FLOPs (sim/cost_model.h); these kernels do too few
// FLOPs per byte for that, and take their time from the GPU's HBM bandwidth instead
// (SimOptions::memory_bound_kernels; sim/README.md, "Memory-bound kernels").
//
// Each count is one pass's forward and backward together, recomputation included: a kernel
// reads and writes each tensor once (fused reductions, such as a norm's, read nothing twice),
// activations at the model's combine_bytes an element, their gradients at
// SimOptions::activation_grad_bytes, and a tensor a GEMM reads at ModelSpec::kept_bytes() (fp8
// with its scales where the GEMMs are fp8). Deterministic doubles of integer arithmetic.

#include "models/model.h"
#include "sim/sim_options.h"

namespace topoep {

struct MemoryBoundBytes {
  // At an expert instance, per token assignment (with the load, so the planners see it): the
  // received token's permutation into the expert's order, the gated activation, and the
  // output's permutation back, each with its gradient's.
  double expert_assignment = 0;
  // A MoE layer's other kernels per token, identical for every planner: two norms, two
  // residual adds, MLA's latent norms, RoPE, the router, the shared experts' gated activations
  // and the sum of their output with the routed one; with the per-assignment dispatcher, the
  // source's permutation of its token's top-k copies before the dispatch and their weighted sum
  // after the combine (DeepEP's kernels read and reduce the tokens themselves).
  double moe_layer = 0;
  // One dense-only layer's per token: the same norms, residual adds and RoPE, and its FFN's
  // gated activation.
  double dense_only_layer = 0;
  // The model's ends per token (0 without a vocab_size): the embedding lookup and its
  // gradient's accumulation (first stage), and one pass through the final norm and the loss's
  // fp32 softmax over the vocabulary (last stage; each multi-token-prediction module makes
  // another).
  double embedding = 0;
  double head_pass = 0;
  // A multi-token-prediction module's own, besides its block and its head pass: its two norms,
  // the concatenation the projection reads and its lookup of the next tokens' embeddings.
  double mtp_module = 0;
};

MemoryBoundBytes memory_bound_bytes(const ModelSpec& model, const SimOptions& options);

}  // namespace topoep
