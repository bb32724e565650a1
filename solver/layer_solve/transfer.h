#pragma once
// Applying a move in LayerSolve (layer_solve.h): its tokens taken source by source in the
// order that keeps them local first, and the rank counters updated. solver/README.md, step 2.

#include <cstdint>

#include "solver/layer_solve/layer_solve.h"

namespace topoep {
namespace topoep_detail {

// Moves up to `remaining` tokens of src from `move`'s origin instance to its destination. Only
// the source's own out counters change here, and only when it reaches the two instances over
// different link classes; what arrives is summed by class into moved_ for transfer() to
// apply to the two ranks once.
template <typename Threads>
TOPOEP_HOST_DEVICE inline void LayerSolve<Threads>::transfer_from(const Move& move, RankId src,
                                                                  TokenCount& remaining) {
  TokenCount& from = flow(move.from_slot, move.expert, src);
  const TokenCount x = from < remaining ? from : remaining;
  if (x <= 0) return;
  from -= x;
  flow(move.to_slot, move.expert, src) += x;
  remaining -= x;
  const int node = node_of(src);
  node_row(move.from_slot, move.expert)[node] -= x;
  node_row(move.to_slot, move.expert)[node] += x;
  const int was = link_class(src, node, move.from_rank);
  const int now = link_class(src, node, move.to_rank);
  moved_.from[was] += x;
  moved_.to[now] += x;
  if (was == now) return;
  if (was == 1) c_.nvlink_out[src] -= x;
  if (was == 2) c_.ib_out[src] -= x;
  if (now == 1) c_.nvlink_out[src] += x;
  if (now == 2) c_.ib_out[src] += x;
  w_.node_changed[node] = 1;  // its out counters; apply() marks the two ranks' nodes
}

// Moves up to `limit` of `move`'s tokens from sources outside nodes `skip_a` and `skip_b`, in
// ascending rank, lowering `limit` by what moved.
template <typename Threads>
TOPOEP_HOST_DEVICE inline void LayerSolve<Threads>::transfer_from_other_nodes(const Move& move,
                                                                              int skip_a,
                                                                              int skip_b,
                                                                              TokenCount& limit) {
  const int G = s_.gpus_per_node;
  const TokenCount* const from_nodes = node_row(move.from_slot, move.expert);
  for (int n = 0; n < num_nodes_ && limit > 0; ++n) {
    if (n == skip_a || n == skip_b || from_nodes[n] == 0) continue;  // nothing to take there
    for (RankId src = n * G; src < (n + 1) * G && limit > 0; ++src) {
      transfer_from(move, src, limit);
    }
  }
}

// Tokens from other nodes that a move inside one node takes first: enough to level the IB
// volume arriving at the two ranks (the node receives them over IB either way, so only which
// of its GPUs does changes), at most all of them and at most the move.
template <typename Threads>
TOPOEP_HOST_DEVICE inline TokenCount LayerSolve<Threads>::ib_first_share(RankId from_rank,
                                                                         RankId to_rank,
                                                                         TokenCount remote,
                                                                         TokenCount tokens) const {
  TokenCount share = (c_.ib_in[from_rank] - c_.ib_in[to_rank]) / 2;
  if (share > remote) share = remote;
  if (share > tokens) share = tokens;
  return share > 0 ? share : 0;
}

// Moves move.tokens tokens between the instances, taking sources in this priority (each group
// in ascending rank): the destination rank itself; the rest of its node; third nodes; the
// origin's node; the origin rank itself. Tokens thus become local or NVLink-only first and
// start crossing nodes last (see evaluate()). Inside one node, tokens from other nodes go
// first up to ib_first_share(): the move then also levels the two ranks' IB arrivals.
template <typename Threads>
TOPOEP_HOST_DEVICE inline void LayerSolve<Threads>::transfer(const Move& move) {
  const RankId a = move.from_rank, b = move.to_rank;
  const int G = s_.gpus_per_node, node_a = node_of(a), node_b = node_of(b);
  TokenCount remaining = move.tokens;
  moved_ = ClassTotals{};
  if (move.first_source >= 0) transfer_from(move, move.first_source, remaining);
  if (move.ib_only) {  // level_ib(): tokens from other nodes only, and they suffice
    transfer_from_other_nodes(move, node_a, node_a, remaining);
  } else if (node_a == node_b) {
    const TokenCount remote = instance_tokens(move.from_slot, move.expert) -
                              node_row(move.from_slot, move.expert)[node_a];
    const TokenCount first = ib_first_share(a, b, remote, move.tokens);
    TokenCount budget = first;
    transfer_from_other_nodes(move, node_a, node_a, budget);
    remaining -= first - budget;
  }
  transfer_from(move, b, remaining);
  // A node whose sources send the origin instance nothing is skipped (its node row says so).
  const TokenCount* const from_nodes = node_row(move.from_slot, move.expert);
  for (RankId src = node_b * G; src < (node_b + 1) * G && remaining > 0 && from_nodes[node_b] > 0;
       ++src) {
    if (src != a && src != b) transfer_from(move, src, remaining);
  }
  transfer_from_other_nodes(move, node_a, node_b, remaining);  // third nodes
  if (node_a != node_b) {
    for (RankId src = node_a * G; src < (node_a + 1) * G && remaining > 0 && from_nodes[node_a] > 0;
         ++src) {
      if (src != a) transfer_from(move, src, remaining);
    }
  }
  transfer_from(move, a, remaining);
  const TokenCount total = move.tokens - remaining;
  TokenCount& from_tokens = instance_tokens(move.from_slot, move.expert);
  TokenCount& to_tokens = instance_tokens(move.to_slot, move.expert);
  if (min_tokens_ > 0) {
    // The two instances' compute beyond their tokens; it changes the total, so the mean.
    const TokenCount from_extra =
        compute_tokens(from_tokens - total) - compute_tokens(from_tokens) + total;
    const TokenCount to_extra =
        compute_tokens(to_tokens + total) - compute_tokens(to_tokens) - total;
    c_.load[a] += from_extra;
    c_.load[b] += to_extra;
    if (from_extra + to_extra != 0) {
      compute_total_ += from_extra + to_extra;
      target_ = (compute_total_ + s_.num_ranks - 1) / s_.num_ranks;
    }
  }
  // A new replica moves its weights and is in its expert's gradient chain while it holds
  // tokens: emit_instances() drops the empty ones, so they cost nothing.
  if (move.to_slot >= 0 && w_.slot_is_new[move.to_slot] && to_tokens == 0 && total > 0) {
    set_new_replica_used(move.expert, b, true);
  }
  if (move.from_slot >= 0 && w_.slot_is_new[move.from_slot] && from_tokens == total && total > 0) {
    set_new_replica_used(move.expert, a, false);
  }
  from_tokens -= total;
  to_tokens += total;
  // What add_route_tokens() would have done source by source at the two ranks, at once.
  c_.load[a] -= total;
  c_.load[b] += total;
  c_.nvlink_in[a] -= moved_.from[1];
  c_.ib_in[a] -= moved_.from[2];
  c_.nvlink_in[b] += moved_.to[1];
  c_.ib_in[b] += moved_.to[2];
  ib_total_ += moved_.to[2] - moved_.from[2];
}

template <typename Threads>
TOPOEP_HOST_DEVICE inline void LayerSolve<Threads>::apply(Move move) {
  prepare_expert(move.expert);
  stale_open_ranks(move.from_rank);
  stale_open_ranks(move.to_rank);
  // The two ranks' load and in counters change (transfer_from() marks the nodes of the
  // sources whose out counters change).
  w_.node_changed[node_of(move.from_rank)] = 1;
  w_.node_changed[node_of(move.to_rank)] = 1;
  if (move.to_slot == kNewSlot) {
    const std::int64_t j = free_slot(move.to_rank);
    // An evicted replica holds no tokens: its weights and chain hops went when it emptied.
    if (w_.slot_expert[j] != kNoExpert) unlink_slot(j);
    w_.slot_expert[j] = move.expert;
    link_slot(j);
    w_.slot_is_new[j] = was_resident(move.to_rank, move.expert) ? 0 : 1;
    w_.slot_tokens[j] = 0;
    clear_slot_flows(j);
    move.to_slot = static_cast<std::int32_t>(j);
  }
  transfer(move);
}

}  // namespace topoep_detail
}  // namespace topoep
