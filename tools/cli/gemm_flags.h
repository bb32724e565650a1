#pragma once
// --fp8-gemms, which simulate and solve take: the model's GEMMs in fp8 (ModelSpec::fp8_gemms).

#include <string>

#include "solver/input_error.h"
#include "topologies/topology.h"

namespace topoep {

inline constexpr const char* kFp8GemmsHelp =
    "The model's GEMMs (experts, attention projections, shared experts, dense-only layers) run "
    "in fp8 at the GPU's fp8 peak, as DeepSeek-V3 trained; the attention core and the output "
    "head stay bf16 (the model file's \"gemm_precision\": \"fp8\")";

// Throws InputError naming the flag where `topology`'s GPU has no fp8 peak.
inline void check_fp8_gemms(const Topology& topology) {
  if (!(topology.gpu.peak_tflops_fp8 > 0)) {
    throw InputError("--fp8-gemms", "the GPU of " + topology.name + " (" + topology.gpu.name +
                                        ") has no fp8 peak");
  }
}

}  // namespace topoep
