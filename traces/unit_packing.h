#pragma once
// Packing per-token routing into rank x expert count matrices by whole units (sequences, or
// fixed runs of tokens), the same way for every layer so that a record's layers see the same
// tokens. Every method is deterministic; the seeded ones use SplitMix64.

#include <cstdint>
#include <string>
#include <vector>

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
// tokens): top_k expert ids per token, token after token, in `experts`; unit u is
// experts[begin[u], begin[u + 1]). Flat, so that a layer costs its ids and one offset a unit.
struct TokenUnits {
  std::vector<ExpertId> experts;
  std::vector<std::size_t> begin = {0};  // [num_units + 1]

  int num_units() const { return static_cast<int>(begin.size()) - 1; }
  std::size_t unit_size(int unit) const { return begin[unit + 1] - begin[unit]; }
  void add_unit(const ExpertId* first, const ExpertId* last) {
    experts.insert(experts.end(), first, last);
    begin.push_back(experts.size());
  }
};

// Packs units into rank x expert count matrices one microbatch at a time, the same way for
// every layer whose units have the sizes of the layer it was built from (so that a record's
// layers see the same tokens). The units go in `order`:
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

 private:
  // Where a run of tokens starts: the unit at order_[index], `offset` ids into it.
  struct Cursor {
    std::size_t index = 0;
    std::size_t offset = 0;
  };

  // Moves `cursor` `count` ids on through the units order_[index], order_[index + stride], ...,
  // calling visit(ids, n) for each unit's piece of them.
  template <typename Visit>
  void walk(const TokenUnits& layer, Cursor& cursor, std::size_t stride, std::size_t count,
            Visit&& visit) const;

  std::vector<int> order_;
  bool round_robin_;
  int num_ranks_;
  std::size_t ids_per_rank_;  // tokens_per_rank x top_k
  int microbatches_ = 0;
  // Contiguous: one cursor per microbatch, into order_. Round-robin: [microbatch][rank], each
  // into the rank's units (order_[rank], order_[rank + R], ...).
  std::vector<Cursor> starts_;
};

}  // namespace topoep
