#pragma once
// The solver's integer cost parameters derived from a topology and a model, so that the solver
// decides with the same constants the simulator reports with.

#include "models/model.h"
#include "solver/cost_params.h"
#include "topologies/topology.h"

namespace topoep {

struct SolverCostDerivation {
  CostParams params;
  double gemm_efficiency = 0;  // the curve's best efficiency: the compute rate's
  double dense_time_us = 0;    // the dense compute window before the MoE layer
};

// Achieved fraction of peak at `tokens_per_expert`: linear between the curve's points, the end
// values beyond them. Deterministic (basic IEEE arithmetic only).
double gemm_efficiency_at(const GemmEfficiencyCurve& curve, double tokens_per_expert);

// The solver's approximation of the curve (CostParams::instance_min_tokens): an instance of t
// tokens takes max(t, m) tokens' time at the curve's best efficiency. m is the value, 0 or one
// of the points' times in such tokens (t x best / efficiency(t)), whose largest relative error
// over the curve's points is smallest (ties: the smaller). A roofline curve (efficiency
// proportional to t up to its knee, then flat) is fitted exactly, with m at the knee; a flat
// curve gives 0.
double curve_instance_min_tokens(const GemmEfficiencyCurve& curve);

// Throws the InputError picoseconds_in_range() names.
[[noreturn]] void throw_picoseconds_out_of_range(double ps, const char* field);

// `ps` rounded to integer picoseconds, halves away from zero (std::llround). Throws InputError
// naming `field` unless it is in [0, 2^61): every time in the cost model is a 64-bit count of
// picoseconds (2^61 ps is 27 days). Inline, without the library call: the replay rounds every
// expert instance's compute time on every record.
inline Picoseconds picoseconds_in_range(double ps, const char* field) {
  if (!(ps >= 0 && ps < 2305843009213693952.0)) {  // 2^61; also refuses NaN
    throw_picoseconds_out_of_range(ps, field);
  }
  // ps - whole is exact: below 1 it is ps, from 1 on the two are within a factor of 2.
  const auto whole = static_cast<Picoseconds>(ps);
  return ps - static_cast<double>(whole) >= 0.5 ? whole + 1 : whole;
}

// The peak the model's GEMMs run at, in TFLOP/s: the GPU's fp8 peak where the model runs its
// GEMMs in fp8 (ModelSpec::fp8_gemms), else its bf16 peak. The grouped-GEMM curve applies to
// either: a roofline's knee, in tokens per expert, is the same at twice the peak and half the
// weight bytes. Throws InputError naming gemm_precision where the GPU has no fp8 peak.
double gemm_peak_tflops(const Topology& topology, const ModelSpec& model);
// gemm_peak_tflops() over the bf16 peak: the `gemm_speedup` of ModelSpec's FLOP counts.
double gemm_speedup(const Topology& topology, const ModelSpec& model);

// The rate of the dense GEMMs (attention projections, shared experts, dense-only layers' FFNs,
// the output head) in bf16 FLOP: the bf16 peak x the GEMM curve's best efficiency, in FLOP per
// picosecond (1 TFLOP/s is 1 FLOP per picosecond). ModelSpec's FLOP counts take the
// GEMMs' speedup (gemm_speedup()), so that fp8 GEMMs run at their own peak.
double dense_gemm_flop_per_ps(const Topology& topology);

// The attention core's efficiencies (fractions of the bf16 peak) at the model's sequence
// length: the topology's attention_efficiency curve, linear between its points and the end
// values beyond; without one, the GEMM curve's best efficiency for both passes.
struct AttentionEfficiency {
  double forward = 0;
  double backward = 0;
};
AttentionEfficiency attention_efficiency_at(const Topology& topology, const ModelSpec& model);

// The dense work a token brings, in picoseconds (not rounded), on one GPU: the GEMMs (dense
// parameters, shared experts, dense-only FFNs, the output head; ModelSpec's FLOPs with
// gemm_speedup()) at dense_gemm_flop_per_ps(), the attention core at the bf16 peak x
// attention_efficiency_at(), forward and backward.
struct DenseTimesPerToken {
  double layer_forward = 0;  // a MoE layer's dense part (ModelSpec::dense_flops_per_token())
  double core_forward = 0;   // of layer_forward, the attention core's (it holds no weights)
  // What its backward takes beyond twice its forward: the attention core's backward
  // (ModelSpec::kAttentionCoreBackwardRatio x its forward FLOPs at the backward efficiency)
  // less twice its forward time. Negative only where the backward runs 1.25 x as efficiently.
  double layer_backward_extra = 0;
  // A routed layer's share of the work outside the routed layers (ModelSpec::
  // outside_flops_per_token(): dense-only layers, the model's end), forward, and the same
  // extra of its dense-only layers' attention cores; the model's end has no attention.
  double outside_forward = 0;
  double outside_backward_extra = 0;
  double head_forward = 0;  // of outside_forward, the model's end's (head_end_flops_per_token())
};
DenseTimesPerToken dense_times_per_token(const Topology& topology, const ModelSpec& model,
                                         int mtp_layers = 0);

// Dense forward of one layer over `tokens` tokens on one GPU, in picoseconds (not rounded):
// dense_times_per_token().layer_forward x tokens.
double dense_forward_time_ps(const Topology& topology, const ModelSpec& model, double tokens);
// A MoE layer's share of the work outside the MoE layers over `tokens` tokens on one GPU, in
// picoseconds (not rounded): dense_times_per_token().outside_forward x tokens (dense-only
// layers, output head). 0 for a model with neither.
double outside_forward_time_ps(const Topology& topology, const ModelSpec& model, double tokens);

// compute_ps_per_token = 2 x 3 x hidden x expert_ffn FLOP (gate, up, down) /
//   (gemm_peak_tflops() x the curve's best efficiency); instance_min_tokens =
//   curve_instance_min_tokens();
// dispatch bytes = hidden x dispatch_bytes (+ 4 bytes per dispatch_scale_block elements);
// combine bytes = hidden x combine_bytes; replica weights = 3 x hidden x expert_ffn x
//   weight_bytes (0 with weight_cost false);
// replica gradients = the weights' size (reduced to the home once per step);
// backward: compute 2 x forward (dgrad, wgrad), activation gradients at hidden x 2 bytes (bf16;
//   the simulator's CostModel uses its activation_grad_bytes option);
// weight overlap = the dense window: dense_forward_time_ps() at tokens_per_rank; gradient
//   overlap 0: planners weigh a replica's whole gradient reduction, although the simulator
//   prices only what the backward's link-idle compute does not hide (sim/backward_sync.h;
//   solver/DECISIONS.md, "Gradients the step owes");
// links: bandwidth GB/s x 1000 = bytes/us, latency us x 1e6 = ps. Rounded to the nearest
// integer (at least 1 where a zero would be meaningless).
SolverCostDerivation derive_solver_cost(const Topology& topology, const ModelSpec& model,
                                        std::int64_t tokens_per_rank, bool weight_cost);

}  // namespace topoep
