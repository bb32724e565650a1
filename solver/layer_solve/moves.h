#pragma once
// The greedy's candidates in LayerSolve (layer_solve.h): water-filling sizes, gain bounds and
// the exact gain of each move off the straggler. solver/README.md, step 2 and the tie-break rules.

#include <cstdint>

#include "solver/layer_solve/layer_solve.h"

namespace topoep {
namespace topoep_detail {

// Water-filling: fill the destination up to the mean without taking the origin below it;
// between two ranks already above the mean, level the pair instead. Loads are compute loads:
// the destination instance (`to_tokens` now, 0 for a new replica) takes what its
// instance_capacity() allows below the mean, except that a new replica, which costs its rank
// the minimum whatever it takes, may take the minimum even past the mean (evaluate() weighs
// the overshoot).
template <typename Threads>
TOPOEP_HOST_DEVICE inline TokenCount LayerSolve<Threads>::room_between(RankId from_rank,
                                                                       RankId to_rank,
                                                                       TokenCount to_tokens) const {
  const TokenCount from_load = c_.load[from_rank], to_load = c_.load[to_rank];
  if (to_load >= target_) return (from_load - to_load) / 2;
  const TokenCount above = from_load - target_, room_below = target_ - to_load;
  const TokenCount below = to_tokens == 0 && room_below < min_tokens_
                               ? min_tokens_
                               : instance_capacity(room_below, to_tokens);
  return above < below ? above : below;
}

// The same for a new replica on a rank of load `to_load` or more; -1 there: no rank can take
// one (open_load_floor_).
template <typename Threads>
TOPOEP_HOST_DEVICE inline TokenCount LayerSolve<Threads>::relief_cap(RankId from_rank,
                                                                     TokenCount to_load,
                                                                     TokenCount bound) const {
  if (min_tokens_ <= 0) return bound;
  if (to_load < 0) return 0;
  const TokenCount gap = c_.load[from_rank] - to_load - min_tokens_;
  return gap < bound ? gap : bound;
}

// A bound on the compute load a move of at most `room` of an instance's `tokens_on` tokens
// takes off its rank (what evaluate() moves: all of a small instance, see there).
template <typename Threads>
TOPOEP_HOST_DEVICE inline TokenCount LayerSolve<Threads>::relief_bound(TokenCount tokens_on,
                                                                       TokenCount room) const {
  const TokenCount moved = tokens_on < room ? tokens_on : room;
  if (min_tokens_ > 0 && (moved == tokens_on || tokens_on <= min_tokens_)) {
    return compute_tokens(tokens_on);
  }
  return moved;
}

// The compute load a move of `tokens` from an instance of `tokens_on` on `from_rank` to one
// of `to_tokens` on `to_rank` takes off the larger of the two ranks' loads: the origin's
// relief, less what the destination's new load exceeds the origin's by (a small new instance
// costs its rank the minimum). `tokens` itself when instances have no minimum (water-filling
// keeps the destination below the origin).
template <typename Threads>
TOPOEP_HOST_DEVICE inline TokenCount LayerSolve<Threads>::compute_relief(RankId from_rank,
                                                                         TokenCount tokens_on,
                                                                         RankId to_rank,
                                                                         TokenCount to_tokens,
                                                                         TokenCount tokens) const {
  if (min_tokens_ <= 0) return tokens;
  const TokenCount from_load = c_.load[from_rank];
  const TokenCount from_after =
      from_load - compute_tokens(tokens_on) + compute_tokens(tokens_on - tokens);
  const TokenCount to_after =
      c_.load[to_rank] + compute_tokens(to_tokens + tokens) - compute_tokens(to_tokens);
  return from_load - (from_after > to_after ? from_after : to_after);
}

// Sizes and weighs the move of at most `room` of `expert`'s tokens from its instance
// (from_rank, from_slot) to `to_rank` and makes it `best` when better (Move::better_than);
// nothing when no token may or should move, or when its gain cannot reach best's
// (gain_floor()). `room` is room_between()'s water-filling amount (consider_instance()) or the
// seeding's chunk. `node_tokens` holds the origin instance's tokens by source node.
// `weight_cost` is what a new replica adds to the weight and gradient phases
// (new_replica_cost()), 0 for an existing instance: the caller has it already. The candidate
// is built only when it got that far: most are not.
template <typename Threads>
TOPOEP_HOST_DEVICE inline void LayerSolve<Threads>::evaluate(
    ExpertId expert, RankId from_rank, std::int32_t from_slot, TokenCount tokens_on,
    const TokenCount* node_tokens, RankId to_rank, std::int32_t to_slot, Move& best,
    TokenCount room, Picoseconds weight_cost) const {
  const Picoseconds to_beat = gain_floor(best);
  if (room <= 0) return;
  const TokenCount minimum = min_tokens_;
  if (room < tokens_on && tokens_on - room < minimum) {
    // A remainder below the minimum would cost the origin what the tokens moved save: leave
    // it the minimum or, where the instance is that small, move all of it.
    room = tokens_on > minimum ? tokens_on - minimum : tokens_on;
  }
  const int to_node = node_of(to_rank), from_node = node_of(from_rank);
  TokenCount tokens = tokens_on < room ? tokens_on : room;
  // The gain is at most the moved tokens' compute: below the floor, nothing to weigh.
  // The IB sizing below only lowers the gain: a new replica whose weights cost more than its
  // tokens' compute can gain is not weighed further (most are not, where weights and their
  // gradients are charged: the simulator's records).
  if (relief_bound(tokens_on, room) * relief_ps_per_token() - weight_cost < to_beat) return;
  TokenCount ib_delta = 0;
  if (to_node != from_node) {
    // Sources in the destination's node go first (they stop crossing nodes), then sources in
    // third nodes (they cross either way), then sources in the origin's node (they start
    // crossing), as transfer() takes them. The plan never carries more IB traffic than the
    // static plan: what starts crossing must fit in what has been saved so far.
    const TokenCount local = node_tokens[to_node];
    const TokenCount origin = node_tokens[from_node];
    const TokenCount third = tokens_on - local - origin;
    const TokenCount moved_local = local < room ? local : room;
    const TokenCount moved_third = third < room - moved_local ? third : room - moved_local;
    TokenCount moved_origin = room - moved_local - moved_third;
    if (moved_origin > origin) moved_origin = origin;
    const TokenCount budget = ib_static_ - ib_total_ + moved_local;
    if (moved_origin > budget) moved_origin = budget > 0 ? budget : 0;
    tokens = moved_local + moved_third + moved_origin;
    ib_delta = moved_origin - moved_local;
  }
  if (tokens <= 0) return;
  // Tokens from outside the destination's node arrive over IB; past the busiest rank's IB
  // volume they lengthen dispatch and combine (both wait for that rank).
  TokenCount ib_arriving =
      tokens -
      (to_node != from_node ? (node_tokens[to_node] < tokens ? node_tokens[to_node] : tokens) : 0);
  if (to_node == from_node) {  // as transfer() takes them: see ib_first_share()
    const TokenCount outside = tokens_on - node_tokens[to_node];
    const TokenCount first = ib_first_share(from_rank, to_rank, outside, tokens);
    const TokenCount in_node = node_tokens[to_node] - flow_of(from_slot, expert, from_rank);
    const TokenCount rest = tokens - first;
    const TokenCount after_node = rest - (in_node < rest ? in_node : rest);
    ib_arriving = first + (outside - first < after_node ? outside - first : after_node);
  }
  // maxima_.ib, the largest IB volume (in or out) of any rank, is what a move's IB arrivals
  // must exceed to lengthen the dispatch and combine; every state the search weighs moves in
  // has been measured.
  const TokenCount ib_over = c_.ib_in[to_rank] + ib_arriving - maxima_.ib;
  const Picoseconds ib_cost = ib_over > 0 ? ib_ps(ib_over) : 0;
  const TokenCount relief =
      compute_relief(from_rank, tokens_on, to_rank, destination_tokens(to_slot, expert), tokens);
  // Straggler relief less what the move adds to the exposed weight phase and to the IB
  // phases at its destination. Total IB traffic is the second objective (a tie-break); the
  // best-prefix choice in run() then measures every phase exactly.
  const Picoseconds gain = relief * relief_ps_per_token() - weight_cost - ib_cost;
  if (gain < to_beat) return;
  Move move;
  move.expert = expert;
  move.from_rank = from_rank;
  move.from_slot = from_slot;
  move.to_rank = to_rank;
  move.to_slot = to_slot;
  move.tokens = tokens;
  move.source_tokens = tokens_on;
  move.ib_delta = ib_delta;
  move.gain = gain;
  if (move.better_than(best)) best = move;
}

// The IB time of `tokens` tokens on the rank the IB phases wait for: their dispatch, combine
// and two backward transfers, floor(bytes x 1e6 / bandwidth), split so that nothing
// overflows. What a move's arrivals beyond that rank's volume add (evaluate()), and the most
// that many fewer can save (level_ib()'s relaxed pass).
template <typename Threads>
TOPOEP_HOST_DEVICE inline Picoseconds LayerSolve<Threads>::ib_ps(TokenCount tokens) const {
  const Bytes bytes = tokens * (p_.cost.dispatch_bytes_per_token + p_.cost.combine_bytes_per_token +
                                2 * p_.cost.backward_bytes_per_token);
  const std::int64_t bandwidth = p_.cost.scale_out.bytes_per_us;
  return bytes / bandwidth * 1000000 + bytes % bandwidth * 1000000 / bandwidth;
}

// Best move of one instance on the straggler: to another existing instance of its expert, or
// to a new replica on one of each node's least-loaded ranks that can take it. `replica_floor`
// is shared by the rank's instances: new_replica_floor(rank, first) once found, -1 before, for
// experts with an empty gradient chain ([1]) and the others ([0]).
template <typename Threads>
TOPOEP_HOST_DEVICE inline void LayerSolve<Threads>::consider_instance(ExpertId expert, RankId rank,
                                                                      std::int32_t slot,
                                                                      Picoseconds* replica_floor,
                                                                      Move& best) {
  const TokenCount tokens_on = instance_tokens(slot, expert);
  if (tokens_on <= 0) return;
  // The gain is at most the instance's compute.
  if (compute_tokens(tokens_on) * relief_ps_per_token() < gain_floor(best)) return;
  prepare_node_row(expert);
  const TokenCount* node_tokens = node_row(slot, expert);
  const RankId home = in_.home_rank[expert];
  // evaluate()'s first bound, inline: most candidates fail it, and the call costs more.
  auto offer = [&](RankId to_rank, std::int32_t to_slot) {
    const TokenCount to_tokens = destination_tokens(to_slot, expert);
    const TokenCount room = room_between(rank, to_rank, to_tokens);
    if (room <= 0) return;
    const Picoseconds bound =
        relief_cap(rank, to_rank, to_tokens, relief_bound(tokens_on, room)) * relief_ps_per_token();
    if (bound < gain_floor(best)) return;
    // ... and a new replica's weights, then its gradients: most fail here where they are
    // charged.
    Picoseconds weight_cost = 0;
    if (to_slot == kNewSlot) {
      weight_cost = new_replica_weight_cost(expert, to_rank);
      if (bound - weight_cost < gain_floor(best)) return;
      weight_cost += new_replica_gradient_cost(expert, to_rank);
      if (bound - weight_cost < gain_floor(best)) return;
    }
    evaluate(expert, rank, slot, tokens_on, node_tokens, to_rank, to_slot, best, room, weight_cost);
  };
  if (home != rank) offer(home, kHomeSlot);
  for (std::int32_t j = w_.expert_first_slot[expert]; j >= 0; j = w_.slot_next[j]) {
    const RankId other = w_.slot_rank[j];
    if (other != rank) offer(other, j);
  }
  // New replica: in each node, the least-loaded rank with a free slot that does not hold the
  // expert yet stands for the node (from the two find_open_ranks() keeps; if both hold it,
  // the node is skipped for this expert). An expert homed on `rank` is bounded first by the
  // least a new replica of it costs (`replica_floor`, new_replica_floor()), as each offer
  // would be; with an instance minimum, every expert by the gap to the least-loaded open rank
  // (relief_cap()).
  if (home == rank || min_tokens_ > 0) {
    // Its tokens' compute is bounded by the rank's load above the mean too: room_between()
    // never gives more.
    const TokenCount excess = c_.load[rank] - target_;
    Picoseconds reach =
        relief_cap(rank, open_load_floor_, relief_bound(tokens_on, excess)) * relief_ps_per_token();
    if (home == rank) {
      const int first = chains_ && chain_empty(expert) ? 1 : 0;
      if (replica_floor[first] < 0) replica_floor[first] = new_replica_floor(rank, first == 1);
      reach -= replica_floor[first];
    }
    if (reach < gain_floor(best)) return;
  }
  for (int n = 0; n < num_nodes_; ++n) {
    for (int k = 0; k < 2; ++k) {
      const RankId target = w_.open_ranks[2 * n + k];
      if (target < 0) break;
      if (target == rank || hosts(target, expert)) continue;
      offer(target, kNewSlot);
      break;
    }
  }
}

// The best move (Move::better_than) of any instance on `rank`. The busiest instance is weighed
// first: its move usually wins, and the others' tokens then bound their gains below it, so
// most are skipped unweighed. The order cannot change the result: better_than is a total
// order, and only candidates that cannot reach the best so far are skipped.
template <typename Threads>
TOPOEP_HOST_DEVICE inline Move LayerSolve<Threads>::best_move_from(RankId rank) {
  ExpertId first_expert = kNoExpert;
  std::int32_t first_slot = kHomeSlot;
  TokenCount first_tokens = 0;
  for (std::int32_t i = w_.home_begin[rank]; i < w_.home_begin[rank + 1]; ++i) {
    const ExpertId e = w_.home_experts[i];
    if (w_.home_tokens[e] > first_tokens) {
      first_tokens = w_.home_tokens[e];
      first_expert = e;
    }
  }
  for (int slot = 0; slot < s_.slots_per_rank; ++slot) {
    const std::int64_t j = slot_index(rank, slot);
    if (w_.slot_expert[j] != kNoExpert && w_.slot_tokens[j] > first_tokens) {
      first_tokens = w_.slot_tokens[j];
      first_expert = w_.slot_expert[j];
      first_slot = static_cast<std::int32_t>(j);
    }
  }
  Move best;
  if (first_expert == kNoExpert) return best;  // nothing on the rank to move
  Picoseconds replica_floor[2] = {-1, -1};     // new_replica_floor(), found when first needed
  consider_instance(first_expert, rank, first_slot, replica_floor, best);
  for (std::int32_t i = w_.home_begin[rank]; i < w_.home_begin[rank + 1]; ++i) {
    const ExpertId e = w_.home_experts[i];
    if (first_slot != kHomeSlot || e != first_expert) {
      consider_instance(e, rank, kHomeSlot, replica_floor, best);
    }
  }
  for (int slot = 0; slot < s_.slots_per_rank; ++slot) {
    const std::int64_t j = slot_index(rank, slot);
    if (w_.slot_expert[j] == kNoExpert || j == first_slot) continue;
    consider_instance(w_.slot_expert[j], rank, static_cast<std::int32_t>(j), replica_floor, best);
  }
  return best;
}

}  // namespace topoep_detail
}  // namespace topoep
