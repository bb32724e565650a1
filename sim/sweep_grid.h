#pragma once
// A sweep's grid file and the points it names.
//
// The grid is a JSON object. Every key but "planners" and "points" is an axis: a non-empty
// array of values, and the sweep runs their cross-product. "points" (optional) lists objects of
// axis values that are combined with every cross-product point, for sets that are not a
// product. "planners" lists the planners compared at every point (default: all six). Keys:
//
//   trace          trace directories, or {"synthetic": {...}} generated per point for its
//                  shape (steps, microbatches, layers, tokens_per_rank, popularity, hot_ratio,
//                  drift, layer_correlation, rank_variation, seed, groups_apart: each
//                  data-parallel group its own routing)                  (required)
//   topology, model                     presets or files (default h800-4x8, deepseek-v3)
//   nodes, gpus_per_node                override the topology's shape
//   nvlink_gb_per_s, ib_gb_per_s, nvlink_latency_us, ib_latency_us
//                                       override the achieved link figures
//   slots                               spare slots per GPU (default 1)
//   fp8_gemms                           true: the model's GEMMs in fp8; false: bf16 (default:
//                                       the model's own, ModelSpec::fp8_gemms)
//   weight_overlap_fraction, gradient_overlap_fraction, dense_grad_bytes (0 to 8), dense_sync
//   ("allreduce" or "distributed"), data_parallel (expert-parallel groups, 1 to 65,536),
//   activation_grad_bytes, optimizer_bytes_per_param, optimizer_state_bytes_per_param (the
//   memory a GPU holds: 12, fp32 master and moments), dispatcher ("alltoall" or "deepep"),
//   a2a_overlap_fraction (0 to 1), pipeline_stages (1 to the trace's layers), virtual_stages
//   (chunks a stage, interleaved 1F1B; the microbatches a multiple of pipeline_stages),
//   pipeline_schedule ("1f1b"; "dualpipe": even pipeline_stages, virtual_stages 1, at least
//   2 x pipeline_stages microbatches, an even number; "dualpipev": virtual_stages 1, at least
//   2 x pipeline_stages microbatches), pipeline_layers (each stage's MoE
//   layers, or with virtual_stages each chunk's, as a list: [14, 15, 15, 14]; sets
//   pipeline_stages where the point does not; its column "14,15,15,14", "" for the even split),
//   recompute_moe_act (true or false: the expert activations counted without the gated
//   activation's output), recompute_layernorm, recompute_mla_up_proj (true or false: the
//   dense activations counted without the norms' outputs, without MLA's up-projections' and
//   those rerun in the backward), mtp_layers (0 to 64: multi-token-prediction modules
//   trained, the trace's layers standing for the MoE layers and their blocks),
//   memory_bound_kernels (true or false: the norms', activations', permutations' and loss's
//   HBM bytes priced at the HBM bandwidth)
//                                       (SimOptions)
//   topoep_solve_us, host_roundtrip_us, eplb_cpu_us_per_layer, eplb_period_steps,
//   eplb_window_steps, topoep_replica_uses (1 to 1,000,000), topoep_ib_load_slack (0 to 1),
//   topoep_max_moves (0 to 1,000,000; 0: the solver's default)   (PlannerOptions)
//
// Points are numbered in enumeration order: axes in the order above, the last varying fastest,
// then the listed points. A point's key is its canonical JSON (keys sorted): results name their
// point by it, so shards, resumes and merges match points by what they are.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/replay.h"
#include "traces/synthetic_trace.h"

namespace topoep {

struct SweepPoint {
  int index = 0;
  std::string key;         // canonical JSON of the point's grid values
  nlohmann::json values;   // the point's grid values (an object)
  nlohmann::json columns;  // every parameter's effective value, for the results table
  SimConfig config;
  std::string trace_path;  // empty for a synthetic trace
  SyntheticTraceSpec synthetic;
};

struct SweepGrid {
  std::vector<std::string> planners;
  std::vector<SweepPoint> points;
};

// The parameter columns every results row carries, in table order.
const std::vector<std::string>& sweep_parameter_columns();

// Reads the grid at `path` and prepares every point, checking each one against its trace
// before anything runs. Throws FileInputError naming the grid file and the key: unknown key,
// empty list, a value of the wrong type, or an impossible point (e.g. experts not divisible
// by the GPUs without uneven_homes, a trace with another rank count).
SweepGrid load_sweep_grid(const std::string& path);

}  // namespace topoep
