#pragma once
// How a plan's new replicas receive their weights: what the cost model prices
// (predict_plan_cost()) and what the harness's layers run.

#include <cstdint>

namespace topoep {

enum class WeightDelivery : std::uint8_t {
  // The expert's home rank sends each new replica its own copy, point to point (the TopoEP
  // solver's model).
  kFromHome,
  // One pipelined broadcast per expert from its home to its new replicas, as NCCL's broadcast
  // runs it and FasterMoE shadows experts: the gradient chain (gradient_chains.h) walked the
  // other way, so each holder receives one copy and sends at most one, and the copies cross IB
  // once per node the chain enters.
  kChainBroadcast,
};

}  // namespace topoep
