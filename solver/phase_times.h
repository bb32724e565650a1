#pragma once
// The per-rank counters a plan induces and the MoE layer time they predict. Shared by the
// solver's own decisions, predict_plan_cost() and, through it, the simulator.

#include <cstdint>

#include "solver/cost_params.h"
#include "solver/host_device.h"
#include "solver/types.h"

namespace topoep {

// Arrays of length num_ranks. Token counters count dispatched token assignments (a token that
// stays on its source rank crosses no link); weight counters count new replicas moved.
struct RankCounters {
  TokenCount* load;                 // tokens processed on the rank
  TokenCount* nvlink_out;           // tokens the rank sends inside its node
  TokenCount* nvlink_in;            // tokens the rank receives from its node
  TokenCount* ib_out;               // tokens the rank sends to other nodes
  TokenCount* ib_in;                // tokens the rank receives from other nodes
  std::int32_t* weight_nvlink_out;  // replicas whose weights the rank sends inside its node
  std::int32_t* weight_nvlink_in;
  std::int32_t* weight_ib_out;
  std::int32_t* weight_ib_in;
};

// Adds `tokens` routed from `src` to `dst` (`same_node`: in one NVLink domain) to the counters:
// the load at dst and, unless the tokens stay on their source rank, the sends and arrivals of
// the link class they cross. Returns the tokens that crossed nodes (over IB).
TOPOEP_HOST_DEVICE inline TokenCount add_route_tokens(const RankCounters& c, RankId src, RankId dst,
                                                      bool same_node, TokenCount tokens) {
  c.load[dst] += tokens;
  if (src == dst) return 0;
  if (same_node) {
    c.nvlink_out[src] += tokens;
    c.nvlink_in[dst] += tokens;
    return 0;
  }
  c.ib_out[src] += tokens;
  c.ib_in[dst] += tokens;
  return tokens;
}

// Phase times in picoseconds, each the maximum over ranks (every phase waits for its slowest
// rank); `total` is their sum: the predicted straggler time of the layer's forward pass and,
// with the backward parameters of CostParams set, of its backward pass and its new replicas'
// gradient reduction.
struct PhaseTimes {
  Picoseconds dispatch = 0;  // max over ranks of max(NVLink time, IB time): pipelined
  // max over ranks of the compute load x compute_ps_per_token: the rank's tokens or, with
  // CostParams::instance_min_tokens, each of its expert instances at least that many
  Picoseconds compute = 0;
  Picoseconds combine = 0;         // reversed dispatch traffic at combine_bytes_per_token
  Picoseconds weight_exposed = 0;  // max over ranks of replica weight time beyond the overlap
  // max over ranks of the new replicas' weight gradients reduced back to their homes, one chain
  // per expert (backward, once per step), beyond CostParams::gradient_overlap_ps; 0 when
  // replica_gradient_bytes is 0. With owed holders (below), what the new replicas add to the
  // step's exposed reduction.
  Picoseconds gradient = 0;
  // Backward: expert compute (backward_compute_factor x compute) and the two activation-gradient
  // transfers (2 x the dispatch's links at backward_bytes_per_token); 0 without those parameters
  Picoseconds backward_compute = 0;
  Picoseconds backward_transfer = 0;
  Picoseconds total = 0;
};

TOPOEP_HOST_DEVICE inline Picoseconds link_phase_ps(TokenCount nvlink_out, TokenCount nvlink_in,
                                                    TokenCount ib_out, TokenCount ib_in,
                                                    Bytes bytes_per_unit, const CostParams& cost) {
  const TokenCount nvlink = nvlink_out > nvlink_in ? nvlink_out : nvlink_in;
  const TokenCount ib = ib_out > ib_in ? ib_out : ib_in;
  return max_ps(transfer_ps(nvlink * bytes_per_unit, cost.scale_up),
                transfer_ps(ib * bytes_per_unit, cost.scale_out));
}

// The per-rank maxima the phase times depend on: each link class's busier direction on its
// busiest rank, the largest load, the same for replica weight counts, and for the gradient
// counts of the step-end reduction (gradient chains, below).
struct CounterMaxima {
  TokenCount nvlink = 0;
  TokenCount ib = 0;
  TokenCount load = 0;
  std::int32_t weight_nvlink = 0;
  std::int32_t weight_ib = 0;
  std::int32_t gradient_nvlink = 0;
  std::int32_t gradient_ib = 0;
};

// Gradient counts: the replica weight gradients of a step-end reduction, one chain per expert
// (solver/gradient_chains.h), as [4][R] counts: per rank the gradients it receives and sends
// inside its node, then receives from and sends to other nodes. Weights go from a home to each
// replica (a star); their gradients come back along the chain, so the two are counted apart.
// Owed holders: the ranks whose replica of each expert the step's earlier microbatches used,
// [E][R] bytes (1: used), or null for none: their chains are reduced at the step's end with
// this microbatch's new replicas, and gradient_chains_ps() of those chains alone is the time
// the gradient phase is counted beyond. The simulator prices a step's whole reduction with the
// same functions (sim/gradient_reduction.h).

// The token maxima of `c` (nvlink, ib, load); the weight fields are left as they are. The solver
// calls it after every move and the weight half only when replicas changed.
TOPOEP_HOST_DEVICE inline void token_maxima(const RankCounters& c, int num_ranks,
                                            CounterMaxima& m) {
  TokenCount nvlink = 0, ib = 0, load = 0;
  for (int r = 0; r < num_ranks; ++r) {
    const TokenCount nvlink_r = c.nvlink_out[r] > c.nvlink_in[r] ? c.nvlink_out[r] : c.nvlink_in[r];
    const TokenCount ib_r = c.ib_out[r] > c.ib_in[r] ? c.ib_out[r] : c.ib_in[r];
    if (nvlink_r > nvlink) nvlink = nvlink_r;
    if (ib_r > ib) ib = ib_r;
    if (c.load[r] > load) load = c.load[r];
  }
  m.nvlink = nvlink;
  m.ib = ib;
  m.load = load;
}

TOPOEP_HOST_DEVICE inline std::int32_t busier(std::int32_t out, std::int32_t in) {
  return out > in ? out : in;
}

// The weight maxima of `c`.
TOPOEP_HOST_DEVICE inline void weight_maxima(const RankCounters& c, int num_ranks,
                                             CounterMaxima& m) {
  std::int32_t weight_nvlink = 0, weight_ib = 0;
  for (int r = 0; r < num_ranks; ++r) {
    const std::int32_t weight_nvlink_r = busier(c.weight_nvlink_out[r], c.weight_nvlink_in[r]);
    const std::int32_t weight_ib_r = busier(c.weight_ib_out[r], c.weight_ib_in[r]);
    if (weight_nvlink_r > weight_nvlink) weight_nvlink = weight_nvlink_r;
    if (weight_ib_r > weight_ib) weight_ib = weight_ib_r;
  }
  m.weight_nvlink = weight_nvlink;
  m.weight_ib = weight_ib;
}

// The gradient maxima of `counts` (gradient counts, above; null: none).
TOPOEP_HOST_DEVICE inline void gradient_maxima(const std::int32_t* counts, int num_ranks,
                                               CounterMaxima& m) {
  std::int32_t nvlink = 0, ib = 0;
  for (int r = 0; counts != nullptr && r < num_ranks; ++r) {
    const std::int32_t nvlink_r = busier(counts[r], counts[num_ranks + r]);
    const std::int32_t ib_r = busier(counts[2 * num_ranks + r], counts[3 * num_ranks + r]);
    if (nvlink_r > nvlink) nvlink = nvlink_r;
    if (ib_r > ib) ib = ib_r;
  }
  m.gradient_nvlink = nvlink;
  m.gradient_ib = ib;
}

// The time of a gradient reduction given as gradient counts (null: 0), each gradient
// `gradient_bytes`: its slowest rank's, the link classes pipelined.
TOPOEP_HOST_DEVICE inline Picoseconds gradient_chains_ps(const std::int32_t* counts, int num_ranks,
                                                         Bytes gradient_bytes,
                                                         const CostParams& cost) {
  if (counts == nullptr) return 0;
  CounterMaxima m;
  gradient_maxima(counts, num_ranks, m);
  return link_phase_ps(m.gradient_nvlink, 0, m.gradient_ib, 0, gradient_bytes, cost);
}

// The phases that the token maxima alone decide (dispatch, combine, backward transfer) and those
// that the weight maxima alone decide (exposed weights, gradients): the solver recomputes each
// half only when its maxima changed, since each link time costs divisions.
struct TokenLinkTimes {
  Picoseconds dispatch = 0;
  Picoseconds combine = 0;
  Picoseconds backward_transfer = 0;
};
struct WeightLinkTimes {
  Picoseconds weight_exposed = 0;
  Picoseconds gradient = 0;
};

// NOTE: a link's time is monotone in its bytes and every rank shares alpha and bandwidth, so the
// slowest rank's time is the time of the largest byte count: the maxima first, then a few
// divisions, instead of divisions per rank. Equal, bit for bit, to taking the maximum of every
// rank's own time.
TOPOEP_HOST_DEVICE inline TokenLinkTimes token_link_times(TokenCount nvlink, TokenCount ib,
                                                          const CostParams& cost) {
  TokenLinkTimes times;
  // Combine reverses dispatch: a rank's combine out is its dispatch in, so max(out, in) holds.
  times.dispatch = link_phase_ps(nvlink, 0, ib, 0, cost.dispatch_bytes_per_token, cost);
  times.combine = link_phase_ps(nvlink, 0, ib, 0, cost.combine_bytes_per_token, cost);
  times.backward_transfer =
      2 * link_phase_ps(nvlink, 0, ib, 0, cost.backward_bytes_per_token, cost);
  return times;
}

// A gradient reduction's time beyond what hides behind the attention backward
// (CostParams::gradient_overlap_ps).
TOPOEP_HOST_DEVICE inline Picoseconds gradient_exposed_ps(Picoseconds reduction,
                                                          const CostParams& cost) {
  return max_ps(0, reduction - cost.gradient_overlap_ps);
}

// `owed_ps`: the owed holders' exposed reduction (gradient_exposed_ps() of their
// gradient_chains_ps()), which the gradient phase is counted beyond.
TOPOEP_HOST_DEVICE inline WeightLinkTimes weight_link_times(const CounterMaxima& m,
                                                            const CostParams& cost,
                                                            Picoseconds owed_ps = 0) {
  WeightLinkTimes times;
  const Picoseconds weight =
      link_phase_ps(m.weight_nvlink, 0, m.weight_ib, 0, cost.replica_weight_bytes, cost);
  times.weight_exposed = max_ps(0, weight - cost.weight_overlap_ps);
  const Picoseconds reduction =
      link_phase_ps(m.gradient_nvlink, 0, m.gradient_ib, 0, cost.replica_gradient_bytes, cost);
  times.gradient = max_ps(0, gradient_exposed_ps(reduction, cost) - owed_ps);
  return times;
}

// Deterministic: integer maxima and one sum, independent of evaluation order.
TOPOEP_HOST_DEVICE inline PhaseTimes phase_times(TokenCount load, const TokenLinkTimes& tokens,
                                                 const WeightLinkTimes& weights,
                                                 const CostParams& cost) {
  PhaseTimes times;
  times.dispatch = tokens.dispatch;
  times.combine = tokens.combine;
  times.compute = load * cost.compute_ps_per_token;
  times.weight_exposed = weights.weight_exposed;
  times.gradient = weights.gradient;
  times.backward_compute = times.compute * cost.backward_compute_factor;
  times.backward_transfer = tokens.backward_transfer;
  times.total = times.dispatch + times.compute + times.combine + times.weight_exposed +
                times.gradient + times.backward_compute + times.backward_transfer;
  return times;
}

TOPOEP_HOST_DEVICE inline PhaseTimes phase_times(const CounterMaxima& m, const CostParams& cost) {
  return phase_times(m.load, token_link_times(m.nvlink, m.ib, cost), weight_link_times(m, cost),
                     cost);
}

}  // namespace topoep
