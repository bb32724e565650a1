#pragma once
// The step-end reduction of replica weight gradients, counted per rank: for each expert, one
// pipelined chain reduce into its home rank, as NCCL's reduce runs it: the replicas on other
// nodes first (node by node, ascending), then those in the home's node, ending at the home.
// Each hop carries one weight-sized gradient, so a chain crosses IB once per node it leaves and
// each rank sends and receives at most one gradient per chain it is in.
// Shared by the simulator's pricing (sim/gradient_reduction.h), predict_plan_cost() and the
// TopoEP solver, which keeps every expert's chain as replicas join it (owed holders and
// gradient counts, solver/phase_times.h), from one source.

#include <algorithm>
#include <cstdint>
#include <vector>

#include "solver/host_device.h"
#include "solver/topology_view.h"
#include "solver/types.h"

namespace topoep {

struct GradientHops {
  std::int64_t nvlink = 0;
  std::int64_t ib = 0;
};

// Calls hop(from, to, same_node) for each hop of the chain of an expert homed on `home`, over
// `num_ranks` node-major ranks (`gpus_per_node` per node). `members(lo, hi, visit)` calls
// visit(rank) for each replica holder in [lo, hi), ascending (`home` never among them), so each
// caller lists its holders its own way (a sorted list, a byte row, a bitset's scans) and the
// order lives here alone: other nodes first (ascending ranks, so node by node), then the home's
// node, then the home.
template <typename Members, typename Hop>
TOPOEP_HOST_DEVICE void walk_gradient_chain(RankId home, int num_ranks, int gpus_per_node,
                                            Members members, Hop hop) {
  const int lo = home / gpus_per_node * gpus_per_node, hi = lo + gpus_per_node;
  RankId previous = -1;
  auto visit = [&](RankId rank) {
    if (previous >= 0) hop(previous, rank, previous / gpus_per_node == rank / gpus_per_node);
    previous = rank;
  };
  members(0, lo, visit);
  members(hi, num_ranks, visit);
  members(lo, hi, visit);
  if (previous >= 0) hop(previous, home, previous / gpus_per_node == home / gpus_per_node);
}

// The index in [4][R] counts (gradient counts' order: received and sent inside a node, received
// and sent across nodes) of a hop's receiving end (`sent` false) or sending end.
TOPOEP_HOST_DEVICE inline std::int64_t chain_count_index(int num_ranks, RankId rank, bool same_node,
                                                         bool sent) {
  return static_cast<std::int64_t>((same_node ? 0 : 2) + (sent ? 1 : 0)) * num_ranks + rank;
}

// One replica of `expert` on `rank`, whose gradient goes to `home`.
struct ReplicaInstance {
  ExpertId expert;
  RankId home;
  RankId rank;
  bool operator<(const ReplicaInstance& other) const;
  bool operator==(const ReplicaInstance& other) const;
};

// Adds one chain per (expert, home) over `replicas` to `counts` ([4][R] in the gradient counts'
// order) and to `hops`. `replicas` in any order (sorted here); a replica listed twice counts
// once, one on its expert's home not at all.
void add_replica_chains(std::vector<ReplicaInstance>& replicas, const TopologyView& topology,
                        std::int32_t* counts, GradientHops& hops);

// Adds the chain of an expert homed on `home` whose replicas are on `holders` (`count` ranks,
// ascending, distinct, `home` not among them) to `counts` ([4][R] in the gradient counts'
// order) and to `hops`.
void add_gradient_chain(RankId home, const RankId* holders, int count, const TopologyView& topology,
                        std::int32_t* counts, GradientHops& hops);

// Calls chain(home, holders, count) once per (expert, home) over `replicas`, in that order, with
// the chain's holders as add_gradient_chain() takes them; sorts and deduplicates `replicas` as
// add_replica_chains() does.
template <typename Chain>
void for_each_replica_chain(std::vector<ReplicaInstance>& replicas, Chain chain) {
  std::sort(replicas.begin(), replicas.end());
  replicas.erase(std::unique(replicas.begin(), replicas.end()), replicas.end());
  std::vector<RankId> holders;
  for (std::size_t begin = 0; begin < replicas.size();) {
    std::size_t end = begin;
    holders.clear();
    // Sorted by (expert, home, rank): each chain's holders come out ascending.
    for (; end < replicas.size() && replicas[end].expert == replicas[begin].expert &&
           replicas[end].home == replicas[begin].home;
         ++end) {
      if (replicas[end].rank != replicas[begin].home) holders.push_back(replicas[end].rank);
    }
    chain(replicas[begin].home, holders.data(), static_cast<int>(holders.size()));
    begin = end;
  }
}

// Calls hop(from, to, same_node) for each hop of the chain add_gradient_chain() counts.
template <typename Hop>
void walk_holder_chain(RankId home, const RankId* holders, int count, const TopologyView& topology,
                       Hop hop) {
  auto members = [&](int lo, int hi, auto&& visit) {  // `holders` is ascending
    for (const RankId* h = std::lower_bound(holders, holders + count, lo);
         h < holders + count && *h < hi; ++h) {
      visit(*h);
    }
  };
  walk_gradient_chain(home, topology.num_ranks(), topology.gpus_per_node, members, hop);
}

}  // namespace topoep
