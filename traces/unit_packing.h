#pragma once
// Packing per-token routing into rank x expert count matrices by whole units (sequences, or
// fixed runs of tokens), the same way for every layer so that a record's layers see the same
// tokens. Every method is deterministic; the seeded ones use SplitMix64.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/progress.h"
#include "solver/routing_counts.h"

namespace topoep {

enum class PackingMethod {
  kContiguous,  // units in order, one token stream, cut into ranks x tokens_per_rank
  kRoundRobin,  // unit i to rank i % R; microbatch m takes tokens [m T, (m + 1) T) of each rank
  kRandom,      // a seeded shuffle of the units, then contiguous
};

// Parses "contiguous", "round-robin" or "random"; throws InputError naming "packing".
PackingMethod parse_packing_method(const std::string& name);
const char* to_string(PackingMethod method);

// The unit order the packing uses: 0..num_units-1, shuffled for kRandom, and, with
// `bootstrap_units` > 0, that many units drawn with replacement first (seeded resampling of
// whole sequences into a longer trace).
std::vector<int> unit_order(int num_units, PackingMethod method, int bootstrap_units,
                            std::uint64_t seed);

// One layer's per-token routing cut into units (sequences, or runs of a fixed number of
// tokens): top_k expert ids per token, token after token, in `experts` (not owned: an
// importer's memory-mapped scratch file, traces/int32_spill.h, or the caller's vector). Unit u is
// experts[unit_begin(u), unit_begin(u) + unit_size(u)). Sequences list their boundaries
// (`begin`, one offset a unit); runs need none, so that a layer of single-token units costs no
// memory a token.
struct TokenUnits {
  const ExpertId* experts = nullptr;
  std::size_t num_ids = 0;
  std::vector<std::size_t> begin;  // sequences: [num_units + 1], from 0 to num_ids; runs: empty
  std::size_t run_ids = 0;         // runs: ids a unit (the last may hold fewer); sequences: 0

  static TokenUnits runs(const ExpertId* experts, std::size_t num_ids, std::size_t run_ids) {
    return TokenUnits{experts, num_ids, {}, run_ids};
  }
  static TokenUnits sequences(const ExpertId* experts, std::vector<std::size_t> begin) {
    const std::size_t num_ids = begin.empty() ? 0 : begin.back();
    return TokenUnits{experts, num_ids, std::move(begin), 0};
  }

  int num_units() const {
    if (run_ids == 0) return begin.empty() ? 0 : static_cast<int>(begin.size()) - 1;
    return static_cast<int>((num_ids + run_ids - 1) / run_ids);
  }
  std::size_t unit_begin(int unit) const {
    return run_ids == 0 ? begin[unit] : static_cast<std::size_t>(unit) * run_ids;
  }
  std::size_t unit_size(int unit) const {
    if (run_ids == 0) return begin[unit + 1] - begin[unit];
    return std::min(run_ids, num_ids - unit_begin(unit));
  }
  // Whether `other` cuts the same number of ids into the same units.
  bool same_units(const TokenUnits& other) const {
    return num_ids == other.num_ids && begin == other.begin && run_ids == other.run_ids;
  }
};

// Packs units into rank x expert count matrices one microbatch at a time, the same way for
// every layer whose units have the sizes of the layer it was built from (so that a record's
// layers see the same tokens). The units go in `order` (empty: every unit once, in the layer's
// order, with no vector of 4 bytes a unit to hold):
// - contiguous (and random, whose order is shuffled): one stream; microbatch m takes tokens
//   [m R T, (m + 1) R T) and rank r of it the T tokens from m R T + r T;
// - round-robin: unit i to rank i % R; microbatch m takes tokens [m T, (m + 1) T) of each
//   rank's stream.
// T is tokens_per_rank. Only whole microbatches are packed; the tokens after them are dropped.
class UnitPacker {
 public:
  UnitPacker(const TokenUnits& layer, std::vector<int> order, PackingMethod method, int top_k,
             int num_ranks, int tokens_per_rank);

  int microbatches() const { return microbatches_; }
  // Microbatch `microbatch` of `layer`; throws InputError for an expert id out of range.
  RoutingCounts pack(const TokenUnits& layer, int microbatch, int num_experts) const;
  // Every microbatch of every layer at once, added into `counts` ([layers][microbatches()][R]
  // [num_experts], row-major: layer l's microbatch m as pack(layers[l], m, _) returns it),
  // reading the units in the layers' own order, each as often as the packing's order lists
  // it. pack() follows the packing's order: for a shuffled or resampled order that jumps
  // through a layer's ids, and once they outgrow the page cache (an importer's memory-mapped
  // scratch file) every jump is a read from disk; this reads each layer front to back. Every
  // layer's units must have the sizes of layers.front()'s. Holds 8 bytes a position of the
  // order meanwhile. Throws InputError for an expert id out of range. With kTerminal, draws the
  // units counted as a progress bar (common/progress.h).
  void pack_all(const std::vector<TokenUnits>& layers, int num_experts, TokenCount* counts,
                ProgressDisplay display = ProgressDisplay::kNone) const;

 private:
  // The unit at position `index` of the order.
  int unit_at(std::size_t index) const {
    return order_.empty() ? static_cast<int>(index) : order_[index];
  }

  // Where a run of tokens starts: the unit at unit_at(index), `offset` ids into it.
  struct Cursor {
    std::size_t index = 0;
    std::size_t offset = 0;
  };

  // Moves `cursor` `count` ids on through the units at index, index + stride, ... of the order,
  // calling visit(ids, n) for each unit's piece of them.
  template <typename Visit>
  void walk(const TokenUnits& layer, Cursor& cursor, std::size_t stride, std::size_t count,
            Visit&& visit) const;
  // Adds n ids into a count matrix's row; throws InputError for an id out of range.
  static void count_ids(const ExpertId* ids, std::size_t n, int num_experts, TokenCount* row);

  std::vector<int> order_;  // empty: the identity
  std::size_t positions_;   // units in the order
  bool round_robin_;
  int num_ranks_;
  std::size_t ids_per_rank_;  // tokens_per_rank x top_k
  int microbatches_ = 0;
  // Contiguous: one cursor per microbatch, into the order. Round-robin: [microbatch][rank],
  // each into the rank's units (positions rank, rank + R, ... of the order).
  std::vector<Cursor> starts_;
};

}  // namespace topoep
