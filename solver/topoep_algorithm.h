#pragma once
// The TopoEP solver for one MoE layer and microbatch, written once for the host (g++) and the
// GPU (nvcc). See solver/README.md for the algorithm, its tie-break rules and its guarantees.
//
// Determinism: integer arithmetic only; every loop runs in a fixed order and every choice is
// made by a total order on (gain, kind, rank, expert), so the plan depends on the inputs alone.

#include <cstdint>

#include "solver/block_threads.h"
#include "solver/cost_params.h"
#include "solver/experts_by_home.h"
#include "solver/gradient_chains.h"
#include "solver/host_device.h"
#include "solver/phase_times.h"
#include "solver/plan.h"
#include "solver/static_traffic.h"
#include "solver/topoep_workspace.h"

namespace topoep {

struct TopoepLayerInput {
  const TokenCount* counts;  // [R][E]
  const RankId* home_rank;   // [E]
  const ExpertId* resident;  // [R][S] replicas kept from earlier microbatches, or nullptr
  // [E][R] the ranks whose replica of each expert the step's earlier microbatches used (owed
  // holders, phase_times.h: their gradients are reduced with this microbatch's), or nullptr
  const std::uint8_t* owed_holders = nullptr;
  // The step's microbatches from this one on (>= 1), which a new replica can serve while it
  // stays resident: the gradient phase, paid once at the step's end, is weighed per microbatch
  // as its share over them (solver/README.md, "Gradients the step owes").
  std::int32_t replica_uses = 1;
};

struct TopoepLayerOutput {
  ExpertId* replicas;  // [R][S], canonical slot order
  Route* routes;       // [shape.route_capacity()], canonical order
  std::int64_t* num_routes;
  std::int32_t* num_moves;                 // moves the plan keeps (diagnostic)
  std::int32_t* searched_moves = nullptr;  // moves the search made (diagnostic; may be null)
  // [kSolvePhases]: GPU clock cycles of the static start, the search (both runs and the replay
  // of the best prefix), the plan's slots and instance lists, and its routes (diagnostic for
  // the GPU microbenchmark; may be null; the host reads no clock and writes zeros)
  std::int64_t* phase_cycles = nullptr;
  // The kept state's phase times as the search weighed them, from its incremental counters
  // (diagnostic, may be null). Without owed holders and with one use they are
  // predict_plan_cost()'s for the plan, phase for phase (the property test holds them to it).
  PhaseTimes* predicted = nullptr;
};

constexpr int kSolvePhases = 4;

// The default of TopoepParams::ib_load_slack_permille: 1% above the mean load.
constexpr std::int32_t kDefaultIbLoadSlackPermille = 10;

struct TopoepParams {
  TopoepShape shape;
  CostParams cost;
  std::int32_t max_moves = 0;  // cap on greedy moves; see default_max_moves()
  // How far above the mean compute load (in thousandths of it) the IB levelling's relaxed pass
  // may raise a rank to save IB time (LayerSolve::level_ib()); 0: no relaxed pass. At the
  // default the plans balance as issue 3's property asks (max/mean at most 1.05, and no worse
  // than a naive greedy's on the shared real traces) while trading what IB allows.
  std::int32_t ib_load_slack_permille = kDefaultIbLoadSlackPermille;
};

// 4 R (S + 1): enough for every replica slot to be filled and levelled several times over.
TOPOEP_HOST_DEVICE inline std::int32_t default_max_moves(const TopoepShape& shape) {
  return 4 * shape.num_ranks * (shape.slots_per_rank + 1);
}

namespace topoep_detail {

constexpr std::int32_t kHomeSlot = -1;  // an instance at the expert's home rank
constexpr std::int32_t kNewSlot = -2;   // a replica the move would create
constexpr RankId kStaleNode = -2;       // open_ranks of a node to be searched again
constexpr int kEmitRunBlock = 8;        // unreplicated routes emit_routes() writes at a time

// The searches a solve can run: from the static state; after seeding replicas
// (needs_seeded_run()); with the first replica of each rank's weights prepaid
// (needs_opened_run()).
enum class RunKind { kPlain, kSeeded, kOpened };

struct Move {
  ExpertId expert = kNoExpert;
  RankId from_rank = -1;
  std::int32_t from_slot = kHomeSlot;
  RankId to_rank = -1;
  std::int32_t to_slot = kHomeSlot;  // kHomeSlot, an existing slot, or kNewSlot
  TokenCount tokens = 0;
  TokenCount source_tokens = 0;  // the origin instance's tokens before the move
  TokenCount ib_delta = 0;       // change in tokens crossing nodes
  Picoseconds gain = 0;
  bool ib_only = false;  // moves only tokens from other nodes (the IB levelling phase)
  // A source whose tokens transfer() takes before any other's (best_sender_shed()), or -1.
  RankId first_source = -1;

  TOPOEP_HOST_DEVICE bool valid() const { return tokens > 0; }
  // The total order that picks the move: larger gain; then less IB traffic; then an existing
  // instance before a new replica; then the busier origin instance (a replica slot is scarce:
  // spend it on the expert that can use it most); then the lower destination rank; then the
  // lower expert.
  TOPOEP_HOST_DEVICE bool better_than(const Move& other) const {
    if (!other.valid()) return valid();
    if (gain != other.gain) return gain > other.gain;
    if (ib_delta != other.ib_delta) return ib_delta < other.ib_delta;
    const bool is_new = to_slot == kNewSlot, other_new = other.to_slot == kNewSlot;
    if (is_new != other_new) return !is_new;
    if (source_tokens != other.source_tokens) return source_tokens > other.source_tokens;
    if (to_rank != other.to_rank) return to_rank < other.to_rank;
    return expert < other.expert;
  }
};

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

  // Solves and writes the canonical plan: the static start (init()), the search (search()), the
  // plan's replica slots and instance lists (emit_instances()), then its routes (emit_routes()).
  // Every thread calls it.
  TOPOEP_HOST_DEVICE void solve(const TopoepLayerOutput& out) {
    std::int64_t clocks[kSolvePhases + 1] = {0, 0, 0, 0, 0};
    clocks[0] = device_clock();
    init();
    clocks[1] = device_clock();
    // Each move depends on the last: the search runs on thread 0 while the others wait.
    std::int32_t best_moves = 0, searched = 0;
    if (threads_.index() == 0) {
      searched = search(&best_moves);
      if (out.predicted != nullptr) *out.predicted = measure();
      clocks[2] = device_clock();
      emit_instances(out);
      clocks[3] = device_clock();
    }
    threads_.sync();
    emit_routes(out);
    clocks[4] = device_clock();
    if (threads_.index() != 0) return;
    *out.num_moves = best_moves;
    if (out.searched_moves != nullptr) *out.searched_moves = searched;
    if (out.phase_cycles != nullptr) {
      for (int i = 0; i < kSolvePhases; ++i) out.phase_cycles[i] = clocks[i + 1] - clocks[i];
    }
  }

 private:
  // The greedy from the static state and, where slots ran out before the room did, the seeded
  // run; then the state of the best prefix of whichever is predicted faster (ties: the first),
  // replayed from the move log unless the state already is that prefix. Returns the moves
  // searched and the prefix's length in `best_moves`.
  TOPOEP_HOST_DEVICE std::int32_t search(std::int32_t* best_moves_out) {
    Move* const logs[2] = {static_cast<Move*>(w_.move_log),
                           static_cast<Move*>(w_.move_log) + p_.max_moves};
    std::int32_t best_moves = 0;
    std::int32_t searched = run(logs[0], RunKind::kPlain, &best_moves);
    const Move* chosen = logs[0];
    const Move* last = logs[0];
    const RunKind second = needs_seeded_run()   ? RunKind::kSeeded
                           : needs_opened_run() ? RunKind::kOpened
                                                : RunKind::kPlain;
    if (second != RunKind::kPlain) {
      const Picoseconds plain_time = best_time_;
      restore_static();
      std::int32_t second_best = 0;
      searched += run(logs[1], second, &second_best);
      last = logs[1];
      if (best_time_ < plain_time) {
        chosen = logs[1];
        best_moves = second_best;
      }
    }
    if (chosen != last || best_moves != last_done_) {
      restore_static();
      for (std::int32_t i = 0; i < best_moves; ++i) apply(chosen[i]);
    }
    *best_moves_out = best_moves;
    return searched;
  }
  // The SM's cycle counter on the GPU, 0 on the host: the plan never depends on it.
  TOPOEP_HOST_DEVICE static std::int64_t device_clock() {
#if defined(__CUDA_ARCH__)
    return static_cast<std::int64_t>(clock64());
#else
    return 0;
#endif
  }

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

  TOPOEP_HOST_DEVICE void add_weight(RankId home, RankId rank, std::int32_t count) {
    weights_changed_ = true;
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
  TOPOEP_HOST_DEVICE Picoseconds replica_transfer(bool gradients, bool nvlink,
                                                  std::int32_t count) const {
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
  TOPOEP_HOST_DEVICE Picoseconds weight_link_time(RankId rank, bool nvlink, std::int32_t extra_out,
                                                  std::int32_t extra_in) const {
    const std::int32_t nvl_out = c_.weight_nvlink_out[rank] + (nvlink ? extra_out : 0);
    const std::int32_t nvl_in = c_.weight_nvlink_in[rank] + (nvlink ? extra_in : 0);
    const std::int32_t ib_out = c_.weight_ib_out[rank] + (nvlink ? 0 : extra_out);
    const std::int32_t ib_in = c_.weight_ib_in[rank] + (nvlink ? 0 : extra_in);
    return max_ps(replica_transfer(false, true, busier(nvl_out, nvl_in)),
                  replica_transfer(false, false, busier(ib_out, ib_in)));
  }

  // Exposed weight time of `rank`, with `extra` more replicas sent (as home) or received.
  TOPOEP_HOST_DEVICE Picoseconds weight_exposed(RankId rank, bool nvlink = true,
                                                std::int32_t extra_out = 0,
                                                std::int32_t extra_in = 0) const {
    const Picoseconds time = weight_link_time(rank, nvlink, extra_out, extra_in);
    return max_ps(0, time - p_.cost.weight_overlap_ps);
  }

  // Step-end reduction time of `rank`'s gradient chains (gradient counts, phase_times.h), with
  // `delta` ([4], the counts' order: received and sent inside the node, then across nodes)
  // added: nothing to hide behind.
  TOPOEP_HOST_DEVICE Picoseconds gradient_time(RankId rank, const std::int32_t* delta) const {
    const int R = s_.num_ranks;
    const std::int32_t* const g = w_.gradient_counts + rank;
    const std::int32_t nvlink = busier(g[0] + delta[0], g[R] + delta[1]);
    const std::int32_t ib = busier(g[2 * R] + delta[2], g[3 * R] + delta[3]);
    return max_ps(replica_transfer(true, true, nvlink), replica_transfer(true, false, ib));
  }
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

  TOPOEP_HOST_DEVICE void refresh_one_more(RankId rank, Picoseconds* row) const {
    for (int i = 0; i < 4; ++i) {
      const bool received = (i & 2) != 0, nvlink = (i & 1) == 0;
      row[i] = weight_exposed(rank, nvlink, received ? 0 : 1, received ? 1 : 0);
      // Gradient counts' order: received inside the node, sent, received across nodes, sent.
      std::int32_t delta[4] = {0, 0, 0, 0};
      delta[(nvlink ? 0 : 2) + (received ? 0 : 1)] = 1;
      row[4 + i] = chains_ ? gradient_time(rank, delta) : 0;
    }
  }

  // Gradient chains (solver/gradient_chains.h): an expert's chain holds its owed holders and
  // its new replicas that hold tokens (w_.chain_bits); w_.gradient_counts counts every chain's
  // hops. Kept only where gradients cost something (chains_).
  TOPOEP_HOST_DEVICE const std::uint64_t* chain_row(ExpertId expert) const {
    return w_.chain_bits + static_cast<std::int64_t>(expert) * chain_words_;
  }
  TOPOEP_HOST_DEVICE bool in_chain(ExpertId expert, RankId rank) const {
    return (chain_row(expert)[rank >> 6] >> (rank & 63)) & 1;
  }
  TOPOEP_HOST_DEVICE bool chain_empty(ExpertId expert) const {
    const std::uint64_t* const row = chain_row(expert);
    for (int word = 0; word < chain_words_; ++word) {
      if (row[word] != 0) return false;
    }
    return true;
  }
  // Word `word` of the expert's chain bits, keeping only ranks in [lo, hi).
  TOPOEP_HOST_DEVICE std::uint64_t chain_word(ExpertId expert, int word, int lo, int hi) const {
    std::uint64_t bits = chain_row(expert)[word];
    if (word == lo >> 6) bits &= ~std::uint64_t{0} << (lo & 63);
    if (word == (hi - 1) >> 6 && (hi & 63) != 0) bits &= (std::uint64_t{1} << (hi & 63)) - 1;
    return bits;
  }
  // The highest (lowest) rank of the expert's chain in [lo, hi), or -1.
  TOPOEP_HOST_DEVICE RankId last_in_chain(ExpertId expert, int lo, int hi) const {
    for (int word = (hi - 1) >> 6; hi > lo && word >= (lo >> 6); --word) {
      const std::uint64_t bits = chain_word(expert, word, lo, hi);
      if (bits != 0) return word * 64 + highest_bit(bits);
    }
    return -1;
  }
  TOPOEP_HOST_DEVICE RankId first_in_chain(ExpertId expert, int lo, int hi) const {
    for (int word = lo >> 6; hi > lo && word <= (hi - 1) >> 6; ++word) {
      const std::uint64_t bits = chain_word(expert, word, lo, hi);
      if (bits != 0) return word * 64 + lowest_bit(bits);
    }
    return -1;
  }
  // Calls f(rank) for each member of the expert's chain in [lo, hi), ascending.
  template <typename F>
  TOPOEP_HOST_DEVICE void for_each_in_chain(ExpertId expert, int lo, int hi, F f) const {
    for (int word = lo >> 6; hi > lo && word <= (hi - 1) >> 6; ++word) {
      for (std::uint64_t bits = chain_word(expert, word, lo, hi); bits != 0; bits &= bits - 1) {
        f(static_cast<RankId>(word * 64 + lowest_bit(bits)));
      }
    }
  }

  // walk_gradient_chain()'s hops over the expert's chain, its members found by bit scans.
  template <typename Hop>
  TOPOEP_HOST_DEVICE void walk_chain(ExpertId expert, Hop hop) const {
    walk_gradient_chain(
        in_.home_rank[expert], s_.num_ranks, s_.gpus_per_node,
        [&](int lo, int hi, auto&& visit) { for_each_in_chain(expert, lo, hi, visit); }, hop);
  }

  // The members `rank` (not in the expert's chain) would sit between in the chain's order:
  // `before` sends to it (-1: it would be the first) and it sends to `after` (the home when it
  // would be the last).
  TOPOEP_HOST_DEVICE void chain_neighbours(ExpertId expert, RankId rank, RankId* before,
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

  // How inserting `rank` between `before` (-1: none) and `after` changes the three ranks'
  // gradient counts ([4] each, the counts' order: received and sent inside the node, then
  // across nodes): it receives from the one and sends to the other, which now receives from
  // it instead of from `before`.
  struct ChainInsertion {
    std::int32_t rank[4] = {0, 0, 0, 0};
    std::int32_t after[4] = {0, 0, 0, 0};
    std::int32_t before[4] = {0, 0, 0, 0};
  };
  TOPOEP_HOST_DEVICE ChainInsertion chain_insertion(RankId rank, RankId before,
                                                    RankId after) const {
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
  TOPOEP_HOST_DEVICE void add_gradient_counts(RankId rank, const std::int32_t* delta,
                                              std::int32_t sign) {
    const int R = s_.num_ranks;
    for (int i = 0; i < 4; ++i) w_.gradient_counts[i * R + rank] += sign * delta[i];
    w_.one_more_replica[8 * rank] = -1;
  }

  // A new replica of `expert` on `rank` starts (or stops) holding tokens: its weights move
  // from the home (or no longer) and it joins (or leaves) the expert's gradient chain.
  TOPOEP_HOST_DEVICE void set_new_replica_used(ExpertId expert, RankId rank, bool used) {
    add_weight(in_.home_rank[expert], rank, used ? 1 : -1);
    set_new_holder(expert, rank, used);
  }

  // Adds (or removes) a new replica of `expert` on `rank` to the expert's chain. Only the rank
  // and its two neighbours' counts change (the same counts as recounting the whole chain).
  TOPOEP_HOST_DEVICE void set_new_holder(ExpertId expert, RankId rank, bool holds) {
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
  }

  // What a new replica of `expert` on `rank` adds to the gradient phase (its slowest rank's
  // time beyond gradient_max_): it joins the expert's chain between the holders before and
  // after it (walk_gradient_chain()'s order), so it receives from the one and sends to the
  // other, which now receives from it. 0 when the rank is in the chain already.
  TOPOEP_HOST_DEVICE Picoseconds chain_insertion_ps(ExpertId expert, RankId rank) const {
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

  // Static state: every token at its expert's home rank, resident replicas idle. One pass over
  // the counts (static_traffic()) gives the counters and each expert's tokens by source node;
  // per-expert columns are copied later, and only for the experts whose tokens move
  // (prepare_expert()).
  // With several threads the lookups and the pass over the counts are split among them
  // (static_traffic_split()); thread 0 then sums the IB total and sets up the search's state.
  TOPOEP_HOST_DEVICE void init() {
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
      ib_static_ = static_traffic(in_.counts, R, E, s_.gpus_per_node, w_.home_begin,
                                  w_.home_experts, w_.static_node_tokens, w_.expert_totals, c_)
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
  TOPOEP_HOST_DEVICE void count_owed_chains() {
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
      std::uint64_t* const bits =
          w_.static_chain_bits + static_cast<std::int64_t>(e) * chain_words_;
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
    owed_gradient_ps_ = gradient_chains_ps(g, R, p_.cost.replica_gradient_bytes, p_.cost);
  }

  // The solver's loads are compute loads (CostParams::instance_min_tokens): an expert whose
  // home instance holds fewer tokens than the minimum costs its home the minimum.
  TOPOEP_HOST_DEVICE void add_home_minimums() {
    if (min_tokens_ <= 0) return;
    for (ExpertId e = 0; e < s_.num_experts; ++e) {
      c_.load[in_.home_rank[e]] += compute_tokens(w_.expert_totals[e]) - w_.expert_totals[e];
    }
  }

  // instance_compute_tokens() at this solve's minimum: what an instance of `tokens` tokens
  // adds to its rank's compute load.
  TOPOEP_HOST_DEVICE TokenCount compute_tokens(TokenCount tokens) const {
    return instance_compute_tokens(tokens, min_tokens_);
  }

  // Back to the static state init() computed, without reading the counts again.
  TOPOEP_HOST_DEVICE void restore_static() {
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
  TOPOEP_HOST_DEVICE void prepare_node_row(ExpertId expert) {
    if (w_.expert_ready[expert]) return;
    TokenCount* nodes = node_row(kHomeSlot, expert);
    for (int n = 0; n < num_nodes_; ++n) {
      nodes[n] = w_.static_node_tokens[static_cast<std::int64_t>(n) * s_.num_experts + expert];
    }
    w_.expert_ready[expert] = 1;
  }

  // Copies expert e's column of the counts into flow_home too: needed before its home
  // instance's tokens move or are written out. Idempotent.
  TOPOEP_HOST_DEVICE void prepare_expert(ExpertId expert) {
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
  TOPOEP_HOST_DEVICE TokenCount flow_of(std::int32_t slot, ExpertId expert, RankId src) const {
    if (slot == kHomeSlot && w_.expert_ready[expert] != 2) {
      return in_.counts[static_cast<std::int64_t>(src) * s_.num_experts + expert];
    }
    return flow(slot, expert, src);
  }

  TOPOEP_HOST_DEVICE void clear_slot_flows(std::int64_t slot) {
    for (RankId src = 0; src < s_.num_ranks; ++src) {
      w_.flow_slot[slot * s_.num_ranks + src] = 0;
    }
    TokenCount* nodes = node_row(static_cast<std::int32_t>(slot), kNoExpert);
    for (int n = 0; n < num_nodes_; ++n) nodes[n] = 0;
  }

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

  TOPOEP_HOST_DEVICE bool hosts(RankId rank, ExpertId expert) const {
    if (in_.home_rank[expert] == rank) return true;
    for (int slot = 0; slot < s_.slots_per_rank; ++slot) {
      if (w_.slot_expert[slot_index(rank, slot)] == expert) return true;
    }
    return false;
  }

  // The slot a new replica on `rank` would take: the lowest empty slot, else the lowest slot
  // whose replica has gone idle (it is evicted); -1 when the rank is full.
  TOPOEP_HOST_DEVICE std::int64_t free_slot(RankId rank) const {
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
  TOPOEP_HOST_DEVICE bool has_free_slot(RankId rank) const {
    const TokenCount* tokens = w_.slot_tokens + slot_index(rank, 0);
    for (int slot = 0; slot < s_.slots_per_rank; ++slot) {
      if (tokens[slot] == 0) return true;
    }
    return false;
  }

  // Water-filling: fill the destination up to the mean without taking the origin below it;
  // between two ranks already above the mean, level the pair instead. Loads are compute loads:
  // the destination instance (`to_tokens` now, 0 for a new replica) takes what its
  // instance_capacity() allows below the mean, except that a new replica, which costs its rank
  // the minimum whatever it takes, may take the minimum even past the mean (evaluate() weighs
  // the overshoot).
  TOPOEP_HOST_DEVICE TokenCount room_between(RankId from_rank, RankId to_rank,
                                             TokenCount to_tokens) const {
    const TokenCount from_load = c_.load[from_rank], to_load = c_.load[to_rank];
    if (to_load >= target_) return (from_load - to_load) / 2;
    const TokenCount above = from_load - target_, room_below = target_ - to_load;
    const TokenCount below = to_tokens == 0 && room_below < min_tokens_
                                 ? min_tokens_
                                 : instance_capacity(room_below, to_tokens);
    return above < below ? above : below;
  }

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
  // The same for a new replica on a rank of load `to_load` or more; -1 there: no rank can take
  // one (open_load_floor_).
  TOPOEP_HOST_DEVICE TokenCount relief_cap(RankId from_rank, TokenCount to_load,
                                           TokenCount bound) const {
    if (min_tokens_ <= 0) return bound;
    if (to_load < 0) return 0;
    const TokenCount gap = c_.load[from_rank] - to_load - min_tokens_;
    return gap < bound ? gap : bound;
  }

  // A bound on the compute load a move of at most `room` of an instance's `tokens_on` tokens
  // takes off its rank (what evaluate() moves: all of a small instance, see there).
  TOPOEP_HOST_DEVICE TokenCount relief_bound(TokenCount tokens_on, TokenCount room) const {
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
  TOPOEP_HOST_DEVICE TokenCount compute_relief(RankId from_rank, TokenCount tokens_on,
                                               RankId to_rank, TokenCount to_tokens,
                                               TokenCount tokens) const {
    if (min_tokens_ <= 0) return tokens;
    const TokenCount from_load = c_.load[from_rank];
    const TokenCount from_after =
        from_load - compute_tokens(tokens_on) + compute_tokens(tokens_on - tokens);
    const TokenCount to_after =
        c_.load[to_rank] + compute_tokens(to_tokens + tokens) - compute_tokens(to_tokens);
    return from_load - (from_after > to_after ? from_after : to_after);
  }

  // What a new replica of `expert` on `to_rank` adds to the weight phase and the gradient phase:
  // both wait for their slowest rank, so only what it adds to the current maxima counts: at its
  // home (sending weights) and its destination (receiving them), and at the ranks of the
  // expert's gradient chain it joins (chain_insertion_ps()).
  TOPOEP_HOST_DEVICE Picoseconds new_replica_cost(ExpertId expert, RankId to_rank) const {
    return new_replica_weight_cost(expert, to_rank) + new_replica_gradient_cost(expert, to_rank);
  }
  TOPOEP_HOST_DEVICE Picoseconds new_replica_weight_cost(ExpertId expert, RankId to_rank) const {
    const RankId home = in_.home_rank[expert];
    const int ib = node_of(home) == node_of(to_rank) ? 0 : 1;
    const Picoseconds* sender = one_more(home);
    const Picoseconds* receiver = one_more(to_rank);
    return max_ps(weight_max_, max_ps(sender[ib], receiver[2 + ib])) - weight_max_;
  }
  // This microbatch's share of it (TopoepLayerInput::replica_uses).
  TOPOEP_HOST_DEVICE Picoseconds new_replica_gradient_cost(ExpertId expert, RankId to_rank) const {
    return chain_insertion_ps(expert, to_rank) / replica_uses_;
  }

  // Sizes and weighs the move of at most `room` of `expert`'s tokens from its instance
  // (from_rank, from_slot) to `to_rank` and makes it `best` when better (Move::better_than);
  // nothing when no token may or should move, or when its gain cannot reach best's
  // (gain_floor()). `room` is room_between()'s water-filling amount (consider_instance()) or the
  // seeding's chunk. `node_tokens` holds the origin instance's tokens by source node.
  // `weight_cost` is what a new replica adds to the weight and gradient phases
  // (new_replica_cost()), 0 for an existing instance: the caller has it already. The candidate
  // is built only when it got that far: most are not.
  TOPOEP_HOST_DEVICE void evaluate(ExpertId expert, RankId from_rank, std::int32_t from_slot,
                                   TokenCount tokens_on, const TokenCount* node_tokens,
                                   RankId to_rank, std::int32_t to_slot, Move& best,
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
        tokens - (to_node != from_node
                      ? (node_tokens[to_node] < tokens ? node_tokens[to_node] : tokens)
                      : 0);
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
    if (relief * relief_ps_per_token() - weight_cost - ib_cost < to_beat) return;
    Move move;
    move.expert = expert;
    move.from_rank = from_rank;
    move.from_slot = from_slot;
    move.to_rank = to_rank;
    move.to_slot = to_slot;
    move.tokens = tokens;
    move.source_tokens = tokens_on;
    move.ib_delta = ib_delta;
    // Straggler relief less what the move adds to the exposed weight phase and to the IB
    // phases at its destination. Total IB traffic is the second objective (a tie-break); the
    // best-prefix choice in run() then measures every phase exactly.
    move.gain = relief * relief_ps_per_token() - weight_cost - ib_cost;
    if (move.better_than(best)) best = move;
  }

  // A token moved off the straggler saves its compute, forward and backward.
  TOPOEP_HOST_DEVICE Picoseconds relief_ps_per_token() const {
    return p_.cost.compute_ps_per_token * (1 + p_.cost.backward_compute_factor);
  }

  // The IB time of `tokens` tokens on the rank the IB phases wait for: their dispatch, combine
  // and two backward transfers, floor(bytes x 1e6 / bandwidth), split so that nothing
  // overflows. What a move's arrivals beyond that rank's volume add (evaluate()), and the most
  // that many fewer can save (level_ib()'s relaxed pass).
  TOPOEP_HOST_DEVICE Picoseconds ib_ps(TokenCount tokens) const {
    const Bytes bytes =
        tokens * (p_.cost.dispatch_bytes_per_token + p_.cost.combine_bytes_per_token +
                  2 * p_.cost.backward_bytes_per_token);
    const std::int64_t bandwidth = p_.cost.scale_out.bytes_per_us;
    return bytes / bandwidth * 1000000 + bytes % bandwidth * 1000000 / bandwidth;
  }

  // Only a move with a positive gain is made, and only one at least as good as `best` can
  // replace it (ties need equal gain): candidates whose gain bound falls below this are skipped.
  TOPOEP_HOST_DEVICE static Picoseconds gain_floor(const Move& best) {
    return best.valid() && best.gain > 1 ? best.gain : 1;
  }

  // Best move of one instance on the straggler: to another existing instance of its expert, or
  // to a new replica on one of each node's least-loaded ranks that can take it. `replica_floor`
  // is shared by the rank's instances: new_replica_floor(rank, first) once found, -1 before, for
  // experts with an empty gradient chain ([1]) and the others ([0]).
  TOPOEP_HOST_DEVICE void consider_instance(ExpertId expert, RankId rank, std::int32_t slot,
                                            Picoseconds* replica_floor, Move& best) {
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
          relief_cap(rank, to_rank, to_tokens, relief_bound(tokens_on, room)) *
          relief_ps_per_token();
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
      evaluate(expert, rank, slot, tokens_on, node_tokens, to_rank, to_slot, best, room,
               weight_cost);
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
      Picoseconds reach = relief_cap(rank, open_load_floor_, relief_bound(tokens_on, excess)) *
                          relief_ps_per_token();
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

  // The least any new replica of an expert homed on `rank` adds to the weight and gradient
  // phases, whatever its destination: what its home's sending of the weights adds and, when it
  // would be the first in the expert's gradient chain (`first`), what receiving its gradient
  // adds (new_replica_cost() charges at least that; a longer chain it joins, at least nothing),
  // over the cheaper link class. O(1): the home's cached row.
  TOPOEP_HOST_DEVICE Picoseconds new_replica_floor(RankId rank, bool first) const {
    const Picoseconds* home = one_more(rank);
    auto floor = [&](int ib) {
      const Picoseconds gradient = first ? max_ps(0, home[6 + ib] - gradient_max_) : 0;
      return max_ps(0, home[ib] - weight_max_) + gradient / replica_uses_;
    };
    const Picoseconds nvlink = floor(0), ib = floor(1);
    return nvlink < ib ? nvlink : ib;
  }

  // The best move (Move::better_than) of any instance on `rank`. The busiest instance is weighed
  // first: its move usually wins, and the others' tokens then bound their gains below it, so
  // most are skipped unweighed. The order cannot change the result: better_than is a total
  // order, and only candidates that cannot reach the best so far are skipped.
  TOPOEP_HOST_DEVICE Move best_move_from(RankId rank) {
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

  // After a committed move made a new replica: its home and its rank now count in the weight
  // maxima, and the ranks of its expert's gradient chain in the gradient maxima, that later
  // replicas are charged against (see weight_max_).
  TOPOEP_HOST_DEVICE void note_new_replica(const Move& move) {
    const RankId home = in_.home_rank[move.expert];
    weight_max_ = max_ps(weight_max_, max_ps(weight_exposed(home), weight_exposed(move.to_rank)));
    if (!chains_) return;
    walk_chain(move.expert, [&](RankId from, RankId to, bool) {
      gradient_max_ = max_ps(gradient_max_, max_ps(gradient_time(from), gradient_time(to)));
    });
  }

  // Per node, the two least-loaded ranks (ties: lower rank) with a free slot; -1 if fewer.
  // Only nodes marked stale (kStaleNode) are searched again: a move changes the loads and slot
  // tokens of its two ranks only (stale_open_ranks()).
  TOPOEP_HOST_DEVICE void find_open_ranks() {
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

  TOPOEP_HOST_DEVICE void stale_open_ranks(RankId rank) {
    w_.open_ranks[2 * node_of(rank)] = kStaleNode;
  }

  // The two ranks of node `n` other than `skip` with a free slot and the lowest `key` (ties:
  // lower rank) into out[0] and out[1]; -1 where there are fewer.
  TOPOEP_HOST_DEVICE void two_open_ranks(int n, const TokenCount* key, RankId skip,
                                         RankId* out) const {
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

  // How `src` reaches `dst`: 0 it is the rank itself, 1 over NVLink, 2 over IB.
  TOPOEP_HOST_DEVICE int link_class(RankId src, int src_node, RankId dst) const {
    return src == dst ? 0 : src_node == node_of(dst) ? 1 : 2;
  }

  // Moves up to `remaining` tokens of src from `move`'s origin instance to its destination. Only
  // the source's own out counters change here, and only when it reaches the two instances over
  // different link classes; what arrives is summed by class into moved_ for transfer() to
  // apply to the two ranks once.
  TOPOEP_HOST_DEVICE void transfer_from(const Move& move, RankId src, TokenCount& remaining) {
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
  TOPOEP_HOST_DEVICE void transfer_from_other_nodes(const Move& move, int skip_a, int skip_b,
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
  TOPOEP_HOST_DEVICE TokenCount ib_first_share(RankId from_rank, RankId to_rank, TokenCount remote,
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
  TOPOEP_HOST_DEVICE void transfer(const Move& move) {
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
      for (RankId src = node_a * G;
           src < (node_a + 1) * G && remaining > 0 && from_nodes[node_a] > 0; ++src) {
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
    if (move.from_slot >= 0 && w_.slot_is_new[move.from_slot] && from_tokens == total &&
        total > 0) {
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

  TOPOEP_HOST_DEVICE void apply(Move move) {
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
      w_.slot_is_new[j] = 1;
      w_.slot_tokens[j] = 0;
      clear_slot_flows(j);
      move.to_slot = static_cast<std::int32_t>(j);
    }
    transfer(move);
  }

  TOPOEP_HOST_DEVICE void clear_stuck() {
    // Locals: byte stores may alias anything, so w_'s members and s_ would be reloaded.
    std::uint8_t* const stuck = w_.rank_stuck;
    std::uint8_t* const helper = w_.rank_helper;
    const int R = s_.num_ranks;
    for (RankId r = 0; r < R; ++r) stuck[r] = 0;
    for (RankId r = 0; r < R; ++r) helper[r] = 0;
  }

  // Marks the ranks that hold another instance of an expert with tokens on `rank`.
  TOPOEP_HOST_DEVICE void mark_helpers(RankId rank) {
    auto mark_instances_of = [&](ExpertId expert, std::int32_t) {
      w_.rank_helper[in_.home_rank[expert]] = 1;
      for (std::int32_t j = w_.expert_first_slot[expert]; j >= 0; j = w_.slot_next[j]) {
        w_.rank_helper[w_.slot_rank[j]] = 1;
      }
    };
    for_each_loaded_instance(rank, mark_instances_of);
    w_.rank_helper[rank] = 0;
  }

  // Runs the greedy search from the static state (first seeding replicas when `seeded`),
  // logging its moves into `log`; returns how many ran and, in `best_moves`, the move count
  // whose state the cost model predicts fastest (ties: fewer). Leaves that state's predicted
  // time in best_time_ and the move count in last_done_; best_compute_, best_moves_ and
  // room_with_slot_ describe the best state before the relaxed IB pass, which the second runs
  // are decided on (without spare slots it returns at once, best_compute_ 0: no second run
  // follows).
  TOPOEP_HOST_DEVICE std::int32_t run(Move* log, RunKind kind, std::int32_t* best_moves) {
    *best_moves = 0;
    log_ = log;
    best_compute_ = 0;  // needs_seeded_run() is then false
    last_done_ = 0;
    // Without spare slots every expert has one instance: no token can move.
    if (s_.num_slots() == 0) return 0;
    const std::int32_t limit = p_.max_moves;
    const int R = s_.num_ranks;
    TokenCount total = 0;
    for (RankId r = 0; r < R; ++r) total += c_.load[r];
    compute_total_ = total;
    target_ = (total + R - 1) / R;
    Progress progress;
    weights_changed_ = true;
    const PhaseTimes start = measure();
    progress.best_time = progress.marked_time = start.total;
    progress.best_compute = start.compute;
    // The search gives up after R moves (at least 16, at most 64) that together cut the
    // predicted time by less than 1/1024 of it since the last such cut: a replica often pays
    // off only after the moves that fill it and a chain only at its end, but the long tail of
    // few-token moves that shave the last 0.1% costs more solve time than it saves. Past 64
    // ranks, R such moves were mostly wasted search (measured: bench/README.md).
    progress.stall_limit = R < 16 ? 16 : R > 64 ? 64 : R;
    // From zero, owed holders (TopoepLayerInput::owed_holders) or not: a new replica is
    // charged the whole gradient reduction its ranks reach, what the step already owes them
    // included. Later microbatches add replicas elsewhere, so any rank a replica lands on may
    // end up the one the step-end reduction waits for; charging only what it adds above the
    // step's current maximum made every rank below it look free, and the replicas then
    // spread until the reduction grew 4x (solver/README.md). The best prefix measures the
    // exact step marginal (measure(): beyond owed_gradient_ps_).
    weight_max_ = gradient_max_ = 0;
    if (kind == RunKind::kOpened) {
      // As if one replica were already on its way to every rank, over the cheaper link class
      // the cluster has: a rank's first such replica costs nothing more, a second or a dearer
      // link what it adds (see needs_opened_run()).
      const bool nvlink =
          s_.gpus_per_node > 1 &&
          (num_nodes_ == 1 || p_.cost.scale_up.bytes_per_us >= p_.cost.scale_out.bytes_per_us);
      weight_max_ = weight_exposed(0, nvlink, 0, 1);
      // Each rank sending one more gradient (a chain member sends one and receives at most one).
      const std::int32_t one_sent[4] = {0, nvlink ? 1 : 0, 0, nvlink ? 0 : 1};
      for (RankId r = 0; chains_ && r < R; ++r) {
        gradient_max_ = max_ps(gradient_max_, gradient_time(r, one_sent));
      }
    }
    std::int32_t moves = 0;
    if (kind == RunKind::kSeeded) seed_replicas(moves, progress);
    clear_stuck();
    bool any_stuck = false;
    while (moves < limit) {
      // The most loaded rank that still has a move (ties: lower rank). When the straggler is
      // stuck (every instance it could send to is full or as loaded), first the ranks holding
      // its experts' other instances, then any rank, move load away to open room that a later
      // move gives the straggler: a chain, found one link at a time.
      RankId straggler = -1;
      if (!any_stuck) {  // the common case: the first rank at the largest load measure() found
        const TokenCount* const load = c_.load;
        const TokenCount top = maxima_.load;
        straggler = 0;
        while (load[straggler] != top) ++straggler;
      }
      for (int pass = 0; any_stuck && pass < 2 && straggler < 0; ++pass) {
        for (RankId r = 0; r < R; ++r) {
          if (w_.rank_stuck[r] || (pass == 0 && !w_.rank_helper[r])) continue;
          if (straggler < 0 || c_.load[r] > c_.load[straggler]) straggler = r;
        }
      }
      // Within 1/1024 of the mean: nothing left worth a move.
      if (straggler < 0 || c_.load[straggler] * 1024 <= target_ * 1025) break;
      if (!any_stuck) find_open_ranks();  // the state changed since they were last found
      const Move best = best_move_from(straggler);
      if (!best.valid() || best.gain <= 0) {
        if (!any_stuck) mark_helpers(straggler);
        w_.rank_stuck[straggler] = 1;
        any_stuck = true;
        continue;
      }
      const bool go_on = commit(best, moves, progress);
      if (any_stuck) clear_stuck();  // marks are set only while a rank is stuck
      any_stuck = false;
      if (best.to_slot == kNewSlot) note_new_replica(best);
      if (!go_on) break;
    }
    moves = level_ib(moves, progress, false);
    // Whether a second run is worth its time is a question about how the compute phase spent
    // the slots: asked of the state before compute is traded for IB time.
    best_moves_ = progress.best_moves;
    best_compute_ = progress.best_compute;
    room_with_slot_ = false;
    for (RankId r = 0; r < R && !room_with_slot_; ++r) {
      room_with_slot_ = c_.load[r] < target_ && has_free_slot(r);
    }
    // The relaxed pass gives up after 16 moves without a significant cut: each of its moves
    // can only save the busiest IB rank's lead over the next, and at R = 256 a 64-move tail of
    // tiny trades cost 16% of the solve for nothing (bench/README.md).
    const std::int32_t stall_limit = progress.stall_limit;
    progress.stall_limit = stall_limit < 16 ? stall_limit : 16;
    moves = level_ib(moves, progress, true);
    progress.stall_limit = stall_limit;
    *best_moves = progress.best_moves;
    best_time_ = progress.best_time;
    last_done_ = moves;
    return moves;
  }

  // Whether the first run's best state leaves the busiest rank more than 2% above the mean
  // (target_) while, where the search stopped, no rank below the mean has a free slot: then the
  // slots went where they help least (ranks with room each holding all of a small expert), and
  // a seeded run is worth its time. With a free slot left where there is room, the search
  // stopped by its costs, not for want of slots.
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

  // Where no move pays for its replica's weights alone, the first run stops at the static plan:
  // the weight and gradient phases wait for their slowest rank, so the first replica pays the
  // whole phase while the replicas after it, on other ranks, ride along for nothing. When the
  // first run's best state adds no replica, weights cost something and the busiest rank stays
  // more than 2% above the mean, a second run charges each new replica only what it adds
  // beyond one replica per rank (run(), kOpened); the best prefix then measures the real
  // phases, so the opened run is kept only where the replicas together pay for their weights.
  TOPOEP_HOST_DEVICE bool needs_opened_run() const {
    if (p_.cost.replica_weight_bytes <= 0 && p_.cost.replica_gradient_bytes <= 0) return false;
    if (!best_state_above_mean()) return false;
    for (std::int32_t i = 0; i < best_moves_; ++i) {
      if (log_[i].to_slot == kNewSlot) return false;
    }
    return true;
  }

  // The best prefix found so far and the stop rule's state, shared by both phases.
  struct Progress {
    Picoseconds best_time = 0;
    Picoseconds best_compute = 0;  // the best state's compute phase (its busiest rank's load)
    std::int32_t best_moves = 0;
    Picoseconds marked_time = 0;  // the predicted time at the last significant cut
    std::int32_t marked_moves = 0;
    std::int32_t stall_limit = 0;
  };

  // The cost model's phase times of the current state. Weight counters change only with new
  // replicas, so their maxima are recomputed only then. Token counters change only on the
  // ranks of the nodes a move touched (its two ranks' and its sources'), so the token maxima
  // are kept per node and found again only for those: the same maxima as token_maxima() over
  // every rank, from a fraction of the reads once moves get small.
  TOPOEP_HOST_DEVICE PhaseTimes measure() {
    const int G = s_.gpus_per_node;
    CounterMaxima node;
    TokenCount nvlink = 0, ib = 0, load = 0;
    for (int n = 0; n < num_nodes_; ++n) {
      TokenCount* const kept = w_.node_maxima + 3 * n;
      if (w_.node_changed[n]) {
        // The node's slice of the token counters (token_maxima() reads no weight counter).
        const RankCounters ranks{c_.load + n * G,
                                 c_.nvlink_out + n * G,
                                 c_.nvlink_in + n * G,
                                 c_.ib_out + n * G,
                                 c_.ib_in + n * G,
                                 nullptr,
                                 nullptr,
                                 nullptr,
                                 nullptr};
        token_maxima(ranks, G, node);
        kept[0] = node.nvlink;
        kept[1] = node.ib;
        kept[2] = node.load;
        w_.node_changed[n] = 0;
      }
      if (kept[0] > nvlink) nvlink = kept[0];
      if (kept[1] > ib) ib = kept[1];
      if (kept[2] > load) load = kept[2];
    }
    // Each half of the link times costs divisions: recomputed only when its maxima moved.
    if (!link_times_known_ || nvlink != maxima_.nvlink || ib != maxima_.ib) {
      token_links_ = token_link_times(nvlink, ib, p_.cost);
    }
    maxima_.nvlink = nvlink;
    maxima_.ib = ib;
    maxima_.load = load;
    if (weights_changed_) {
      const CounterMaxima before = maxima_;
      weight_maxima(c_, s_.num_ranks, maxima_);
      gradient_maxima(chains_ ? w_.gradient_counts : nullptr, s_.num_ranks, maxima_);
      if (!link_times_known_ || before.weight_nvlink != maxima_.weight_nvlink ||
          before.weight_ib != maxima_.weight_ib ||
          before.gradient_nvlink != maxima_.gradient_nvlink ||
          before.gradient_ib != maxima_.gradient_ib) {
        weight_links_ = weight_link_times(maxima_, p_.cost, owed_gradient_ps_);
        weight_links_.gradient /= replica_uses_;  // this microbatch's share
      }
      weights_changed_ = false;
    }
    link_times_known_ = true;
    return phase_times(load, token_links_, weight_links_, p_.cost);
  }

  // Logs and applies `move`, then measures the new state: a new best prefix when it is
  // predicted faster. Returns false when the search should stop: stall_limit moves have
  // together cut the predicted time by less than 1/1024 since the last such cut.
  TOPOEP_HOST_DEVICE bool commit(const Move& move, std::int32_t& moves, Progress& progress) {
    log_[moves] = move;
    apply(move);
    ++moves;
    const PhaseTimes times = measure();
    const Picoseconds time = times.total;
    if (time < progress.best_time) {
      progress.best_time = time;
      progress.best_compute = times.compute;
      progress.best_moves = moves;
    }
    if (time <= progress.marked_time - progress.marked_time / 1024) {
      progress.marked_time = time;
      progress.marked_moves = moves;
      return true;
    }
    return moves - progress.marked_moves < progress.stall_limit;
  }

  // Seeding, before the greedy of the second run: the largest chunk first, where a chunk is an
  // overloaded rank's expert's tokens at home, at most the rank's load above the mean (ties:
  // lower expert; an expert is offered again while its chunk stays the largest), goes to a new
  // replica on the rank below the mean whose room fits it most tightly (else the roomiest;
  // ties: lower rank; a free slot, not holding the expert), as evaluate() sizes and weighs the
  // move; a chunk whose move has no positive gain is dropped. Chunks below 1/64 of the mean
  // end it. The greedy then goes on from the seeded state. It gives the largest chunks the
  // largest rooms before the stragglers' order spends them (solver/README.md, step 6).
  TOPOEP_HOST_DEVICE void seed_replicas(std::int32_t& moves, Progress& progress) {
    const int R = s_.num_ranks, E = s_.num_experts;
    for (ExpertId e = 0; e < E; ++e) w_.cursor[e] = 0;  // 1: dropped
    while (moves < p_.max_moves) {
      // Only ranks above the mean have chunks; (larger chunk, lower expert) is a total order,
      // so visiting experts by home rank picks what a pass in expert order would.
      ExpertId pick = kNoExpert;
      TokenCount chunk = 0;
      for (RankId r = 0; r < R; ++r) {
        const TokenCount excess = c_.load[r] - target_;
        if (excess <= 0 || excess < chunk) continue;  // no chunk here can beat the pick
        for (std::int32_t i = w_.home_begin[r]; i < w_.home_begin[r + 1]; ++i) {
          const ExpertId e = w_.home_experts[i];
          if (w_.cursor[e]) continue;
          const TokenCount c = w_.home_tokens[e] < excess ? w_.home_tokens[e] : excess;
          if (c > chunk || (c == chunk && c > 0 && e < pick)) {
            chunk = c;
            pick = e;
          }
        }
      }
      if (pick == kNoExpert || chunk * 64 < target_) return;
      const RankId from = in_.home_rank[pick];
      RankId fit = -1, roomiest = -1;
      for (RankId u = 0; u < R; ++u) {
        if (u == from || c_.load[u] >= target_ || !has_free_slot(u) || hosts(u, pick)) continue;
        if (c_.load[u] + compute_tokens(chunk) <= target_ && (fit < 0 || c_.load[u] > c_.load[fit]))
          fit = u;
        if (roomiest < 0 || c_.load[u] < c_.load[roomiest]) roomiest = u;
      }
      const RankId to = fit >= 0 ? fit : roomiest;
      if (to >= 0) {
        prepare_node_row(pick);
        const TokenCount room = target_ - c_.load[to];
        Move move;
        evaluate(pick, from, kHomeSlot, w_.home_tokens[pick], node_row(kHomeSlot, pick), to,
                 kNewSlot, move, chunk < room ? chunk : room, new_replica_cost(pick, to));
        if (move.valid() && move.gain > 0) {
          commit(move, moves, progress);
          note_new_replica(move);
          continue;
        }
      }
      w_.cursor[pick] = 1;
    }
  }

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
  TOPOEP_HOST_DEVICE std::int32_t level_ib(std::int32_t moves, Progress& progress, bool relaxed) {
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
        const TokenCount remote =
            instance_tokens(slot, expert) - node_row(slot, expert)[node_of(a)];
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
  TOPOEP_HOST_DEVICE TokenCount relaxed_load_cap(RankId busiest, TokenCount first_cap) const {
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
  TOPOEP_HOST_DEVICE Move best_sender_shed(RankId sender, TokenCount load_cap) {
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
  TOPOEP_HOST_DEVICE RankId instance_in_node(ExpertId expert, int n, std::int32_t* slot) const {
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
  TOPOEP_HOST_DEVICE Move best_cross_node_shed(RankId a, TokenCount load_cap) {
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
  template <typename F>
  TOPOEP_HOST_DEVICE void for_each_loaded_instance(RankId rank, F& f) {
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

  // Writes the canonical plan's replica slots and lists each replicated expert's instances for
  // emit_routes(). New replicas that ended with no tokens are dropped (they would only cost
  // their weight transfer); idle resident replicas stay (keeping them is free).
  TOPOEP_HOST_DEVICE void emit_instances(const TopoepLayerOutput& out) {
    const int R = s_.num_ranks, E = s_.num_experts, S = s_.slots_per_rank;
    for (std::int64_t j = 0; j < s_.num_slots(); ++j) {
      if (w_.slot_is_new[j] && w_.slot_tokens[j] == 0) w_.slot_expert[j] = kNoExpert;
    }
    for (RankId rank = 0; rank < R; ++rank) {
      ExpertId* row = out.replicas + static_cast<std::int64_t>(rank) * S;
      int filled = 0;
      for (int slot = 0; slot < S; ++slot) {
        const ExpertId expert = w_.slot_expert[slot_index(rank, slot)];
        if (expert == kNoExpert) continue;
        int position = filled++;
        while (position > 0 && row[position - 1] > expert) {  // insertion sort: S is small
          row[position] = row[position - 1];
          --position;
        }
        row[position] = expert;
      }
      for (int slot = filled; slot < S; ++slot) row[slot] = kNoExpert;
    }
    // Slots grouped by expert, ascending slot (so ascending rank) within an expert.
    for (ExpertId e = 0; e <= E; ++e) w_.expert_slot_begin[e] = 0;
    for (std::int64_t j = 0; j < s_.num_slots(); ++j) {
      if (w_.slot_expert[j] != kNoExpert) ++w_.expert_slot_begin[w_.slot_expert[j] + 1];
    }
    for (ExpertId e = 0; e < E; ++e) w_.expert_slot_begin[e + 1] += w_.expert_slot_begin[e];
    for (ExpertId e = 0; e < E; ++e) w_.cursor[e] = w_.expert_slot_begin[e];
    for (std::int64_t j = 0; j < s_.num_slots(); ++j) {
      const ExpertId e = w_.slot_expert[j];
      if (e != kNoExpert) w_.slot_order[w_.cursor[e]++] = static_cast<std::int32_t>(j);
    }
    // Routes in canonical order: by src, then expert, then destination rank. An expert without
    // a replica left has all its tokens at home, whatever moved in between (each (src,
    // expert)'s tokens are conserved over its instances, and a dropped or evicted replica held
    // none): its routes are the counts, copied in runs between the replicated experts (listed
    // ascending, then E). A replicated expert's instances are listed once, by ascending rank
    // (the home among its replicas' ranks), each with its flow column.
    std::int32_t* const replicated = w_.cursor;  // scratch
    std::int32_t num_replicated = 0;
    for (ExpertId e = 0; e < E; ++e) {
      if (w_.expert_slot_begin[e] == w_.expert_slot_begin[e + 1]) continue;
      // The k-th replicated expert's instances start at its first slot's index + k (one home
      // for each replicated expert before it).
      const std::int32_t k = num_replicated++;
      replicated[k] = e;
      prepare_expert(e);  // a resident replica's expert may never have been
      const RankId home = in_.home_rank[e];
      std::int32_t at = w_.expert_slot_begin[e] + k;
      bool home_done = false;
      for (std::int32_t i = w_.expert_slot_begin[e]; i < w_.expert_slot_begin[e + 1]; ++i) {
        const std::int32_t j = w_.slot_order[i];
        if (!home_done && home < w_.slot_rank[j]) {
          w_.emit_rank[at] = home;
          w_.emit_column[at++] = &flow(kHomeSlot, e, 0);
          home_done = true;
        }
        w_.emit_rank[at] = w_.slot_rank[j];
        w_.emit_column[at++] = &flow(j, e, 0);
      }
      if (!home_done) {
        w_.emit_rank[at] = home;
        w_.emit_column[at] = &flow(kHomeSlot, e, 0);
      }
    }
    replicated[num_replicated] = E;
    num_replicated_ = num_replicated;
    num_instances_ = w_.expert_slot_begin[E] + num_replicated;
  }

  // Writes the canonical plan's routes from what emit_instances() listed (the replicated
  // experts in w_.cursor, ending with E; their instances in emit_rank and emit_column), one
  // pass over the counts. With several threads, sources are split among them: each sizes its
  // rows, thread 0 turns the sizes into offsets, each writes its rows (row_routes()).
  TOPOEP_HOST_DEVICE TOPOEP_NOINLINE void emit_routes(const TopoepLayerOutput& out) {
    const int R = s_.num_ranks, E = s_.num_experts;
    if constexpr (!Threads::kSerial) {
      const int first = threads_.index(), stride = threads_.count();
      std::int64_t* const offsets = w_.row_routes;  // [R + 1]
      for (RankId src = first; src < R; src += stride) {
        offsets[src + 1] = row_routes(src, nullptr);
      }
      threads_.sync();
      if (first == 0) {
        offsets[0] = 0;
        for (RankId src = 0; src < R; ++src) offsets[src + 1] += offsets[src];
        *out.num_routes = offsets[R];
      }
      threads_.sync();
      for (RankId src = first; src < R; src += stride) row_routes(src, out.routes + offsets[src]);
      return;
    }
    const std::int32_t* const replicated = w_.cursor;
    const RankId* const home_rank = in_.home_rank;
    const RankId* const instance_rank = w_.emit_rank;
    const TokenCount* const* const instance_column = w_.emit_column;
    const std::int32_t num_instances = num_instances_, num_replicated = num_replicated_;
    Route* const routes = out.routes;
    std::int64_t count = 0;
    // Sources in blocks of kEmitSourceBlock: the instances' flows for a block are gathered first,
    // one cache line of each column, instead of one strided read per route.
    TokenCount* const block_flows = w_.emit_block;  // [instance][kEmitSourceBlock]
    for (RankId block = 0; block < R; block += kEmitSourceBlock) {
      const int width = R - block < kEmitSourceBlock ? R - block : kEmitSourceBlock;
      for (std::int32_t i = 0; i < num_instances; ++i) {
        for (int b = 0; b < width; ++b)
          block_flows[i * kEmitSourceBlock + b] = instance_column[i][block + b];
      }
      for (RankId src = block; src < block + width; ++src) {
        const TokenCount* row = in_.counts + static_cast<std::int64_t>(src) * E;
        const TokenCount* const flows = block_flows + (src - block);
        ExpertId e = 0;
        // Each route is written unconditionally and kept when positive (no branch to mispredict
        // on sparse rows): still inside route_capacity(), which counts every route this pair
        // and every later one could need.
        for (std::int32_t k = 0; k <= num_replicated; ++k) {
          const ExpertId run_end = replicated[k];
          // Eight at a time where all eight are positive (most of a dense row): written at
          // fixed offsets and the count advanced once, fewer instructions per route than
          // keeping each route on its own compare. (One loop for mixed blocks and the tail
          // instead of two was 7% slower on the (256, 64, 0) floor.)
          for (; e + kEmitRunBlock <= run_end; e += kEmitRunBlock) {
            bool all_positive = true;
            for (int i = 0; i < kEmitRunBlock; ++i) all_positive &= row[e + i] > 0;
            if (all_positive) {
              for (int i = 0; i < kEmitRunBlock; ++i) {
                routes[count + i] = Route{src, e + i, home_rank[e + i], row[e + i]};
              }
              count += kEmitRunBlock;
              continue;
            }
            for (int i = 0; i < kEmitRunBlock; ++i) {
              routes[count] = Route{src, e + i, home_rank[e + i], row[e + i]};
              count += row[e + i] > 0 ? 1 : 0;
            }
          }
          for (; e < run_end; ++e) {
            routes[count] = Route{src, e, home_rank[e], row[e]};
            count += row[e] > 0 ? 1 : 0;
          }
          if (e == E) break;
          const std::int32_t end = w_.expert_slot_begin[e + 1] + k + 1;
          for (std::int32_t i = w_.expert_slot_begin[e] + k; i < end; ++i) {
            const TokenCount tokens = flows[i * kEmitSourceBlock];
            routes[count] = Route{src, e, instance_rank[i], tokens};
            count += tokens > 0 ? 1 : 0;
          }
          ++e;
        }
      }
    }
    *out.num_routes = count;
  }

  // Source `src`'s routes in canonical order (as emit_routes() lists them) into `routes`, or
  // only counted when it is null; returns how many.
  TOPOEP_HOST_DEVICE std::int64_t row_routes(RankId src, Route* routes) const {
    const int E = s_.num_experts;
    const TokenCount* const row = in_.counts + static_cast<std::int64_t>(src) * E;
    const std::int32_t* const replicated = w_.cursor;
    std::int64_t count = 0;
    auto put = [&](ExpertId expert, RankId dst, TokenCount tokens) {
      if (tokens <= 0) return;
      if (routes != nullptr) routes[count] = Route{src, expert, dst, tokens};
      ++count;
    };
    ExpertId e = 0;
    for (std::int32_t k = 0;; ++k) {
      for (const ExpertId run_end = replicated[k]; e < run_end; ++e) {
        put(e, in_.home_rank[e], row[e]);
      }
      if (e == E) return count;
      const std::int32_t end = w_.expert_slot_begin[e + 1] + k + 1;
      for (std::int32_t i = w_.expert_slot_begin[e] + k; i < end; ++i) {
        put(e, w_.emit_rank[i], w_.emit_column[i][src]);
      }
      ++e;
    }
  }

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
  // The reduction time of the owed holders' chains alone (gradient_chains_ps()).
  Picoseconds owed_gradient_ps_ = 0;
  // A move's tokens by the link class (link_class()) they reached the origin instance over
  // and reach the destination over now: transfer() totals them to update the two ranks.
  struct ClassTotals {
    TokenCount from[3] = {0, 0, 0};
    TokenCount to[3] = {0, 0, 0};
  };
  ClassTotals moved_;
  CounterMaxima maxima_;          // of the current state, as measure() last found them
  bool weights_changed_ = true;   // since maxima_'s weight half was found
  TokenLinkTimes token_links_;    // of maxima_'s token half ...
  WeightLinkTimes weight_links_;  // ... and weight half, once link_times_known_
  bool link_times_known_ = false;
  Move* log_ = nullptr;         // the current run's move log
  Picoseconds best_time_ = 0;   // the last run's best predicted time ...
  std::int32_t last_done_ = 0;  // the moves the last run made (the state it left)
  // Before the relaxed IB pass (level_ib()): the best state's compute phase and prefix (in
  // log_), and whether a rank below the mean had a free slot where the first pass stopped.
  Picoseconds best_compute_ = 0;
  std::int32_t best_moves_ = 0;
  bool room_with_slot_ = false;
  // What emit_instances() listed: the replicated experts and their instances.
  std::int32_t num_replicated_ = 0;
  std::int32_t num_instances_ = 0;
};

}  // namespace topoep_detail

// Bytes of workspace one layer's solve needs.
TOPOEP_HOST_DEVICE inline std::size_t topoep_workspace_bytes(const TopoepParams& params) {
  return bind_topoep_workspace(params.shape, params.max_moves, sizeof(topoep_detail::Move), nullptr,
                               nullptr);
}

// Carves `base` (topoep_workspace_bytes() bytes, 8-byte aligned) into `workspace`.
TOPOEP_HOST_DEVICE inline void bind_topoep_workspace(const TopoepParams& params, void* base,
                                                     TopoepWorkspace* workspace) {
  bind_topoep_workspace(params.shape, params.max_moves, sizeof(topoep_detail::Move), base,
                        workspace);
}

// Solves one layer into `out` with `threads` (block_threads.h), each of which calls this with
// the same arguments. `workspace` is bound by bind_topoep_workspace for `params`.
// Preconditions (checked by the host entry points, not here): shapes agree, counts >= 0,
// resident replicas valid, slots_per_rank within Placement's bound.
template <typename Threads>
TOPOEP_HOST_DEVICE inline void topoep_solve_layer(const TopoepParams& params,
                                                  const TopoepLayerInput& input,
                                                  const TopoepWorkspace& workspace,
                                                  const TopoepLayerOutput& out,
                                                  const Threads& threads) {
  topoep_detail::LayerSolve<Threads>(params, input, workspace, threads).solve(out);
}

// The same on one thread.
TOPOEP_HOST_DEVICE inline void topoep_solve_layer(const TopoepParams& params,
                                                  const TopoepLayerInput& input,
                                                  const TopoepWorkspace& workspace,
                                                  const TopoepLayerOutput& out) {
  topoep_solve_layer(params, input, workspace, out, SerialThreads{});
}

}  // namespace topoep
