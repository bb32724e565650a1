#pragma once
// Executes one MoE layer on this rank with a plan: replica weights move from their home ranks,
// token activations are dispatched to the instances the plan names, each instance runs its
// expert's FFN, and the outputs are combined back at their source ranks.
//
// Every rank holds the whole plan, so both ends of every transfer derive the same layout from
// it: a source sends, per destination, its routes' assignments in canonical route order; the
// assignments of one (src, expert) are split over its routes in that order.

#include <functional>
#include <map>
#include <vector>

#include "harness/comm.h"
#include "harness/expert_ffn.h"
#include "solver/placement.h"
#include "solver/plan.h"
#include "solver/routing_counts.h"
#include "solver/topology_view.h"

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

class MoeLayer {
 public:
  MoeLayer(Comm& comm, const TopologyView& topology, const MoeDims& dims);

  // Builds the weights of the experts homed here.
  void set_home(const Placement& placement);
  // Keeps only these replicas' weights ([R][S] expert ids; the rest are dropped).
  void keep_replicas(const std::vector<ExpertId>& resident, int slots_per_rank);

  // Runs the layer; `out` receives this rank's outputs: its own assignments in (expert, j)
  // order, [assignments][hidden]. Replicas in the plan that are not held yet are moved first.
  LayerTimes run(const Plan& plan, const Placement& placement, const RoutingCounts& counts,
                 std::int64_t record, RowMatrix* out);

 private:
  const ExpertWeights& weights(ExpertId expert) const;
  double timed(const std::function<void()>& phase);

  Comm& comm_;
  TopologyView topology_;
  MoeDims dims_;
  std::map<ExpertId, ExpertWeights> home_;
  std::map<ExpertId, ExpertWeights> replicas_;
};

}  // namespace topoep
