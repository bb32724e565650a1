#pragma once
// Writing LayerSolve's (layer_solve.h) plan: canonical replica slots and routes.
// solver/README.md, step 7 and "Canonical form".

#include <cstdint>

#include "solver/layer_solve/layer_solve.h"

namespace topoep {
namespace topoep_detail {

// Writes the canonical plan's replica slots and lists each replicated expert's instances for
// emit_routes(). New replicas that ended with no tokens are dropped (they would only cost
// their weight transfer); idle resident replicas stay (keeping them is free).
template <typename Threads>
TOPOEP_HOST_DEVICE inline void LayerSolve<Threads>::emit_instances(const TopoepLayerOutput& out) {
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
template <typename Threads>
TOPOEP_HOST_DEVICE void LayerSolve<Threads>::emit_routes(const TopoepLayerOutput& out) {
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
template <typename Threads>
TOPOEP_HOST_DEVICE inline std::int64_t LayerSolve<Threads>::row_routes(RankId src,
                                                                       Route* routes) const {
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

}  // namespace topoep_detail
}  // namespace topoep
