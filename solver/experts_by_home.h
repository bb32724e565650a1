#pragma once
// Experts grouped by home rank, one counting sort shared by the solver (host and GPU) and the
// simulator's pricing of the static plan: both sum a source's tokens per home rank in a
// register, which needs each rank's experts listed together.

#include <cstdint>

#include "solver/host_device.h"
#include "solver/types.h"

namespace topoep {

// Fills `begin` ([R + 1]) and `experts` ([E]) so that rank r's experts are
// experts[begin[r] .. begin[r + 1]), ascending. `cursor` ([R]) is scratch. Stable, so the
// result depends on `home_rank` ([E], each in [0, R)) alone.
TOPOEP_HOST_DEVICE inline void group_experts_by_home(const RankId* home_rank, int num_experts,
                                                     int num_ranks, std::int32_t* begin,
                                                     std::int32_t* cursor, ExpertId* experts) {
  for (int r = 0; r <= num_ranks; ++r) begin[r] = 0;
  for (ExpertId e = 0; e < num_experts; ++e) ++begin[home_rank[e] + 1];
  for (int r = 0; r < num_ranks; ++r) begin[r + 1] += begin[r];
  for (int r = 0; r < num_ranks; ++r) cursor[r] = begin[r];
  for (ExpertId e = 0; e < num_experts; ++e) experts[cursor[home_rank[e]]++] = e;
}

}  // namespace topoep
