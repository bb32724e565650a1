#include "solver/planners/instance_layout.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

namespace topoep {

namespace {

// Each expert's instances ascending, flat, with where each node's run of them starts (ranks are
// node-major, so an expert's instances in one node are contiguous) and which ranks hold it:
// built once per layout, so that each (source, expert) pair finds its targets without a search.
class InstanceIndex {
 public:
  InstanceIndex(const InstanceLayout& layout, const TopologyView& topology, int num_ranks)
      : num_experts_(static_cast<int>(layout.instances.size())),
        num_nodes_(topology.num_nodes),
        num_ranks_(num_ranks),
        gpus_per_node_(topology.gpus_per_node),
        begin_(static_cast<std::size_t>(num_experts_) + 1, 0),
        node_begin_(static_cast<std::size_t>(num_experts_) * (num_nodes_ + 1)),
        holds_(static_cast<std::size_t>(num_experts_) * num_ranks, 0),
        rank_ids_(num_ranks) {
    std::iota(rank_ids_.begin(), rank_ids_.end(), 0);
    for (ExpertId e = 0; e < num_experts_; ++e) {
      begin_[e + 1] = begin_[e] + static_cast<std::int32_t>(layout.instances[e].size());
    }
    sorted_.resize(static_cast<std::size_t>(begin_[num_experts_]));
    for (ExpertId e = 0; e < num_experts_; ++e) {
      RankId* const first = sorted_.data() + begin_[e];
      RankId* const last = sorted_.data() + begin_[e + 1];
      std::copy(layout.instances[e].begin(), layout.instances[e].end(), first);
      std::sort(first, last);
      std::int32_t* const runs = node_runs(e);
      const RankId* at = first;
      for (int n = 0; n <= num_nodes_; ++n) {
        while (at < last && topology.node_of(*at) < n) ++at;
        runs[n] = static_cast<std::int32_t>(at - sorted_.data());
      }
      for (const RankId* r = first; r < last; ++r) holds_[slot(e, *r)] = 1;
    }
  }

  // The ranks a source's tokens for `expert` are split over, ascending: its own GPU if it holds
  // the expert, else the expert's instances in its node (`src_node`, the source's), else all of
  // them.
  const RankId* targets(ExpertId expert, RankId src, int src_node, std::int32_t* count) const {
    if (holds_[slot(expert, src)]) {
      *count = 1;
      return &rank_ids_[src];
    }
    const std::int32_t* const runs = node_runs(expert);
    if (runs[src_node + 1] > runs[src_node]) {
      *count = runs[src_node + 1] - runs[src_node];
      return sorted_.data() + runs[src_node];
    }
    *count = begin_[expert + 1] - begin_[expert];
    return sorted_.data() + begin_[expert];
  }

  // At least the routes targets() can give every source: the larger of a node's run and all
  // instances, per source.
  std::size_t route_bound() const {
    std::size_t bound = 0;
    for (ExpertId e = 0; e < num_experts_; ++e) {
      const std::int32_t* const runs = node_runs(e);
      for (int n = 0; n < num_nodes_; ++n) {
        const std::int32_t in_node = runs[n + 1] - runs[n];
        bound += static_cast<std::size_t>(gpus_per_node_) *
                 static_cast<std::size_t>(in_node > 0 ? in_node : begin_[e + 1] - begin_[e]);
      }
    }
    return bound;
  }

 private:
  std::size_t slot(ExpertId expert, RankId rank) const {
    return static_cast<std::size_t>(expert) * num_ranks_ + rank;
  }
  std::int32_t* node_runs(ExpertId expert) {
    return node_begin_.data() + static_cast<std::size_t>(expert) * (num_nodes_ + 1);
  }
  const std::int32_t* node_runs(ExpertId expert) const {
    return node_begin_.data() + static_cast<std::size_t>(expert) * (num_nodes_ + 1);
  }

  int num_experts_, num_nodes_, num_ranks_, gpus_per_node_;
  std::vector<std::int32_t> begin_;       // [E + 1]: expert e's instances in sorted_
  std::vector<RankId> sorted_;            // every expert's instances, ascending per expert
  std::vector<std::int32_t> node_begin_;  // [E][N + 1]: where node n's run starts in sorted_
  std::vector<std::uint8_t> holds_;       // [E][R]
  std::vector<RankId> rank_ids_;          // [R]: r at r, a source's own one-rank target list
};

}  // namespace

LayoutPlan plan_layout(const InstanceLayout& layout, const RoutingCounts& counts,
                       const TopologyView& topology, int min_slots_per_rank) {
  const int R = counts.num_ranks(), E = counts.num_experts();
  LayoutPlan result;
  result.placement.num_ranks = R;
  result.placement.home_rank.resize(E);
  std::vector<std::vector<ExpertId>> replicas(R);
  for (ExpertId e = 0; e < E; ++e) {
    result.placement.home_rank[e] = layout.instances[e][0];
    for (std::size_t i = 1; i < layout.instances[e].size(); ++i)
      replicas[layout.instances[e][i]].push_back(e);
  }
  int slots = min_slots_per_rank;
  for (const auto& row : replicas) slots = std::max(slots, static_cast<int>(row.size()));
  result.placement.slots_per_rank = slots;

  Plan& plan = result.plan;
  plan.num_ranks = R;
  plan.num_experts = E;
  plan.slots_per_rank = slots;
  plan.replica_expert.assign(static_cast<std::size_t>(R) * slots, kNoExpert);
  for (RankId r = 0; r < R; ++r) {
    std::sort(replicas[r].begin(), replicas[r].end());
    std::copy(replicas[r].begin(), replicas[r].end(),
              plan.replica_expert.begin() + static_cast<std::ptrdiff_t>(r) * slots);
  }
  const InstanceIndex index(layout, topology, R);
  // Written through a pointer into route_bound() routes (RouteList leaves them unset), then
  // cut to the routes written.
  plan.routes.resize(index.route_bound());
  Route* const out = plan.routes.data();
  std::size_t written = 0;
  for (RankId src = 0; src < R; ++src) {
    const int src_node = topology.node_of(src);  // once per row: a division
    for (ExpertId e = 0; e < E; ++e) {
      const TokenCount tokens = counts.at(src, e);
      if (tokens == 0) continue;
      std::int32_t count = 0;
      const RankId* const first = index.targets(e, src, src_node, &count);
      if (count == 1) {  // most pairs: one instance, and no division
        out[written++] = Route{src, e, first[0], tokens};
        continue;
      }
      const TokenCount share = tokens / count, extra = tokens % count;
      for (std::int32_t i = 0; i < count && (share > 0 || i < extra); ++i) {
        out[written++] = Route{src, e, first[i], share + (i < extra ? 1 : 0)};
      }
    }
  }
  plan.routes.resize(written);
  return result;
}

}  // namespace topoep
