#pragma once
// Your own routing, fitted to a cluster and a model: what `topoep solve` plans and the benchmarks
// on your inputs time (bench/topoep_solver_bench, harness/cuda/gpu_microbench), in one place.

#include <cstdint>
#include <string>
#include <vector>

#include "models/model.h"
#include "solver/placement.h"
#include "solver/routing_counts.h"
#include "solver/topoep_solver.h"
#include "topologies/topology.h"

namespace topoep {

// The most records of a trace that `topoep solve` and the benchmarks on your routing read.
constexpr int kRoutingRecordsRead = 64;

// The layers at `path`: those of a `topoep solve --counts` file, or the first `max_records`
// records of a trace directory (`topoep trace import` or `trace synth`), with the trace's
// record count in `trace_records` when given (0 for a counts file). Throws FileInputError
// naming the file and field, or InputError("counts") for a trace without records.
std::vector<RoutingCounts> read_routing_layers(const std::string& path,
                                               int max_records = kRoutingRecordsRead,
                                               std::int64_t* trace_records = nullptr);

// How the errors of problem_for_routing() name its inputs (a flag or a variable each).
struct RoutingInputNames {
  std::string routing;   // e.g. the counts file's path
  std::string topology;  // e.g. "--topology"
  std::string model;     // e.g. "--model"
  std::string slots;     // e.g. "--slots"
};

// The problem that plans `layers` (one shape; none: InputError "counts"): contiguous homes on
// `topology` (laid out as `homes` says where the GPUs do not divide the experts; kEven refuses
// them, naming `names.topology`) with `slots` spare slots per GPU, the solver costs
// derive_solver_cost() gives for `model` (replica weights charged unless `weight_cost` is false) at
// the tokens per rank the first layer implies (assignments / (ranks x top-k), at least 1). Throws
// InputError naming `names.model` where the experts differ, `names.topology` where the ranks differ
// from the GPUs (each with the presets that would fit), `names.slots` where the slots do not fit,
// and check_topoep_inputs()'s errors where a layer's counts and the costs overflow together.
TopoepProblem problem_for_routing(const std::vector<RoutingCounts>& layers,
                                  const Topology& topology, const ModelSpec& model, int slots,
                                  const RoutingInputNames& names, bool weight_cost = true,
                                  HomeLayout homes = HomeLayout::kEven);

}  // namespace topoep
