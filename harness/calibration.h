#pragma once
// Fits the simulator's link and GEMM constants from harness measurements (microbench.h) by
// least squares (Eigen), and compares simulated per-layer phase times with measured ones.

#include <string>
#include <utility>
#include <vector>

#include "topologies/topology.h"

namespace topoep {

struct LinkFit {
  double latency_us = 0;          // alpha, at least 0 (the slope is refitted where it binds)
  double bandwidth_gb_per_s = 0;  // decimal GB/s
  int samples = 0;
  double rms_residual_us = 0;
};

// time_us = alpha + bytes / bandwidth over (bytes, time_us) samples (at least two sizes), by
// least squares of the relative residuals (residual / time_us); rms_residual_us is in µs.
LinkFit fit_link(const std::vector<std::pair<double, double>>& bytes_time_us);

// Efficiency at each measured token count: FLOP / (peak x time), the median over samples at
// that count, at least 1e-9 (above 1 where the timings beat `peak_tflops`). `samples` are
// (tokens, flop, time_us).
GemmEfficiencyCurve fit_gemm_curve(const std::vector<std::vector<double>>& samples,
                                   double peak_tflops);

// `base` with the fits from DIR/link_samples.csv, DIR/gemm_samples.csv and DIR/hbm_samples.csv
// (any may be missing, not all; a link class, the curve or the HBM without samples keeps the
// base's figures): the HBM bandwidth fitted as a link's, from copies (bytes read and written,
// time), at most the base's. Sources say what was fitted from what. Throws FileInputError naming
// the file, line and column of a value that is not a number above 0, and naming the link or token
// count whose fit exceeds the base's spec or bf16 peak (the base describes other hardware than was
// measured); the result always passes the topology file's checks.
Topology calibrate_topology(const Topology& base, const std::string& dir);

struct PhaseError {
  std::string phase;  // a per_layer.csv column, e.g. "dispatch_us"
  int rows = 0;       // records both files have a value for (measured > 0)
  double mean_relative = 0;
  double worst_relative = 0;
  std::string worst_at;  // "step,microbatch,layer,planner"
};

struct PerLayerComparison {
  std::vector<PhaseError> phases;
  int records = 0;  // the measured records, every one matched by a simulated one
  // Of those, the records whose plan hash is the same in both files; -1 when either file has
  // no plan_hash column. A record's plan can differ where the simulator ran TopoEP's static
  // fallback (its finer cost model priced the solver's plan slower), or where the two runs
  // used other planner options.
  int same_plans = -1;
};

// Matches rows of two per_layer.csv files by (step, microbatch, layer, planner) and reports
// |simulated - measured| / measured per phase. The runs must cover the same records: every
// measured record must be simulated, and each measured planner must have as many records in
// both; otherwise, and for unreadable files, throws FileInputError naming the first record or
// planner that does not match.
PerLayerComparison compare_per_layer(const std::string& sim_csv, const std::string& measured_csv);

}  // namespace topoep
