#pragma once
// The host mode's MoE layer: replica weights and tokens move with MPI_Alltoallv (the Comm;
// broadcast replicas with MPI_Bcast),
// each expert instance runs its FFN in one Eigen GEMM per projection, fp32, at the scaled-down
// dimensions.

#include <functional>
#include <map>

#include "harness/comm.h"
#include "harness/expert_ffn.h"
#include "harness/layer_executor.h"

namespace topoep {

class MoeLayer : public LayerExecutor {
 public:
  MoeLayer(Comm& comm, const TopologyView& topology, const MoeDims& dims);

  void set_home(const Placement& placement) override;
  void keep_replicas(const std::vector<ExpertId>& resident, int slots_per_rank) override;
  LayerTimes run(const Plan& plan, const Placement& placement, WeightDelivery delivery,
                 const RoutingCounts& counts, std::int64_t record,
                 std::vector<float>* out) override;

 private:
  const ExpertWeights& weights(ExpertId expert) const;
  double fetch_replicas(const ReplicaRequests& moves, const Placement& placement);
  double broadcast_replicas(const ReplicaRequests& moves, const Placement& placement);
  double timed(const std::function<void()>& phase);

  Comm& comm_;
  TopologyView topology_;
  MoeDims dims_;
  std::map<ExpertId, ExpertWeights> home_;
  std::map<ExpertId, ExpertWeights> replicas_;
};

}  // namespace topoep
