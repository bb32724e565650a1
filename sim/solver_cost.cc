#include "sim/solver_cost.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "solver/input_error.h"

namespace topoep {
namespace {

std::int64_t round_at_least_one(double value) {
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(std::llround(value)));
}

LinkCost link_cost(const LinkSpec& link) {
  return LinkCost{round_at_least_one(link.bandwidth_gb_per_s * 1000.0),
                  static_cast<Picoseconds>(std::llround(link.latency_us * 1e6))};
}

double best_efficiency(const GemmEfficiencyCurve& curve) {
  return *std::max_element(curve.efficiency.begin(), curve.efficiency.end());
}

// y at `at` on the polyline through (x, y), x ascending: the end values beyond its ends.
double interpolate(const std::vector<double>& x, const std::vector<double>& y, double at) {
  if (at <= x.front()) return y.front();
  if (at >= x.back()) return y.back();
  const std::size_t i =
      static_cast<std::size_t>(std::upper_bound(x.begin(), x.end(), at) - x.begin());
  const double t = (at - x[i - 1]) / (x[i] - x[i - 1]);
  return y[i - 1] + t * (y[i] - y[i - 1]);
}

}  // namespace

double curve_instance_min_tokens(const GemmEfficiencyCurve& curve) {
  const double best = best_efficiency(curve);
  const std::vector<double>& tokens = curve.tokens_per_expert;
  const std::size_t points = tokens.size();
  // At each point, the instance's time in tokens at the best efficiency's rate (>= its tokens),
  // and the error the model makes there for any minimum up to the point's tokens.
  std::vector<double> time(points), flat_error(points);
  for (std::size_t i = 0; i < points; ++i) {
    time[i] = tokens[i] * best / curve.efficiency[i];
    flat_error[i] = (time[i] - tokens[i]) / time[i];
  }
  auto error_at = [&](std::size_t i, double minimum) {
    return std::abs(std::max(tokens[i], minimum) - time[i]) / time[i];
  };
  double chosen = 0, chosen_error = 0;
  for (std::size_t i = 0; i < points; ++i) chosen_error = std::max(chosen_error, error_at(i, 0));
  // A candidate's worst error is a maximum over the points, so its scan stops at the first
  // point that makes it lose to the choice so far (worse, or as bad at a larger minimum): the
  // choice is the one a full scan of every candidate makes. Each scan starts at the point
  // that stopped the last one, which most often stops this one too: a curve of P points then
  // costs about P^2 steps instead of P^3 (a calibrated curve of 1,000 points took seconds).
  std::size_t lead = 0;
  auto consider = [&](double minimum) {
    double worst = 0;
    auto loses = [&] {
      return !(worst < chosen_error || (worst == chosen_error && minimum < chosen));
    };
    worst = std::max(worst, error_at(lead, minimum));
    if (loses()) return;
    for (std::size_t i = 0; i < points; ++i) {
      if (i == lead) continue;
      worst = std::max(worst, error_at(i, minimum));
      if (loses()) {
        lead = i;
        return;
      }
    }
    chosen = minimum;
    chosen_error = worst;
  };
  // Each point's error is flat, then falls to 0 at its time, then rises, so the largest is
  // smallest at a kink (0, a point's tokens or time) or where a falling or flat piece meets a
  // rising or flat one: those are the candidates.
  consider(0);
  for (std::size_t i = 0; i < points; ++i) {
    consider(tokens[i]);
    consider(time[i]);
    for (std::size_t j = 0; j < points; ++j) {
      consider(2 * time[i] * time[j] / (time[i] + time[j]));
      consider(time[i] * (1 - flat_error[j]));
      consider(time[i] * (1 + flat_error[j]));
    }
  }
  return chosen;
}

double gemm_efficiency_at(const GemmEfficiencyCurve& curve, double tokens_per_expert) {
  const std::vector<double>& x = curve.tokens_per_expert;
  const std::vector<double>& y = curve.efficiency;
  if (tokens_per_expert <= x.front()) return y.front();
  if (tokens_per_expert >= x.back()) return y.back();
  // The first point past it (std::upper_bound on the ascending points). A curve most often has
  // a handful of points, counted without branches; the replay asks for every instance, so a
  // long calibrated curve is searched.
  std::size_t i = 0;
  if (x.size() <= 32) {
    for (const double point : x) i += point <= tokens_per_expert ? 1 : 0;
  } else {
    i = static_cast<std::size_t>(std::upper_bound(x.begin(), x.end(), tokens_per_expert) -
                                 x.begin());
  }
  const double t = (tokens_per_expert - x[i - 1]) / (x[i] - x[i - 1]);
  return y[i - 1] + t * (y[i] - y[i - 1]);
}

void throw_picoseconds_out_of_range(double ps, const char* field) {
  char text[200];
  std::snprintf(text, sizeof text,
                "lead to a time of %.3g s, beyond the simulator's 64-bit picosecond range "
                "(2^61 ps); check the counts' scale",
                ps / 1e12);
  throw InputError(field, text);
}

double gemm_peak_tflops(const Topology& topology, const ModelSpec& model) {
  if (!model.fp8_gemms) return topology.gpu.peak_tflops_bf16;
  if (!(topology.gpu.peak_tflops_fp8 > 0)) {
    throw InputError("gemm_precision", "is fp8 (model '" + model.name + "'), but the GPU (" +
                                           topology.gpu.name + ") has no fp8 peak");
  }
  return topology.gpu.peak_tflops_fp8;
}

double gemm_speedup(const Topology& topology, const ModelSpec& model) {
  return model.fp8_gemms ? gemm_peak_tflops(topology, model) / topology.gpu.peak_tflops_bf16 : 1.0;
}

double dense_gemm_flop_per_ps(const Topology& topology) {
  return topology.gpu.peak_tflops_bf16 * best_efficiency(topology.gemm_efficiency);
}

AttentionEfficiency attention_efficiency_at(const Topology& topology, const ModelSpec& model) {
  const AttentionEfficiencyCurve& curve = topology.attention_efficiency;
  if (curve.empty()) {
    const double best = best_efficiency(topology.gemm_efficiency);
    return {best, best};
  }
  const double length = model.sequence_length;
  return {interpolate(curve.sequence_length, curve.forward, length),
          interpolate(curve.sequence_length, curve.backward, length)};
}

DenseTimesPerToken dense_times_per_token(const Topology& topology, const ModelSpec& model,
                                         int mtp_layers) {
  const double speedup = gemm_speedup(topology, model);
  const double gemm_rate = dense_gemm_flop_per_ps(topology);
  const AttentionEfficiency attention = attention_efficiency_at(topology, model);
  const double forward_rate = topology.gpu.peak_tflops_bf16 * attention.forward;
  const double backward_rate = topology.gpu.peak_tflops_bf16 * attention.backward;
  const double core = model.attention_core_flops_per_token();
  const double core_forward = core / forward_rate;
  const double core_extra =
      ModelSpec::kAttentionCoreBackwardRatio * core / backward_rate - 2 * core_forward;
  // Routed layers stand for the dense-only layers as outside_flops_per_token() shares them.
  const double dense_layers = model.dense_layers_per_moe_layer(mtp_layers);
  DenseTimesPerToken times;
  times.core_forward = core_forward;
  times.layer_forward = (model.dense_flops_per_token(speedup) - core) / gemm_rate + core_forward;
  times.layer_backward_extra = core_extra;
  if (model.routed_layers(mtp_layers) > 0) {
    times.head_forward = model.head_end_flops_per_token(speedup, mtp_layers) / gemm_rate;
    times.outside_forward =
        (model.outside_flops_per_token(speedup, mtp_layers) - dense_layers * core) / gemm_rate +
        dense_layers * core_forward;
    times.outside_backward_extra = dense_layers * core_extra;
  }
  return times;
}

double dense_forward_time_ps(const Topology& topology, const ModelSpec& model, double tokens) {
  return dense_times_per_token(topology, model).layer_forward * tokens;
}

double outside_forward_time_ps(const Topology& topology, const ModelSpec& model, double tokens) {
  return dense_times_per_token(topology, model).outside_forward * tokens;
}

SolverCostDerivation derive_solver_cost(const Topology& topology, const ModelSpec& model,
                                        std::int64_t tokens_per_rank, bool weight_cost) {
  SolverCostDerivation d;
  d.gemm_efficiency = best_efficiency(topology.gemm_efficiency);
  // 1 TFLOP/s is 1 FLOP per picosecond.
  d.params.compute_ps_per_token = round_at_least_one(
      model.expert_flops_per_token() / (gemm_peak_tflops(topology, model) * d.gemm_efficiency));
  d.params.instance_min_tokens =
      static_cast<TokenCount>(std::llround(curve_instance_min_tokens(topology.gemm_efficiency)));
  d.params.dispatch_bytes_per_token = static_cast<Bytes>(model.dispatch_bytes_per_token());
  d.params.combine_bytes_per_token = static_cast<Bytes>(model.combine_bytes_per_token());
  d.params.replica_weight_bytes =
      weight_cost ? static_cast<Bytes>(model.expert_params() * model.weight_bytes) : 0;
  // Weight gradients at the weights' precision, reduced once per step (sim/README.md).
  d.params.replica_gradient_bytes = d.params.replica_weight_bytes;
  // Plans are weighed over forward and backward, as the simulator reports them.
  d.params.backward_compute_factor = 2;
  d.params.backward_bytes_per_token = static_cast<Bytes>(model.hidden_size * 2.0);
  const double dense_ps =
      dense_forward_time_ps(topology, model, static_cast<double>(tokens_per_rank));
  d.dense_time_us = dense_ps / 1e6;
  d.params.weight_overlap_ps = picoseconds_in_range(dense_ps, "tokens_per_rank");
  d.params.scale_up = link_cost(topology.scale_up);
  d.params.scale_out = link_cost(topology.scale_out);
  return d;
}

}  // namespace topoep
