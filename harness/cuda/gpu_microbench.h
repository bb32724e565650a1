#pragma once
// GPU measurements for one rank (harness/gpu_check.sh runs them):
//   solve_latency.csv  experts,ranks,slots,layers,us_per_launch,us_per_layer
//                      the device TopoEP solve from device-resident counts (CUDA events)
//   solve_phases.csv   experts,ranks,slots,static_start_us,search_us,instances_us,routes_us
//                      where one layer's solve spends that time (SM clock cycles at the peak
//                      clock, TopoepLayerOutput::phase_cycles: what to parallelise next)
//   gemm_samples.csv   tokens,flop,time_us: one expert's FFN (gate, up, down) as cuBLAS bf16
//                      GEMMs at the model's dimensions, the format topoep calibrate reads

#include <string>

#include "solver/cost_params.h"

namespace topoep {

// `cost`: what the solver decides with (the model and topology the latency is reported for).
void run_gpu_microbench(const CostParams& cost, int hidden, int ffn, const std::string& out_dir);

}  // namespace topoep
