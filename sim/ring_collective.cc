#include "sim/ring_collective.h"

#include "solver/phase_times.h"

namespace topoep {

RingTraffic ring_collective(RingCollective collective, const TopologyView& topology,
                            Bytes buffer_bytes, const CostParams& cost) {
  RingTraffic result;
  const std::int64_t ranks = topology.num_ranks();
  if (ranks <= 1 || buffer_bytes <= 0) return result;
  const std::int64_t passes = collective == RingCollective::kAllReduce ? 2 : 1;
  // passes (R - 1) / R of the buffer, rounded up to whole bytes; split so that no product
  // overflows.
  const Bytes per_rank = buffer_bytes / ranks;
  const Bytes rest = buffer_bytes % ranks;
  const Bytes sent =
      passes * (ranks - 1) * per_rank + (passes * (ranks - 1) * rest + ranks - 1) / ranks;
  const int gpus = topology.gpus_per_node;
  result.ib_bytes_per_gpu = topology.num_nodes == 1 ? 0 : (sent + gpus - 1) / gpus;
  result.nvlink_bytes_per_gpu = sent - result.ib_bytes_per_gpu;
  // The bandwidth terms without their α: the ring pays a latency per step instead, IB's on the
  // steps that cross nodes and NVLink's on the others (NCCL's own tuning model).
  const LinkCost nvlink{cost.scale_up.bytes_per_us, 0};
  const LinkCost ib{cost.scale_out.bytes_per_us, 0};
  const std::int64_t steps = passes * (ranks - 1);
  const std::int64_t inter_node_steps =
      passes * (static_cast<std::int64_t>(topology.num_nodes) - 1);
  result.time_ps = (steps - inter_node_steps) * cost.scale_up.alpha_ps +
                   inter_node_steps * cost.scale_out.alpha_ps +
                   max_ps(transfer_ps(result.nvlink_bytes_per_gpu, nvlink),
                          transfer_ps(result.ib_bytes_per_gpu, ib));
  return result;
}

}  // namespace topoep
