#pragma once
// The TopoEP solver for one MoE layer and microbatch, written once for the host (g++) and the
// GPU (nvcc): its entry points and workspace size. The solver itself is LayerSolve
// (layer_solve/layer_solve.h and the files beside it); solver/README.md describes the algorithm,
// its tie-break rules and its guarantees.

#include <cstddef>

#include "solver/block_threads.h"
#include "solver/host_device.h"
#include "solver/layer_solve/emit.h"
#include "solver/layer_solve/ib_levelling.h"
#include "solver/layer_solve/layer_solve.h"
#include "solver/layer_solve/move.h"
#include "solver/layer_solve/moves.h"
#include "solver/layer_solve/replica_costs.h"
#include "solver/layer_solve/search.h"
#include "solver/layer_solve/state.h"
#include "solver/layer_solve/transfer.h"
#include "solver/topoep_layer_io.h"
#include "solver/topoep_workspace.h"

namespace topoep {

// Bytes of workspace one layer's solve needs.
TOPOEP_HOST_DEVICE inline std::size_t topoep_workspace_bytes(const TopoepParams& params) {
  return bind_topoep_workspace(params.shape, params.max_moves, sizeof(topoep_detail::Move), nullptr,
                               nullptr);
}

// Carves `base` (topoep_workspace_bytes() bytes, 8-byte aligned) into `workspace`.
TOPOEP_HOST_DEVICE inline void bind_topoep_workspace(const TopoepParams& params, void* base,
                                                     TopoepWorkspace* workspace) {
  bind_topoep_workspace(params.shape, params.max_moves, sizeof(topoep_detail::Move), base,
                        workspace);
}

// Solves one layer into `out` with `threads` (block_threads.h), each of which calls this with
// the same arguments. `workspace` is bound by bind_topoep_workspace for `params`.
// Preconditions (checked by the host entry points, not here): shapes agree, counts >= 0,
// resident replicas valid, slots_per_rank within Placement's bound.
template <typename Threads>
TOPOEP_HOST_DEVICE inline void topoep_solve_layer(const TopoepParams& params,
                                                  const TopoepLayerInput& input,
                                                  const TopoepWorkspace& workspace,
                                                  const TopoepLayerOutput& out,
                                                  const Threads& threads) {
  topoep_detail::LayerSolve<Threads>(params, input, workspace, threads).solve(out);
}

// The same on one thread.
TOPOEP_HOST_DEVICE inline void topoep_solve_layer(const TopoepParams& params,
                                                  const TopoepLayerInput& input,
                                                  const TopoepWorkspace& workspace,
                                                  const TopoepLayerOutput& out) {
  topoep_solve_layer(params, input, workspace, out, SerialThreads{});
}

}  // namespace topoep
