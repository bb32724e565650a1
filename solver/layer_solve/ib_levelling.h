#pragma once
// The IB levelling phase of LayerSolve (layer_solve.h): the rank the IB phases wait for sheds
// inside its node, across nodes, or as a sender. solver/README.md, step 5.

#include <cstdint>

#include "solver/layer_solve/layer_solve.h"

namespace topoep {
namespace topoep_detail {

// Second phase, from where the first stopped, on the rank the IB phases wait for. When that is
// the rank receiving the most over IB, it hands tokens from other nodes to another instance
// of the same expert inside its node (home or replica), levelling the two ranks' IB
// arrivals: only which GPU of the node receives them changes, so no IB traffic is added and
// no source's sends move. Where its node has no such instance to take them, it sheds them
// across nodes (best_cross_node_shed()): they stop crossing. When it is the rank sending the
// most over IB, the tokens its node sends to an instance in another node move to an
// instance of that expert in its node (best_sender_shed()): they stop crossing too. The
// first phase balances compute; this one the dispatch and combine phases, which on a large
// NVLink domain behind a few IB links decide the layer time.
//
// It runs twice (`relaxed`: the second time). The first pass never raises a rank above the
// largest compute load. The second, from where the first stopped, lets each move raise its
// destination above the largest load by what the IB phases can save at once: the IB time of
// the busiest IB rank's lead over the next one (ib_ps()) in compute tokens. Where a
// token costs more IB time than compute time, compute is traded for IB. Both passes log and
// measure their moves like the first phase's; the second only extends the first's move log,
// so the best prefix, which decides, is never worse than the first pass's.
template <typename Threads>
TOPOEP_HOST_DEVICE inline std::int32_t LayerSolve<Threads>::level_ib(std::int32_t moves,
                                                                     Progress& progress,
                                                                     bool relaxed) {
  const std::int32_t limit = p_.max_moves;
  const int R = s_.num_ranks;
  if (num_nodes_ < 2) return moves;
  if (relaxed && (p_.ib_load_slack_permille <= 0 || relief_ps_per_token() <= 0)) return moves;
  TokenCount first_cap = 0;  // the largest load when the pass starts
  for (RankId r = 0; r < R; ++r) {
    if (c_.load[r] > first_cap) first_cap = c_.load[r];
  }
  TokenCount load_cap = first_cap;
  progress.marked_time = progress.best_time;
  progress.marked_moves = moves;
  while (moves < limit) {
    RankId a = 0;       // most IB arrivals, ties: lower rank
    RankId sender = 0;  // most IB sends, ties: lower rank
    for (RankId r = 1; r < R; ++r) {
      if (c_.ib_in[r] > c_.ib_in[a]) a = r;
      if (c_.ib_out[r] > c_.ib_out[sender]) sender = r;
    }
    const bool sends = c_.ib_in[a] <= c_.ib_out[sender];  // the IB phases wait on a sender
    if (relaxed) load_cap = relaxed_load_cap(sends ? sender : a, first_cap);
    if (sends) {
      const Move shed = best_sender_shed(sender, load_cap);
      if (!shed.valid() || !commit(shed, moves, progress)) break;
      continue;
    }
    RankId open[2];  // the two ranks of a's node with the fewest IB arrivals and a free slot
    two_open_ranks(node_of(a), c_.ib_in, a, open);
    Move best;
    auto consider = [&](ExpertId expert, std::int32_t slot) {
      prepare_node_row(expert);
      const TokenCount remote = instance_tokens(slot, expert) - node_row(slot, expert)[node_of(a)];
      if (remote <= 0) return;
      auto offer = [&](RankId b, std::int32_t to_slot) {
        if (b == a || node_of(b) != node_of(a)) return;
        TokenCount x = (c_.ib_in[a] - c_.ib_in[b]) / 2;
        if (x > remote) x = remote;
        const TokenCount capacity =
            instance_capacity(load_cap - c_.load[b], destination_tokens(to_slot, expert));
        if (x > capacity) x = capacity;
        if (x <= best.tokens) return;  // ties: the first found
        best = Move{expert, a, slot, b, to_slot, x, instance_tokens(slot, expert)};
        best.ib_only = true;  // no gain to record: the best prefix measures this phase
      };
      offer(in_.home_rank[expert], kHomeSlot);
      for (std::int32_t j = w_.expert_first_slot[expert]; j >= 0; j = w_.slot_next[j]) {
        offer(w_.slot_rank[j], j);
      }
      // Or a new replica on the first of the two that does not hold the expert yet: it wins
      // only by moving more than every existing instance, and its weights and gradients face
      // the best-prefix measure like every move.
      for (const RankId target : open) {
        if (target < 0) break;
        if (hosts(target, expert)) continue;
        offer(target, kNewSlot);
        break;
      }
    };
    for_each_loaded_instance(a, consider);
    if (!best.valid()) best = best_cross_node_shed(a, load_cap);
    // The phase waits for this rank: when it cannot shed, levelling others gains nothing.
    if (!best.valid() || !commit(best, moves, progress)) break;
  }
  return moves;
}

// The relaxed pass's compute cap for a move off `busiest`, the rank the IB phases wait for:
// the largest load now plus the compute tokens worth the IB time of its lead over the next
// busiest rank (in or out), which is what such a move can save at once; never below
// `first_cap`, the first pass's cap.
template <typename Threads>
TOPOEP_HOST_DEVICE inline TokenCount LayerSolve<Threads>::relaxed_load_cap(
    RankId busiest, TokenCount first_cap) const {
  const TokenCount volume =
      c_.ib_in[busiest] > c_.ib_out[busiest] ? c_.ib_in[busiest] : c_.ib_out[busiest];
  TokenCount next = 0, load_max = 0;
  for (RankId r = 0; r < s_.num_ranks; ++r) {
    if (c_.load[r] > load_max) load_max = c_.load[r];
    if (r == busiest) continue;
    if (c_.ib_in[r] > next) next = c_.ib_in[r];
    if (c_.ib_out[r] > next) next = c_.ib_out[r];
  }
  TokenCount cap = load_max + ib_ps(volume - next) / relief_ps_per_token();
  // ... and at most ib_load_slack_permille above the mean: floor(total x (1000 + slack) /
  // (1000 R)), split so that nothing overflows.
  const std::int64_t scale = 1000 + p_.ib_load_slack_permille, parts = 1000LL * s_.num_ranks;
  const TokenCount most = compute_total_ / parts * scale + compute_total_ % parts * scale / parts;
  if (cap > most) cap = most;
  return cap > first_cap ? cap : first_cap;
}

// When `sender`, the rank the IB phases wait for, sends the most over IB: the instance in
// another node that receives the most tokens from it (ties: lower expert, the home before the
// replicas in its instance list) hands the tokens it receives from the sender's node, the
// sender's first, to an instance of its expert in that node (its home there, else the first
// replica there in its list), as many as `load_cap` leaves room for. They stop crossing
// nodes: every source of the node that sent them sends less over IB, and the origin's rank
// receives less. No new replica is made: one that takes a node's sends of one expert rarely
// pays for its weights and the IB gradient it sends back to a home in another node.
template <typename Threads>
TOPOEP_HOST_DEVICE inline Move LayerSolve<Threads>::best_sender_shed(RankId sender,
                                                                     TokenCount load_cap) {
  const int n = node_of(sender);
  Move best;
  TokenCount best_relief = 0;  // the sender's tokens the best move takes
  auto consider = [&](ExpertId expert, std::int32_t slot, RankId at) {
    if (node_of(at) == n) return;
    const TokenCount sent = flow_of(slot, expert, sender);
    if (sent <= best_relief) return;
    std::int32_t to_slot = kHomeSlot;
    const RankId b = instance_in_node(expert, n, &to_slot);
    if (b < 0) return;
    prepare_node_row(expert);
    TokenCount x = node_row(slot, expert)[n];
    const TokenCount capacity =
        instance_capacity(load_cap - c_.load[b], destination_tokens(to_slot, expert));
    if (x > capacity) x = capacity;
    const TokenCount relief = sent < x ? sent : x;
    if (relief <= best_relief) return;
    best_relief = relief;
    best = Move{expert, at, slot, b, to_slot, x, instance_tokens(slot, expert)};
    best.ib_delta = -x;
    best.first_source = sender;
  };
  for (ExpertId e = 0; e < s_.num_experts; ++e) {
    if (w_.home_tokens[e] > 0) consider(e, kHomeSlot, in_.home_rank[e]);
    for (std::int32_t j = w_.expert_first_slot[e]; j >= 0; j = w_.slot_next[j]) {
      if (w_.slot_tokens[j] > 0) consider(e, j, w_.slot_rank[j]);
    }
  }
  return best;
}

// The rank of `expert`'s instance in node `n`: its home there, else the first replica there
// in its instance list (`*slot` set to kHomeSlot or that slot); -1 (`*slot` untouched) when
// the node holds none.
template <typename Threads>
TOPOEP_HOST_DEVICE inline RankId LayerSolve<Threads>::instance_in_node(ExpertId expert, int n,
                                                                       std::int32_t* slot) const {
  if (node_of(in_.home_rank[expert]) == n) {
    *slot = kHomeSlot;
    return in_.home_rank[expert];
  }
  for (std::int32_t j = w_.expert_first_slot[expert]; j >= 0; j = w_.slot_next[j]) {
    if (node_of(w_.slot_rank[j]) == n) {
      *slot = j;
      return w_.slot_rank[j];
    }
  }
  return -1;
}

// When rank `a`, the one the IB phase waits for, cannot shed inside its node: the most tokens
// one of its instances receives from one other node, moved to an instance of the expert in
// that node (its home or a replica there; else a new replica on that node's least-loaded rank
// with a free slot that does not hold the expert), so that they stop crossing nodes. Never
// raises a rank above `load_cap`. Ties: the first found (a's instances in home-then-slot
// order, nodes ascending). The best prefix weighs its weights and gradients like every move.
template <typename Threads>
TOPOEP_HOST_DEVICE inline Move LayerSolve<Threads>::best_cross_node_shed(RankId a,
                                                                         TokenCount load_cap) {
  Move best;
  auto consider = [&](ExpertId expert, std::int32_t slot) {
    prepare_node_row(expert);
    const TokenCount* const from_node = node_row(slot, expert);
    for (int n = 0; n < num_nodes_; ++n) {
      if (n == node_of(a) || from_node[n] <= best.tokens) continue;
      std::int32_t to_slot = kNewSlot;
      RankId b = instance_in_node(expert, n, &to_slot);
      if (b < 0) {
        RankId open[2];
        two_open_ranks(n, c_.load, -1, open);
        for (const RankId target : open) {
          if (target >= 0 && !hosts(target, expert)) {
            b = target;
            break;
          }
        }
      }
      if (b < 0) continue;
      TokenCount x = from_node[n];
      const TokenCount capacity =
          instance_capacity(load_cap - c_.load[b], destination_tokens(to_slot, expert));
      if (x > capacity) x = capacity;
      if (x <= best.tokens) continue;
      // transfer() takes the destination's own node's sources first: these x tokens.
      best = Move{expert, a, slot, b, to_slot, x, instance_tokens(slot, expert)};
      best.ib_delta = -x;
    }
  };
  for_each_loaded_instance(a, consider);
  return best;
}

// Calls f(expert, slot) for each instance on `rank` that holds tokens: its home experts (in
// home_experts order), then its slots.
template <typename Threads>
template <typename F>
TOPOEP_HOST_DEVICE inline void LayerSolve<Threads>::for_each_loaded_instance(RankId rank, F& f) {
  for (std::int32_t i = w_.home_begin[rank]; i < w_.home_begin[rank + 1]; ++i) {
    if (w_.home_tokens[w_.home_experts[i]] > 0) f(w_.home_experts[i], kHomeSlot);
  }
  for (int slot = 0; slot < s_.slots_per_rank; ++slot) {
    const std::int64_t j = slot_index(rank, slot);
    if (w_.slot_expert[j] != kNoExpert && w_.slot_tokens[j] > 0) {
      f(w_.slot_expert[j], static_cast<std::int32_t>(j));
    }
  }
}

}  // namespace topoep_detail
}  // namespace topoep
