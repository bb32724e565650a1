#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/cuda/gpu_microbench.h"
#include "solver/cuda/topoep_cuda.h"
#include "traces/synthetic_routing.h"

namespace topoep {
namespace {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

void check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string(what) + ": cuBLAS status " + std::to_string(status));
  }
}

float median(std::vector<float> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// Median time of `body` over 20 runs after 3 warm-ups, in µs, by CUDA events on `stream`.
template <typename Body>
float time_us(cudaStream_t stream, Body body) {
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  std::vector<float> times;
  for (int i = 0; i < 23; ++i) {
    check(cudaEventRecord(start, stream), "cudaEventRecord");
    body();
    check(cudaEventRecord(stop, stream), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    if (i >= 3) times.push_back(ms * 1000.0f);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return median(times);
}

// The device solve of `layers` copies of one seeded layer in one launch.
float solve_us(const CostParams& cost, int experts, int ranks, int slots, int layers,
               cudaStream_t stream) {
  SyntheticRoutingSpec spec;
  spec.num_ranks = ranks;
  spec.num_experts = experts;
  spec.tokens_per_rank = 4096;
  spec.top_k = 8;
  spec.seed = 42;
  const RoutingCounts counts = generate_routing(spec);
  TopoepProblem problem;
  problem.topology = TopologyView{ranks / 8, 8};
  problem.placement = Placement::contiguous(experts, ranks, slots);
  problem.cost = cost;
  const TopoepParams params = topoep_params_for(problem);
  const std::size_t stride = device_workspace_stride(params);
  std::vector<TokenCount> host_counts;
  for (int l = 0; l < layers; ++l) {
    host_counts.insert(host_counts.end(), counts.values().begin(), counts.values().end());
  }
  void *d_counts, *d_home, *d_workspace, *d_replicas, *d_routes, *d_num_routes, *d_moves;
  check(cudaMalloc(&d_counts, host_counts.size() * sizeof(TokenCount)), "cudaMalloc");
  check(cudaMalloc(&d_home, experts * sizeof(RankId)), "cudaMalloc");
  check(cudaMalloc(&d_workspace, stride * layers), "cudaMalloc");
  check(cudaMalloc(&d_replicas,
                   static_cast<std::size_t>(layers) * ranks * slots * sizeof(ExpertId) + 8),
        "cudaMalloc");
  check(cudaMalloc(&d_routes, static_cast<std::size_t>(layers) * params.shape.route_capacity() *
                                  sizeof(Route)),
        "cudaMalloc");
  check(cudaMalloc(&d_num_routes, layers * sizeof(std::int64_t)), "cudaMalloc");
  check(cudaMalloc(&d_moves, layers * sizeof(std::int32_t)), "cudaMalloc");
  check(cudaMemcpy(d_counts, host_counts.data(), host_counts.size() * sizeof(TokenCount),
                   cudaMemcpyHostToDevice),
        "cudaMemcpy");
  check(cudaMemcpy(d_home, problem.placement.home_rank.data(), experts * sizeof(RankId),
                   cudaMemcpyHostToDevice),
        "cudaMemcpy");
  const DeviceLayerBatch batch{static_cast<const TokenCount*>(d_counts),
                               static_cast<const RankId*>(d_home),
                               nullptr,
                               d_workspace,
                               static_cast<ExpertId*>(d_replicas),
                               static_cast<Route*>(d_routes),
                               static_cast<std::int64_t*>(d_num_routes),
                               static_cast<std::int32_t*>(d_moves)};
  const float us = time_us(stream, [&] {
    check(launch_topoep_layers(params, layers, batch, stream), "launch_topoep_layers");
  });
  for (void* p : {d_counts, d_home, d_workspace, d_replicas, d_routes, d_num_routes, d_moves})
    cudaFree(p);
  return us;
}

}  // namespace

void run_gpu_microbench(const CostParams& cost, int hidden, int ffn, const std::string& out_dir) {
  cudaStream_t stream;
  check(cudaStreamCreate(&stream), "cudaStreamCreate");
  std::string solve = "experts,ranks,slots,layers,us_per_launch,us_per_layer\n";
  const int shapes[][3] = {{64, 32, 1}, {256, 32, 1}, {256, 64, 1}, {256, 256, 2}};
  for (const auto& shape : shapes) {
    for (const int layers : {1, 58}) {
      const float us = solve_us(cost, shape[0], shape[1], shape[2], layers, stream);
      char line[128];
      std::snprintf(line, sizeof line, "%d,%d,%d,%d,%.3f,%.3f\n", shape[0], shape[1], shape[2],
                    layers, us, us / layers);
      solve += line;
    }
  }

  cublasHandle_t cublas;
  check(cublasCreate(&cublas), "cublasCreate");
  check(cublasSetStream(cublas, stream), "cublasSetStream");
  const int max_tokens = 16384;
  __nv_bfloat16 *x, *wg, *wu, *wd, *g, *u, *y;
  const std::size_t b = sizeof(__nv_bfloat16);
  check(cudaMalloc(&x, b * max_tokens * hidden), "cudaMalloc");
  check(cudaMalloc(&wg, b * hidden * ffn), "cudaMalloc");
  check(cudaMalloc(&wu, b * hidden * ffn), "cudaMalloc");
  check(cudaMalloc(&wd, b * ffn * hidden), "cudaMalloc");
  check(cudaMalloc(&g, b * max_tokens * ffn), "cudaMalloc");
  check(cudaMalloc(&u, b * max_tokens * ffn), "cudaMalloc");
  check(cudaMalloc(&y, b * max_tokens * hidden), "cudaMalloc");
  const float one = 1.0f, zero = 0.0f;
  // Column-major cuBLAS on row-major data: C^T = B^T A^T, so (m, n, k) = (out cols, tokens, in).
  auto gemm = [&](const __nv_bfloat16* a, const __nv_bfloat16* w, __nv_bfloat16* c, int tokens,
                  int in, int out) {
    check(cublasGemmEx(cublas, CUBLAS_OP_N, CUBLAS_OP_N, out, tokens, in, &one, w, CUDA_R_16BF, out,
                       a, CUDA_R_16BF, in, &zero, c, CUDA_R_16BF, out, CUBLAS_COMPUTE_32F,
                       CUBLAS_GEMM_DEFAULT),
          "cublasGemmEx");
  };
  std::string gemms = "tokens,flop,time_us\n";
  for (int tokens = 1; tokens <= max_tokens; tokens *= 2) {
    const float us = time_us(stream, [&] {
      gemm(x, wg, g, tokens, hidden, ffn);
      gemm(x, wu, u, tokens, hidden, ffn);
      gemm(g, wd, y, tokens, ffn, hidden);  // the activation's cost is not a GEMM's
    });
    char line[96];
    std::snprintf(line, sizeof line, "%d,%.0f,%.3f\n", tokens, 6.0 * hidden * ffn * tokens, us);
    gemms += line;
  }
  for (void* p : {static_cast<void*>(x), static_cast<void*>(wg), static_cast<void*>(wu),
                  static_cast<void*>(wd), static_cast<void*>(g), static_cast<void*>(u),
                  static_cast<void*>(y)}) {
    cudaFree(p);
  }
  cublasDestroy(cublas);
  cudaStreamDestroy(stream);
  for (const auto& [name, text] : {std::make_pair(std::string("/solve_latency.csv"), solve),
                                   std::make_pair(std::string("/gemm_samples.csv"), gemms)}) {
    std::FILE* file = std::fopen((out_dir + name).c_str(), "w");
    if (file == nullptr) throw std::runtime_error("cannot write " + out_dir + name);
    std::fputs(text.c_str(), file);
    std::fclose(file);
  }
}

}  // namespace topoep
