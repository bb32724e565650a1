#pragma once
// An MoE model as the cost model sees it: the dimensions that set per-token compute, bytes on
// the wire and replica weight size. Presets cite their published configs (models/README.md).

#include <string>

namespace topoep {

struct ModelSpec {
  std::string name;
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
  int tokens_per_rank = 4096;  // default tokens per rank per microbatch
};

}  // namespace topoep
