#pragma once
// What new replicas cost LayerSolve (layer_solve.h): their weight transfers and the gradient
// chains that reduce them into their homes at the step's end, counted incrementally.
// solver/README.md, "Gradients the step owes".

#include <cstdint>

#include "solver/gradient_chains.h"
#include "solver/layer_solve/layer_solve.h"
#include "solver/phase_times.h"

namespace topoep {
namespace topoep_detail {

template <typename Threads>
TOPOEP_HOST_DEVICE inline void LayerSolve<Threads>::add_weight(RankId home, RankId rank,
                                                               std::int32_t count) {
  weights_changed_ = true;
  ++replica_changes_;
  w_.one_more_replica[8 * home] = -1;
  w_.one_more_replica[8 * rank] = -1;
  if (node_of(home) == node_of(rank)) {
    c_.weight_nvlink_out[home] += count;
    c_.weight_nvlink_in[rank] += count;
  } else {
    c_.weight_ib_out[home] += count;
    c_.weight_ib_in[rank] += count;
  }
}

// Link time of `count` replicas' weights (gradients: `gradients`) over NVLink or IB: equal to
// link_phase_ps()'s for that class, cached by count.
template <typename Threads>
TOPOEP_HOST_DEVICE inline Picoseconds LayerSolve<Threads>::replica_transfer(
    bool gradients, bool nvlink, std::int32_t count) const {
  const Bytes bytes = gradients ? p_.cost.replica_gradient_bytes : p_.cost.replica_weight_bytes;
  const LinkCost& link = nvlink ? p_.cost.scale_up : p_.cost.scale_out;
  // No rank sends or receives more weights than every slot's replica plus one, but a rank's
  // gradient count (one per chain it is in, owed holders' included) can pass the table.
  const std::int64_t size = s_.num_slots() + 2;
  if (count >= size) return transfer_ps(count * bytes, link);
  const std::int64_t table = 2 * (gradients ? 1 : 0) + (nvlink ? 0 : 1);
  Picoseconds& cached = w_.replica_time[table * size + count];
  if (cached < 0) cached = transfer_ps(count * bytes, link);
  return cached;
}

// Link time of the weights of `rank`'s new replicas (as a home: replicas it sends weights to;
// as a replica holder: weights it receives), with `extra` more replicas on the link class
// `nvlink` says: NVLink and IB pipelined, each at its busier direction.
template <typename Threads>
TOPOEP_HOST_DEVICE inline Picoseconds LayerSolve<Threads>::weight_link_time(
    RankId rank, bool nvlink, std::int32_t extra_out, std::int32_t extra_in) const {
  const std::int32_t nvl_out = c_.weight_nvlink_out[rank] + (nvlink ? extra_out : 0);
  const std::int32_t nvl_in = c_.weight_nvlink_in[rank] + (nvlink ? extra_in : 0);
  const std::int32_t ib_out = c_.weight_ib_out[rank] + (nvlink ? 0 : extra_out);
  const std::int32_t ib_in = c_.weight_ib_in[rank] + (nvlink ? 0 : extra_in);
  return max_ps(replica_transfer(false, true, busier(nvl_out, nvl_in)),
                replica_transfer(false, false, busier(ib_out, ib_in)));
}

// Exposed weight time of `rank`, with `extra` more replicas sent (as home) or received.
template <typename Threads>
TOPOEP_HOST_DEVICE inline Picoseconds LayerSolve<Threads>::weight_exposed(
    RankId rank, bool nvlink, std::int32_t extra_out, std::int32_t extra_in) const {
  const Picoseconds time = weight_link_time(rank, nvlink, extra_out, extra_in);
  return max_ps(0, time - p_.cost.weight_overlap_ps);
}

// Step-end reduction time of `rank`'s gradient chains (gradient counts, phase_times.h), with
// `delta` ([4], the counts' order: received and sent inside the node, then across nodes)
// added, beyond what hides behind the attention backward (gradient_exposed_ps()).
template <typename Threads>
TOPOEP_HOST_DEVICE inline Picoseconds LayerSolve<Threads>::gradient_time(
    RankId rank, const std::int32_t* delta) const {
  const int R = s_.num_ranks;
  const std::int32_t* const g = w_.gradient_counts + rank;
  const std::int32_t nvlink = busier(g[0] + delta[0], g[R] + delta[1]);
  const std::int32_t ib = busier(g[2 * R] + delta[2], g[3 * R] + delta[3]);
  return gradient_exposed_ps(
      max_ps(replica_transfer(true, true, nvlink), replica_transfer(true, false, ib)), p_.cost);
}

template <typename Threads>
TOPOEP_HOST_DEVICE inline void LayerSolve<Threads>::refresh_one_more(RankId rank,
                                                                     Picoseconds* row) const {
  for (int i = 0; i < 4; ++i) {
    const bool received = (i & 2) != 0, nvlink = (i & 1) == 0;
    row[i] = weight_exposed(rank, nvlink, received ? 0 : 1, received ? 1 : 0);
    // Gradient counts' order: received inside the node, sent, received across nodes, sent.
    std::int32_t delta[4] = {0, 0, 0, 0};
    delta[(nvlink ? 0 : 2) + (received ? 0 : 1)] = 1;
    row[4 + i] = chains_ ? gradient_time(rank, delta) : 0;
  }
}

template <typename Threads>
TOPOEP_HOST_DEVICE inline bool LayerSolve<Threads>::chain_empty(ExpertId expert) const {
  const std::uint64_t* const row = chain_row(expert);
  for (int word = 0; word < chain_words_; ++word) {
    if (row[word] != 0) return false;
  }
  return true;
}

// Word `word` of the expert's chain bits, keeping only ranks in [lo, hi).
template <typename Threads>
TOPOEP_HOST_DEVICE inline std::uint64_t LayerSolve<Threads>::chain_word(ExpertId expert, int word,
                                                                        int lo, int hi) const {
  std::uint64_t bits = chain_row(expert)[word];
  if (word == lo >> 6) bits &= ~std::uint64_t{0} << (lo & 63);
  if (word == (hi - 1) >> 6 && (hi & 63) != 0) bits &= (std::uint64_t{1} << (hi & 63)) - 1;
  return bits;
}

// The highest (lowest) rank of the expert's chain in [lo, hi), or -1.
template <typename Threads>
TOPOEP_HOST_DEVICE inline RankId LayerSolve<Threads>::last_in_chain(ExpertId expert, int lo,
                                                                    int hi) const {
  for (int word = (hi - 1) >> 6; hi > lo && word >= (lo >> 6); --word) {
    const std::uint64_t bits = chain_word(expert, word, lo, hi);
    if (bits != 0) return word * 64 + highest_bit(bits);
  }
  return -1;
}

template <typename Threads>
TOPOEP_HOST_DEVICE inline RankId LayerSolve<Threads>::first_in_chain(ExpertId expert, int lo,
                                                                     int hi) const {
  for (int word = lo >> 6; hi > lo && word <= (hi - 1) >> 6; ++word) {
    const std::uint64_t bits = chain_word(expert, word, lo, hi);
    if (bits != 0) return word * 64 + lowest_bit(bits);
  }
  return -1;
}

// Calls f(rank) for each member of the expert's chain in [lo, hi), ascending.
template <typename Threads>
template <typename F>
TOPOEP_HOST_DEVICE inline void LayerSolve<Threads>::for_each_in_chain(ExpertId expert, int lo,
                                                                      int hi, F f) const {
  for (int word = lo >> 6; hi > lo && word <= (hi - 1) >> 6; ++word) {
    for (std::uint64_t bits = chain_word(expert, word, lo, hi); bits != 0; bits &= bits - 1) {
      f(static_cast<RankId>(word * 64 + lowest_bit(bits)));
    }
  }
}

// walk_gradient_chain()'s hops over the expert's chain, its members found by bit scans.
template <typename Threads>
template <typename Hop>
TOPOEP_HOST_DEVICE inline void LayerSolve<Threads>::walk_chain(ExpertId expert, Hop hop) const {
  walk_gradient_chain(
      in_.home_rank[expert], s_.num_ranks, s_.gpus_per_node,
      [&](int lo, int hi, auto&& visit) { for_each_in_chain(expert, lo, hi, visit); }, hop);
}

// The members `rank` (not in the expert's chain) would sit between in the chain's order:
// `before` sends to it (-1: it would be the first) and it sends to `after` (the home when it
// would be the last).
template <typename Threads>
TOPOEP_HOST_DEVICE inline void LayerSolve<Threads>::chain_neighbours(ExpertId expert, RankId rank,
                                                                     RankId* before,
                                                                     RankId* after) const {
  const RankId home = in_.home_rank[expert];
  const int R = s_.num_ranks;
  // The chain's order (walk_gradient_chain()): the ranks outside the home's node ascending,
  // then those inside it ascending, then the home. Its node's ranks are [lo, hi).
  const int lo = node_of(home) * s_.gpus_per_node, hi = lo + s_.gpus_per_node;
  auto last_outside = [&](int below) {  // the highest member outside [lo, hi) below `below`
    const RankId upper = below > hi ? last_in_chain(expert, hi, below) : -1;
    return upper >= 0 ? upper : last_in_chain(expert, 0, below < lo ? below : lo);
  };
  if (rank >= lo && rank < hi) {
    *before = last_in_chain(expert, lo, rank);
    if (*before < 0) *before = last_outside(R);
    *after = first_in_chain(expert, rank + 1, hi);
  } else {
    *before = last_outside(rank);
    *after = rank + 1 < lo ? first_in_chain(expert, rank + 1, lo) : -1;
    if (*after < 0) *after = first_in_chain(expert, rank + 1 > hi ? rank + 1 : hi, R);
    if (*after < 0) *after = first_in_chain(expert, lo, hi);
  }
  if (*after < 0) *after = home;
}

template <typename Threads>
TOPOEP_HOST_DEVICE inline typename LayerSolve<Threads>::ChainInsertion
LayerSolve<Threads>::chain_insertion(RankId rank, RankId before, RankId after) const {
  auto cls = [&](RankId from, RankId to) { return node_of(from) == node_of(to) ? 0 : 2; };
  ChainInsertion d;
  d.rank[cls(rank, after) + 1] += 1;  // it sends to the next
  d.after[cls(rank, after)] += 1;     // which receives from it ...
  if (before >= 0) {
    d.after[cls(before, after)] -= 1;  // ... instead of from the one before, which
    d.before[cls(before, after) + 1] -= 1;
    d.before[cls(before, rank) + 1] += 1;  // sends to it instead
    d.rank[cls(before, rank)] += 1;
  }
  return d;
}

// Adds `sign` x `delta` ([4]) to `rank`'s gradient counts.
template <typename Threads>
TOPOEP_HOST_DEVICE inline void LayerSolve<Threads>::add_gradient_counts(RankId rank,
                                                                        const std::int32_t* delta,
                                                                        std::int32_t sign) {
  const int R = s_.num_ranks;
  for (int i = 0; i < 4; ++i) w_.gradient_counts[i * R + rank] += sign * delta[i];
  w_.one_more_replica[8 * rank] = -1;
}

// Adds (or removes) a new replica of `expert` on `rank` to the expert's chain. Only the rank
// and its two neighbours' counts change (the same counts as recounting the whole chain).
template <typename Threads>
TOPOEP_HOST_DEVICE inline void LayerSolve<Threads>::set_new_holder(ExpertId expert, RankId rank,
                                                                   bool holds) {
  if (!chains_) return;
  const std::int64_t at = static_cast<std::int64_t>(expert) * s_.num_ranks + rank;
  if (in_.owed_holders != nullptr && in_.owed_holders[at] != 0) return;  // in it either way
  if (in_chain(expert, rank) == holds) return;
  std::uint64_t& word =
      w_.chain_bits[static_cast<std::int64_t>(expert) * chain_words_ + (rank >> 6)];
  const std::uint64_t bit = std::uint64_t{1} << (rank & 63);
  word &= ~bit;  // the neighbours of the chain without it
  RankId before = -1, after = -1;
  chain_neighbours(expert, rank, &before, &after);
  const ChainInsertion d = chain_insertion(rank, before, after);
  const std::int32_t sign = holds ? 1 : -1;
  add_gradient_counts(rank, d.rank, sign);
  add_gradient_counts(after, d.after, sign);
  if (before >= 0) add_gradient_counts(before, d.before, sign);
  if (holds) word |= bit;
  weights_changed_ = true;
  ++replica_changes_;
}

// What a new replica of `expert` on `rank` adds to the gradient phase (its slowest rank's
// time beyond gradient_max_): it joins the expert's chain between the holders before and
// after it (walk_gradient_chain()'s order), so it receives from the one and sends to the
// other, which now receives from it. 0 when the rank is in the chain already.
template <typename Threads>
TOPOEP_HOST_DEVICE inline Picoseconds LayerSolve<Threads>::chain_insertion_ps(ExpertId expert,
                                                                              RankId rank) const {
  if (!chains_) return 0;
  if (in_chain(expert, rank)) return 0;
  const RankId home = in_.home_rank[expert];
  if (chain_empty(expert)) {  // the chain's first replica: it sends to the home
    const int ib = node_of(home) == node_of(rank) ? 0 : 1;
    return max_ps(0, max_ps(one_more(rank)[4 + ib], one_more(home)[6 + ib]) - gradient_max_);
  }
  RankId before = -1, after = -1;
  chain_neighbours(expert, rank, &before, &after);
  const ChainInsertion d = chain_insertion(rank, before, after);
  Picoseconds worst = max_ps(gradient_time(rank, d.rank), gradient_time(after, d.after));
  if (before >= 0) worst = max_ps(worst, gradient_time(before, d.before));
  return max_ps(0, worst - gradient_max_);
}

template <typename Threads>
TOPOEP_HOST_DEVICE inline Picoseconds LayerSolve<Threads>::new_replica_weight_cost(
    ExpertId expert, RankId to_rank) const {
  const RankId home = in_.home_rank[expert];
  const int ib = node_of(home) == node_of(to_rank) ? 0 : 1;
  const Picoseconds* sender = one_more(home);
  const Picoseconds* receiver = one_more(to_rank);
  return max_ps(weight_max_, max_ps(sender[ib], receiver[2 + ib])) - weight_max_;
}

// The least any new replica of an expert homed on `rank` adds to the weight and gradient
// phases, whatever its destination: what its home's sending of the weights adds and, when it
// would be the first in the expert's gradient chain (`first`), what receiving its gradient
// adds (new_replica_cost() charges at least that; a longer chain it joins, at least nothing),
// over the cheaper link class. O(1): the home's cached row.
template <typename Threads>
TOPOEP_HOST_DEVICE inline Picoseconds LayerSolve<Threads>::new_replica_floor(RankId rank,
                                                                             bool first) const {
  const Picoseconds* home = one_more(rank);
  auto floor = [&](int ib) {
    const Picoseconds gradient = first ? max_ps(0, home[6 + ib] - gradient_max_) : 0;
    return max_ps(0, home[ib] - weight_max_) + gradient / replica_uses_;
  };
  const Picoseconds nvlink = floor(0), ib = floor(1);
  return nvlink < ib ? nvlink : ib;
}

// After a committed move made a new replica: its home and its rank now count in the weight
// maxima, and the ranks of its expert's gradient chain in the gradient maxima, that later
// replicas are charged against (see weight_max_).
template <typename Threads>
TOPOEP_HOST_DEVICE inline void LayerSolve<Threads>::note_new_replica(const Move& move) {
  const RankId home = in_.home_rank[move.expert];
  weight_max_ = max_ps(weight_max_, max_ps(weight_exposed(home), weight_exposed(move.to_rank)));
  if (!chains_) return;
  walk_chain(move.expert, [&](RankId from, RankId to, bool) {
    gradient_max_ = max_ps(gradient_max_, max_ps(gradient_time(from), gradient_time(to)));
  });
}

}  // namespace topoep_detail
}  // namespace topoep
