#include "sim/dense_allreduce.h"

#include "solver/phase_times.h"

namespace topoep {

DenseAllReduce dense_allreduce(const TopologyView& topology, Bytes gradient_bytes,
                               const CostParams& cost) {
  DenseAllReduce result;
  const std::int64_t ranks = topology.num_ranks();
  if (ranks <= 1 || gradient_bytes <= 0) return result;
  // 2 (R - 1) / R of the buffer, rounded up to whole bytes; split so that no product overflows.
  const Bytes per_rank = gradient_bytes / ranks;
  const Bytes rest = gradient_bytes % ranks;
  const Bytes sent = 2 * (ranks - 1) * per_rank + (2 * (ranks - 1) * rest + ranks - 1) / ranks;
  const bool one_node = topology.num_nodes == 1;
  const int gpus = topology.gpus_per_node;
  result.ib_bytes_per_gpu = one_node ? 0 : (sent + gpus - 1) / gpus;
  result.nvlink_bytes_per_gpu = sent - result.ib_bytes_per_gpu;
  // The bandwidth terms without their α: the ring pays a latency per step instead.
  const LinkCost nvlink{cost.scale_up.bytes_per_us, 0};
  const LinkCost ib{cost.scale_out.bytes_per_us, 0};
  const Picoseconds hop = one_node ? cost.scale_up.alpha_ps : cost.scale_out.alpha_ps;
  result.time_ps = 2 * (ranks - 1) * hop + max_ps(transfer_ps(result.nvlink_bytes_per_gpu, nvlink),
                                                  transfer_ps(result.ib_bytes_per_gpu, ib));
  return result;
}

}  // namespace topoep
