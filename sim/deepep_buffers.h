#pragma once
// The communication buffers DeepEP's high-throughput kernels keep on every GPU of the
// expert-parallel group for the whole run (sim/README.md, "Memory a GPU holds"): its Buffer's
// NVLink and RDMA buffers as Megatron-LM sizes them (fused_a2a.py, get_buffer(): the larger of
// the dispatch's and the combine's size hints, at hidden_size x 2 bytes a token), from
// DeepEP's recommended configs for the group's GPU count (deep_ep/buffer.py,
// get_dispatch_config() and get_combine_config()) and its size hints (csrc/config.hpp,
// Config::get_nvl_buffer_size_hint() and get_rdma_buffer_size_hint(); deepseek-ai/DeepEP,
// 2025). The same under every planner. Deterministic integers.

#include <optional>

#include "solver/types.h"

namespace topoep {

// DeepEP's SMs for its high-throughput kernels by default (Buffer.num_sms; Megatron-LM's
// --moe-deepep-num-sms).
inline constexpr int kDeepepDefaultSms = 20;

// Bytes of NVLink and RDMA buffer one GPU of a `num_ranks`-GPU group keeps for tokens of
// `hidden_size` elements, its kernels on `num_sms` SMs (even); nothing (std::nullopt) where
// DeepEP recommends no config for that many GPUs (it then asks for one) or cannot group them
// (above 8 GPUs, a multiple of its 8 NVLink peers).
std::optional<Bytes> deepep_buffer_bytes(int num_ranks, int hidden_size,
                                         int num_sms = kDeepepDefaultSms);

}  // namespace topoep
