#pragma once
// The state LayerSolve (layer_solve.h) searches from and moves through: the static start, the
// instances' token flows, the replica slots and the ranks with a free slot. solver/README.md,
// step 1.

#include <cstdint>

#include "solver/experts_by_home.h"
#include "solver/gradient_chains.h"
#include "solver/layer_solve/layer_solve.h"
#include "solver/static_traffic.h"

namespace topoep {
namespace topoep_detail {

// Static state: every token at its expert's home rank, resident replicas idle. One pass over
// the counts (static_traffic()) gives the counters and each expert's tokens by source node;
// per-expert columns are copied later, and only for the experts whose tokens move
// (prepare_expert()).
// With several threads the lookups and the pass over the counts are split among them
// (static_traffic_split()); thread 0 then sums the IB total and sets up the search's state.
template <typename Threads>
TOPOEP_HOST_DEVICE inline void LayerSolve<Threads>::init() {
  const int R = s_.num_ranks, E = s_.num_experts;
  const int first = threads_.index(), stride = threads_.count();
  for (RankId r = first; r < R; r += stride) w_.rank_node[r] = r / s_.gpus_per_node;
  for (std::int64_t j = first; j < s_.num_slots(); j += stride) {
    w_.slot_rank[j] = static_cast<RankId>(j / s_.slots_per_rank);
  }
  if (first == 0) {
    group_experts_by_home(in_.home_rank, E, R, w_.home_begin, w_.cursor, w_.home_experts);
  }
  if constexpr (Threads::kSerial) {
    ib_static_ = static_traffic(in_.counts, R, E, s_.gpus_per_node, w_.home_begin, w_.home_experts,
                                w_.static_node_tokens, w_.expert_totals, c_)
                     .ib_tokens;
  } else {
    threads_.sync();
    static_traffic_split(threads_, in_.counts, R, E, s_.gpus_per_node, w_.home_begin,
                         w_.home_experts, w_.static_node_tokens, w_.expert_totals, c_);
    if (first != 0) return;
    ib_static_ = 0;
    for (RankId r = 0; r < R; ++r) ib_static_ += c_.ib_out[r];
  }
  add_home_minimums();
  for (int i = 0; i < 5 * R; ++i) w_.static_tokens[i] = w_.counter_tokens[i];
  count_owed_chains();
  restore_static();
}

// The owed holders' chains: their gradient counts (the static state's) and their reduction's
// time, which the gradient phase is counted beyond.
template <typename Threads>
TOPOEP_HOST_DEVICE inline void LayerSolve<Threads>::count_owed_chains() {
  const int R = s_.num_ranks, E = s_.num_experts;
  owed_gradient_ps_ = 0;
  if (!chains_) return;
  std::int32_t* const g = w_.static_gradient_counts;
  for (int i = 0; i < 4 * R; ++i) g[i] = 0;
  const std::int64_t words = static_cast<std::int64_t>(E) * chain_words_;
  for (std::int64_t i = 0; i < words; ++i) w_.static_chain_bits[i] = 0;
  if (in_.owed_holders == nullptr) return;
  for (ExpertId e = 0; e < E; ++e) {
    const std::uint8_t* const row = in_.owed_holders + static_cast<std::int64_t>(e) * R;
    std::uint64_t* const bits = w_.static_chain_bits + static_cast<std::int64_t>(e) * chain_words_;
    std::uint8_t any = 0;  // most experts have no owed holder: a branch-free test first
    for (RankId r = 0; r < R; ++r) any |= row[r];
    if (any == 0) continue;
    for (RankId r = 0; r < R; ++r) {
      bits[r >> 6] |= static_cast<std::uint64_t>(row[r] != 0 ? 1 : 0) << (r & 63);
    }
    auto members = [&](int lo, int hi, auto&& visit) {
      for (RankId r = lo; r < hi; ++r) {
        if (row[r] != 0) visit(r);
      }
    };
    walk_gradient_chain(in_.home_rank[e], R, s_.gpus_per_node, members,
                        [&](RankId from, RankId to, bool same_node) {
                          ++g[chain_count_index(R, to, same_node, false)];
                          ++g[chain_count_index(R, from, same_node, true)];
                        });
  }
  owed_gradient_ps_ = gradient_exposed_ps(
      gradient_chains_ps(g, R, p_.cost.replica_gradient_bytes, p_.cost), p_.cost);
}

// The solver's loads are compute loads (CostParams::instance_min_tokens): an expert whose
// home instance holds fewer tokens than the minimum costs its home the minimum.
template <typename Threads>
TOPOEP_HOST_DEVICE inline void LayerSolve<Threads>::add_home_minimums() {
  if (min_tokens_ <= 0) return;
  for (ExpertId e = 0; e < s_.num_experts; ++e) {
    c_.load[in_.home_rank[e]] += compute_tokens(w_.expert_totals[e]) - w_.expert_totals[e];
  }
}

// Back to the static state init() computed, without reading the counts again.
template <typename Threads>
TOPOEP_HOST_DEVICE inline void LayerSolve<Threads>::restore_static() {
  const int R = s_.num_ranks, E = s_.num_experts;
  for (int i = 0; i < 5 * R; ++i) w_.counter_tokens[i] = w_.static_tokens[i];
  for (int i = 0; i < 4 * R; ++i) w_.counter_weights[i] = 0;
  for (std::int64_t i = 0; i < 4 * (s_.num_slots() + 2); ++i) w_.replica_time[i] = -1;
  for (RankId r = 0; r < R; ++r) w_.one_more_replica[8 * r] = -1;
  if (chains_) {
    for (int i = 0; i < 4 * R; ++i) w_.gradient_counts[i] = w_.static_gradient_counts[i];
    const std::int64_t words = static_cast<std::int64_t>(E) * chain_words_;
    for (std::int64_t i = 0; i < words; ++i) w_.chain_bits[i] = w_.static_chain_bits[i];
  }
  for (int n = 0; n < num_nodes_; ++n) w_.open_ranks[2 * n] = kStaleNode;
  for (int n = 0; n < num_nodes_; ++n) w_.node_changed[n] = 1;
  ib_total_ = ib_static_;
  weights_changed_ = true;  // the weight and gradient counters were reset above
  for (ExpertId e = 0; e < E; ++e) {
    w_.home_tokens[e] = w_.expert_totals[e];
    w_.expert_ready[e] = 0;
    w_.expert_first_slot[e] = -1;
  }
  for (std::int64_t j = 0; j < s_.num_slots(); ++j) {
    w_.slot_expert[j] = in_.resident == nullptr ? kNoExpert : in_.resident[j];
    w_.slot_is_new[j] = 0;
    w_.slot_tokens[j] = 0;
    if (w_.slot_expert[j] != kNoExpert) {
      clear_slot_flows(j);
      link_slot(j);
    }
  }
}

// Fills in expert e's home instance's tokens by source node, as the static plan has them:
// needed before its home instance is weighed. Idempotent.
template <typename Threads>
TOPOEP_HOST_DEVICE inline void LayerSolve<Threads>::prepare_node_row(ExpertId expert) {
  if (w_.expert_ready[expert]) return;
  TokenCount* nodes = node_row(kHomeSlot, expert);
  for (int n = 0; n < num_nodes_; ++n) {
    nodes[n] = w_.static_node_tokens[static_cast<std::int64_t>(n) * s_.num_experts + expert];
  }
  w_.expert_ready[expert] = 1;
}

// Copies expert e's column of the counts into flow_home too: needed before its home
// instance's tokens move or are written out. Idempotent.
template <typename Threads>
TOPOEP_HOST_DEVICE inline void LayerSolve<Threads>::prepare_expert(ExpertId expert) {
  if (w_.expert_ready[expert] == 2) return;
  prepare_node_row(expert);
  TokenCount* column = w_.flow_home + static_cast<std::int64_t>(expert) * s_.num_ranks;
  const TokenCount* counts = in_.counts + expert;
  for (RankId src = 0; src < s_.num_ranks; ++src) {
    column[src] = counts[static_cast<std::int64_t>(src) * s_.num_experts];
  }
  w_.expert_ready[expert] = 2;
}

// flow(slot, expert, src) for reading, whether or not the home column was copied yet.
template <typename Threads>
TOPOEP_HOST_DEVICE inline TokenCount LayerSolve<Threads>::flow_of(std::int32_t slot,
                                                                  ExpertId expert,
                                                                  RankId src) const {
  if (slot == kHomeSlot && w_.expert_ready[expert] != 2) {
    return in_.counts[static_cast<std::int64_t>(src) * s_.num_experts + expert];
  }
  return flow(slot, expert, src);
}

template <typename Threads>
TOPOEP_HOST_DEVICE inline void LayerSolve<Threads>::clear_slot_flows(std::int64_t slot) {
  for (RankId src = 0; src < s_.num_ranks; ++src) {
    w_.flow_slot[slot * s_.num_ranks + src] = 0;
  }
  TokenCount* nodes = node_row(static_cast<std::int32_t>(slot), kNoExpert);
  for (int n = 0; n < num_nodes_; ++n) nodes[n] = 0;
}

template <typename Threads>
TOPOEP_HOST_DEVICE inline bool LayerSolve<Threads>::hosts(RankId rank, ExpertId expert) const {
  if (in_.home_rank[expert] == rank) return true;
  for (int slot = 0; slot < s_.slots_per_rank; ++slot) {
    if (w_.slot_expert[slot_index(rank, slot)] == expert) return true;
  }
  return false;
}

// Whether `rank` held a replica of `expert` when the solve began (TopoepLayerInput::resident).
// The search may evict such a replica while it is idle and make it again later in another
// slot; the plan lists a rank's replicas as a set, so it is the resident replica kept, not a
// new one: its weights do not move and it joins no gradient chain (predict_plan_cost() prices
// it so).
template <typename Threads>
TOPOEP_HOST_DEVICE inline bool LayerSolve<Threads>::was_resident(RankId rank,
                                                                 ExpertId expert) const {
  if (in_.resident == nullptr) return false;
  for (int slot = 0; slot < s_.slots_per_rank; ++slot) {
    if (in_.resident[slot_index(rank, slot)] == expert) return true;
  }
  return false;
}

// The slot a new replica on `rank` would take: the lowest empty slot, else the lowest slot
// whose replica has gone idle (it is evicted); -1 when the rank is full.
template <typename Threads>
TOPOEP_HOST_DEVICE inline std::int64_t LayerSolve<Threads>::free_slot(RankId rank) const {
  const std::int64_t first = slot_index(rank, 0);
  const ExpertId* experts = w_.slot_expert + first;
  const TokenCount* tokens = w_.slot_tokens + first;
  for (int slot = 0; slot < s_.slots_per_rank; ++slot) {
    if (experts[slot] == kNoExpert) return first + slot;
  }
  for (int slot = 0; slot < s_.slots_per_rank; ++slot) {
    if (tokens[slot] == 0) return first + slot;
  }
  return -1;
}

// free_slot(rank) >= 0, in one pass: an empty slot holds no tokens either (slot_tokens is 0
// for every slot without an expert).
template <typename Threads>
TOPOEP_HOST_DEVICE inline bool LayerSolve<Threads>::has_free_slot(RankId rank) const {
  const TokenCount* tokens = w_.slot_tokens + slot_index(rank, 0);
  for (int slot = 0; slot < s_.slots_per_rank; ++slot) {
    if (tokens[slot] == 0) return true;
  }
  return false;
}

template <typename Threads>
TOPOEP_HOST_DEVICE inline void LayerSolve<Threads>::count_open_below() {
  open_below_ = 0;
  for (RankId r = 0; r < s_.num_ranks; ++r) open_below_ += open_below(r) ? 1 : 0;
}

// Per node, the two least-loaded ranks (ties: lower rank) with a free slot; -1 if fewer.
// Only nodes marked stale (kStaleNode) are searched again: a move changes the loads and slot
// tokens of its two ranks only (stale_open_ranks()).
template <typename Threads>
TOPOEP_HOST_DEVICE inline void LayerSolve<Threads>::find_open_ranks() {
  RankId* const open = w_.open_ranks;
  open_load_floor_ = -1;
  for (int n = 0; n < num_nodes_; ++n) {
    if (open[2 * n] == kStaleNode) two_open_ranks(n, c_.load, -1, &open[2 * n]);
    const RankId least = open[2 * n];
    if (least >= 0 && (open_load_floor_ < 0 || c_.load[least] < open_load_floor_)) {
      open_load_floor_ = c_.load[least];
    }
  }
}

// The two ranks of node `n` other than `skip` with a free slot and the lowest `key` (ties:
// lower rank) into out[0] and out[1]; -1 where there are fewer.
template <typename Threads>
TOPOEP_HOST_DEVICE inline void LayerSolve<Threads>::two_open_ranks(int n, const TokenCount* key,
                                                                   RankId skip, RankId* out) const {
  RankId first = -1, second = -1;
  for (RankId t = n * s_.gpus_per_node; t < (n + 1) * s_.gpus_per_node; ++t) {
    if (t == skip || !has_free_slot(t)) continue;
    if (first < 0 || key[t] < key[first]) {
      second = first;
      first = t;
    } else if (second < 0 || key[t] < key[second]) {
      second = t;
    }
  }
  out[0] = first;
  out[1] = second;
}

}  // namespace topoep_detail
}  // namespace topoep
