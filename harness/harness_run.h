#pragma once
// The harness's replay: for each trace record, every rank gathers the global routing counts,
// runs the planner, and the ranks compare plan hashes (a difference stops the run, naming the
// record and the ranks); then the layer runs for real (moe_layer.h) and again with the static
// plan, and the outputs must agree within the tolerance: rerouting never changes the math.
// Rank 0 writes per-layer measurements in the simulator's per_layer.csv schema.

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

#include "harness/comm.h"
#include "harness/layer_executor.h"
#include "models/model.h"
#include "solver/placement.h"
#include "solver/planners/planner.h"
#include "topologies/topology.h"

namespace topoep {

struct HarnessConfig {
  std::string trace;
  Topology topology;
  ModelSpec model;
  std::string planner = "topoep";
  int slots_per_rank = 1;
  HomeLayout homes = HomeLayout::kEven;  // kUneven: experts the GPUs do not divide (--uneven-homes)
  MoeDims dims;                          // the executed FFN's (scaled-down) dimensions
  std::int64_t max_records = 0;          // 0: all
  int perturb_rank = -1;    // this rank corrupts its copy of the counts (a check of checks)
  double tolerance = 1e-4;  // max |plan - static| over max |static| (bf16: use ~3e-2)
  std::string out_dir;      // rank 0 writes per_layer.csv and per_rank.csv here
};

// A check the harness makes failed (plan hashes or outputs differ); every rank throws it.
class HarnessCheckError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Makes one layer executor (host or cuda mode); called twice per MoE layer: one runs the plans,
// one the static reference.
using LayerFactory = std::function<std::unique_ptr<LayerExecutor>()>;
// Makes one layer's planner (cuda mode: TopoEP on the device, cuda/device_planner.h).
using PlannerFactory = std::function<std::unique_ptr<Planner>(const PlannerContext&)>;

// Returns the records run. Throws FileInputError/InputError for bad inputs (on every rank).
std::int64_t run_harness(const HarnessConfig& config, Comm& comm, const LayerFactory& make_layer,
                         const PlannerFactory& make_layer_planner);

}  // namespace topoep
