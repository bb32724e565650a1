#pragma once
// One MoE layer executed on this rank with a plan, behind one interface for the host mode
// (moe_layer.h: MPI + Eigen) and the cuda mode (cuda/cuda_layer.h: NCCL + cuBLAS).
//
// Every rank holds the whole plan, so both ends of every transfer derive the same layout from
// it (plan_segments): a source sends, per destination, its routes' assignments in canonical
// route order; the assignments of one (src, expert) are split over its routes in that order.

#include <cstdint>
#include <vector>

#include "harness/comm.h"
#include "solver/placement.h"
#include "solver/plan.h"
#include "solver/routing_counts.h"
#include "solver/topology_view.h"
#include "solver/weight_delivery.h"

namespace topoep {

// Assignments [first, first + count) of the tokens `src` routed to `expert` run on `dst`.
struct Segment {
  RankId src;
  ExpertId expert;
  RankId dst;
  TokenCount first;
  TokenCount count;
};

// The plan's routes as segments, in canonical route order.
std::vector<Segment> plan_segments(const Plan& plan);

// Which replicas move this layer. `fetch`: the experts in this rank's slots that `held` says
// are not here yet, ascending. `requests`: every rank's fetch list as flags, [R][E] row-major
// (all-gathered: every home derives what to send, in ascending expert order per receiver).
struct ReplicaRequests {
  std::vector<ExpertId> fetch;
  std::vector<std::int64_t> requests;
  bool requested(RankId rank, ExpertId expert, int num_experts) const {
    return requests[static_cast<std::size_t>(rank) * num_experts + expert] != 0;
  }
};
template <typename Held>
ReplicaRequests request_replicas(Comm& comm, const Plan& plan, Held held) {
  ReplicaRequests r;
  for (int slot = 0; slot < plan.slots_per_rank; ++slot) {
    const ExpertId e = plan.replica_at(comm.rank(), slot);
    if (e != kNoExpert && !held(e)) r.fetch.push_back(e);
  }
  std::vector<std::int64_t> flags(plan.num_experts, 0);
  for (const ExpertId e : r.fetch) flags[e] = 1;
  r.requests = comm.allgather(flags);
  return r;
}

// The experts whose weights a broadcast delivery (WeightDelivery::kChainBroadcast) moves this
// layer, ascending: those some rank requested. The harness broadcasts to every rank, which is
// the chain the cost model prices only where every rank but the home receives the expert (as a
// shadow does): throws std::invalid_argument naming the expert and a rank that does not.
std::vector<ExpertId> broadcast_experts(const ReplicaRequests& moves, const Placement& placement,
                                        int num_ranks);

// Row of each expert's first assignment in `rank`'s outputs ([assignments][hidden] in
// (expert, j) order), [E + 1]: the last entry is the row count.
std::vector<TokenCount> expert_rows(const RoutingCounts& counts, RankId rank);

// The executed FFN's dimensions (host mode: scaled down; cuda mode: the model's) and the seed
// of the weights and activations.
struct MoeDims {
  int hidden = 64;
  int ffn = 32;
  std::uint64_t seed = 1;
};

// This rank's measured phase times (µs, its own start-to-end after a barrier) and traffic.
struct LayerTimes {
  double weights_us = 0, dispatch_us = 0, compute_us = 0, combine_us = 0;
  std::int64_t tokens_processed = 0;
  std::int64_t nvlink_bytes_out = 0, ib_bytes_out = 0;  // dispatch, by the topology's link class
  int replicas_received = 0;
};

class LayerExecutor {
 public:
  virtual ~LayerExecutor() = default;
  // Builds the weights of the experts homed here.
  virtual void set_home(const Placement& placement) = 0;
  // Keeps only these replicas' weights ([R][S] expert ids; the rest are dropped).
  virtual void keep_replicas(const std::vector<ExpertId>& resident, int slots_per_rank) = 0;
  // Runs the layer. `out` receives this rank's outputs, fp32, row-major [assignments][hidden]:
  // its own assignments in (expert, j) order. Replicas the plan names that are not held yet
  // move from their home ranks first, as `delivery` says (a broadcast: broadcast_experts()).
  virtual LayerTimes run(const Plan& plan, const Placement& placement, WeightDelivery delivery,
                         const RoutingCounts& counts, std::int64_t record,
                         std::vector<float>* out) = 0;
};

}  // namespace topoep
