#pragma once
// GPU measurements for one rank (harness/gpu_check.sh runs them):
//   solve_latency.csv  experts,ranks,slots,layers,us_per_launch,us_per_layer
//                      the device TopoEP solve from device-resident counts (CUDA events)
//   solve_phases.csv   experts,ranks,slots,static_start_us,search_us,instances_us,routes_us
//                      where one layer's solve spends that time (SM clock cycles at the peak
//                      clock, TopoepLayerOutput::phase_cycles: what to parallelise next)
//   gemm_samples.csv   tokens,flop,time_us: one expert's FFN (gate, up, down) as cuBLAS bf16
//                      GEMMs at the model's dimensions, the format topoep calibrate reads
//   hbm_samples.csv    bytes,time_us: a copy kernel over 1 MB to 256 MB (bytes read and
//                      written), the HBM bandwidth the memory-bound kernels and the optimizer
//                      run at (topoep calibrate fits it)
//   own_routing_solve.csv  (with your own routing) experts,ranks,slots,layers,us_per_launch,
//                      us_per_layer, then the first layer's phases as in solve_phases.csv: its
//                      layers solved in one launch

#include <string>
#include <vector>

#include "solver/cost_params.h"
#include "solver/routing_counts.h"
#include "solver/topoep_solver.h"

namespace topoep {

// Your own routing and the problem that plans it (sim/own_routing.h).
struct OwnRouting {
  TopoepProblem problem;
  std::vector<RoutingCounts> layers;
};

// `cost`: what the solver decides with on the seeded shapes (the model and topology the latency
// is reported for); `own`, when not null, is timed too.
void run_gpu_microbench(const CostParams& cost, int hidden, int ffn, const std::string& out_dir,
                        const OwnRouting* own = nullptr);

}  // namespace topoep
