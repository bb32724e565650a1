#pragma once
// The golden corpus of TopoEP solver inputs: every shape class the solver must handle, built
// from the integer-only generator, so each case is the same bytes on every machine.

#include <string>
#include <vector>

#include "solver/topoep_solver.h"
#include "traces/synthetic_routing.h"

namespace topoep::testing {

struct CorpusCase {
  std::string name;
  TopoepProblem problem;
  RoutingCounts counts;
};

// H800 links with DeepSeek-V3-sized tokens (see sim/ for how real runs derive these); with
// `weights` replicas cost a 44 MB expert transfer, 200 µs of which hide behind dense compute.
inline CostParams corpus_cost(bool weights) {
  CostParams cost;
  cost.compute_ps_per_token = 137000;
  cost.dispatch_bytes_per_token = 7392;
  cost.combine_bytes_per_token = 14336;
  cost.replica_weight_bytes = weights ? 3LL * 7168 * 2048 : 0;
  cost.weight_overlap_ps = 200000000;
  cost.scale_up = LinkCost{160000, 3400000};
  cost.scale_out = LinkCost{48500, 9600000};
  return cost;
}

// `min_tokens`: CostParams::instance_min_tokens (the simulator's H800 curve gives 295).
inline CorpusCase make_case(int experts, int ranks, int slots, int gpus_per_node, RoutingSkew skew,
                            bool weights, std::uint64_t seed, TokenCount min_tokens = 0) {
  static const char* const kSkewNames[] = {"uniform", "zipf", "one", "empty"};
  CorpusCase c;
  c.name = "E" + std::to_string(experts) + "_R" + std::to_string(ranks) + "_S" +
           std::to_string(slots) + "_G" + std::to_string(gpus_per_node) + "_" +
           kSkewNames[static_cast<int>(skew)] + (weights ? "_w" : "") +
           (min_tokens > 0 ? "_m" + std::to_string(min_tokens) : "") + "_s" + std::to_string(seed);
  c.problem.topology = TopologyView{ranks / gpus_per_node, gpus_per_node};
  c.problem.placement = Placement::contiguous(experts, ranks, slots);
  c.problem.cost = corpus_cost(weights);
  c.problem.cost.instance_min_tokens = min_tokens;
  SyntheticRoutingSpec spec;
  spec.num_ranks = ranks;
  spec.num_experts = experts;
  spec.tokens_per_rank = 256;
  spec.top_k = experts >= 64 ? 8 : 2;
  spec.skew = skew;
  spec.seed = seed;
  c.counts = generate_routing(spec);
  return c;
}

// One 8-GPU node, 32 experts, one spare slot, where the greedy spends the slots before the
// room: its plan comes from the seeded second run (solver/README.md, step 6).
inline CorpusCase reseeding_case() {
  CorpusCase c;
  c.name = "reseeding";
  c.problem.topology = TopologyView{1, 8};
  c.problem.placement = Placement::contiguous(32, 8, 1);
  c.problem.cost = corpus_cost(false);
  SyntheticRoutingSpec spec;
  spec.num_ranks = 8;
  spec.num_experts = 32;
  spec.tokens_per_rank = 64;
  spec.top_k = 2;
  spec.seed = 127;
  c.counts = generate_routing(spec);
  return c;
}

// 66 cases: Zipf routing over E in {8, 64, 128, 256}, R in {8, 16, 32, 64, 256} and S in
// {0, 1, 2, 4} on 8-GPU nodes (weights charged when S is 2), uniform routing, all tokens to one
// expert, empty microbatches, a single node, one GPU per node, 72-GPU NVLink domains, and
// instances that cost at least 295 tokens' compute (the GEMM curve's knee).
inline std::vector<CorpusCase> topoep_corpus() {
  std::vector<CorpusCase> corpus;
  const int shapes[][2] = {{8, 8},    {64, 8},   {64, 16},  {64, 32},  {64, 64},  {128, 16},
                           {128, 32}, {128, 64}, {256, 32}, {256, 64}, {256, 256}};
  std::uint64_t seed = 1;
  for (const auto& shape : shapes) {
    for (const int slots : {0, 1, 2, 4}) {
      corpus.push_back(
          make_case(shape[0], shape[1], slots, 8, RoutingSkew::kZipf, slots == 2, seed++));
    }
  }
  corpus.push_back(make_case(64, 32, 1, 8, RoutingSkew::kUniform, false, 101));
  corpus.push_back(make_case(256, 64, 2, 8, RoutingSkew::kUniform, true, 102));
  corpus.push_back(make_case(8, 8, 4, 8, RoutingSkew::kAllToOne, false, 103));
  corpus.push_back(make_case(64, 32, 1, 8, RoutingSkew::kAllToOne, false, 104));
  corpus.push_back(make_case(256, 64, 4, 8, RoutingSkew::kAllToOne, true, 105));
  corpus.push_back(make_case(64, 32, 1, 8, RoutingSkew::kEmpty, false, 106));
  corpus.push_back(make_case(256, 256, 2, 8, RoutingSkew::kEmpty, true, 107));
  corpus.push_back(make_case(128, 16, 2, 16, RoutingSkew::kZipf, false, 108));   // one node
  corpus.push_back(make_case(64, 16, 1, 1, RoutingSkew::kZipf, false, 109));     // 1 GPU/node
  corpus.push_back(make_case(64, 32, 2, 1, RoutingSkew::kZipf, true, 110));      // 1 GPU/node
  corpus.push_back(make_case(144, 144, 1, 72, RoutingSkew::kZipf, false, 111));  // NVL72 x 2
  corpus.push_back(make_case(288, 144, 2, 72, RoutingSkew::kZipf, true, 112));   // NVL72 x 2
  corpus.push_back(make_case(288, 72, 4, 72, RoutingSkew::kZipf, false, 113));   // one NVL72
  corpus.push_back(make_case(256, 64, 1, 8, RoutingSkew::kZipf, true, 114));
  corpus.push_back(make_case(64, 32, 4, 8, RoutingSkew::kUniform, true, 115));
  corpus.push_back(make_case(128, 128, 1, 8, RoutingSkew::kZipf, false, 116));
  corpus.push_back(make_case(8, 8, 2, 8, RoutingSkew::kZipf, true, 117, 295));
  corpus.push_back(make_case(64, 32, 1, 8, RoutingSkew::kZipf, false, 118, 295));
  corpus.push_back(make_case(256, 32, 4, 8, RoutingSkew::kZipf, false, 119, 295));
  corpus.push_back(make_case(256, 64, 2, 8, RoutingSkew::kZipf, true, 120, 295));
  corpus.push_back(make_case(64, 16, 1, 1, RoutingSkew::kZipf, false, 121, 295));    // 1 GPU/node
  corpus.push_back(make_case(288, 144, 2, 72, RoutingSkew::kZipf, true, 122, 295));  // NVL72 x 2
  return corpus;
}

}  // namespace topoep::testing
