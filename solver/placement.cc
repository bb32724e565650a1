#include "solver/placement.h"

#include <algorithm>
#include <string>
#include <vector>

#include "solver/input_error.h"

namespace topoep {

Placement Placement::contiguous(int num_experts, int num_ranks, int slots_per_rank,
                                HomeLayout layout) {
  require_at_least(num_ranks, 1, "num_ranks");
  require_at_least(num_experts, 1, "num_experts");
  if (layout == HomeLayout::kEven && num_experts % num_ranks != 0) {
    throw InputError("num_experts", "must be a positive multiple of the rank count " +
                                        std::to_string(num_ranks) +
                                        " for the even contiguous layout (got " +
                                        std::to_string(num_experts) + ")");
  }
  Placement placement;
  placement.num_ranks = num_ranks;
  placement.slots_per_rank = slots_per_rank;
  // Ranks [0, extra) hold base + 1 experts each, the others base.
  const int base = num_experts / num_ranks, extra = num_experts % num_ranks;
  const int in_fuller = extra * (base + 1);  // experts on the fuller ranks
  placement.home_rank.resize(num_experts);
  for (int expert = 0; expert < num_experts; ++expert) {
    placement.home_rank[expert] =
        expert < in_fuller ? expert / (base + 1) : extra + (expert - in_fuller) / base;
  }
  check_placement(placement);
  return placement;
}

int Placement::most_homed() const {
  std::vector<int> homed(num_ranks, 0);
  for (const RankId home : home_rank) ++homed[home];
  return homed.empty() ? 0 : *std::max_element(homed.begin(), homed.end());
}

void check_placement(const Placement& placement) {
  require_at_least(placement.num_ranks, 1, "num_ranks");
  if (placement.home_rank.empty()) throw InputError("home_rank", "needs at least one expert");
  for (std::size_t expert = 0; expert < placement.home_rank.size(); ++expert) {
    const RankId home = placement.home_rank[expert];
    if (home < 0 || home >= placement.num_ranks) {
      throw InputError("home_rank[" + std::to_string(expert) + "]",
                       "is rank " + std::to_string(home) + ", outside [0, " +
                           std::to_string(placement.num_ranks) + ")");
    }
  }
  if (placement.slots_per_rank < 0) {
    throw InputError("slots_per_rank",
                     "must not be negative (got " + std::to_string(placement.slots_per_rank) + ")");
  }
  // A replica never shares a rank with its expert's home, so the fullest rank can hold at most
  // E - (its home experts) distinct replicas; more slots than that could never all be used.
  const int most_homed = placement.most_homed();
  const int max_slots = placement.num_experts() - most_homed;
  if (placement.slots_per_rank > max_slots) {
    throw InputError("slots_per_rank",
                     std::to_string(placement.slots_per_rank) +
                         " spare slots per rank is too "
                         "many: with " +
                         std::to_string(placement.num_experts()) + " experts and " +
                         std::to_string(most_homed) + " homed on the fullest rank, at most " +
                         std::to_string(max_slots) + " distinct replicas fit on every rank");
  }
}

}  // namespace topoep
