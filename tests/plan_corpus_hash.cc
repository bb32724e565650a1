// The wide plan-identity check: one combined hash over thousands of TopoEP plans, to run before
// and after a change that must not move any plan (a speed-up, a refactoring). The 60 golden
// cases (tests/golden) pin each plan of a small corpus; this covers the space around them:
// Zipf routing over E {64, 256}, R {16..128}, S {1, 2, 4}, G {4, 8}, replica weights and the
// backward pass on and off, shuffled home placements, and each plan's next microbatch with its
// replicas resident. With TOPOEP_SHARED_DIR set, also DeepSeek-V3's expert shares
// (../shared/traces) at R {32, 64}, S {1, 2}.
//
//   bazel run -c opt //tests:plan_corpus_hash            # one line per group
//   bazel run -c opt //tests:plan_corpus_hash -- --each  # and one per plan, to diff
//
// `--each` lines read "<case> <plan hash> <predicted ps>", the solver's predicted layer time of
// the plan (TopoepHostSolver::last_predicted()): tests/plan_corpus_compare.py lists, for two
// such outputs, the plans that moved and what their predicted times did.
//
// Deterministic: integer generators and the solver only; the same hashes on every machine.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "solver/plan_encoding.h"
#include "solver/topoep_solver.h"
#include "traces/sglang_stats.h"
#include "traces/splitmix64.h"
#include "traces/synthetic_routing.h"

namespace topoep {
namespace {

CostParams wide_cost(bool weights, bool backward) {
  CostParams cost;
  cost.compute_ps_per_token = 137000;
  cost.dispatch_bytes_per_token = 7392;
  cost.combine_bytes_per_token = 14336;
  cost.replica_weight_bytes = weights ? 3LL * 7168 * 2048 : 0;
  cost.replica_gradient_bytes = weights && backward ? 3LL * 7168 * 2048 * 2 : 0;
  cost.backward_compute_factor = backward ? 2 : 0;
  cost.backward_bytes_per_token = backward ? 14336 : 0;
  cost.weight_overlap_ps = 500000000;
  cost.scale_up = LinkCost{160000, 3400000};
  cost.scale_out = LinkCost{48500, 9600000};
  return cost;
}

// Folds plan hashes in order into one value, and counts them.
class Group {
 public:
  Group(std::string name, bool each) : name_(std::move(name)), each_(each) {}

  // Solves `counts`, then the next microbatch (the counts rotated by one rank and three
  // experts) with the first plan's replicas resident.
  void add(const TopoepProblem& problem, const RoutingCounts& counts, const std::string& tag) {
    TopoepHostSolver solver(problem);
    Plan plan;
    solver.solve(counts, {}, &plan);
    fold(plan_hash(plan), solver.last_predicted().total, tag);
    const int R = counts.num_ranks(), E = counts.num_experts();
    std::vector<TokenCount> next(counts.values().size());
    for (RankId src = 0; src < R; ++src) {
      for (ExpertId e = 0; e < E; ++e) {
        next[static_cast<std::size_t>(src) * E + e] = counts.at((src + 1) % R, (e + 3) % E);
      }
    }
    Plan second;
    solver.solve(RoutingCounts(R, E, next), plan.replica_expert, &second);
    fold(plan_hash(second), solver.last_predicted().total, tag + " resident");
  }

  void print() const {
    std::printf("%-22s %5ld plans, combined %016llx\n", name_.c_str(), plans_,
                static_cast<unsigned long long>(combined_));
  }

 private:
  void fold(std::uint64_t hash, Picoseconds predicted, const std::string& tag) {
    combined_ = combined_ * 1000003 + hash;
    ++plans_;
    if (each_) {
      std::printf("%s %016llx %lld\n", tag.c_str(), static_cast<unsigned long long>(hash),
                  static_cast<long long>(predicted));
    }
  }

  std::string name_;
  bool each_;
  std::uint64_t combined_ = 0;
  long plans_ = 0;
};

TopoepProblem problem_for(int experts, int ranks, int slots, int gpus_per_node, CostParams cost) {
  TopoepProblem problem;
  problem.topology = TopologyView{ranks / gpus_per_node, gpus_per_node};
  problem.placement = Placement::contiguous(experts, ranks, slots);
  problem.cost = cost;
  return problem;
}

RoutingCounts zipf_counts(int experts, int ranks, int tokens_per_rank, std::uint64_t seed) {
  SyntheticRoutingSpec spec;
  spec.num_ranks = ranks;
  spec.num_experts = experts;
  spec.tokens_per_rank = tokens_per_rank;
  spec.top_k = 8;
  spec.seed = seed;
  return generate_routing(spec);
}

void zipf_group(bool each) {
  Group group("zipf", each);
  for (int E : {64, 256}) {
    for (int R : {16, 32, 64, 128}) {
      if (E % R != 0) continue;
      for (int S : {1, 2, 4}) {
        for (int G : {4, 8}) {
          for (int seed = 1; seed <= 6; ++seed) {
            for (bool weights : {false, true}) {
              const bool backward = seed % 2 == 1;
              const std::string tag = "zipf E" + std::to_string(E) + " R" + std::to_string(R) +
                                      " S" + std::to_string(S) + " G" + std::to_string(G) + " s" +
                                      std::to_string(seed) + (weights ? " w" : "");
              group.add(problem_for(E, R, S, G, wide_cost(weights, backward)),
                        zipf_counts(E, R, seed % 3 == 0 ? 512 : 4096, seed * 7 + E + R), tag);
            }
          }
        }
      }
    }
  }
  group.print();
}

// Homes shuffled (Fisher-Yates, SplitMix64): ranks keep E/R experts each, but not in order.
void shuffled_homes_group(bool each) {
  Group group("shuffled homes", each);
  for (int E : {64, 256}) {
    for (int R : {16, 32, 64}) {
      for (int S : {1, 2}) {
        for (int seed = 1; seed <= 4; ++seed) {
          TopoepProblem problem = problem_for(E, R, S, 8, wide_cost(seed % 2, seed % 2));
          std::vector<RankId>& home = problem.placement.home_rank;
          SplitMix64 rng(static_cast<std::uint64_t>(seed));
          for (int i = E - 1; i > 0; --i) {
            std::swap(home[i], home[rng.below(static_cast<std::uint64_t>(i + 1))]);
          }
          const std::string tag = "shuffled E" + std::to_string(E) + " R" + std::to_string(R) +
                                  " S" + std::to_string(S) + " s" + std::to_string(seed);
          group.add(problem, zipf_counts(E, R, 4096, seed * 13 + E + R), tag);
        }
      }
    }
  }
  group.print();
}

void deepseek_shares_group(const std::string& shared_dir, bool each) {
  for (const char* file : {"prefill_in1024", "prefill_in4096"}) {
    const std::string path = shared_dir + "/traces/sglang-deepseek-v3-stats/" + file + ".json";
    if (!std::filesystem::exists(path)) {
      std::printf("%s: not found, skipped\n", path.c_str());
      continue;
    }
    Group group(std::string("shares ") + file, each);
    const std::vector<std::vector<std::int64_t>> layers = read_sglang_logical_count(path);
    for (int ranks : {32, 64}) {
      for (int slots : {1, 2}) {
        for (bool weights : {false, true}) {
          const TopoepProblem problem =
              problem_for(256, ranks, slots, 8, wide_cost(weights, weights));
          for (std::size_t layer = 3; layer < layers.size(); ++layer) {  // 0-2 are dense
            const std::string tag = std::string("shares ") + file + " R" + std::to_string(ranks) +
                                    " S" + std::to_string(slots) + (weights ? " w" : "") + " L" +
                                    std::to_string(layer);
            group.add(problem,
                      sample_counts_from_shares(layers[layer], ranks, 4096, 8, 1000 + layer), tag);
          }
        }
      }
    }
    group.print();
  }
}

}  // namespace
}  // namespace topoep

int main(int argc, char** argv) {
  const bool each = argc > 1 && std::string(argv[1]) == "--each";
  topoep::zipf_group(each);
  topoep::shuffled_homes_group(each);
  if (const char* shared = std::getenv("TOPOEP_SHARED_DIR")) {
    topoep::deepseek_shares_group(shared, each);
  } else {
    std::printf("TOPOEP_SHARED_DIR unset: DeepSeek-V3 shares skipped\n");
  }
  return 0;
}
