#pragma once
// Where experts live before any balancing: each expert's home rank, plus S spare slots on every
// rank that a plan may fill with replicas of other experts.

#include <vector>

#include "solver/types.h"

namespace topoep {

// How the default layout homes experts that the ranks do not divide: kEven refuses them (E / R
// each, so R must divide E), kUneven gives the first E mod R ranks one expert more, as vLLM lays
// out experts over its expert-parallel ranks (with E < R, ranks E and beyond home none: only
// spare slots). Where R divides E the two are the same layout.
enum class HomeLayout { kEven, kUneven };

struct Placement {
  std::vector<RankId> home_rank;  // [num_experts]: the rank that holds the expert's weights
  int num_ranks = 0;
  int slots_per_rank = 0;  // S: spare slots per rank for replicas

  int num_experts() const { return static_cast<int>(home_rank.size()); }

  // The default layout: consecutive experts per rank, expert e on rank e / (E / R) where R
  // divides E; otherwise as `layout` says. Throws InputError unless num_ranks >= 1, num_experts
  // >= 1 (with kEven, a multiple of num_ranks) and the slots pass check_placement().
  static Placement contiguous(int num_experts, int num_ranks, int slots_per_rank,
                              HomeLayout layout = HomeLayout::kEven);

  // Experts homed on the fullest rank: ceil(E / R) for the contiguous layout.
  int most_homed() const;
};

// Throws InputError naming the field unless: num_ranks >= 1, at least one expert, every home
// rank in [0, num_ranks), and 0 <= slots_per_rank <= E - (experts homed on the fullest rank),
// the most distinct replicas that rank can hold (a replica never sits on its expert's home).
void check_placement(const Placement& placement);

}  // namespace topoep
