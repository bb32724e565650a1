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
  // Bytes a routed expert keeps per token assignment from its forward for its backward: the
  // gate/up projection's input (h), the gated activation's input (2f) and, unless the backward
  // recomputes it (`activation_recomputed`), its output, the down projection's input (f); at
  // combine_bytes an element (the experts' output dtype, bf16 in every preset). Routing and
  // permutation buffers are left out.
  std::int64_t expert_activation_bytes_per_token(bool activation_recomputed = false) const {
    const std::int64_t f = expert_ffn_size;
    return (hidden_size + (activation_recomputed ? 2 : 3) * f) * combine_bytes;
  }

  // Forward FLOPs per token of a layer's attention: 2 per dense parameter, and causal attention
  // scores, QK^T and AV at an average context of half the sequence: 2 heads (d_qk + d_v) L / 2,
  // with L the attention span below.
  double attention_flops_per_token() const {
    return 2.0 * static_cast<double>(dense_params_per_layer) +
           static_cast<double>(attention_heads) * (attention_qk_head_dim + attention_v_head_dim) *
               attention_span();
  }
  // Forward FLOPs per token of a MoE layer's dense part: its attention and 6 h f per shared
  // expert (gate, up, down).
  double dense_flops_per_token() const {
    return attention_flops_per_token() +
           6.0 * hidden_size * static_cast<double>(shared_expert_ffn_size) * shared_experts;
  }
  // Forward FLOPs per token of one dense-only layer: the same attention and its FFN's 6 h f_d,
  // without shared experts.
  double dense_layer_flops_per_token() const {
    return attention_flops_per_token() + 6.0 * hidden_size * static_cast<double>(dense_ffn_size);
  }
  // How many dense-only layers each MoE layer stands for.
  double dense_layers_per_moe_layer() const {
    return moe_layers > 0 ? static_cast<double>(dense_layers) / moe_layers : 0.0;
  }
  // Forward FLOPs per token of the output head: 2 h V.
  double head_flops_per_token() const {
    return 2.0 * hidden_size * static_cast<double>(vocab_size);
  }
  // Forward FLOPs per token a MoE layer carries of the work outside the MoE layers, identical
  // for every planner: its share of the dense-only layers and of the output head.
  double outside_flops_per_token() const {
    if (moe_layers <= 0) return 0.0;
    return dense_layers_per_moe_layer() * dense_layer_flops_per_token() +
           head_flops_per_token() / moe_layers;
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
  // Dense parameters per MoE layer a GPU holds optimizer state for: dense and shared experts,
  // and the MoE layer's share of the dense-only layers (attention and FFN) and of the
  // embedding and output head.
  double dense_and_shared_params() const {
    const double embeddings = (tied_embeddings ? 1.0 : 2.0) * embedding_params();
    return moe_layer_dense_params() + dense_layers_per_moe_layer() * dense_only_layer_params() +
           (moe_layers > 0 ? embeddings / moe_layers : 0.0);
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
