#include "sim/memory_bound_kernels.h"

#include <cstdint>

namespace topoep {
namespace {

// The element widths of one model and its options.
class Kernels {
 public:
  Kernels(const ModelSpec& model, const SimOptions& options)
      : model_(model),
        b_(model.combine_bytes),
        g_(options.activation_grad_bytes),
        norms_recomputed_(options.recompute_layernorm),
        activation_recomputed_(options.recompute_moe_activation) {}

  // An RMSNorm over n elements: forward reads the input and writes the output (a GEMM's input
  // where `gemm_input`); backward reads the input and the output's gradient and writes the
  // input's; a recomputed norm runs its forward again in the backward.
  double norm(std::int64_t n, bool gemm_input) const {
    const double forward = n * b_ + model_.kept_bytes(n, gemm_input);
    return forward + n * (b_ + 2.0 * g_) + (norms_recomputed_ ? forward : 0.0);
  }
  // A residual add of h elements: two read, one written; backward the same for the two
  // branches' gradients.
  double residual_add(std::int64_t h) const { return 3.0 * h * (b_ + g_); }
  // An elementwise pass that reads and writes n elements (RoPE, a copy), and its gradient's.
  double read_write(std::int64_t n) const { return 2.0 * n * (b_ + g_); }
  // A gated activation (SwiGLU) of f outputs: forward reads the gate and up projections' 2f
  // and writes the down projection's input; backward reads the kept 2f and the output's
  // gradient and writes the 2f gradients; with `recomputed` the backward first runs the
  // forward again from the kept input.
  double gated_activation(std::int64_t f, bool recomputed) const {
    const double kept_input = model_.kept_bytes(2 * f, true);
    const double output = model_.kept_bytes(f, true);
    return 2.0 * f * b_ + output + kept_input + 3.0 * f * g_ +
           (recomputed ? kept_input + output : 0.0);
  }
  // A layer's attention besides its GEMMs and FlashAttention: MLA's latent norms (their
  // outputs the up-projections' inputs), and RoPE over the queries' and keys' rotated parts
  // (MLA: each head's RoPE part and the one shared key's; else every query and key-value head's
  // whole head dimension).
  double attention() const {
    const std::int64_t heads = model_.attention_heads;
    if (model_.multi_latent_attention()) {
      const std::int64_t q = model_.attention_q_lora_rank, r = model_.attention_rope_head_dim;
      return (q > 0 ? norm(q, true) : 0.0) + norm(model_.attention_kv_lora_rank, true) +
             read_write((heads + 1) * r);
    }
    return read_write((heads + model_.key_value_heads()) * model_.attention_qk_head_dim);
  }
  // A transformer block's kernels besides its FFN's: the pre-attention norm (its output the
  // projections' input), the attention's, two residual adds and the pre-FFN norm (`ffn_gemm`:
  // its output a GEMM's input; a MoE layer's router reads it in bf16).
  double block(bool ffn_gemm) const {
    const std::int64_t h = model_.hidden_size;
    return norm(h, true) + attention() + 2 * residual_add(h) + norm(h, ffn_gemm);
  }

  MemoryBoundBytes bytes(Dispatcher dispatcher) const {
    const std::int64_t h = model_.hidden_size, k = model_.top_k;
    const double dispatched = model_.dispatch_bytes_per_token();
    MemoryBoundBytes out;
    // Permuted in at the dispatch's width, out at the combine's; the gradients at theirs.
    out.expert_assignment = 2.0 * dispatched + 2.0 * h * model_.combine_bytes + 4.0 * h * g_ +
                            gated_activation(model_.expert_ffn_size, activation_recomputed_);
    // The router: the fp32 scores written from the logits, the top-k reading them; backward
    // reads the scores and their gradient and writes the logits'.
    out.moe_layer = block(false) + 20.0 * model_.num_experts;
    if (model_.shared_experts > 0) {
      out.moe_layer +=
          model_.shared_experts * gated_activation(model_.shared_expert_ffn_size, false) +
          3.0 * h * b_;  // the shared output added to the routed
    }
    if (dispatcher == Dispatcher::kPerAssignment) {
      // The token read, its k copies written at the dispatch's width; the k combined outputs
      // read and their weighted sum written; backward the two passes' gradients.
      out.moe_layer += 2.0 * h * b_ + k * dispatched + k * h * model_.combine_bytes + 2.0 * h * g_ +
                       2.0 * k * h * g_;
    }
    out.dense_only_layer = model_.dense_layers > 0
                               ? block(true) + gated_activation(model_.dense_ffn_size, false)
                               : 0.0;
    if (model_.vocab_size > 0) {
      // The row gathered and written; its gradient read and added into the embedding's.
      out.embedding = 2.0 * h * b_ + 3.0 * h * g_;
      // The logits read and their fp32 softmax written; backward reads it and writes the
      // logits' gradient (Megatron-LM's cross-entropy).
      const double v = model_.vocab_size;
      out.head_pass = norm(h, false) + v * (b_ + 8.0 + g_);
      out.mtp_module = 2 * norm(h, true) + read_write(2 * h) + out.embedding;
    }
    return out;
  }

 private:
  const ModelSpec& model_;
  double b_, g_;
  bool norms_recomputed_, activation_recomputed_;
};

}  // namespace

MemoryBoundBytes memory_bound_bytes(const ModelSpec& model, const SimOptions& options) {
  return Kernels(model, options).bytes(options.dispatcher);
}

}  // namespace topoep
