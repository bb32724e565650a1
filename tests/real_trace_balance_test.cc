// Balance of TopoEP plans on the real routing data in ../shared/traces/ (read in place, never
// copied; every ESFT task, FLAME encoder dump and SGLang statistics file found there): ESFT
// (DeepSeek-V2-Lite) and FLAME-MoE-290M's pretraining routing packed onto 32 ranks and
// DeepSeek-V3 expert shares sampled onto 32 and 64 ranks, S = 1, replica weights free.
// tools/test passes the folder in TOPOEP_SHARED_DIR; without it the tests skip themselves.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "solver/balance_bound.h"
#include "solver/topoep_solver.h"
#include "traces/esft_import.h"
#include "traces/sglang_stats.h"
#include "traces/token_files.h"
#include "traces/token_packing.h"

namespace topoep {
namespace {

std::string shared_dir() {
  const char* dir = std::getenv("TOPOEP_SHARED_DIR");
  return dir == nullptr ? "" : dir;
}

// The entries of `dir` whose names start with `prefix` and end with `suffix` (directories when
// `suffix` is empty), sorted: every such data set the shared folder holds, so
// that the property is held on whatever data is there, not on names this test knows.
std::vector<std::string> shared_entries(const std::string& dir, const std::string& prefix,
                                        const std::string& suffix) {
  std::vector<std::string> found;
  if (suffix.empty()) {
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
      const std::string name = entry.path().filename().string();
      if (entry.is_directory() && name.rfind(prefix, 0) == 0) found.push_back(entry.path());
    }
    std::sort(found.begin(), found.end());
    return found;
  }
  for (const std::string& file : files_in_natural_order(dir, suffix)) {
    if (std::filesystem::path(file).filename().string().rfind(prefix, 0) == 0)
      found.push_back(file);
  }
  return found;
}

// H800 links (topologies/presets/h800-4x8.json) and per-token figures for the model:
// compute = 2 x 3 x hidden x ffn FLOP at 989.4 TFLOP/s x the preset's GEMM efficiency at the
// microbatch's tokens per expert; dispatch = hidden fp8 bytes + one fp32 scale per 128;
// combine = hidden bf16 bytes.
CostParams h800_cost(int hidden, Picoseconds compute_ps) {
  CostParams cost;
  cost.compute_ps_per_token = compute_ps;
  cost.dispatch_bytes_per_token = hidden + hidden / 128 * 4;
  cost.combine_bytes_per_token = 2 * hidden;
  cost.scale_up = LinkCost{160000, 3400000};
  cost.scale_out = LinkCost{48500, 9600000};
  return cost;  // replica weights free: this test measures balance
}

struct BalanceReport {
  std::vector<double> static_ratio, topoep_ratio;
  int violations = 0;
};

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// Every matrix must be balanced (max/mean <= 1.05, or within 1% of the lower bound for this
// S) unless `allowed_misses` > 0; then at most that many may miss, and none by more than 1.06.
void check_balance(const std::string& name, const std::vector<RoutingCounts>& matrices,
                   const TopoepProblem& problem, int allowed_misses = 0) {
  ASSERT_FALSE(matrices.empty()) << name;
  BalanceReport report;
  for (std::size_t i = 0; i < matrices.size(); ++i) {
    const RoutingCounts& counts = matrices[i];
    const LayerPlan result = solve_topoep(problem, counts);
    const double mean = static_cast<double>(counts.total()) / counts.num_ranks();
    const double bound = balance_lower_bound(counts, problem.topology, problem.placement) / mean;
    const double ratio = result.cost.max_mean_load();
    report.static_ratio.push_back(result.static_cost.max_mean_load());
    report.topoep_ratio.push_back(ratio);
    if (ratio > 1.05 && ratio > 1.01 * bound) {
      ++report.violations;
      std::printf("%s matrix %zu: max/mean %.4f, lower bound %.4f\n", name.c_str(), i, ratio,
                  bound);
      EXPECT_LE(ratio, 1.06) << name << " matrix " << i;
    }
    EXPECT_LE(result.cost.ib_dispatch_bytes, result.static_cost.ib_dispatch_bytes)
        << name << " " << i;
    EXPECT_LE(result.cost.times.total, result.static_cost.times.total) << name << " " << i;
  }
  EXPECT_LE(report.violations, allowed_misses) << name;
  std::printf("%-28s %4zu matrices  max/mean median: static %.3f  topoep %.3f  (worst %.3f)\n",
              name.c_str(), matrices.size(), median(report.static_ratio),
              median(report.topoep_ratio),
              *std::max_element(report.topoep_ratio.begin(), report.topoep_ratio.end()));
}

TEST(RealTraceBalance, EsftPackedOntoThirtyTwoRanks) {
  if (shared_dir().empty()) GTEST_SKIP() << "TOPOEP_SHARED_DIR is not set (tools/test sets it)";
  TopoepProblem problem;
  problem.topology = TopologyView{4, 8};
  problem.placement = Placement::contiguous(64, 32, 1);
  // DeepSeek-V2-Lite: hidden 2048, expert FFN 1408, top-6. 64 tokens per rank give 192 tokens
  // per expert: efficiency 0.65 x 192 / 295 = 0.42, so 17.3 MFLOP take 41.6 ns.
  problem.cost = h800_cost(2048, 41600);
  const std::vector<std::string> tasks =
      shared_entries(shared_dir() + "/traces/esft-deepseek-v2-lite", "", "");
  ASSERT_FALSE(tasks.empty());
  for (const std::string& task_dir : tasks) {
    const std::string task = std::filesystem::path(task_dir).filename().string();
    const std::vector<std::string> layer_files =
        shared_entries(task_dir, "expert_weights_", ".txt");
    ASSERT_FALSE(layer_files.empty()) << task_dir;
    std::vector<RoutingCounts> matrices;
    for (const std::string& file : layer_files) {
      const EsftLayer esft = read_esft_layer(file, 64, 6);
      std::vector<ExpertId> stream;
      for (const auto& sequence : esft.sequences)
        stream.insert(stream.end(), sequence.begin(), sequence.end());
      for (RoutingCounts& counts : pack_tokens_contiguous(stream, 6, 64, 32, 64)) {
        matrices.push_back(std::move(counts));
      }
    }
    check_balance("esft " + task + " R=32", matrices, problem);
  }
}

TEST(RealTraceBalance, FlameMoePretrainingRoutingPackedOntoThirtyTwoRanks) {
  if (shared_dir().empty()) GTEST_SKIP() << "TOPOEP_SHARED_DIR is not set (tools/test sets it)";
  // FLAME-MoE-290M during pretraining: 64 experts, top-6, the same 2,048 tokens in each layer
  // file (8 here), priced at DeepSeek-V2-Lite's dimensions (the same 64 experts and top-6), as
  // tools/reproduce_paper does.
  const std::vector<std::string> dumps =
      shared_entries(shared_dir() + "/traces/flame-moe-290m", "encoder", "");
  ASSERT_FALSE(dumps.empty());
  for (const std::string& dump : dumps) {
    const std::vector<std::string> files = files_in_natural_order(dump, ".csv");
    ASSERT_FALSE(files.empty()) << dump;
    // 64 tokens per rank: one microbatch a layer, 192 tokens per expert (41.6 ns a token, as
    // for ESFT above); 16: four microbatches a layer, 48 tokens per expert, efficiency 0.65 x
    // 48 / 295 = 0.106, so 17.3 MFLOP take 165 ns.
    for (const auto& [tokens_per_rank, compute_ps] :
         {std::pair{64, 41600}, std::pair{16, 165000}}) {
      TopoepProblem problem;
      problem.topology = TopologyView{4, 8};
      problem.placement = Placement::contiguous(64, 32, 1);
      problem.cost = h800_cost(2048, compute_ps);
      std::vector<RoutingCounts> matrices;
      for (const std::string& file : files) {
        for (RoutingCounts& counts : pack_tokens_contiguous(read_flame_csv(file, 64, 6).experts, 6,
                                                            64, 32, tokens_per_rank)) {
          matrices.push_back(std::move(counts));
        }
      }
      check_balance("flame-moe " + std::to_string(tokens_per_rank) + " tokens/rank R=32", matrices,
                    problem);
    }
  }
}

TEST(RealTraceBalance, DeepSeekV3SharesSampledOntoThirtyTwoAndSixtyFourRanks) {
  if (shared_dir().empty()) GTEST_SKIP() << "TOPOEP_SHARED_DIR is not set (tools/test sets it)";
  const std::vector<std::string> stats =
      shared_entries(shared_dir() + "/traces/sglang-deepseek-v3-stats", "", ".json");
  ASSERT_FALSE(stats.empty());
  for (const std::string& path : stats) {
    const std::string file = std::filesystem::path(path).stem().string();
    const auto layers = read_sglang_logical_count(path);
    for (const int ranks : {32, 64}) {
      TopoepProblem problem;
      problem.topology = TopologyView{ranks / 8, 8};
      problem.placement = Placement::contiguous(256, ranks, 1);
      // DeepSeek-V3: hidden 7168, expert FFN 2048, top-8; 512 tokens per rank give 512 x R x 8
      // / 256 >= 512 tokens per expert: efficiency 0.65, so 88 MFLOP take 137 ns.
      problem.cost = h800_cost(7168, 137000);
      std::vector<RoutingCounts> matrices;
      for (int layer = 0; layer < static_cast<int>(layers.size()); ++layer) {
        const bool dense = std::all_of(layers[layer].begin(), layers[layer].end(),
                                       [](std::int64_t count) { return count == 0; });
        if (dense) continue;  // DeepSeek-V3's first three
        matrices.push_back(sample_counts_from_shares(layers[layer], ranks, 512, 8, 1000 + layer));
      }
      // With 8 experts and one spare slot per rank on 32 ranks the greedy alone left a layer at
      // 1.055 (every rank with room held a whole small expert); the seeded second run
      // (solver/README.md, step 6) brings every layer within 1.05.
      check_balance("deepseek-v3 " + file + " R=" + std::to_string(ranks), matrices, problem);
    }
  }
}

}  // namespace
}  // namespace topoep
