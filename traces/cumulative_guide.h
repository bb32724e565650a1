#pragma once
// Which index a uniform draw below the total weight falls on, for the seeded generators' weighted
// draws (synthetic traces, shares sampled into counts). Host only.

#include <cstdint>
#include <vector>

namespace topoep {

// The first index whose cumulative weight exceeds a draw: what std::upper_bound returns, so the
// same seeded data, found from a guide table (the draw's top bits select where to start a short
// scan) in a step or two instead of a binary search's mispredicted branches. One guide can be
// rebuilt for weight after weight into the same buffer.
class CumulativeGuide {
 public:
  // `cumulative`: ascending, its last element (the total weight) above 0; read until the next
  // build().
  void build(const std::vector<std::uint64_t>& cumulative) {
    cumulative_ = cumulative.data();
    const std::uint64_t total = cumulative.back();
    // About 8 buckets per index: most then hold at most one boundary, which find() steps over
    // without a branch.
    const std::uint64_t buckets_wanted = 8 * cumulative.size();
    shift_ = 0;
    while ((total >> shift_) >= buckets_wanted) ++shift_;
    start_.resize((total >> shift_) + 1);
    std::size_t index = 0;
    for (std::size_t b = 0; b < start_.size(); ++b) {
      const std::uint64_t first_draw = static_cast<std::uint64_t>(b) << shift_;
      while (index + 1 < cumulative.size() && cumulative[index] <= first_draw) ++index;
      start_[b] = static_cast<std::uint32_t>(index);
    }
  }
  // `draw` < the total weight. The last index's cumulative weight is the total, so no step
  // passes it.
  std::size_t find(std::uint64_t draw) const {
    std::size_t index = start_[draw >> shift_];
    index += cumulative_[index] <= draw ? 1 : 0;
    while (cumulative_[index] <= draw) ++index;
    return index;
  }

 private:
  const std::uint64_t* cumulative_ = nullptr;
  int shift_ = 0;
  std::vector<std::uint32_t> start_;
};

}  // namespace topoep
