#pragma once
// The harness's cuda mode: one MoE layer on this rank's GPU. NCCL moves replica weights and
// dispatches/combines tokens (grouped point-to-point sends and receives), cuBLAS runs each
// expert instance's gate/up/down GEMMs in bf16 at the model's real dimensions, and CUDA events
// time every phase. MPI (the Comm) carries only control: the NCCL id, barriers, phase maxima.
//
// Built only with --config=cuda. Not yet run on a GPU (no GPU machine was lent while writing
// it): harness/README.md says what to check first.

#include <memory>

#include "harness/comm.h"
#include "harness/layer_executor.h"

namespace topoep {

// One GPU per rank (the node-local rank picks it), an NCCL communicator over all ranks, a
// stream and a cuBLAS handle, shared by every layer of the run.
class CudaContext;

// Collective: every rank calls it. Throws std::runtime_error naming the failing call.
std::shared_ptr<CudaContext> make_cuda_context(Comm& comm);

std::unique_ptr<LayerExecutor> make_cuda_layer(const std::shared_ptr<CudaContext>& context,
                                               Comm& comm, const TopologyView& topology,
                                               const MoeDims& dims);

}  // namespace topoep
