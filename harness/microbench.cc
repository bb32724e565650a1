#include "harness/microbench.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "common/atomic_file.h"
#include "common/median.h"

namespace topoep {
namespace {

constexpr int kRepeats = 5;

// One transfer from `from` to `to` (all other pairs empty), the slowest rank's time.
double transfer_us(Comm& comm, int from, int to, std::size_t floats) {
  std::vector<std::vector<float>> send(comm.size());
  if (comm.rank() == from) send[to].assign(floats, 1.0f);
  comm.barrier();
  const double start = comm.now_us();
  comm.alltoallv(send);
  return comm.max(comm.now_us() - start);
}

}  // namespace

void run_microbench(Comm& comm, const TopologyView& topology, const MoeDims& dims,
                    const std::string& out_dir) {
  std::string links = "link,bytes,time_us\n";
  std::vector<std::pair<std::string, int>> pairs;
  if (topology.gpus_per_node >= 2) pairs.push_back({"nvlink", 1});
  if (topology.num_nodes >= 2) pairs.push_back({"ib", topology.gpus_per_node});
  for (const auto& [link, to] : pairs) {
    for (std::size_t floats = 256; floats <= (1u << 20); floats *= 4) {
      std::vector<double> times;
      for (int i = 0; i < kRepeats; ++i) times.push_back(transfer_us(comm, 0, to, floats));
      char line[96];
      std::snprintf(line, sizeof line, "%s,%zu,%.3f\n", link.c_str(), floats * sizeof(float),
                    median(times));
      links += line;
    }
  }
  std::string gemms = "tokens,flop,time_us\n";
  if (comm.rank() == 0) {
    const ExpertWeights weights = make_expert_weights(0, dims.hidden, dims.ffn, dims.seed);
    for (int tokens = 1; tokens <= 2048; tokens *= 2) {
      RowMatrix x = RowMatrix::Random(tokens, dims.hidden);
      std::vector<double> times;
      for (int i = 0; i < kRepeats; ++i) {
        const double start = comm.now_us();
        const RowMatrix y = expert_forward(weights, x);
        times.push_back(comm.now_us() - start + 0.0 * y(0, 0));
      }
      char line[96];
      std::snprintf(line, sizeof line, "%d,%.0f,%.3f\n", tokens,
                    6.0 * dims.hidden * dims.ffn * tokens, median(times));
      gemms += line;
    }
    // Memory bandwidth: one copy reads and writes each byte (the memory-bound kernels' pattern).
    std::string memory = "bytes,time_us\n";
    for (std::size_t floats = 1u << 18; floats <= (1u << 24); floats *= 4) {
      const std::vector<float> from(floats, 1.0f);
      std::vector<float> to(floats);
      std::vector<double> times;
      for (int i = 0; i < kRepeats; ++i) {
        const double start = comm.now_us();
        std::copy(from.begin(), from.end(), to.begin());
        times.push_back(comm.now_us() - start + 0.0 * to[floats / 2]);
      }
      char line[96];
      std::snprintf(line, sizeof line, "%zu,%.3f\n", 2 * floats * sizeof(float), median(times));
      memory += line;
    }
    std::filesystem::create_directories(out_dir);
    AtomicFile link_file(out_dir + "/link_samples.csv"), gemm_file(out_dir + "/gemm_samples.csv"),
        hbm_file(out_dir + "/hbm_samples.csv");
    link_file.write(links);
    gemm_file.write(gemms);
    hbm_file.write(memory);
    commit_all({&link_file, &gemm_file, &hbm_file});
  }
  comm.barrier();
}

}  // namespace topoep
