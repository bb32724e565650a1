#pragma once
// The integer cost model the solver decides with and the simulator reports with.
//
// Units: time in picoseconds; bandwidth in bytes per microsecond (1 GB/s decimal = 1000
// bytes/µs); sizes in bytes. Integers keep every decision exact and identical on host and GPU.

#include <cstdint>

#include "solver/host_device.h"
#include "solver/types.h"

namespace topoep {

class RoutingCounts;  // solver/routing_counts.h

using Picoseconds = std::int64_t;

// One link class: time(bytes) = alpha + ceil(bytes / bandwidth), and 0 for 0 bytes.
struct LinkCost {
  std::int64_t bytes_per_us = 1;  // achieved, one direction, per GPU
  Picoseconds alpha_ps = 0;       // fixed cost of one transfer phase
};

struct CostParams {
  Picoseconds compute_ps_per_token = 0;  // expert FFN forward time per token assignment
  // An expert instance that processes any token costs at least this many tokens' compute:
  // below the GPU's roofline knee a grouped GEMM is bound by reading the expert's weights, so
  // its time does not shrink with its tokens (each replica reads them again). An instance of t
  // tokens computes instance_compute_tokens(t) x compute_ps_per_token. 0: compute is linear.
  TokenCount instance_min_tokens = 0;
  Bytes dispatch_bytes_per_token = 0;  // hidden size x dispatch dtype (incl. scales)
  Bytes combine_bytes_per_token = 0;   // hidden size x combine dtype
  Bytes replica_weight_bytes = 0;      // one expert's weights, moved to a new replica
  // One expert's weight gradients, reduced from a new replica to its home in the backward pass
  // (once per step: a replica kept for later microbatches pays it once). 0: not charged.
  Bytes replica_gradient_bytes = 0;
  // The backward pass, so that plans are weighed over forward and backward as the simulator
  // reports them: expert compute is `backward_compute_factor` times the forward's (dgrad and
  // wgrad: 2), and activation gradients cross the dispatch's links twice (the combine's
  // gradient, then the dispatch's) at `backward_bytes_per_token`. Zeros: forward only.
  std::int32_t backward_compute_factor = 0;
  Bytes backward_bytes_per_token = 0;
  // Transfer time that hides behind the dense/attention compute preceding the MoE layer; only
  // weight traffic beyond it is exposed on the critical path.
  Picoseconds weight_overlap_ps = 0;
  // The same for the step-end gradient reduction: a layer's replica gradients are complete
  // after its MoE backward on the step's last microbatch and reduce while the SMs run that
  // layer's attention backward; only reduction time beyond it is exposed.
  Picoseconds gradient_overlap_ps = 0;
  LinkCost scale_up;   // NVLink, inside a node
  LinkCost scale_out;  // InfiniBand/RoCE, between nodes
};

// Throws InputError naming the field for negative values or a bandwidth outside [1, 10^12]
// bytes/µs.
void check_cost_params(const CostParams& params);

// Throws InputError naming "counts" unless `tokens` token assignments and `replicas` new
// replicas fit the 64-bit picosecond and byte arithmetic under `cost` in the worst case (every
// token on one rank, every byte over the slower link class, every replica sent by one home):
// below 2^61 ps and 2^61 bytes.
void check_cost_range(const CostParams& cost, long double tokens, std::int64_t replicas);
// The same for the tokens of `counts`.
void check_cost_range(const CostParams& cost, const RoutingCounts& counts, std::int64_t replicas);

// alpha + ceil(bytes * 1e6 / bytes_per_us) picoseconds; 0 for bytes <= 0. Exact for any
// bytes below 9e12 (split so that no intermediate exceeds 2^63).
TOPOEP_HOST_DEVICE inline Picoseconds transfer_ps(Bytes bytes, const LinkCost& link) {
  if (bytes <= 0) return 0;
  const std::int64_t whole = bytes / link.bytes_per_us;
  const std::int64_t rest = bytes % link.bytes_per_us;
  return link.alpha_ps + whole * 1000000 +
         (rest * 1000000 + link.bytes_per_us - 1) / link.bytes_per_us;
}

TOPOEP_HOST_DEVICE inline Picoseconds max_ps(Picoseconds a, Picoseconds b) { return a > b ? a : b; }

// The tokens whose linear compute an instance of `tokens` tokens costs: none for an idle
// instance, else at least `min_tokens` (CostParams::instance_min_tokens).
TOPOEP_HOST_DEVICE inline TokenCount instance_compute_tokens(TokenCount tokens,
                                                             TokenCount min_tokens) {
  return tokens <= 0 ? 0 : tokens > min_tokens ? tokens : min_tokens;
}

}  // namespace topoep
