#pragma once
// Tokens per expert instance of a plan: its routes' tokens summed by (destination rank,
// expert). Host only.

#include <cstddef>
#include <vector>

#include "solver/plan.h"

namespace topoep {

// An [R][E] table of tokens, filled route by route and drained instance by instance. Only the
// instances the routes touched are visited and zeroed again, so one tally serves plan after
// plan without clearing R x E cells each time. Integer sums: the order of the routes does not
// change a total.
class InstanceTally {
 public:
  // Empties the tally (what an interrupted fill left too) and sizes it for num_ranks x
  // num_experts instances.
  void reset(int num_ranks, int num_experts) {
    drain([](RankId, TokenCount) {});
    num_experts_ = static_cast<std::size_t>(num_experts);
    tokens_.resize(static_cast<std::size_t>(num_ranks) * num_experts_, 0);
  }

  void add(const Route& route) {
    const std::size_t instance = static_cast<std::size_t>(route.dst) * num_experts_ + route.expert;
    if (tokens_[instance] == 0) touched_.push_back(instance);
    tokens_[instance] += route.tokens;
  }

  // Calls visit(rank, tokens) once for every instance the routes gave tokens (in the order they
  // were first touched; a route of 0 tokens may add a visit of 0), and empties the tally.
  template <typename Visit>
  void drain(Visit&& visit) {
    for (const std::size_t instance : touched_) {
      visit(static_cast<RankId>(instance / num_experts_), tokens_[instance]);
      tokens_[instance] = 0;
    }
    touched_.clear();
  }

 private:
  std::size_t num_experts_ = 0;
  std::vector<TokenCount> tokens_;    // [R][E], zero but at the touched instances
  std::vector<std::size_t> touched_;  // instances holding tokens, first touch first
};

}  // namespace topoep
