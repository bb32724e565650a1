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
  // The bandwidth terms without their α: the ring pays a latency per step instead, IB's on the
  // 2 (N - 1) steps that cross nodes and NVLink's on the others (NCCL's own tuning model).
  const LinkCost nvlink{cost.scale_up.bytes_per_us, 0};
  const LinkCost ib{cost.scale_out.bytes_per_us, 0};
  const std::int64_t steps = 2 * (ranks - 1);
  const std::int64_t inter_node_steps = 2 * (static_cast<std::int64_t>(topology.num_nodes) - 1);
  result.time_ps = (steps - inter_node_steps) * cost.scale_up.alpha_ps +
                   inter_node_steps * cost.scale_out.alpha_ps +
                   max_ps(transfer_ps(result.nvlink_bytes_per_gpu, nvlink),
                          transfer_ps(result.ib_bytes_per_gpu, ib));
  return result;
}

}  // namespace topoep
