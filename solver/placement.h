#pragma once
// Where experts live before any balancing: each expert's home rank, plus S spare slots on every
// rank that a plan may fill with replicas of other experts.

#include <vector>

#include "solver/types.h"

namespace topoep {

struct Placement {
  std::vector<RankId> home_rank;  // [num_experts]: the rank that holds the expert's weights
  int num_ranks = 0;
  int slots_per_rank = 0;  // S: spare slots per rank for replicas

  int num_experts() const { return static_cast<int>(home_rank.size()); }

  // The default layout: E/R consecutive experts per rank, expert e on rank e / (E / R).
  // Throws InputError unless num_experts is a positive multiple of num_ranks and slots >= 0.
  static Placement contiguous(int num_experts, int num_ranks, int slots_per_rank);
};

// Throws InputError naming the field unless: num_ranks >= 1, at least one expert, every home
// rank in [0, num_ranks), and 0 <= slots_per_rank <= E - (experts homed on the fullest rank),
// the most distinct replicas that rank can hold (a replica never sits on its expert's home).
void check_placement(const Placement& placement);

}  // namespace topoep
