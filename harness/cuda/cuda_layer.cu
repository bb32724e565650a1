#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>

#include "harness/cuda/cublas_check.h"
#include "harness/cuda/cuda_layer.h"
#include "harness/synthetic_values.h"
#include "solver/cuda/device_array.h"

namespace topoep {
namespace {

using bf16 = __nv_bfloat16;

void check_nccl(ncclResult_t status, const char* what) {
  if (status != ncclSuccess) {
    throw std::runtime_error(std::string(what) + ": " + ncclGetErrorString(status));
  }
}

using DeviceRows = DeviceArray<bf16>;  // rows of bf16 values

__global__ void silu_times(bf16* gate, const bf16* up, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float g = __bfloat162float(gate[i]);
    gate[i] = __float2bfloat16(g / (1.0f + __expf(-g)) * __bfloat162float(up[i]));
  }
}

}  // namespace

class CudaContext {
 public:
  ~CudaContext() {
    if (cublas != nullptr) cublasDestroy(cublas);
    if (nccl != nullptr) ncclCommDestroy(nccl);
    if (stream != nullptr) cudaStreamDestroy(stream);
  }
  int device = 0;
  ncclComm_t nccl = nullptr;
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
};

std::shared_ptr<CudaContext> make_cuda_context(Comm& comm) {
  auto context = std::make_shared<CudaContext>();
  int devices = 0;
  check_cuda(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  if (devices == 0) throw std::runtime_error("cuda mode: this rank sees no CUDA device");
  // One GPU per rank: Open MPI's node-local rank picks it.
  const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  context->device = (local != nullptr ? std::atoi(local) : comm.rank()) % devices;
  check_cuda(cudaSetDevice(context->device), "cudaSetDevice");
  // Rank 0's NCCL id reaches every rank through MPI.
  ncclUniqueId id;
  std::vector<std::int64_t> words((sizeof id + 7) / 8, 0);
  if (comm.rank() == 0) {
    check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    std::memcpy(words.data(), &id, sizeof id);
  }
  const std::vector<std::int64_t> all = comm.allgather(words);
  std::memcpy(&id, all.data(), sizeof id);
  check_nccl(ncclCommInitRank(&context->nccl, comm.size(), id, comm.rank()), "ncclCommInitRank");
  check_cuda(cudaStreamCreate(&context->stream), "cudaStreamCreate");
  check_cublas(cublasCreate(&context->cublas), "cublasCreate");
  check_cublas(cublasSetStream(context->cublas, context->stream), "cublasSetStream");
  return context;
}

namespace {

class CudaLayer : public LayerExecutor {
 public:
  CudaLayer(std::shared_ptr<CudaContext> context, Comm& comm, const TopologyView& topology,
            const MoeDims& dims)
      : context_(std::move(context)), comm_(comm), topology_(topology), dims_(dims) {}

  void set_home(const Placement& placement) override {
    home_.clear();
    for (ExpertId e = 0; e < placement.num_experts(); ++e) {
      if (placement.home_rank[e] == comm_.rank()) home_.emplace(e, upload_weights(e));
    }
  }

  void keep_replicas(const std::vector<ExpertId>& resident, int slots_per_rank) override {
    std::map<ExpertId, DeviceRows> kept;
    for (int slot = 0; slot < slots_per_rank && !resident.empty(); ++slot) {
      const ExpertId e = resident[static_cast<std::size_t>(comm_.rank()) * slots_per_rank + slot];
      auto it = replicas_.find(e);
      if (e != kNoExpert && it != replicas_.end()) kept.emplace(e, std::move(it->second));
    }
    replicas_ = std::move(kept);
  }

  LayerTimes run(const Plan& plan, const Placement& placement, WeightDelivery delivery,
                 const RoutingCounts& counts, std::int64_t record,
                 std::vector<float>* out) override;

 private:
  DeviceRows upload_weights(ExpertId expert) const {
    const std::vector<float> packed =
        expert_weight_values(expert, dims_.hidden, dims_.ffn, dims_.seed);
    std::vector<bf16> host(packed.size());
    for (std::size_t i = 0; i < packed.size(); ++i) host[i] = __float2bfloat16(packed[i]);
    DeviceRows device(host.size());
    check_cuda(
        cudaMemcpy(device.get(), host.data(), host.size() * sizeof(bf16), cudaMemcpyHostToDevice),
        "cudaMemcpy weights");
    return device;
  }

  const bf16* weights(ExpertId expert) const {
    auto it = home_.find(expert);
    if (it != home_.end()) return it->second.get();
    it = replicas_.find(expert);
    if (it != replicas_.end()) return it->second.get();
    throw std::logic_error("rank " + std::to_string(comm_.rank()) + " holds no weights of expert " +
                           std::to_string(expert));
  }

  // The phase on the stream between two events, after every rank is ready; µs.
  template <typename Phase>
  double timed(Phase phase) {
    check_cuda(cudaStreamSynchronize(context_->stream), "cudaStreamSynchronize");
    comm_.barrier();
    cudaEvent_t start, stop;
    check_cuda(cudaEventCreate(&start), "cudaEventCreate");
    check_cuda(cudaEventCreate(&stop), "cudaEventCreate");
    check_cuda(cudaEventRecord(start, context_->stream), "cudaEventRecord");
    phase();
    check_cuda(cudaEventRecord(stop, context_->stream), "cudaEventRecord");
    check_cuda(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    check_cuda(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    return ms * 1000.0;
  }

  // Row-major C[tokens][out] = A[tokens][in] W[in][out] in bf16, fp32 accumulation.
  void gemm(const bf16* a, const bf16* w, bf16* c, int tokens, int in, int out) {
    const float one = 1.0f, zero = 0.0f;
    check_cublas(cublasGemmEx(context_->cublas, CUBLAS_OP_N, CUBLAS_OP_N, out, tokens, in, &one, w,
                              CUDA_R_16BF, out, a, CUDA_R_16BF, in, &zero, c, CUDA_R_16BF, out,
                              CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                 "cublasGemmEx");
  }

  // Grouped NCCL point-to-point: send[p] rows to p, recv[p] rows from p (row = hidden values).
  void exchange(const DeviceRows& send, const std::vector<std::int64_t>& send_rows,
                const DeviceRows& recv, const std::vector<std::int64_t>& recv_rows) {
    const std::size_t h = static_cast<std::size_t>(dims_.hidden);
    std::size_t send_at = 0, recv_at = 0;
    check_nccl(ncclGroupStart(), "ncclGroupStart");
    for (int p = 0; p < comm_.size(); ++p) {
      if (send_rows[p] > 0) {
        check_nccl(ncclSend(send.get() + send_at * h, send_rows[p] * h, ncclBfloat16, p,
                            context_->nccl, context_->stream),
                   "ncclSend");
      }
      if (recv_rows[p] > 0) {
        check_nccl(ncclRecv(recv.get() + recv_at * h, recv_rows[p] * h, ncclBfloat16, p,
                            context_->nccl, context_->stream),
                   "ncclRecv");
      }
      send_at += static_cast<std::size_t>(send_rows[p]);
      recv_at += static_cast<std::size_t>(recv_rows[p]);
    }
    check_nccl(ncclGroupEnd(), "ncclGroupEnd");
  }

  std::shared_ptr<CudaContext> context_;
  Comm& comm_;
  TopologyView topology_;
  MoeDims dims_;
  std::map<ExpertId, DeviceRows> home_, replicas_;
};

LayerTimes CudaLayer::run(const Plan& plan, const Placement& placement, WeightDelivery delivery,
                          const RoutingCounts& counts, std::int64_t record,
                          std::vector<float>* out) {
  const int me = comm_.rank(), R = comm_.size(), h = dims_.hidden, f = dims_.ffn;
  const std::size_t weight_size = static_cast<std::size_t>(3) * h * f;
  cudaStream_t stream = context_->stream;
  LayerTimes times;

  // Replica weights: ask the homes for the replicas this rank lacks; they send in expert order,
  // or broadcast them (NCCL's pipelined ring: what the cost model's chain prices).
  const ReplicaRequests moves =
      request_replicas(comm_, plan, [&](ExpertId e) { return replicas_.count(e) > 0; });
  const std::vector<ExpertId>& incoming = moves.fetch;
  for (const ExpertId e : incoming) replicas_[e] = DeviceRows(weight_size);
  const std::vector<ExpertId> broadcast = delivery == WeightDelivery::kChainBroadcast
                                              ? broadcast_experts(moves, placement, R)
                                              : std::vector<ExpertId>{};
  times.weights_us = timed([&] {
    check_nccl(ncclGroupStart(), "ncclGroupStart");
    for (const ExpertId e : broadcast) {
      // In place: the home's own weights, the other ranks' new replicas.
      const RankId home = placement.home_rank[e];
      bf16* const buffer = home == me ? home_.at(e).get() : replicas_.at(e).get();
      check_nccl(
          ncclBroadcast(buffer, buffer, weight_size, ncclBfloat16, home, context_->nccl, stream),
          "ncclBroadcast weights");
    }
    if (delivery == WeightDelivery::kFromHome) {
      for (RankId rank = 0; rank < R; ++rank) {
        for (ExpertId e = 0; e < plan.num_experts; ++e) {
          if (!moves.requested(rank, e, plan.num_experts)) continue;
          if (placement.home_rank[e] != me) continue;
          check_nccl(ncclSend(weights(e), weight_size, ncclBfloat16, rank, context_->nccl, stream),
                     "ncclSend weights");
        }
      }
      for (const ExpertId e : incoming) {
        check_nccl(ncclRecv(replicas_[e].get(), weight_size, ncclBfloat16, placement.home_rank[e],
                            context_->nccl, stream),
                   "ncclRecv weights");
      }
    }
    check_nccl(ncclGroupEnd(), "ncclGroupEnd");
  });
  times.replicas_received = static_cast<int>(incoming.size());

  // Dispatch layout from the plan: rows per peer, this rank's rows in canonical route order.
  const std::vector<Segment> segments = plan_segments(plan);
  std::vector<std::int64_t> send_rows(R, 0), recv_rows(R, 0);
  for (const Segment& s : segments) {
    if (s.src == me) send_rows[s.dst] += s.count;
    if (s.dst == me) recv_rows[s.src] += s.count;
  }
  std::vector<std::int64_t> send_begin(R + 1, 0), recv_begin(R + 1, 0);
  for (int p = 0; p < R; ++p) {
    send_begin[p + 1] = send_begin[p] + send_rows[p];
    recv_begin[p + 1] = recv_begin[p] + recv_rows[p];
  }
  std::vector<bf16> host_send(static_cast<std::size_t>(send_begin[R]) * h);
  std::vector<float> activation(h);
  std::vector<std::int64_t> cursor(send_begin.begin(), send_begin.end() - 1);
  for (const Segment& s : segments) {
    if (s.src != me) continue;
    for (TokenCount j = 0; j < s.count; ++j) {
      token_activation(dims_.seed, record, me, s.expert, s.first + j, h, activation.data());
      bf16* row = host_send.data() + static_cast<std::size_t>(cursor[s.dst]++) * h;
      for (int i = 0; i < h; ++i) row[i] = __float2bfloat16(activation[i]);
    }
    if (s.dst != me) {
      (topology_.same_node(me, s.dst) ? times.nvlink_bytes_out : times.ib_bytes_out) +=
          s.count * h * static_cast<std::int64_t>(sizeof(bf16));
    }
  }
  DeviceRows send(host_send.size()), recv(static_cast<std::size_t>(recv_begin[R]) * h),
      result(recv.size()), back(host_send.size());
  check_cuda(cudaMemcpy(send.get(), host_send.data(), host_send.size() * sizeof(bf16),
                        cudaMemcpyHostToDevice),
             "cudaMemcpy activations");  // the gate's output would already be on the GPU: untimed
  times.dispatch_us = timed([&] { exchange(send, send_rows, recv, recv_rows); });

  // Compute: per expert instance here, its rows from every source gathered into one matrix.
  struct Part {
    std::int64_t row;  // in recv / result
    std::int64_t count;
  };
  std::map<ExpertId, std::vector<Part>> instances;
  std::vector<std::int64_t> recv_cursor(recv_begin.begin(), recv_begin.end() - 1);
  std::int64_t largest = 0;
  for (const Segment& s : segments) {
    if (s.dst != me) continue;
    instances[s.expert].push_back({recv_cursor[s.src], s.count});
    recv_cursor[s.src] += s.count;
  }
  for (const auto& [expert, parts] : instances) {
    std::int64_t rows = 0;
    for (const Part& part : parts) rows += part.count;
    largest = std::max(largest, rows);
    times.tokens_processed += rows;
  }
  DeviceRows x(static_cast<std::size_t>(largest) * h), gate(static_cast<std::size_t>(largest) * f),
      up(gate.size()), y(x.size());
  const std::size_t row_bytes = static_cast<std::size_t>(h) * sizeof(bf16);
  times.compute_us = timed([&] {
    for (const auto& [expert, parts] : instances) {
      std::int64_t rows = 0;
      for (const Part& part : parts) {
        check_cuda(cudaMemcpyAsync(x.get() + rows * h, recv.get() + part.row * h,
                                   part.count * row_bytes, cudaMemcpyDeviceToDevice, stream),
                   "cudaMemcpyAsync gather");
        rows += part.count;
      }
      const bf16* w = weights(expert);
      const int n = static_cast<int>(rows);
      gemm(x.get(), w, gate.get(), n, h, f);
      gemm(x.get(), w + static_cast<std::size_t>(h) * f, up.get(), n, h, f);
      const std::int64_t elements = rows * f;
      silu_times<<<static_cast<int>(std::min<std::int64_t>(1024, (elements + 255) / 256)), 256, 0,
                   stream>>>(gate.get(), up.get(), elements);
      check_cuda(cudaGetLastError(), "silu_times");
      gemm(gate.get(), w + static_cast<std::size_t>(2) * h * f, y.get(), n, f, h);
      rows = 0;
      for (const Part& part : parts) {
        check_cuda(cudaMemcpyAsync(result.get() + part.row * h, y.get() + rows * h,
                                   part.count * row_bytes, cudaMemcpyDeviceToDevice, stream),
                   "cudaMemcpyAsync scatter");
        rows += part.count;
      }
    }
  });

  // Combine: results return along the reversed routes.
  times.combine_us = timed([&] { exchange(result, recv_rows, back, send_rows); });
  std::vector<bf16> host_back(back.size());
  check_cuda(cudaMemcpy(host_back.data(), back.get(), host_back.size() * sizeof(bf16),
                        cudaMemcpyDeviceToHost),
             "cudaMemcpy outputs");
  const std::vector<TokenCount> expert_begin = expert_rows(counts, me);
  out->assign(static_cast<std::size_t>(expert_begin.back()) * h, 0.0f);
  std::copy(send_begin.begin(), send_begin.end() - 1, cursor.begin());
  for (const Segment& s : segments) {
    if (s.src != me) continue;
    for (TokenCount j = 0; j < s.count; ++j) {
      const bf16* row = host_back.data() + static_cast<std::size_t>(cursor[s.dst]++) * h;
      float* target =
          out->data() + static_cast<std::size_t>(expert_begin[s.expert] + s.first + j) * h;
      for (int i = 0; i < h; ++i) target[i] = __bfloat162float(row[i]);
    }
  }
  return times;
}

}  // namespace

std::unique_ptr<LayerExecutor> make_cuda_layer(const std::shared_ptr<CudaContext>& context,
                                               Comm& comm, const TopologyView& topology,
                                               const MoeDims& dims) {
  return std::make_unique<CudaLayer>(context, comm, topology, dims);
}

}  // namespace topoep
