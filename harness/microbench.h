#pragma once
// Measurements the simulator's constants are fitted from (topoep calibrate):
//   link_samples.csv  link,bytes,time_us   one transfer between two ranks in one node
//                     ("nvlink") and in two nodes ("ib"), sizes 1 KB to 4 MB, median of 5
//   gemm_samples.csv  tokens,flop,time_us  one expert FFN at 1 to 2048 tokens, median of 5
//   hbm_samples.csv   bytes,time_us        one copy of 1 MB to 64 MB (bytes: read and written),
//                     median of 5; host memory here, HBM in gpu_microbench
// Rank 0 writes them; every rank must call.

#include <string>

#include "harness/comm.h"
#include "harness/moe_layer.h"
#include "solver/topology_view.h"

namespace topoep {

void run_microbench(Comm& comm, const TopologyView& topology, const MoeDims& dims,
                    const std::string& out_dir);

}  // namespace topoep
