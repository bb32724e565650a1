#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/cuda/cublas_check.h"
#include "harness/cuda/gpu_microbench.h"
#include "solver/cuda/device_array.h"
#include "solver/cuda/topoep_cuda.h"
#include "traces/synthetic_routing.h"

namespace topoep {
namespace {

float median(std::vector<float> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// Median time of `body` over 20 runs after 3 warm-ups, in µs, by CUDA events on `stream`.
template <typename Body>
float time_us(cudaStream_t stream, Body body) {
  cudaEvent_t start, stop;
  check_cuda(cudaEventCreate(&start), "cudaEventCreate");
  check_cuda(cudaEventCreate(&stop), "cudaEventCreate");
  std::vector<float> times;
  for (int i = 0; i < 23; ++i) {
    check_cuda(cudaEventRecord(start, stream), "cudaEventRecord");
    body();
    check_cuda(cudaEventRecord(stop, stream), "cudaEventRecord");
    check_cuda(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    check_cuda(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    if (i >= 3) times.push_back(ms * 1000.0f);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return median(times);
}

// Where one layer's device solve spends its time: each phase's clock cycles
// (TopoepLayerOutput::phase_cycles) of the last timed launch, in µs at the GPU's peak clock.
struct SolvePhases {
  double us[kSolvePhases] = {0, 0, 0, 0};
};

// The device solve of `layers` in one launch, from device-resident counts; the first layer's
// phases into `phases`.
float solve_us(const TopoepProblem& problem, const std::vector<RoutingCounts>& layers,
               cudaStream_t stream, SolvePhases* phases) {
  const TopoepParams params = topoep_params_for(problem);
  const int num_layers = static_cast<int>(layers.size());
  std::vector<TokenCount> host_counts;
  for (const RoutingCounts& counts : layers) {
    host_counts.insert(host_counts.end(), counts.values().begin(), counts.values().end());
  }
  DeviceLayerBuffers buffers(params, problem.placement.home_rank, num_layers);
  buffers.upload_counts(host_counts, stream);
  DeviceArray<std::int64_t> cycles(static_cast<std::size_t>(num_layers) * kSolvePhases);
  DeviceLayerBatch batch = buffers.batch(false);
  batch.phase_cycles = cycles.get();
  const float us = time_us(stream, [&] {
    check_cuda(launch_topoep_layers(params, num_layers, batch, stream), "launch_topoep_layers");
  });
  std::int64_t first[kSolvePhases];
  check_cuda(cudaMemcpy(first, cycles.get(), sizeof first, cudaMemcpyDeviceToHost),
             "cudaMemcpy phase_cycles");
  int device = 0, clock_khz = 0;
  check_cuda(cudaGetDevice(&device), "cudaGetDevice");
  check_cuda(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device),
             "cudaDeviceGetAttribute clock rate");
  for (int i = 0; i < kSolvePhases; ++i) phases->us[i] = first[i] / (clock_khz * 1e-3);
  return us;
}

// `layers` copies of one seeded Zipf layer of (experts, ranks, slots) on nodes of 8 GPUs.
float zipf_solve_us(const CostParams& cost, int experts, int ranks, int slots, int layers,
                    cudaStream_t stream, SolvePhases* phases) {
  SyntheticRoutingSpec spec;
  spec.num_ranks = ranks;
  spec.num_experts = experts;
  spec.tokens_per_rank = 4096;
  spec.top_k = 8;
  spec.seed = 42;
  TopoepProblem problem;
  problem.topology = TopologyView{ranks / 8, 8};
  problem.placement = Placement::contiguous(experts, ranks, slots);
  problem.cost = cost;
  return solve_us(problem, std::vector<RoutingCounts>(layers, generate_routing(spec)), stream,
                  phases);
}

// Reads and writes every 16-byte word once, as an elementwise kernel does.
__global__ void copy_words(const uint4* __restrict__ from, uint4* __restrict__ to,
                           std::size_t words) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < words;
       i += stride) {
    to[i] = from[i];
  }
}

// "bytes,time_us" rows: the copy kernel's median time over buffers of 1 MB to 256 MB, bytes
// counting each byte read and written.
std::string hbm_samples(cudaStream_t stream) {
  constexpr std::size_t kMaxBytes = std::size_t{256} << 20;
  const DeviceArray<uint4> from(kMaxBytes / sizeof(uint4)), to(kMaxBytes / sizeof(uint4));
  int device = 0, sms = 0;
  check_cuda(cudaGetDevice(&device), "cudaGetDevice");
  check_cuda(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device),
             "cudaDeviceGetAttribute multiprocessors");
  std::string rows = "bytes,time_us\n";
  for (std::size_t bytes = std::size_t{1} << 20; bytes <= kMaxBytes; bytes *= 4) {
    const std::size_t words = bytes / sizeof(uint4);
    const float us = time_us(stream, [&] {
      copy_words<<<sms * 8, 256, 0, stream>>>(from.get(), to.get(), words);
      check_cuda(cudaGetLastError(), "copy_words");
    });
    char line[96];
    std::snprintf(line, sizeof line, "%zu,%.3f\n", 2 * bytes, us);
    rows += line;
  }
  return rows;
}

// Writes `text` to out_dir + name.
void write_text(const std::string& out_dir, const std::string& name, const std::string& text) {
  std::FILE* file = std::fopen((out_dir + name).c_str(), "w");
  if (file == nullptr) throw std::runtime_error("cannot write " + out_dir + name);
  std::fputs(text.c_str(), file);
  std::fclose(file);
}

}  // namespace

void run_gpu_microbench(const CostParams& cost, int hidden, int ffn, const std::string& out_dir,
                        const OwnRouting* own) {
  cudaStream_t stream;
  check_cuda(cudaStreamCreate(&stream), "cudaStreamCreate");
  if (own != nullptr) {
    SolvePhases phases;
    const float us = solve_us(own->problem, own->layers, stream, &phases);
    const int layers = static_cast<int>(own->layers.size());
    char line[256];
    std::snprintf(line, sizeof line, "%d,%d,%d,%d,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f\n",
                  own->problem.placement.num_experts(), own->problem.placement.num_ranks,
                  own->problem.placement.slots_per_rank, layers, us, us / layers, phases.us[0],
                  phases.us[1], phases.us[2], phases.us[3]);
    write_text(out_dir, "/own_routing_solve.csv",
               std::string("experts,ranks,slots,layers,us_per_launch,us_per_layer,"
                           "static_start_us,search_us,instances_us,routes_us\n") +
                   line);
  }
  std::string solve = "experts,ranks,slots,layers,us_per_launch,us_per_layer\n";
  std::string phases_csv = "experts,ranks,slots,static_start_us,search_us,instances_us,routes_us\n";
  const int shapes[][3] = {{64, 32, 1}, {256, 32, 1}, {256, 64, 1}, {256, 256, 2}};
  for (const auto& shape : shapes) {
    for (const int layers : {1, 58}) {
      SolvePhases phases;
      const float us = zipf_solve_us(cost, shape[0], shape[1], shape[2], layers, stream, &phases);
      char line[160];
      std::snprintf(line, sizeof line, "%d,%d,%d,%d,%.3f,%.3f\n", shape[0], shape[1], shape[2],
                    layers, us, us / layers);
      solve += line;
      if (layers != 1) continue;
      std::snprintf(line, sizeof line, "%d,%d,%d,%.3f,%.3f,%.3f,%.3f\n", shape[0], shape[1],
                    shape[2], phases.us[0], phases.us[1], phases.us[2], phases.us[3]);
      phases_csv += line;
    }
  }

  cublasHandle_t cublas;
  check_cublas(cublasCreate(&cublas), "cublasCreate");
  check_cublas(cublasSetStream(cublas, stream), "cublasSetStream");
  const int max_tokens = 16384;
  using Bf16Array = DeviceArray<__nv_bfloat16>;
  const std::size_t rows = max_tokens;
  const Bf16Array x(rows * hidden), wg(static_cast<std::size_t>(hidden) * ffn),
      wu(static_cast<std::size_t>(hidden) * ffn), wd(static_cast<std::size_t>(ffn) * hidden),
      g(rows * ffn), u(rows * ffn), y(rows * hidden);
  const float one = 1.0f, zero = 0.0f;
  // Column-major cuBLAS on row-major data: C^T = B^T A^T, so (m, n, k) = (out cols, tokens, in).
  auto gemm = [&](const __nv_bfloat16* a, const __nv_bfloat16* w, __nv_bfloat16* c, int tokens,
                  int in, int out) {
    check_cublas(cublasGemmEx(cublas, CUBLAS_OP_N, CUBLAS_OP_N, out, tokens, in, &one, w,
                              CUDA_R_16BF, out, a, CUDA_R_16BF, in, &zero, c, CUDA_R_16BF, out,
                              CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                 "cublasGemmEx");
  };
  std::string gemms = "tokens,flop,time_us\n";
  for (int tokens = 1; tokens <= max_tokens; tokens *= 2) {
    const float us = time_us(stream, [&] {
      gemm(x.get(), wg.get(), g.get(), tokens, hidden, ffn);
      gemm(x.get(), wu.get(), u.get(), tokens, hidden, ffn);
      gemm(g.get(), wd.get(), y.get(), tokens, ffn,
           hidden);  // the activation's cost is not a GEMM's
    });
    char line[96];
    std::snprintf(line, sizeof line, "%d,%.0f,%.3f\n", tokens, 6.0 * hidden * ffn * tokens, us);
    gemms += line;
  }
  cublasDestroy(cublas);
  const std::string hbm = hbm_samples(stream);
  cudaStreamDestroy(stream);
  write_text(out_dir, "/solve_latency.csv", solve);
  write_text(out_dir, "/solve_phases.csv", phases_csv);
  write_text(out_dir, "/gemm_samples.csv", gemms);
  write_text(out_dir, "/hbm_samples.csv", hbm);
}

}  // namespace topoep
