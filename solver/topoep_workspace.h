#pragma once
// The memory one layer's TopoEP solve works in: one contiguous buffer carved into arrays, so the
// host and the GPU run the same algorithm over the same layout with no allocation inside.

#include <cstddef>
#include <cstdint>

#include "solver/host_device.h"
#include "solver/phase_times.h"
#include "solver/plan.h"
#include "solver/types.h"

namespace topoep {

// Sources whose replicated routes emit() gathers at a time (one cache line of each flow column).
constexpr int kEmitSourceBlock = 8;

struct TopoepShape {
  int num_ranks = 0;
  int num_experts = 0;
  int slots_per_rank = 0;
  int gpus_per_node = 1;

  TOPOEP_HOST_DEVICE int num_nodes() const { return num_ranks / gpus_per_node; }
  TOPOEP_HOST_DEVICE std::int64_t num_slots() const {
    return static_cast<std::int64_t>(num_ranks) * slots_per_rank;
  }
  // The most routes a canonical plan of this shape can list: every (src, expert) to its home
  // plus every (slot, src).
  TOPOEP_HOST_DEVICE std::int64_t route_capacity() const {
    return static_cast<std::int64_t>(num_ranks) * num_experts + num_slots() * num_ranks;
  }
};

// Pointers into the workspace. Shapes in brackets; R ranks, E experts, S slots per rank.
struct TopoepWorkspace {
  // [E][R]: tokens each src sends to the expert's home rank. Column e is copied from the counts
  // only once expert e's tokens move (expert_ready[e] == 2); until then the counts are its flows.
  TokenCount* flow_home;
  // [E]: 1 once e's home node row is filled in (from static_node_tokens), 2 once flow_home[e]
  // is too
  std::uint8_t* expert_ready;
  // [N][E]: each expert's tokens by source node in the static plan, summed in init()'s one pass
  // over the counts (node-major: each source's row adds to its node's row)
  TokenCount* static_node_tokens;
  TokenCount* home_tokens;    // [E]: tokens at each expert's home instance
  TokenCount* expert_totals;  // [E]: column sums of the counts (home_tokens in the static plan)
  ExpertId* slot_expert;      // [R*S]: expert in each spare slot, or kNoExpert
  std::uint8_t* slot_is_new;  // [R*S]: 1 if the replica was added by this solve
  std::uint8_t* rank_stuck;   // [R]: 1 if the rank had no move since the last move made
  std::uint8_t* rank_helper;  // [R]: 1 if the rank holds an instance a stuck rank could use
  TokenCount* slot_tokens;    // [R*S]: tokens the slot's replica processes
  TokenCount* flow_slot;      // [R*S][R]: tokens each src sends to the slot's replica
  // [E + R*S][N]: each instance's tokens by source node; row e is expert e's home instance,
  // row E + j the replica in slot j. Kept up to date by every transfer.
  TokenCount* instance_node_tokens;
  std::int32_t* expert_first_slot;  // [E]: a list of the slots holding each expert's replicas
  std::int32_t* slot_next;          // [R*S]: the next slot in its expert's list, -1 at the end
  std::int32_t* home_begin;         // [R+1]: CSR of experts by home rank
  std::int32_t* rank_node;          // [R]: each rank's node (looked up, not divided out)
  std::int32_t* slot_rank;          // [R*S]: each slot's rank (the same)
  ExpertId* home_experts;           // [E]
  TokenCount* counter_tokens;       // [5][R]: load, NVLink out/in, IB out/in
  TokenCount* static_tokens;        // [5][R]: counter_tokens of the static plan, for the replay
  std::int32_t* counter_weights;    // [4][R]: replica weights NVLink out/in, IB out/in
  std::int32_t* slot_order;         // [R*S]: scratch, slots grouped by expert for emitting routes
  std::int32_t* expert_slot_begin;  // [E+1]: CSR offsets into slot_order
  std::int32_t* cursor;             // [max(R, E + 1)]: scratch for counting sorts and lists
  // [E + R*S]: scratch for emitting routes: each replicated expert's instances by ascending
  // rank, their ranks and their flow columns ([R] each)
  RankId* emit_rank;
  const TokenCount** emit_column;
  TokenCount* emit_block;  // [E + R*S][kEmitSourceBlock]: those columns' flows for a block
  // [R + 1]: each source's route count, then offset, when the routes are written by several
  // threads (LayerSolve::emit_routes())
  std::int64_t* row_routes;
  // [4][R*S + 2]: link time of k replicas' weights over NVLink, over IB, then of their
  // gradients (by k; -1 until first needed): link times need divisions, counts stay small.
  Picoseconds* replica_time;
  // [R][8]: what one more replica would make of the rank's exposed weight time, sending (as
  // home) or receiving, over NVLink or IB, then of its gradient time with one more gradient sent
  // or received (see LayerSolve::one_more()); row r is refreshed when [r][0] < 0, which any
  // change to r's replica or gradient counts sets.
  Picoseconds* one_more_replica;
  // [4][R]: gradient counts (phase_times.h) of every expert's gradient chain, the owed holders'
  // and the new replicas'; then those of the owed holders alone (the static state's). Unused
  // when gradients cost nothing.
  std::int32_t* gradient_counts;
  std::int32_t* static_gradient_counts;
  // [E][W] bitsets, W = ceil(R / 64): the ranks in each expert's gradient chain (owed holders
  // and new replicas that hold tokens), then the owed holders alone
  std::uint64_t* chain_bits;
  std::uint64_t* static_chain_bits;
  // [N][2]: each node's two least-loaded ranks with a free slot (-1: fewer), kept across moves;
  // [n][0] is kStaleNode when node n must be searched again
  RankId* open_ranks;
  // [N][3]: each node's token maxima (nvlink, ib, load as in CounterMaxima) as last measured;
  // node_changed [N] is 1 once a move has changed a token counter of one of the node's ranks
  // since LayerSolve::measure() last read them
  TokenCount* node_maxima;
  std::uint8_t* node_changed;
  void* move_log;  // [2][max_moves]: the kept run's moves and the current one's, for the replay

  TOPOEP_HOST_DEVICE RankCounters counters(int num_ranks) const {
    return RankCounters{counter_tokens,
                        counter_tokens + num_ranks,
                        counter_tokens + 2 * num_ranks,
                        counter_tokens + 3 * num_ranks,
                        counter_tokens + 4 * num_ranks,
                        counter_weights,
                        counter_weights + num_ranks,
                        counter_weights + 2 * num_ranks,
                        counter_weights + 3 * num_ranks};
  }
};

namespace workspace_detail {
TOPOEP_HOST_DEVICE inline std::size_t align8(std::size_t bytes) { return (bytes + 7) / 8 * 8; }
}  // namespace workspace_detail

// Carves `base` (nullptr to only measure) into a workspace; returns the bytes needed. Every
// array starts 8-byte aligned when `base` is. Callers use topoep_workspace_bytes() and
// bind_topoep_workspace() of topoep_algorithm.h, which fill in the move log's size.
TOPOEP_HOST_DEVICE inline std::size_t bind_topoep_workspace(const TopoepShape& shape,
                                                            std::int32_t max_moves,
                                                            std::size_t move_bytes, void* base,
                                                            TopoepWorkspace* workspace) {
  using workspace_detail::align8;
  const std::size_t R = static_cast<std::size_t>(shape.num_ranks);
  const std::size_t E = static_cast<std::size_t>(shape.num_experts);
  const std::size_t slots = static_cast<std::size_t>(shape.num_slots());
  const std::size_t N = static_cast<std::size_t>(shape.num_nodes());
  std::size_t offset = 0;
  auto take = [&](std::size_t bytes) {
    char* pointer = base == nullptr ? nullptr : static_cast<char*>(base) + offset;
    offset += align8(bytes);
    return pointer;
  };
  TopoepWorkspace w;
  w.flow_home = reinterpret_cast<TokenCount*>(take(sizeof(TokenCount) * R * E));
  w.expert_ready = reinterpret_cast<std::uint8_t*>(take(E));
  w.static_node_tokens = reinterpret_cast<TokenCount*>(take(sizeof(TokenCount) * N * E));
  w.home_tokens = reinterpret_cast<TokenCount*>(take(sizeof(TokenCount) * E));
  w.expert_totals = reinterpret_cast<TokenCount*>(take(sizeof(TokenCount) * E));
  w.slot_expert = reinterpret_cast<ExpertId*>(take(sizeof(ExpertId) * slots));
  w.slot_is_new = reinterpret_cast<std::uint8_t*>(take(slots));
  w.rank_stuck = reinterpret_cast<std::uint8_t*>(take(R));
  w.rank_helper = reinterpret_cast<std::uint8_t*>(take(R));
  w.slot_tokens = reinterpret_cast<TokenCount*>(take(sizeof(TokenCount) * slots));
  w.flow_slot = reinterpret_cast<TokenCount*>(take(sizeof(TokenCount) * slots * R));
  w.instance_node_tokens =
      reinterpret_cast<TokenCount*>(take(sizeof(TokenCount) * (E + slots) * N));
  w.expert_first_slot = reinterpret_cast<std::int32_t*>(take(sizeof(std::int32_t) * E));
  w.slot_next = reinterpret_cast<std::int32_t*>(take(sizeof(std::int32_t) * slots));
  w.home_begin = reinterpret_cast<std::int32_t*>(take(sizeof(std::int32_t) * (R + 1)));
  w.rank_node = reinterpret_cast<std::int32_t*>(take(sizeof(std::int32_t) * R));
  w.slot_rank = reinterpret_cast<std::int32_t*>(take(sizeof(std::int32_t) * slots));
  w.home_experts = reinterpret_cast<ExpertId*>(take(sizeof(ExpertId) * E));
  w.counter_tokens = reinterpret_cast<TokenCount*>(take(sizeof(TokenCount) * 5 * R));
  w.static_tokens = reinterpret_cast<TokenCount*>(take(sizeof(TokenCount) * 5 * R));
  w.counter_weights = reinterpret_cast<std::int32_t*>(take(sizeof(std::int32_t) * 4 * R));
  w.slot_order = reinterpret_cast<std::int32_t*>(take(sizeof(std::int32_t) * slots));
  w.expert_slot_begin = reinterpret_cast<std::int32_t*>(take(sizeof(std::int32_t) * (E + 1)));
  w.cursor = reinterpret_cast<std::int32_t*>(take(sizeof(std::int32_t) * (R > E ? R : E + 1)));
  w.emit_rank = reinterpret_cast<RankId*>(take(sizeof(RankId) * (E + slots)));
  w.emit_column = reinterpret_cast<const TokenCount**>(take(sizeof(TokenCount*) * (E + slots)));
  w.emit_block =
      reinterpret_cast<TokenCount*>(take(sizeof(TokenCount) * kEmitSourceBlock * (E + slots)));
  w.row_routes = reinterpret_cast<std::int64_t*>(take(sizeof(std::int64_t) * (R + 1)));
  w.replica_time = reinterpret_cast<Picoseconds*>(take(sizeof(Picoseconds) * 4 * (slots + 2)));
  w.one_more_replica = reinterpret_cast<Picoseconds*>(take(sizeof(Picoseconds) * 8 * R));
  w.gradient_counts = reinterpret_cast<std::int32_t*>(take(sizeof(std::int32_t) * 4 * R));
  w.static_gradient_counts = reinterpret_cast<std::int32_t*>(take(sizeof(std::int32_t) * 4 * R));
  const std::size_t words = E * ((R + 63) / 64);
  w.chain_bits = reinterpret_cast<std::uint64_t*>(take(sizeof(std::uint64_t) * words));
  w.static_chain_bits = reinterpret_cast<std::uint64_t*>(take(sizeof(std::uint64_t) * words));
  w.open_ranks = reinterpret_cast<RankId*>(take(sizeof(RankId) * 2 * N));
  w.node_maxima = reinterpret_cast<TokenCount*>(take(sizeof(TokenCount) * 3 * N));
  w.node_changed = reinterpret_cast<std::uint8_t*>(take(N));
  w.move_log = take(move_bytes * 2 * static_cast<std::size_t>(max_moves));
  if (workspace != nullptr) *workspace = w;
  return offset;
}

}  // namespace topoep
