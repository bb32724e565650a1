#pragma once
// The simulator's own assumptions, beyond the topology and model files. Each default is
// documented with its source in sim/README.md.

namespace topoep {

struct SimOptions {
  // Fraction of the dense (attention) forward compute before a MoE layer during which replica
  // weights move without delaying it. 1: the copy engines and NICs move weights while the SMs
  // run attention (DeepSeek-V3's DualPipe overlaps its all-to-alls with compute the same way).
  double weight_overlap_fraction = 1.0;
  // Fraction of the dense (attention) backward compute of a MoE layer's block, after its MoE
  // backward on the step's last microbatch, during which the layer's replica gradients reduce
  // into their homes without delaying it. 1: the same engines reduce while the SMs run the
  // attention backward (2x the forward), as data-parallel gradient reductions overlap the
  // backward pass (Megatron-LM's overlapped gradient reduce, PyTorch DDP's buckets).
  double gradient_overlap_fraction = 1.0;
  // Bytes per element of the activation gradients the backward all-to-alls carry (bf16).
  int activation_grad_bytes = 2;
  // HBM bytes the optimizer moves per parameter: AdamW in mixed precision reads the fp32 master
  // weight, both fp32 moments and the bf16 gradient (14 B) and writes the master, the moments
  // and the bf16 weight (14 B).
  double optimizer_bytes_per_param = 28;
  // Tokens per rank per microbatch for the solver's compute rate; 0: the trace's metadata, else
  // the first record's busiest rank.
  long long tokens_per_rank = 0;
};

// Throws InputError naming the field for a value outside its range.
void check_sim_options(const SimOptions& options);

}  // namespace topoep
