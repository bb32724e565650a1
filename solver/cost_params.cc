#include "solver/cost_params.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "solver/input_error.h"
#include "solver/routing_counts.h"

namespace topoep {
namespace {

void check_non_negative(std::int64_t value, const char* field) {
  if (value < 0)
    throw InputError(field, "must not be negative (got " + std::to_string(value) + ")");
}

void check_link(const LinkCost& link, const std::string& name) {
  // At most 10^12 bytes/us (1 PB/s): transfer_ps() multiplies a remainder below the bandwidth
  // by 10^6 in 64 bits.
  if (link.bytes_per_us < 1 || link.bytes_per_us > 1000000000000) {
    throw InputError(name + ".bytes_per_us", "must be in [1, 10^12] bytes/us (got " +
                                                 std::to_string(link.bytes_per_us) + ")");
  }
  check_non_negative(link.alpha_ps, (name + ".alpha_ps").c_str());
}

}  // namespace

void check_cost_params(const CostParams& params) {
  check_non_negative(params.compute_ps_per_token, "compute_ps_per_token");
  check_non_negative(params.instance_min_tokens, "instance_min_tokens");
  check_non_negative(params.dispatch_bytes_per_token, "dispatch_bytes_per_token");
  check_non_negative(params.combine_bytes_per_token, "combine_bytes_per_token");
  check_non_negative(params.replica_weight_bytes, "replica_weight_bytes");
  check_non_negative(params.replica_gradient_bytes, "replica_gradient_bytes");
  check_non_negative(params.backward_compute_factor, "backward_compute_factor");
  check_non_negative(params.backward_bytes_per_token, "backward_bytes_per_token");
  check_non_negative(params.weight_overlap_ps, "weight_overlap_ps");
  check_non_negative(params.gradient_overlap_ps, "gradient_overlap_ps");
  check_link(params.scale_up, "scale_up");
  check_link(params.scale_out, "scale_out");
}

// Every time the solver and the cost model compute is an int64 count of picoseconds, and every
// byte count an int64. Inputs are accepted only if their worst case fits with room to add a few
// such values. 2^61 ps is 27 days per layer, far past any real input.
constexpr long double kRange = 2305843009213693952.0L;  // 2^61

void check_cost_range(const CostParams& cost, long double tokens, std::int64_t replicas) {
  const long double bandwidth =
      static_cast<long double>(std::min(cost.scale_up.bytes_per_us, cost.scale_out.bytes_per_us));
  const long double alpha =
      static_cast<long double>(std::max(cost.scale_up.alpha_ps, cost.scale_out.alpha_ps));
  // An instance costs at most max(1, instance_min_tokens) tokens' compute per token it holds.
  const long double compute_tokens =
      tokens * std::max<long double>(1.0L, static_cast<long double>(cost.instance_min_tokens));
  long double worst = compute_tokens * static_cast<long double>(cost.compute_ps_per_token) *
                      (1.0L + cost.backward_compute_factor);
  long double largest_bytes = 0;
  auto add_link = [&](long double units, long double bytes_per_unit, int times) {
    const long double bytes = units * bytes_per_unit;
    largest_bytes = std::max(largest_bytes, bytes);
    worst += times * (alpha + bytes * 1e6L / bandwidth);
  };
  add_link(tokens, cost.dispatch_bytes_per_token, 1);
  add_link(tokens, cost.combine_bytes_per_token, 1);
  add_link(tokens, cost.backward_bytes_per_token, 2);
  add_link(tokens,
           static_cast<long double>(cost.dispatch_bytes_per_token) + cost.combine_bytes_per_token +
               2.0L * cost.backward_bytes_per_token,
           0);  // bytes only: what the solver weighs a move's IB arrivals with
  add_link(static_cast<long double>(replicas), cost.replica_weight_bytes, 1);
  add_link(static_cast<long double>(replicas), cost.replica_gradient_bytes, 1);
  if (compute_tokens >= kRange || worst >= kRange || largest_bytes >= kRange) {
    char text[240];
    std::snprintf(text, sizeof text,
                  "hold %.3Lg tokens in all: at these costs a layer could take up to %.3Lg s or "
                  "move %.3Lg bytes, beyond the solver's 64-bit range (2^61 ps, 2^61 bytes); "
                  "check the counts' scale and the link bandwidths",
                  tokens, worst / 1e12L, largest_bytes);
    throw InputError("counts", text);
  }
}

// O(1): RoutingCounts sums its counts when it checks them.
void check_cost_range(const CostParams& cost, const RoutingCounts& counts, std::int64_t replicas) {
  check_cost_range(cost, counts.total_in_range_check(), replicas);
}

}  // namespace topoep
