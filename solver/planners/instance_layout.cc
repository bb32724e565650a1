#include "solver/planners/instance_layout.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "solver/plan_cost.h"

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

// Calls visit(src, src_node, expert, dst, tokens) for every route of the layout's even split,
// tokens > 0, in canonical order.
template <typename Visit>
void for_each_layout_route(const InstanceIndex& index, const RoutingCounts& counts,
                           const TopologyView& topology, Visit&& visit) {
  const int R = counts.num_ranks(), E = counts.num_experts();
  for (RankId src = 0; src < R; ++src) {
    const int src_node = topology.node_of(src);  // once per row: a division
    for (ExpertId e = 0; e < E; ++e) {
      const TokenCount tokens = counts.at(src, e);
      if (tokens == 0) continue;
      std::int32_t count = 0;
      const RankId* const first = index.targets(e, src, src_node, &count);
      if (count == 1) {  // most pairs: one instance, and no division
        visit(src, src_node, e, first[0], tokens);
        continue;
      }
      const TokenCount share = tokens / count, extra = tokens % count;
      for (std::int32_t i = 0; i < count && (share > 0 || i < extra); ++i) {
        visit(src, src_node, e, first[i], share + (i < extra ? 1 : 0));
      }
    }
  }
}

// The plan's placement and replica slots, no routes yet.
LayoutPlan layout_slots(const InstanceLayout& layout, const RoutingCounts& counts,
                        int min_slots_per_rank) {
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
  return result;
}

// Splits the tokens as for_each_layout_route() does, summing the plan's tally and, where `out`
// is not null, writing the routes there. Returns how many routes it wrote.
std::size_t tally_layout(const InstanceLayout& layout, const InstanceIndex& index,
                         const RoutingCounts& counts, const TopologyView& topology,
                         PlanTally* tally, Route* out) {
  const int R = counts.num_ranks(), E = counts.num_experts();
  const RankCounters counters = zeroed_token_counters(R, tally);
  // Each rank's node, looked up: a division per route would cost more than the route.
  const std::vector<int> node_of = plan_cost_detail::node_of_ranks(topology);
  plan_cost_detail::RouteRunCounter runs(counters, node_of.data());
  // Instance tokens in a table small enough to stay in L1: one cell for an expert with no
  // replica (its home), one per rank for a replicated one, at cell[e] + (dst & mask[e]). Plain
  // adds, no branch per route: a dense [R][E] table was twice as slow, a first-touch list
  // (InstanceTally) three times.
  thread_local std::vector<std::int32_t> cell, mask;
  thread_local std::vector<TokenCount> table;
  cell.resize(static_cast<std::size_t>(E));
  mask.resize(static_cast<std::size_t>(E));
  std::int32_t cells = 0;
  for (ExpertId e = 0; e < E; ++e) {
    const bool replicated = layout.instances[e].size() > 1;
    cell[e] = cells;
    mask[e] = replicated ? -1 : 0;
    cells += replicated ? R : 1;
  }
  table.assign(static_cast<std::size_t>(cells), 0);
  // Plain pointers: a lambda names a thread_local through its TLS wrapper on every use.
  TokenCount* const by_instance = table.data();
  const std::int32_t* const cell_of = cell.data();
  const std::int32_t* const mask_of = mask.data();
  std::size_t written = 0;
  auto add = [&](RankId src, int, ExpertId e, RankId dst, TokenCount tokens) {
    runs.add(src, dst, tokens);
    by_instance[cell_of[e] + (dst & mask_of[e])] += tokens;
  };
  if (out != nullptr) {
    for_each_layout_route(index, counts, topology,
                          [&](RankId src, int node, ExpertId e, RankId dst, TokenCount tokens) {
                            add(src, node, e, dst, tokens);
                            out[written++] = Route{src, e, dst, tokens};
                          });
  } else {
    for_each_layout_route(index, counts, topology, add);
  }
  runs.flush();
  tally->instances.clear();
  for (ExpertId e = 0; e < E; ++e) {
    const int width = mask_of[e] != 0 ? R : 1;
    for (int k = 0; k < width; ++k) {
      const TokenCount tokens = by_instance[cell_of[e] + k];
      if (tokens <= 0) continue;
      tally->instances.emplace_back(width == 1 ? layout.instances[e][0] : k, tokens);
    }
  }
  return written;
}

}  // namespace

LayoutPlan plan_layout(const InstanceLayout& layout, const RoutingCounts& counts,
                       const TopologyView& topology, int min_slots_per_rank, PlanTally* tally,
                       bool write_routes) {
  LayoutPlan result = layout_slots(layout, counts, min_slots_per_rank);
  const InstanceIndex index(layout, topology, counts.num_ranks());
  // Written through a pointer into route_bound() routes (RouteList leaves them unset), then
  // cut to the routes written.
  RouteList& routes = result.plan.routes;
  if (write_routes) routes.resize(index.route_bound());
  Route* const out = write_routes ? routes.data() : nullptr;
  std::size_t written = 0;
  if (tally != nullptr) {
    written = tally_layout(layout, index, counts, topology, tally, out);
  } else {
    for_each_layout_route(index, counts, topology,
                          [&](RankId src, int, ExpertId e, RankId dst, TokenCount tokens) {
                            out[written++] = Route{src, e, dst, tokens};
                          });
  }
  routes.resize(written);
  return result;
}

LayoutPlan plan_layout(const InstanceLayout& layout, const RoutingCounts& counts,
                       const TopologyView& topology, int min_slots_per_rank) {
  return plan_layout(layout, counts, topology, min_slots_per_rank, nullptr, true);
}

}  // namespace topoep
