#include "solver/cost_params.h"

#include <string>

#include "solver/input_error.h"

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
  check_non_negative(params.dispatch_bytes_per_token, "dispatch_bytes_per_token");
  check_non_negative(params.combine_bytes_per_token, "combine_bytes_per_token");
  check_non_negative(params.replica_weight_bytes, "replica_weight_bytes");
  check_non_negative(params.replica_gradient_bytes, "replica_gradient_bytes");
  check_non_negative(params.backward_compute_factor, "backward_compute_factor");
  check_non_negative(params.backward_bytes_per_token, "backward_bytes_per_token");
  check_non_negative(params.weight_overlap_ps, "weight_overlap_ps");
  check_link(params.scale_up, "scale_up");
  check_link(params.scale_out, "scale_out");
}

}  // namespace topoep
