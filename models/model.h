#pragma once
// An MoE model as the cost model sees it: the dimensions that set per-token compute, bytes on
// the wire and replica weight size. Presets cite their published configs (models/README.md).

#include <cmath>
#include <cstdint>
#include <string>

namespace topoep {

struct ModelSpec {
  std::string name;
  // What it was read from: a file path or "preset:NAME" (empty when built in code), so that
  // errors about it can name the file.
  std::string origin;
  std::string source;
  int num_experts = 0;      // routed experts per MoE layer
  int top_k = 0;            // experts per token
  int hidden_size = 0;      // model dimension
  int expert_ffn_size = 0;  // intermediate size of one routed expert
  int moe_layers = 0;
  // Bytes per element. Dispatch may be fp8 with one fp32 scale per `dispatch_scale_block`
  // elements (0: no scales); combine and replica weights are usually bf16.
  int dispatch_bytes = 1;
  int dispatch_scale_block = 128;
  int combine_bytes = 2;
  int weight_bytes = 2;
  // Attention (and other dense) parameters per layer: their compute precedes the MoE layer and
  // is the window in which replica weights can move unexposed.
  long long dense_params_per_layer = 0;
  // The rest of a layer's dense work, identical for every planner but part of every step (and
  // so of every end-to-end ratio): always-active shared experts, and attention scores, whose
  // FLOPs grow with the sequence length. Zeros: none.
  int shared_experts = 0;
  int shared_expert_ffn_size = 0;  // intermediate size of one shared expert
  int attention_heads = 0;         // query heads
  int attention_qk_head_dim = 0;   // per head: query/key dimension (MLA: no-RoPE + RoPE parts)
  int attention_v_head_dim = 0;    // per head: value dimension
  int sequence_length = 0;         // training sequence length (causal attention)
  // Sliding-window attention (gpt-oss every other layer, Mistral's window): how many of the
  // MoE layers attend only to the last `attention_window` tokens. 0: every layer attends to
  // the whole causal context.
  int attention_window = 0;
  int attention_window_layers = 0;
  // Layers without routed experts (DeepSeek-V3's first 3, Llama 4 Maverick's every other one):
  // attention as above and one dense FFN of `dense_ffn_size` (gate, up, down). Identical for
  // every planner, yet part of every step: each simulated MoE layer carries dense_layers /
  // moe_layers of them, so a trace of some of the layers keeps the model's proportions.
  int dense_layers = 0;
  int dense_ffn_size = 0;
  // The token embedding and the output head (LM head) of vocab_size x hidden: the head's GEMM
  // runs on every token once per model, and both matrices (one where tied) hold optimizer
  // state; each simulated MoE layer carries 1 / moe_layers of them. 0: not counted.
  int vocab_size = 0;
  bool tied_embeddings = false;
  int tokens_per_rank = 4096;  // default tokens per rank per microbatch
  // Group-limited routing (DeepSeek-V3's n_group, topk_group): the experts form `expert_groups`
  // equal groups of consecutive ids and a token picks its experts from at most
  // `expert_groups_per_token` of them. EPLB as vLLM and SGLang deploy it takes the groups as its
  // num_groups. 0: none (one group).
  int expert_groups = 0;
  int expert_groups_per_token = 0;
  // What the attention keeps for its backward (ModelSpec::attention_activation_bytes_per_token()).
  // Grouped-query attention: the key and value heads (0: as many as attention_heads). Multi-head
  // latent attention (DeepSeek-V2/V3): the compressed query's and key-value's ranks and the RoPE
  // part of attention_qk_head_dim (0 kv rank: not MLA; 0 q rank: the query is not compressed).
  int attention_kv_heads = 0;
  int attention_q_lora_rank = 0;
  int attention_kv_lora_rank = 0;
  int attention_rope_head_dim = 0;
  // The GEMMs (experts, attention projections, shared experts, dense-only layers' FFNs) run in
  // fp8 at the GPU's fp8 peak, as DeepSeek-V3 trained (model files' "gemm_precision": "fp8");
  // false: bf16. The attention core and the output head stay bf16 either way.
  bool fp8_gemms = false;

  // Forward FLOPs of one routed expert per token assignment: gate, up and down projections,
  // 2 FLOP per multiply-add.
  double expert_flops_per_token() const {
    return 6.0 * hidden_size * static_cast<double>(expert_ffn_size);
  }
  // Parameters of one routed expert (gate, up, down): a replica moves them, and its gradients.
  double expert_params() const { return 3.0 * hidden_size * static_cast<double>(expert_ffn_size); }
  // Bytes a token assignment puts on the wire: dispatched at dispatch_bytes an element plus an
  // fp32 scale per dispatch_scale_block elements, combined at combine_bytes.
  double dispatch_bytes_per_token() const {
    const double scales =
        dispatch_scale_block > 0
            ? 4.0 * std::ceil(static_cast<double>(hidden_size) / dispatch_scale_block)
            : 0.0;
    return static_cast<double>(hidden_size) * dispatch_bytes + scales;
  }
  double combine_bytes_per_token() const {
    return static_cast<double>(hidden_size) * combine_bytes;
  }
  // Bytes a tensor of `elements` elements a token takes where the backward keeps it: at
  // combine_bytes an element (the activations' width, bf16 in every preset); where it is the
  // input of a GEMM (or of the gated activation) and the GEMMs are fp8 (fp8_gemms), one byte an
  // element and an fp32 scale per 128 (`gemm_input`): FP8 training keeps the fp8 copy its
  // weight-gradient GEMM reads, as Transformer Engine does and DeepSeek-V3 caches its linear
  // layers' and SwiGLU's inputs.
  std::int64_t kept_bytes(std::int64_t elements, bool gemm_input = false) const {
    if (gemm_input && fp8_gemms) return elements + 4 * ((elements + 127) / 128);
    return elements * combine_bytes;
  }

  // Bytes a routed expert keeps per token assignment from its forward for its backward: the
  // gate/up projection's input (h), the gated activation's input (2f) and, unless the backward
  // recomputes it (`activation_recomputed`), its output, the down projection's input (f); each
  // as kept_bytes() keeps a GEMM's input. Routing and permutation buffers are left out.
  std::int64_t expert_activation_bytes_per_token(bool activation_recomputed = false) const {
    const std::int64_t f = expert_ffn_size;
    return kept_bytes(hidden_size, true) + kept_bytes(2 * f, true) +
           (activation_recomputed ? 0 : kept_bytes(f, true));
  }

  bool multi_latent_attention() const { return attention_kv_lora_rank > 0; }
  int key_value_heads() const {
    return multi_latent_attention() || attention_kv_heads == 0 ? attention_heads
                                                               : attention_kv_heads;
  }
  // Bytes one layer's attention keeps per token from its forward for its backward (kept_bytes()
  // each): the layer's input (its norm's backward reads it) and, unless the backward recomputes
  // the norm (`norms_recomputed`), the normed input the projections read; under MLA the
  // compressed query (q_lora_rank) and key-value (kv_lora_rank + RoPE key) and, unless
  // recomputed, their normed forms, the up-projections' inputs; the query, keys and values
  // FlashAttention reads, unless the backward recomputes MLA's up-projections from the latents
  // (`up_projections_recomputed`); the attention's output (the output projection's input) and
  // its softmax statistics (fp32 a head). FlashAttention keeps no scores, and with fp8 GEMMs
  // its inputs stay bf16. Dropout is none and RoPE keeps nothing.
  std::int64_t attention_activation_bytes_per_token(bool norms_recomputed,
                                                    bool up_projections_recomputed) const {
    const std::int64_t h = hidden_size, heads = attention_heads, kv = key_value_heads();
    const bool mla = multi_latent_attention();
    const bool q_recomputed = up_projections_recomputed && mla && attention_q_lora_rank > 0;
    const bool kv_recomputed = up_projections_recomputed && mla;
    std::int64_t bytes = kept_bytes(h) + (norms_recomputed ? 0 : kept_bytes(h, true));
    if (mla) {
      const std::int64_t q = attention_q_lora_rank, c = attention_kv_lora_rank;
      bytes += kept_bytes(q) + kept_bytes(c + attention_rope_head_dim);
      if (!norms_recomputed) bytes += (q > 0 ? kept_bytes(q, true) : 0) + kept_bytes(c, true);
    }
    if (!q_recomputed) bytes += kept_bytes(heads * attention_qk_head_dim);
    if (!kv_recomputed) {
      bytes += kept_bytes(kv * attention_qk_head_dim) + kept_bytes(kv * attention_v_head_dim);
    }
    return bytes + kept_bytes(heads * attention_v_head_dim, true) + heads * 4;
  }
  // Bytes a MoE layer keeps per token outside its routed experts: its attention's, the input of
  // the norm before the experts and (unless recomputed) its output, which the router reads (at
  // the activations' width: the router stays bf16 with fp8 GEMMs, as DeepSeek-V3 keeps it) and
  // the shared experts (the routed experts keep their own copy: expert_activation_bytes_per_
  // token()), the router's probabilities (fp32 an expert) and each shared expert's gated
  // activation's input (2 f_s) and output (f_s).
  std::int64_t moe_layer_dense_activation_bytes_per_token(bool norms_recomputed,
                                                          bool up_projections_recomputed) const {
    const std::int64_t h = hidden_size, f_s = shared_expert_ffn_size;
    return attention_activation_bytes_per_token(norms_recomputed, up_projections_recomputed) +
           kept_bytes(h) + (norms_recomputed ? 0 : kept_bytes(h)) +
           shared_experts * (kept_bytes(2 * f_s, true) + kept_bytes(f_s, true)) + 4LL * num_experts;
  }
  // Bytes one dense-only layer keeps per token: its attention's, its FFN's norm input and
  // (unless recomputed) output, and the FFN's gated activation's input (2 f_d) and output.
  std::int64_t dense_layer_activation_bytes_per_token(bool norms_recomputed,
                                                      bool up_projections_recomputed) const {
    const std::int64_t h = hidden_size, f_d = dense_ffn_size;
    return attention_activation_bytes_per_token(norms_recomputed, up_projections_recomputed) +
           kept_bytes(h) + (norms_recomputed ? 0 : kept_bytes(h, true)) +
           kept_bytes(2 * f_d, true) + kept_bytes(f_d, true);
  }
  // Bytes the output head and the loss keep per token: the final norm's input and (unless
  // recomputed) its output, the head's input (the head stays bf16), and the softmax over the
  // vocabulary in fp32, from which the backward forms the logits' gradient (Megatron-LM's
  // cross-entropy casts the logits to fp32 and saves their normalised exponentials; the logits
  // themselves are transient: loss_transient_bytes_per_token()). 0 where vocab_size is 0 (no
  // head counted).
  std::int64_t head_activation_bytes_per_token(bool norms_recomputed) const {
    if (vocab_size <= 0) return 0;
    const std::int64_t h = hidden_size;
    return kept_bytes(h) + (norms_recomputed ? 0 : kept_bytes(h)) + 4LL * vocab_size;
  }
  // Bytes per token that exist only while the loss runs, on top of what the head keeps: the
  // logits in bf16 (the head's output, which its backward does not read) and the fp32 copy
  // Megatron-LM's cross-entropy casts them to and normalises into the softmax it keeps. Both
  // are freed when the loss returns. One loss runs at a time, so the MTP modules' losses add
  // none. 0 where vocab_size is 0. A fused cross-entropy (Megatron-LM's
  // --cross-entropy-loss-fusion) keeps less; not modelled.
  std::int64_t loss_transient_bytes_per_token() const {
    return vocab_size <= 0 ? 0 : 6LL * vocab_size;
  }
  // Bytes a multi-token-prediction module keeps per token besides its transformer block's and
  // its pass through the head's (head_activation_bytes_per_token()): its two norms' inputs
  // (the hidden state and the embedding) and, unless the norms are recomputed, their outputs,
  // the projection's input (2h).
  std::int64_t mtp_activation_bytes_per_token(bool norms_recomputed) const {
    const std::int64_t h = hidden_size;
    return kept_bytes(2 * h) + (norms_recomputed ? 0 : kept_bytes(2 * h, true));
  }
  // Forward FLOPs per token of MLA's up-projections, which the backward runs again when it
  // recomputes them: the compressed query's to every head's query (where it is compressed) and
  // the compressed key-value's to every head's no-RoPE key and value. 0 without MLA.
  double up_projection_flops_per_token() const {
    if (!multi_latent_attention()) return 0.0;
    const double heads = attention_heads;
    return 2.0 * (static_cast<double>(attention_q_lora_rank) * heads * attention_qk_head_dim +
                  static_cast<double>(attention_kv_lora_rank) * heads *
                      (attention_qk_head_dim - attention_rope_head_dim + attention_v_head_dim));
  }

  // The FLOP counts below take `gemm_speedup`, the GEMMs' peak over the bf16 peak (2 where
  // fp8_gemms runs them in fp8, 1 by default): each GEMM's FLOPs are divided by it, so that the
  // sum runs at the bf16 rate; the attention core (scores) and the output head stay bf16, as
  // DeepSeek-V3's FP8 training keeps them. With 1 they are the FLOPs themselves.
  //
  // Forward FLOPs per token of a layer's attention: 2 per dense parameter, and causal attention
  // scores, QK^T and AV at an average context of half the sequence: 2 heads (d_qk + d_v) L / 2,
  // with L the attention span below.
  double attention_flops_per_token(double gemm_speedup = 1.0) const {
    return 2.0 * static_cast<double>(dense_params_per_layer) / gemm_speedup +
           attention_core_flops_per_token();
  }
  // Of attention_flops_per_token(), the attention core's (the scores QK^T and AV, which
  // FlashAttention fuses, at its own rate: Topology::attention_efficiency), always bf16.
  double attention_core_flops_per_token() const {
    return static_cast<double>(attention_heads) * (attention_qk_head_dim + attention_v_head_dim) *
           attention_span();
  }
  // The attention core's backward over its forward in FLOPs: FlashAttention's backward
  // recomputes the scores QK^T from the kept softmax statistics, then forms dV, dP, dQ and dK:
  // five products of the forward's two (its papers count the backward's FLOPs as 2.5 x the
  // forward's for the same reason; cuDNN's fused attention recomputes them too).
  static constexpr double kAttentionCoreBackwardRatio = 2.5;
  // Forward FLOPs per token of a MoE layer's dense part: its attention and 6 h f per shared
  // expert (gate, up, down).
  double dense_flops_per_token(double gemm_speedup = 1.0) const {
    return attention_flops_per_token(gemm_speedup) +
           6.0 * hidden_size * static_cast<double>(shared_expert_ffn_size) * shared_experts /
               gemm_speedup;
  }
  // Forward FLOPs per token of one dense-only layer: the same attention and its FFN's 6 h f_d,
  // without shared experts.
  double dense_layer_flops_per_token(double gemm_speedup = 1.0) const {
    return attention_flops_per_token(gemm_speedup) +
           6.0 * hidden_size * static_cast<double>(dense_ffn_size) / gemm_speedup;
  }
  // The model's routed layers with `mtp_layers` multi-token-prediction modules trained
  // (SimOptions::mtp_layers): its MoE layers and each module's transformer block, a MoE layer
  // like theirs (DeepSeek-V3's). A trace's layers sample them; a whole trace ends with the
  // modules'.
  int routed_layers(int mtp_layers = 0) const { return moe_layers + mtp_layers; }
  // The part of the model's routed layers `layers` simulated layers stand for, and so of what
  // lies outside them (the dense-only layers, the model's ends); 0 where there are none.
  double routed_share(int layers, int mtp_layers = 0) const {
    const int routed = routed_layers(mtp_layers);
    return routed > 0 ? static_cast<double>(layers) / routed : 0.0;
  }
  // How many dense-only layers each routed layer stands for.
  double dense_layers_per_moe_layer(int mtp_layers = 0) const {
    const int routed = routed_layers(mtp_layers);
    return routed > 0 ? static_cast<double>(dense_layers) / routed : 0.0;
  }
  // Forward FLOPs per token of the output head: 2 h V.
  double head_flops_per_token() const {
    return 2.0 * hidden_size * static_cast<double>(vocab_size);
  }
  // Forward FLOPs per token of a multi-token-prediction module's projection of its two
  // normed inputs (the hidden state and the next token's embedding, 2h) to h: 4 h^2.
  double mtp_projection_flops_per_token(double gemm_speedup = 1.0) const {
    return 4.0 * hidden_size * static_cast<double>(hidden_size) / gemm_speedup;
  }
  // A multi-token-prediction module's parameters besides its transformer block: the projection.
  double mtp_projection_params() const {
    return 2.0 * hidden_size * static_cast<double>(hidden_size);
  }
  // Forward FLOPs per token a routed layer carries of the model's end, on the last pipeline
  // stage: the output head, and with `mtp_layers` modules each one's projection and its own
  // pass through the shared head; 1 / routed_layers() of it.
  double head_end_flops_per_token(double gemm_speedup = 1.0, int mtp_layers = 0) const {
    const int routed = routed_layers(mtp_layers);
    if (routed <= 0) return 0.0;
    return ((1.0 + mtp_layers) * head_flops_per_token() +
            mtp_layers * mtp_projection_flops_per_token(gemm_speedup)) /
           routed;
  }
  // Forward FLOPs per token a routed layer carries of the work outside the routed layers,
  // identical for every planner: its share of the dense-only layers and of the model's end.
  double outside_flops_per_token(double gemm_speedup = 1.0, int mtp_layers = 0) const {
    if (routed_layers(mtp_layers) <= 0) return 0.0;
    return dense_layers_per_moe_layer(mtp_layers) * dense_layer_flops_per_token(gemm_speedup) +
           head_end_flops_per_token(gemm_speedup, mtp_layers);
  }
  // Twice the mean causal context a query attends to, averaged over the MoE layers (every
  // simulated layer is charged the mean, so a step's total is exact): L for full attention;
  // for a window of W < L tokens, query i attends to min(i, W) keys, a mean of W - W^2 / (2 L),
  // so 2 W - W^2 / L.
  double attention_span() const {
    const double full = static_cast<double>(sequence_length);
    if (attention_window <= 0 || attention_window_layers <= 0 || moe_layers <= 0 ||
        attention_window >= sequence_length) {
      return full;
    }
    const double w = static_cast<double>(attention_window);
    const double windowed = 2.0 * w - w * w / full;
    return (windowed * attention_window_layers + full * (moe_layers - attention_window_layers)) /
           moe_layers;
  }
  // Dense parameters per routed layer a GPU holds optimizer state for: dense and shared
  // experts, and the layer's share of the dense-only layers (attention and FFN), of the
  // embedding and output head, and of the `mtp_layers` modules' projections.
  double dense_and_shared_params(int mtp_layers = 0) const {
    const double ends =
        (tied_embeddings ? 1.0 : 2.0) * embedding_params() + mtp_layers * mtp_projection_params();
    const int routed = routed_layers(mtp_layers);
    return moe_layer_dense_params() +
           dense_layers_per_moe_layer(mtp_layers) * dense_only_layer_params() +
           (routed > 0 ? ends / routed : 0.0);
  }
  // A MoE layer's own dense parameters: attention and the like, and the shared experts.
  double moe_layer_dense_params() const {
    return static_cast<double>(dense_params_per_layer) +
           3.0 * hidden_size * static_cast<double>(shared_expert_ffn_size) * shared_experts;
  }
  // One dense-only layer's parameters: attention and the like, and its FFN.
  double dense_only_layer_params() const {
    return static_cast<double>(dense_params_per_layer) +
           3.0 * hidden_size * static_cast<double>(dense_ffn_size);
  }
  // The token embedding's parameters (the output head's as many).
  double embedding_params() const { return hidden_size * static_cast<double>(vocab_size); }
};

}  // namespace topoep
