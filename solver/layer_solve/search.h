#pragma once
// The search of LayerSolve (layer_solve.h): the runs of greedy moves and IB levelling, their
// stop rule and best prefix, the seeded and opened second runs, and the cost model's measure of
// each state. solver/README.md, steps 2-6.

#include <cstdint>

#include "solver/layer_solve/layer_solve.h"
#include "solver/phase_times.h"

namespace topoep {
namespace topoep_detail {

// Solves and writes the canonical plan: the static start (init()), the search (search()), the
// plan's replica slots and instance lists (emit_instances()), then its routes (emit_routes()).
// Every thread calls it.
template <typename Threads>
TOPOEP_HOST_DEVICE inline void LayerSolve<Threads>::solve(const TopoepLayerOutput& out) {
  std::int64_t clocks[kSolvePhases + 1] = {0, 0, 0, 0, 0};
  clocks[0] = device_clock();
  init();
  clocks[1] = device_clock();
  // Each move depends on the last: the search runs on thread 0 while the others wait.
  std::int32_t best_moves = 0, searched = 0, kept_log = 0;
  RunKind kept_kind = RunKind::kPlain;
  if (threads_.index() == 0) {
    searched = search(&best_moves, &kept_log, &kept_kind);
    if (out.predicted != nullptr) *out.predicted = measure();
    clocks[2] = device_clock();
    emit_instances(out);
    clocks[3] = device_clock();
  }
  threads_.sync();
  if (out.routes != nullptr) {
    emit_routes(out);
  } else if (threads_.index() == 0) {
    *out.num_routes = 0;
  }
  clocks[4] = device_clock();
  if (threads_.index() != 0) return;
  *out.num_moves = best_moves;
  if (out.searched_moves != nullptr) *out.searched_moves = searched;
  if (out.kept_log != nullptr) *out.kept_log = kept_log;
  if (out.kept_run_kind != nullptr) *out.kept_run_kind = static_cast<std::int32_t>(kept_kind);
  if (out.phase_cycles != nullptr) {
    for (int i = 0; i < kSolvePhases; ++i) out.phase_cycles[i] = clocks[i + 1] - clocks[i];
  }
}

// The greedy from the static state, then the second runs its best state calls for: the
// seeded run where slots ran out before the room did, else the opened run (where the first run
// kept no replica) and the IB-opened run (where it kept none across nodes); then the state of
// the best prefix of whichever run is predicted fastest (ties: the earlier), replayed from the
// move log unless the state already is that prefix. Returns the moves searched; the prefix's
// length in `best_moves_out`, the log it is in (0 or 1) in `kept_log` and that run's kind in
// `kept_kind`.
template <typename Threads>
TOPOEP_HOST_DEVICE inline std::int32_t LayerSolve<Threads>::search(std::int32_t* best_moves_out,
                                                                   std::int32_t* kept_log,
                                                                   RunKind* kept_kind) {
  Move* const logs[2] = {static_cast<Move*>(w_.move_log),
                         static_cast<Move*>(w_.move_log) + p_.max_moves};
  std::int32_t best_moves = 0;
  std::int32_t searched = run(logs[0], RunKind::kPlain, &best_moves);
  const Move* last = logs[0];
  // Decided on the first run's best state, before another run replaces it.
  RunKind due[2] = {RunKind::kPlain, RunKind::kPlain};
  int runs_due = 0;
  if (needs_seeded_run()) {
    due[runs_due++] = RunKind::kSeeded;
  } else {
    const bool opened = needs_opened_run();
    if (opened) due[runs_due++] = RunKind::kOpened;
    // Where IB is the cheaper class, the opened run already prepays IB: the same run.
    if (needs_opened_ib_run() && !(opened && !nvlink_is_cheaper())) {
      due[runs_due++] = RunKind::kOpenedIb;
    }
  }
  std::int32_t chosen = 0;  // the log the fastest run so far is in
  Picoseconds chosen_time = best_time_;
  for (const RunKind kind : due) {
    if (kind == RunKind::kPlain) continue;
    // A run that lost is overwritten: the chosen one's log stays.
    const std::int32_t other = 1 - chosen;
    restore_static();
    std::int32_t run_best = 0;
    searched += run(logs[other], kind, &run_best);
    last = logs[other];
    if (best_time_ < chosen_time) {
      chosen = other;
      chosen_time = best_time_;
      best_moves = run_best;
      *kept_log = other;
      *kept_kind = kind;
    }
  }
  if (logs[chosen] != last || best_moves != last_done_) {
    restore_static();
    for (std::int32_t i = 0; i < best_moves; ++i) apply(logs[chosen][i]);
  }
  *best_moves_out = best_moves;
  return searched;
}

template <typename Threads>
TOPOEP_HOST_DEVICE inline void LayerSolve<Threads>::clear_stuck() {
  // Locals: byte stores may alias anything, so w_'s members and s_ would be reloaded.
  std::uint8_t* const stuck = w_.rank_stuck;
  std::uint8_t* const helper = w_.rank_helper;
  const int R = s_.num_ranks;
  for (RankId r = 0; r < R; ++r) stuck[r] = 0;
  for (RankId r = 0; r < R; ++r) helper[r] = 0;
}

// Sets flags[r] to `value` for every rank r holding an instance of `expert`: its home and each
// of its replicas.
template <typename Threads>
TOPOEP_HOST_DEVICE inline void LayerSolve<Threads>::flag_holders(ExpertId expert,
                                                                 std::uint8_t* flags,
                                                                 std::uint8_t value) {
  flags[in_.home_rank[expert]] = value;
  for (std::int32_t j = w_.expert_first_slot[expert]; j >= 0; j = w_.slot_next[j]) {
    flags[w_.slot_rank[j]] = value;
  }
}

// Clears the stuck marks of `rank` and of every rank holding an instance of an expert that
// `rank` holds (with tokens or not): a move changes its two ranks' loads and instances, and
// these are the ranks whose candidates read them (a new replica's cost reads the replicas'
// weights and chains, which a move changes only through replica_changes_).
template <typename Threads>
TOPOEP_HOST_DEVICE inline void LayerSolve<Threads>::unstick_near(RankId rank) {
  w_.rank_stuck[rank] = 0;
  for (std::int32_t i = w_.home_begin[rank]; i < w_.home_begin[rank + 1]; ++i) {
    flag_holders(w_.home_experts[i], w_.rank_stuck, 0);
  }
  for (int slot = 0; slot < s_.slots_per_rank; ++slot) {
    const ExpertId expert = w_.slot_expert[slot_index(rank, slot)];
    if (expert != kNoExpert) flag_holders(expert, w_.rank_stuck, 0);
  }
}

// Marks the ranks that hold another instance of an expert with tokens on `rank`.
template <typename Threads>
TOPOEP_HOST_DEVICE inline void LayerSolve<Threads>::mark_helpers(RankId rank) {
  auto mark_instances_of = [&](ExpertId expert, std::int32_t) {
    flag_holders(expert, w_.rank_helper, 1);
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
template <typename Threads>
TOPOEP_HOST_DEVICE inline std::int32_t LayerSolve<Threads>::run(Move* log, RunKind kind,
                                                                std::int32_t* best_moves) {
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
  progress.best_time = progress.marked_time = progress.last_time = start.total;
  progress.best_compute = start.compute;
  count_open_below();
  progress.best_room_with_slot = open_below_ > 0;
  // The search gives up after R moves (at least 16, at most 64) that together cut the
  // predicted time by less than 1/1024 of it since the last such cut: a replica often pays
  // off only after the moves that fill it and a chain only at its end, but the long tail of
  // few-token moves that shave the last 0.1% costs more solve time than it saves. Past 64
  // ranks, R such moves were mostly wasted search (measured: bench/HISTORY.md).
  progress.stall_limit = R < 16 ? 16 : R > 64 ? 64 : R;
  // From zero, owed holders (TopoepLayerInput::owed_holders) or not: a new replica is
  // charged the whole gradient reduction its ranks reach, what the step already owes them
  // included. Later microbatches add replicas elsewhere, so any rank a replica lands on may
  // end up the one the step-end reduction waits for; charging only what it adds above the
  // step's current maximum made every rank below it look free, and the replicas then
  // spread until the reduction grew 4x (solver/README.md). The best prefix measures the
  // exact step marginal (measure(): beyond owed_gradient_ps_).
  weight_max_ = gradient_max_ = 0;
  if (kind == RunKind::kOpened || kind == RunKind::kOpenedIb) {
    // As if one replica were already on its way to every rank, over the cheaper link class
    // the cluster has (over IB for kOpenedIb): a rank's first such replica costs nothing more,
    // a second or a dearer link what it adds (see needs_opened_run(), needs_opened_ib_run()).
    const bool nvlink = kind == RunKind::kOpened && nvlink_is_cheaper();
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
  // Whether marks were kept across a chain's move (unstick_near()): then a marked rank may have
  // a move again, and all of them are tried once more before the search concludes none has.
  bool kept_marks = false;
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
      // Still marked after a chain's move: nothing near it changed, the chain goes on.
      if (w_.rank_stuck[straggler]) {
        any_stuck = true;
        straggler = -1;
      }
    }
    for (int pass = 0; any_stuck && pass < 2 && straggler < 0; ++pass) {
      for (RankId r = 0; r < R; ++r) {
        if (w_.rank_stuck[r] || (pass == 0 && !w_.rank_helper[r])) continue;
        if (straggler < 0 || c_.load[r] > c_.load[straggler]) straggler = r;
      }
    }
    // Within 1/1024 of the mean: nothing left worth a move.
    if (straggler < 0 || c_.load[straggler] * 1024 <= target_ * 1025) {
      if (!kept_marks) break;
      clear_stuck();
      kept_marks = any_stuck = false;
      continue;
    }
    if (!any_stuck) find_open_ranks();  // the state changed since they were last found
    const Move best = best_move_from(straggler);
    if (!best.valid() || best.gain <= 0) {
      if (!any_stuck) mark_helpers(straggler);
      w_.rank_stuck[straggler] = 1;
      any_stuck = true;
      continue;
    }
    const std::int32_t replica_changes = replica_changes_;
    const TokenCount target = target_;
    const bool go_on = commit(best, moves, progress);
    if (any_stuck && replica_changes_ == replica_changes && target_ == target) {
      // A chain's move: only the ranks near its two may have a move now.
      unstick_near(best.from_rank);
      unstick_near(best.to_rank);
      kept_marks = true;
    } else if (any_stuck || kept_marks) {
      clear_stuck();
      kept_marks = false;
    }
    any_stuck = false;
    if (best.to_slot == kNewSlot) note_new_replica(best);
    if (!go_on) break;
  }
  moves = level_ib(moves, progress, false);
  // Whether a second run is worth its time is a question about how the compute phase spent
  // the slots: asked of the state before compute is traded for IB time.
  best_moves_ = progress.best_moves;
  best_compute_ = progress.best_compute;
  room_with_slot_ = progress.best_room_with_slot;
  // The relaxed pass gives up after 16 moves without a significant cut: each of its moves
  // can only save the busiest IB rank's lead over the next, and at R = 256 a 64-move tail of
  // tiny trades cost 16% of the solve for nothing (bench/HISTORY.md).
  const std::int32_t stall_limit = progress.stall_limit;
  progress.stall_limit = stall_limit < 16 ? stall_limit : 16;
  moves = level_ib(moves, progress, true);
  progress.stall_limit = stall_limit;
  *best_moves = progress.best_moves;
  best_time_ = progress.best_time;
  last_done_ = moves;
  return moves;
}

// Where no move pays for its replica's weights alone, the first run stops at the static plan:
// the weight and gradient phases wait for their slowest rank, so the first replica pays the
// whole phase while the replicas after it, on other ranks, ride along for nothing. When the
// first run's best state adds no replica, weights cost something and the busiest rank stays
// more than 2% above the mean, a second run charges each new replica only what it adds
// beyond one replica per rank (run(), kOpened); the best prefix then measures the real
// phases, so the opened run is kept only where the replicas together pay for their weights.
template <typename Threads>
TOPOEP_HOST_DEVICE inline bool LayerSolve<Threads>::needs_opened_run() const {
  if (p_.cost.replica_weight_bytes <= 0 && p_.cost.replica_gradient_bytes <= 0) return false;
  if (!best_state_above_mean()) return false;
  for (std::int32_t i = 0; i < best_moves_; ++i) {
    if (log_[i].to_slot == kNewSlot) return false;
  }
  return true;
}

// The opened run's barrier over IB. The first new replica in another node than its expert's
// home starts the IB weight and gradient phases, which no single move's relief pays for: its
// tokens come off one rank while the ranks as busy as it stay. So the first run places
// replicas inside their homes' nodes only, although a node with room would take the busiest
// ranks' load once replicas there serve its own tokens (DeepSeek-V2-Lite's 64 experts all
// homed on node 0 of GB200 NVL72's 2 x 72: node 1's GPUs stay idle and its tokens all cross
// IB). When the first run's best state leaves the busiest rank more than 2% above the mean
// with room left (needs_seeded_run() is false), replicas cost something and none of that
// state's new replicas crosses nodes, a second run charges each rank's first replica as if its
// weights were already on their way over IB (run(), kOpenedIb); the best prefix measures the
// real phases and the run predicted faster is kept.
template <typename Threads>
TOPOEP_HOST_DEVICE inline bool LayerSolve<Threads>::needs_opened_ib_run() const {
  if (p_.ib_opened_run == 0 || num_nodes_ < 2) return false;
  if (p_.cost.replica_weight_bytes <= 0 && p_.cost.replica_gradient_bytes <= 0) return false;
  if (!best_state_above_mean()) return false;
  for (std::int32_t i = 0; i < best_moves_; ++i) {
    const Move& move = log_[i];
    if (move.to_slot == kNewSlot && node_of(in_.home_rank[move.expert]) != node_of(move.to_rank)) {
      return false;
    }
  }
  return true;
}

// The cost model's phase times of the current state. Weight counters change only with new
// replicas, so their maxima are recomputed only then. Token counters change only on the
// ranks of the nodes a move touched (its two ranks' and its sources'), so the token maxima
// are kept per node and found again only for those: the same maxima as token_maxima() over
// every rank, from a fraction of the reads once moves get small.
template <typename Threads>
TOPOEP_HOST_DEVICE inline PhaseTimes LayerSolve<Threads>::measure() {
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
template <typename Threads>
TOPOEP_HOST_DEVICE inline bool LayerSolve<Threads>::commit(const Move& move, std::int32_t& moves,
                                                           Progress& progress) {
  log_[moves] = move;
  const TokenCount target = target_;
  const std::int32_t open_before = open_below(move.from_rank) + open_below(move.to_rank);
  apply(move);
  if (target_ == target) {
    open_below_ += open_below(move.from_rank) + open_below(move.to_rank) - open_before;
  } else {
    count_open_below();  // an instance minimum moved the mean: any rank may cross it
  }
  ++moves;
  const PhaseTimes times = measure();
  const Picoseconds time = times.total;
  progress.last_time = time;
  if (time < progress.best_time) {
    progress.best_time = time;
    progress.best_compute = times.compute;
    progress.best_moves = moves;
    progress.best_room_with_slot = open_below_ > 0;
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
// end it, and so does a seed that raises the predicted time: a chunk's gain is what it takes
// off its own rank, while the weight phase waits for the busiest sender, so past that seed the
// hot experts' homes send more than the chunks relieve. The greedy then goes on from the
// seeded state. It gives the largest chunks the largest rooms before the stragglers' order
// spends them (solver/README.md, step 6).
template <typename Threads>
TOPOEP_HOST_DEVICE inline void LayerSolve<Threads>::seed_replicas(std::int32_t& moves,
                                                                  Progress& progress) {
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
      evaluate(pick, from, kHomeSlot, w_.home_tokens[pick], node_row(kHomeSlot, pick), to, kNewSlot,
               move, chunk < room ? chunk : room, new_replica_cost(pick, to));
      if (move.valid() && move.gain > 0) {
        const Picoseconds before = progress.last_time;
        commit(move, moves, progress);
        note_new_replica(move);
        // From here on the seeds' weights outgrow what they relieve: the greedy goes on.
        if (progress.last_time > before) return;
        continue;
      }
    }
    w_.cursor[pick] = 1;
  }
}

}  // namespace topoep_detail
}  // namespace topoep
