#pragma once
// LayerSolve: the TopoEP solver for one MoE layer and microbatch, written once for the host
// (g++) and the GPU (nvcc). This file declares it and says where each part is defined; the
// parts are in the files beside it, named for what they hold (solver/README.md lists them, with
// the algorithm, its tie-break rules and its guarantees). Include solver/topoep_algorithm.h,
// which brings every part: a member is defined in one of them, and a use needs them all.
//
// Determinism: integer arithmetic only; every loop runs in a fixed order and every choice is
// made by a total order on (gain, kind, rank, expert), so the plan depends on the inputs alone.

#include <cstdint>

#include "solver/block_threads.h"
#include "solver/cost_params.h"
#include "solver/gradient_chains.h"
#include "solver/host_device.h"
#include "solver/layer_solve/move.h"
#include "solver/phase_times.h"
#include "solver/plan.h"
#include "solver/topoep_layer_io.h"
#include "solver/topoep_workspace.h"

namespace topoep {
namespace topoep_detail {

// One layer's solve by `Threads` (block_threads.h): each of the threads constructs its own
// LayerSolve over the same workspace and calls solve(). The passes over the counts and the
// plan's rows are split among them; the search, the replay and everything else run on thread 0,
// whose members alone hold the search's state.
template <typename Threads>
class LayerSolve {
 public:
  TOPOEP_HOST_DEVICE LayerSolve(const TopoepParams& params, const TopoepLayerInput& input,
                                const TopoepWorkspace& workspace, const Threads& threads)
      : threads_(threads),
        p_(params),
        s_(params.shape),
        in_(input),
        w_(workspace),
        c_(workspace.counters(params.shape.num_ranks)),
        num_nodes_(params.shape.num_nodes()),
        min_tokens_(params.cost.instance_min_tokens),
        chains_(params.cost.replica_gradient_bytes > 0),
        replica_uses_(input.replica_uses > 1 ? input.replica_uses : 1),
        chain_words_((params.shape.num_ranks + 63) / 64) {}

  // Solves and writes the canonical plan (search.h). Every thread calls it.
  TOPOEP_HOST_DEVICE void solve(const TopoepLayerOutput& out);

 private:
  // The search: its runs, their stop rule and best prefix, the second runs (search.h).
  TOPOEP_HOST_DEVICE std::int32_t search(std::int32_t* best_moves_out, std::int32_t* kept_log,
                                         RunKind* kept_kind);

  // The SM's cycle counter on the GPU, 0 on the host: the plan never depends on it.
  TOPOEP_HOST_DEVICE static std::int64_t device_clock() {
#if defined(__CUDA_ARCH__)
    return static_cast<std::int64_t>(clock64());
#else
    return 0;
#endif
  }
  TOPOEP_HOST_DEVICE void clear_stuck();
  TOPOEP_HOST_DEVICE void flag_holders(ExpertId expert, std::uint8_t* flags, std::uint8_t value);
  TOPOEP_HOST_DEVICE void mark_helpers(RankId rank);
  TOPOEP_HOST_DEVICE void unstick_near(RankId rank);
  TOPOEP_HOST_DEVICE std::int32_t run(Move* log, RunKind kind, std::int32_t* best_moves);

  // Whether the first run's best state leaves the busiest rank more than 2% above the mean
  // (target_) while, in that state, no rank below the mean has a free slot: then the slots went
  // where they help least (ranks with room each holding all of a small expert), and a seeded
  // run is worth its time. With a free slot left where there is room, the best state is limited
  // by its costs, not by the slots: the moves after it that filled those slots did not pay.
  TOPOEP_HOST_DEVICE bool needs_seeded_run() const {
    return !room_with_slot_ && best_state_above_mean();
  }

  // Whether the last run's best state leaves the busiest rank more than 2% above the mean
  // (target_): the condition both second runs share.
  TOPOEP_HOST_DEVICE bool best_state_above_mean() const {
    if (p_.cost.compute_ps_per_token <= 0) return false;
    const TokenCount busiest = best_compute_ / p_.cost.compute_ps_per_token;
    return busiest * 50 > target_ * 51;
  }
  TOPOEP_HOST_DEVICE bool needs_opened_run() const;
  TOPOEP_HOST_DEVICE bool needs_opened_ib_run() const;
  // Whether the cluster's cheaper link class for a replica's weights is NVLink: it has one
  // with more than one GPU a node, and no IB or IB no faster.
  TOPOEP_HOST_DEVICE bool nvlink_is_cheaper() const {
    return s_.gpus_per_node > 1 &&
           (num_nodes_ == 1 || p_.cost.scale_up.bytes_per_us >= p_.cost.scale_out.bytes_per_us);
  }

  // The best prefix found so far and the stop rule's state, shared by both phases.
  struct Progress {
    Picoseconds best_time = 0;
    Picoseconds best_compute = 0;  // the best state's compute phase (its busiest rank's load)
    std::int32_t best_moves = 0;
    Picoseconds marked_time = 0;  // the predicted time at the last significant cut
    std::int32_t marked_moves = 0;
    std::int32_t stall_limit = 0;
    bool best_room_with_slot = false;  // whether the best state has an open_below() rank
    Picoseconds last_time = 0;         // the predicted time of the state the last move left
  };
  TOPOEP_HOST_DEVICE PhaseTimes measure();
  TOPOEP_HOST_DEVICE bool commit(const Move& move, std::int32_t& moves, Progress& progress);
  TOPOEP_HOST_DEVICE void seed_replicas(std::int32_t& moves, Progress& progress);

  // The state: the static start, instances, slots and open ranks (state.h).
  // Looked up: a division costs as much as the rest of a move's bookkeeping for one source.
  TOPOEP_HOST_DEVICE int node_of(RankId rank) const { return w_.rank_node[rank]; }
  TOPOEP_HOST_DEVICE std::int64_t slot_index(RankId rank, int slot) const {
    return static_cast<std::int64_t>(rank) * s_.slots_per_rank + slot;
  }

  // NOTE: flow_home is expert-major ([E][R], the transpose of counts) so that one instance's
  // sources are contiguous, as they are for a slot.
  TOPOEP_HOST_DEVICE TokenCount& flow(std::int32_t slot, ExpertId expert, RankId src) const {
    return slot == kHomeSlot ? w_.flow_home[static_cast<std::int64_t>(expert) * s_.num_ranks + src]
                             : w_.flow_slot[static_cast<std::int64_t>(slot) * s_.num_ranks + src];
  }

  // The instance's tokens by source node, [N].
  TOPOEP_HOST_DEVICE TokenCount* node_row(std::int32_t slot, ExpertId expert) const {
    const std::int64_t row =
        slot == kHomeSlot ? expert : s_.num_experts + static_cast<std::int64_t>(slot);
    return w_.instance_node_tokens + row * num_nodes_;
  }
  TOPOEP_HOST_DEVICE TokenCount& instance_tokens(std::int32_t slot, ExpertId expert) const {
    return slot == kHomeSlot ? w_.home_tokens[expert] : w_.slot_tokens[slot];
  }
  TOPOEP_HOST_DEVICE void init();
  TOPOEP_HOST_DEVICE void count_owed_chains();
  TOPOEP_HOST_DEVICE void add_home_minimums();

  // instance_compute_tokens() at this solve's minimum: what an instance of `tokens` tokens
  // adds to its rank's compute load.
  TOPOEP_HOST_DEVICE TokenCount compute_tokens(TokenCount tokens) const {
    return instance_compute_tokens(tokens, min_tokens_);
  }
  TOPOEP_HOST_DEVICE void restore_static();
  TOPOEP_HOST_DEVICE void prepare_node_row(ExpertId expert);
  TOPOEP_HOST_DEVICE void prepare_expert(ExpertId expert);
  TOPOEP_HOST_DEVICE TokenCount flow_of(std::int32_t slot, ExpertId expert, RankId src) const;
  TOPOEP_HOST_DEVICE void clear_slot_flows(std::int64_t slot);

  // Adds slot j to its expert's list of replica slots (at the front).
  TOPOEP_HOST_DEVICE void link_slot(std::int64_t j) {
    const ExpertId expert = w_.slot_expert[j];
    w_.slot_next[j] = w_.expert_first_slot[expert];
    w_.expert_first_slot[expert] = static_cast<std::int32_t>(j);
  }
  TOPOEP_HOST_DEVICE void unlink_slot(std::int64_t j) {
    std::int32_t* link = &w_.expert_first_slot[w_.slot_expert[j]];
    while (*link != j) link = &w_.slot_next[*link];
    *link = w_.slot_next[j];
  }
  TOPOEP_HOST_DEVICE bool hosts(RankId rank, ExpertId expert) const;
  TOPOEP_HOST_DEVICE bool was_resident(RankId rank, ExpertId expert) const;
  TOPOEP_HOST_DEVICE std::int64_t free_slot(RankId rank) const;
  TOPOEP_HOST_DEVICE bool has_free_slot(RankId rank) const;
  TOPOEP_HOST_DEVICE void find_open_ranks();
  // A rank below the mean with a free slot: room a new replica could fill.
  TOPOEP_HOST_DEVICE bool open_below(RankId rank) const {
    return c_.load[rank] < target_ && has_free_slot(rank);
  }
  TOPOEP_HOST_DEVICE void count_open_below();
  TOPOEP_HOST_DEVICE void stale_open_ranks(RankId rank) {
    w_.open_ranks[2 * node_of(rank)] = kStaleNode;
  }
  TOPOEP_HOST_DEVICE void two_open_ranks(int n, const TokenCount* key, RankId skip,
                                         RankId* out) const;

  // What new replicas cost: their weights and gradient chains (replica_costs.h).
  TOPOEP_HOST_DEVICE void add_weight(RankId home, RankId rank, std::int32_t count);
  TOPOEP_HOST_DEVICE Picoseconds replica_transfer(bool gradients, bool nvlink,
                                                  std::int32_t count) const;
  TOPOEP_HOST_DEVICE Picoseconds weight_link_time(RankId rank, bool nvlink, std::int32_t extra_out,
                                                  std::int32_t extra_in) const;
  TOPOEP_HOST_DEVICE Picoseconds weight_exposed(RankId rank, bool nvlink = true,
                                                std::int32_t extra_out = 0,
                                                std::int32_t extra_in = 0) const;
  TOPOEP_HOST_DEVICE Picoseconds gradient_time(RankId rank, const std::int32_t* delta) const;
  TOPOEP_HOST_DEVICE Picoseconds gradient_time(RankId rank) const {
    const std::int32_t none[4] = {0, 0, 0, 0};
    return gradient_time(rank, none);
  }

  // What one more replica makes of `rank`'s exposed weight time, sending (as home) or
  // receiving, over NVLink or IB, at index 2 received + ib, and what one more gradient sent or
  // received makes of its gradient time, at 4 + 2 received + ib; cached per rank until its
  // replica or gradient counts change. The cached row is the common case: only the refresh is
  // a call.
  TOPOEP_HOST_DEVICE const Picoseconds* one_more(RankId rank) const {
    Picoseconds* row = w_.one_more_replica + 8 * rank;
    if (row[0] < 0) refresh_one_more(rank, row);
    return row;
  }
  TOPOEP_HOST_DEVICE void refresh_one_more(RankId rank, Picoseconds* row) const;

  // Gradient chains (solver/gradient_chains.h): an expert's chain holds its owed holders and
  // its new replicas that hold tokens (w_.chain_bits); w_.gradient_counts counts every chain's
  // hops. Kept only where gradients cost something (chains_).
  TOPOEP_HOST_DEVICE const std::uint64_t* chain_row(ExpertId expert) const {
    return w_.chain_bits + static_cast<std::int64_t>(expert) * chain_words_;
  }
  TOPOEP_HOST_DEVICE bool in_chain(ExpertId expert, RankId rank) const {
    return (chain_row(expert)[rank >> 6] >> (rank & 63)) & 1;
  }
  TOPOEP_HOST_DEVICE bool chain_empty(ExpertId expert) const;
  TOPOEP_HOST_DEVICE std::uint64_t chain_word(ExpertId expert, int word, int lo, int hi) const;
  TOPOEP_HOST_DEVICE RankId last_in_chain(ExpertId expert, int lo, int hi) const;
  TOPOEP_HOST_DEVICE RankId first_in_chain(ExpertId expert, int lo, int hi) const;
  template <typename F>
  TOPOEP_HOST_DEVICE void for_each_in_chain(ExpertId expert, int lo, int hi, F f) const;
  template <typename Hop>
  TOPOEP_HOST_DEVICE void walk_chain(ExpertId expert, Hop hop) const;
  TOPOEP_HOST_DEVICE void chain_neighbours(ExpertId expert, RankId rank, RankId* before,
                                           RankId* after) const;

  // How inserting `rank` between `before` (-1: none) and `after` changes the three ranks'
  // gradient counts ([4] each, the counts' order: received and sent inside the node, then
  // across nodes): it receives from the one and sends to the other, which now receives from
  // it instead of from `before`.
  struct ChainInsertion {
    std::int32_t rank[4] = {0, 0, 0, 0};
    std::int32_t after[4] = {0, 0, 0, 0};
    std::int32_t before[4] = {0, 0, 0, 0};
  };
  TOPOEP_HOST_DEVICE ChainInsertion chain_insertion(RankId rank, RankId before, RankId after) const;
  TOPOEP_HOST_DEVICE void add_gradient_counts(RankId rank, const std::int32_t* delta,
                                              std::int32_t sign);

  // A new replica of `expert` on `rank` starts (or stops) holding tokens: its weights move
  // from the home (or no longer) and it joins (or leaves) the expert's gradient chain.
  TOPOEP_HOST_DEVICE void set_new_replica_used(ExpertId expert, RankId rank, bool used) {
    add_weight(in_.home_rank[expert], rank, used ? 1 : -1);
    set_new_holder(expert, rank, used);
  }
  TOPOEP_HOST_DEVICE void set_new_holder(ExpertId expert, RankId rank, bool holds);
  TOPOEP_HOST_DEVICE Picoseconds chain_insertion_ps(ExpertId expert, RankId rank) const;

  // What a new replica of `expert` on `to_rank` adds to the weight phase and the gradient phase:
  // both wait for their slowest rank, so only what it adds to the current maxima counts: at its
  // home (sending weights) and its destination (receiving them), and at the ranks of the
  // expert's gradient chain it joins (chain_insertion_ps()).
  TOPOEP_HOST_DEVICE Picoseconds new_replica_cost(ExpertId expert, RankId to_rank) const {
    return new_replica_weight_cost(expert, to_rank) + new_replica_gradient_cost(expert, to_rank);
  }
  TOPOEP_HOST_DEVICE Picoseconds new_replica_weight_cost(ExpertId expert, RankId to_rank) const;

  // This microbatch's share of it (TopoepLayerInput::replica_uses).
  TOPOEP_HOST_DEVICE Picoseconds new_replica_gradient_cost(ExpertId expert, RankId to_rank) const {
    return chain_insertion_ps(expert, to_rank) / replica_uses_;
  }
  TOPOEP_HOST_DEVICE Picoseconds new_replica_floor(RankId rank, bool first) const;
  TOPOEP_HOST_DEVICE void note_new_replica(const Move& move);

  // Greedy moves: sizing and weighing candidates (moves.h).
  TOPOEP_HOST_DEVICE TokenCount room_between(RankId from_rank, RankId to_rank,
                                             TokenCount to_tokens) const;

  // The tokens an instance of `to_tokens` (0: a new replica) can take while its rank's compute
  // load rises by at most `cap` >= 0: those that fill it up to instance_min_tokens cost
  // nothing, and an empty one costs the whole minimum or takes nothing.
  TOPOEP_HOST_DEVICE TokenCount instance_capacity(TokenCount cap, TokenCount to_tokens) const {
    if (to_tokens >= min_tokens_) return cap;
    if (to_tokens > 0) return cap + min_tokens_ - to_tokens;
    return cap >= min_tokens_ ? cap : 0;
  }

  // The tokens of a move's destination instance (0 for a new replica) where instances have a
  // minimum; 0 without one, where nothing reads them (not loaded: the common case).
  TOPOEP_HOST_DEVICE TokenCount destination_tokens(std::int32_t to_slot, ExpertId expert) const {
    if (min_tokens_ <= 0 || to_slot == kNewSlot) return 0;
    return instance_tokens(to_slot, expert);
  }

  // `bound` capped by the gap between the two ranks' compute loads: a move to an empty instance
  // (a new replica, or a resident one left idle) raises the destination's load by at least the
  // minimum, and compute_relief() is at most the origin's load less the destination's new one.
  // Where a hot rank's neighbours sit within the minimum of it, most new-replica offers stop
  // here, before their weights are priced.
  TOPOEP_HOST_DEVICE TokenCount relief_cap(RankId from_rank, RankId to_rank, TokenCount to_tokens,
                                           TokenCount bound) const {
    if (min_tokens_ <= 0 || to_tokens > 0) return bound;
    return relief_cap(from_rank, c_.load[to_rank], bound);
  }
  TOPOEP_HOST_DEVICE TokenCount relief_cap(RankId from_rank, TokenCount to_load,
                                           TokenCount bound) const;
  TOPOEP_HOST_DEVICE TokenCount relief_bound(TokenCount tokens_on, TokenCount room) const;
  TOPOEP_HOST_DEVICE TokenCount compute_relief(RankId from_rank, TokenCount tokens_on,
                                               RankId to_rank, TokenCount to_tokens,
                                               TokenCount tokens) const;
  TOPOEP_HOST_DEVICE void evaluate(ExpertId expert, RankId from_rank, std::int32_t from_slot,
                                   TokenCount tokens_on, const TokenCount* node_tokens,
                                   RankId to_rank, std::int32_t to_slot, Move& best,
                                   TokenCount room, Picoseconds weight_cost) const;

  // A token moved off the straggler saves its compute, forward and backward.
  TOPOEP_HOST_DEVICE Picoseconds relief_ps_per_token() const {
    return p_.cost.compute_ps_per_token * (1 + p_.cost.backward_compute_factor);
  }
  TOPOEP_HOST_DEVICE Picoseconds ib_ps(TokenCount tokens) const;

  // Only a move with a positive gain is made, and only one at least as good as `best` can
  // replace it (ties need equal gain): candidates whose gain bound falls below this are skipped.
  TOPOEP_HOST_DEVICE static Picoseconds gain_floor(const Move& best) {
    return best.valid() && best.gain > 1 ? best.gain : 1;
  }
  TOPOEP_HOST_DEVICE void consider_instance(ExpertId expert, RankId rank, std::int32_t slot,
                                            Picoseconds* replica_floor, Move& best);
  TOPOEP_HOST_DEVICE Move best_move_from(RankId rank);

  // Applying a move: its tokens, source by source (transfer.h).
  // How `src` reaches `dst`: 0 it is the rank itself, 1 over NVLink, 2 over IB.
  TOPOEP_HOST_DEVICE int link_class(RankId src, int src_node, RankId dst) const {
    return src == dst ? 0 : src_node == node_of(dst) ? 1 : 2;
  }
  TOPOEP_HOST_DEVICE void transfer_from(const Move& move, RankId src, TokenCount& remaining);
  TOPOEP_HOST_DEVICE void transfer_from_other_nodes(const Move& move, int skip_a, int skip_b,
                                                    TokenCount& limit);
  TOPOEP_HOST_DEVICE TokenCount ib_first_share(RankId from_rank, RankId to_rank, TokenCount remote,
                                               TokenCount tokens) const;
  TOPOEP_HOST_DEVICE void transfer(const Move& move);
  TOPOEP_HOST_DEVICE void apply(Move move);

  // IB levelling: the second phase (ib_levelling.h).
  TOPOEP_HOST_DEVICE std::int32_t level_ib(std::int32_t moves, Progress& progress, bool relaxed);
  TOPOEP_HOST_DEVICE TokenCount relaxed_load_cap(RankId busiest, TokenCount first_cap) const;
  TOPOEP_HOST_DEVICE Move best_sender_shed(RankId sender, TokenCount load_cap);
  TOPOEP_HOST_DEVICE RankId instance_in_node(ExpertId expert, int n, std::int32_t* slot) const;
  TOPOEP_HOST_DEVICE Move best_cross_node_shed(RankId a, TokenCount load_cap);
  template <typename F>
  TOPOEP_HOST_DEVICE void for_each_loaded_instance(RankId rank, F& f);

  // The plan: canonical slots and routes (emit.h).
  TOPOEP_HOST_DEVICE void emit_instances(const TopoepLayerOutput& out);
  TOPOEP_HOST_DEVICE TOPOEP_NOINLINE void emit_routes(const TopoepLayerOutput& out);
  TOPOEP_HOST_DEVICE std::int64_t row_routes(RankId src, Route* routes) const;

  // The search's state: thread 0's members alone hold it.
  Threads threads_;
  const TopoepParams& p_;
  const TopoepShape& s_;
  TopoepLayerInput in_;
  TopoepWorkspace w_;
  RankCounters c_;
  // Divided out once: node_row() and the per-node loops run for every source a move touches.
  const int num_nodes_;
  const TokenCount min_tokens_;  // CostParams::instance_min_tokens, read on every offer
  // Whether gradients cost anything: only then are the gradient chains kept (walk_chain())
  const bool chains_;
  const std::int32_t replica_uses_;  // TopoepLayerInput::replica_uses, at least 1
  const int chain_words_;            // 64-bit words of a rank bitset (w_.chain_bits)
  TokenCount target_ = 0;            // the ceiling of the mean rank load
  // The least load of a rank with a free slot (find_open_ranks()); -1: none has one.
  TokenCount open_load_floor_ = -1;
  TokenCount compute_total_ = 0;  // the ranks' loads summed: with a minimum, moves change it
  TokenCount ib_total_ = 0;       // tokens crossing nodes now
  TokenCount ib_static_ = 0;      // tokens crossing nodes in the static plan: the ceiling
  // The largest exposed weight time and gradient time of the ranks new replicas touched so far
  // (with the chains those ranks are in for the step already): a new replica is charged only
  // what it adds to them (both phases wait for the slowest rank).
  Picoseconds weight_max_ = 0;
  Picoseconds gradient_max_ = 0;
  // The exposed reduction time of the owed holders' chains alone (gradient_chains_ps(), beyond
  // gradient_overlap_ps).
  Picoseconds owed_gradient_ps_ = 0;
  // A move's tokens by the link class (link_class()) they reached the origin instance over
  // and reach the destination over now: transfer() totals them to update the two ranks.
  struct ClassTotals {
    TokenCount from[3] = {0, 0, 0};
    TokenCount to[3] = {0, 0, 0};
  };
  ClassTotals moved_;
  CounterMaxima maxima_;         // of the current state, as measure() last found them
  bool weights_changed_ = true;  // since maxima_'s weight half was found
  // Counts the changes to the new replicas' weights and gradient chains (add_weight(),
  // set_new_holder()): every candidate's new replica cost reads them (run()'s stuck marks).
  std::int32_t replica_changes_ = 0;
  TokenLinkTimes token_links_;    // of maxima_'s token half ...
  WeightLinkTimes weight_links_;  // ... and weight half, once link_times_known_
  bool link_times_known_ = false;
  Move* log_ = nullptr;         // the current run's move log
  Picoseconds best_time_ = 0;   // the last run's best predicted time ...
  std::int32_t last_done_ = 0;  // the moves the last run made (the state it left)
  // How many ranks are open_below() now: a move changes the loads and slots of its two ranks
  // only, so commit() updates it from those (all of them again when the mean moves).
  std::int32_t open_below_ = 0;
  // Before the relaxed IB pass (level_ib()): the best state's compute phase and prefix (in
  // log_), and whether a rank below the mean had a free slot in that state.
  Picoseconds best_compute_ = 0;
  std::int32_t best_moves_ = 0;
  bool room_with_slot_ = false;
  // What emit_instances() listed: the replicated experts and their instances.
  std::int32_t num_replicated_ = 0;
  std::int32_t num_instances_ = 0;
};

}  // namespace topoep_detail
}  // namespace topoep
