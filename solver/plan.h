#pragma once
// A balancing plan for one MoE layer and microbatch: which expert each spare slot holds, and
// how each (source rank, expert) pair's tokens are split over that expert's instances.

#include <cstdint>
#include <memory>
#include <new>
#include <utility>
#include <vector>

#include "solver/host_device.h"
#include "solver/types.h"

namespace topoep {

// `tokens` tokens that `src` routed to `expert` are processed on rank `dst`, which is either the
// expert's home rank or a rank whose spare slot holds a replica of it.
struct Route {
  RankId src;
  ExpertId expert;
  RankId dst;
  TokenCount tokens;
};

// Canonical order of routes: by (src, expert, dst) ascending; a canonical plan lists each
// triple at most once and only with tokens > 0.
TOPOEP_HOST_DEVICE inline bool route_before(const Route& a, const Route& b) {
  if (a.src != b.src) return a.src < b.src;
  if (a.expert != b.expert) return a.expert < b.expert;
  return a.dst < b.dst;
}

// An allocator that leaves value-less new elements default-initialised (for a Route: not
// written), so that a solver can grow a plan's routes to their capacity and write them in place
// without first zero-filling what it overwrites (at R = 256 that fill was 8% of a solve).
template <typename T>
struct DefaultInitAllocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  DefaultInitAllocator() = default;
  template <typename U>
  DefaultInitAllocator(const DefaultInitAllocator<U>&) noexcept {}
  template <typename U>
  void construct(U* at) {
    ::new (static_cast<void*>(at)) U;
  }
  template <typename U, typename... Args>
  void construct(U* at, Args&&... args) {
    ::new (static_cast<void*>(at)) U(std::forward<Args>(args)...);
  }
};

using RouteList = std::vector<Route, DefaultInitAllocator<Route>>;

struct Plan {
  int num_ranks = 0;
  int num_experts = 0;
  int slots_per_rank = 0;
  // [num_ranks][slots_per_rank], row-major: the expert held in each spare slot, or kNoExpert.
  // Within a rank, filled slots come first in ascending expert order (canonical form).
  std::vector<ExpertId> replica_expert;
  RouteList routes;  // canonical order (route_before), tokens > 0

  ExpertId replica_at(RankId rank, int slot) const {
    return replica_expert[static_cast<std::size_t>(rank) * slots_per_rank + slot];
  }
};

// Tokens processed per rank, shape [num_ranks]: the sum of route tokens by destination.
std::vector<TokenCount> rank_loads(const Plan& plan);

// Non-owning view of a plan's arrays, usable on the host and, with device pointers, on the GPU.
struct PlanView {
  std::int32_t num_ranks;
  std::int32_t num_experts;
  std::int32_t slots_per_rank;
  const ExpertId* replica_expert;  // [num_ranks * slots_per_rank]
  std::int64_t num_routes;
  const Route* routes;  // [num_routes]
};

inline PlanView view_of(const Plan& plan) {
  return PlanView{plan.num_ranks,
                  plan.num_experts,
                  plan.slots_per_rank,
                  plan.replica_expert.data(),
                  static_cast<std::int64_t>(plan.routes.size()),
                  plan.routes.data()};
}

}  // namespace topoep
