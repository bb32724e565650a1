// DeepEP's dispatch traffic (sim/deepep_dispatch.h): the estimate's closed forms, the paths a
// token takes (IB to the GPU of its source's local index, then NVLink), and the estimate against
// the true distinct sends of real token-level routing in ../shared/traces/.

#include "sim/deepep_dispatch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <numeric>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "traces/esft_import.h"
#include "traces/splitmix64.h"
#include "traces/token_files.h"

namespace topoep {
namespace {

// The token link counters of one source's instances: {nvlink out, nvlink in, ib out, ib in}.
struct Counters {
  std::vector<TokenCount> nvlink_out, nvlink_in, ib_out, ib_in;
};

Counters counters_of(DeepepTraffic& traffic, int ranks) {
  PlanCost cost = plan_cost_detail::empty_plan_cost(ranks);
  traffic.apply(CostParams{}, cost);
  return {cost.nvlink_tokens_out, cost.nvlink_tokens_in, cost.ib_tokens_out, cost.ib_tokens_in};
}

TEST(DeepepDispatch, DistinctTokensAreTheSourcesTokensTimesTheChanceOfAHit) {
  EXPECT_EQ(expected_distinct_tokens(100, 1.0), 0);
  EXPECT_EQ(expected_distinct_tokens(100, 0.0), 100);
  EXPECT_EQ(expected_distinct_tokens(100, 0.25), 75);
  EXPECT_EQ(expected_distinct_tokens(3, 0.5), 2);  // 1.5 rounds away from zero
  EXPECT_EQ(expected_distinct_tokens(0, 0.0), 0);
}

TEST(DeepepDispatch, OneInstanceOnANodeSendsEachOfItsTokensOnce) {
  DeepepTraffic traffic(TopologyView{2, 1}, {100, 100});
  traffic.add_instance(0, 1, 30);
  EXPECT_EQ(traffic.ib_sent(), 30);
  EXPECT_EQ(traffic.nvlink_sent(), 0);
}

// Two experts on one remote GPU, each picked by half of the source's 100 tokens: under
// independent picks a quarter of the tokens pick both, so 75 tokens cross, not 100.
TEST(DeepepDispatch, ExpertsSharingANodeShareTheirTokensSends) {
  DeepepTraffic half(TopologyView{2, 1}, {100, 100});
  half.add_instance(0, 1, 50);
  half.add_instance(0, 1, 50);
  EXPECT_EQ(half.ib_sent(), 75);
  // Every token picked both: each crosses once.
  DeepepTraffic both(TopologyView{2, 1}, {100, 100});
  both.add_instance(0, 1, 100);
  both.add_instance(0, 1, 100);
  EXPECT_EQ(both.ib_sent(), 100);
}

// 2 nodes x 2 GPUs. Rank 1 (node 0, local GPU 1) sends 40 tokens to rank 2 (node 1, local 0):
// over IB to rank 3, the GPU of its local index on node 1, which forwards them over NVLink.
TEST(DeepepDispatch, ARemoteGpuIsReachedThroughTheGpuOfTheSourcesLocalIndex) {
  DeepepTraffic traffic(TopologyView{2, 2}, {100, 100, 100, 100});
  traffic.add_instance(1, 2, 40);
  const Counters c = counters_of(traffic, 4);
  EXPECT_EQ(c.ib_out, (std::vector<TokenCount>{0, 40, 0, 0}));
  EXPECT_EQ(c.ib_in, (std::vector<TokenCount>{0, 0, 0, 40}));
  EXPECT_EQ(c.nvlink_out, (std::vector<TokenCount>{0, 0, 0, 40}));
  EXPECT_EQ(c.nvlink_in, (std::vector<TokenCount>{0, 0, 40, 0}));
}

// To the relay itself nothing is forwarded; inside the source's node tokens go straight over
// NVLink; tokens for the source's own GPU cross nothing.
TEST(DeepepDispatch, TheRelaysOwnTokensAndTheSourcesNodeNeedNoForward) {
  DeepepTraffic traffic(TopologyView{2, 2}, {100, 100, 100, 100});
  traffic.add_instance(0, 0, 10);  // its own GPU
  traffic.add_instance(0, 1, 20);  // its node
  traffic.add_instance(0, 2, 30);  // node 1, local 0: the relay
  const Counters c = counters_of(traffic, 4);
  EXPECT_EQ(c.nvlink_out, (std::vector<TokenCount>{20, 0, 0, 0}));
  EXPECT_EQ(c.nvlink_in, (std::vector<TokenCount>{0, 20, 0, 0}));
  EXPECT_EQ(c.ib_out, (std::vector<TokenCount>{30, 0, 0, 0}));
  EXPECT_EQ(c.ib_in, (std::vector<TokenCount>{0, 0, 30, 0}));
}

// With top-1 and one GPU per node every assignment is its own token: DeepEP sends what the
// per-assignment all-to-all does.
TEST(DeepepDispatch, TopOneOnSingleGpuNodesSendsEveryAssignment) {
  DeepepTraffic traffic(TopologyView{3, 1}, {60, 60, 60});
  const std::vector<std::vector<TokenCount>> to = {{20, 25, 15}, {0, 60, 0}, {30, 0, 30}};
  TokenCount remote = 0;
  for (RankId src = 0; src < 3; ++src) {
    for (RankId dst = 0; dst < 3; ++dst) {
      traffic.add_instance(src, dst, to[src][dst]);
      if (src != dst) remote += to[src][dst];
    }
  }
  EXPECT_EQ(traffic.ib_sent(), remote);
}

TEST(DeepepDispatch, ASourceMetAgainAfterAnotherIsRefused) {
  DeepepTraffic traffic(TopologyView{2, 1}, {10, 10});
  traffic.add_instance(0, 1, 5);
  traffic.add_instance(1, 0, 5);
  EXPECT_THROW(traffic.add_instance(0, 1, 5), std::logic_error);
}

TEST(DeepepDispatch, MoreAssignmentsThanTokensReachEveryToken) {
  DeepepTraffic traffic(TopologyView{2, 1}, {10, 10});
  traffic.add_instance(0, 1, 25);  // counts that break top-k
  EXPECT_EQ(traffic.ib_sent(), 10);
}

// 100 tokens, top-2, 4 experts in 2 groups of 2, a token's picks from 1 group. Group 0 holds 120
// assignments: T_0 = min(100, 120 x 1 / 2) = 60 tokens choose it, 2 picks each; group 1's 80,
// 40 tokens. A node holding all of a group's instances gets every token that chose it: 60 and
// 40, 100 sends for 100 tokens each of which reaches one node. Independent picks would send 84
// (1 - 0.4 x 0.4 of 100) and 80.
TEST(DeepepDispatch, ANodeHoldingAWholeGroupGetsTheTokensThatChoseIt) {
  const RoutingCounts counts(3, 4, {60, 60, 80, 0, 0, 0, 0, 0, 0, 0, 0, 0});
  DeepepTraffic limited(TopologyView{3, 1}, counts, 2, ExpertGroups{2, 1});
  limited.add_instance(0, 1, 60, 0);
  limited.add_instance(0, 1, 60, 1);
  limited.add_instance(0, 2, 80, 2);
  EXPECT_EQ(limited.ib_sent(), 60 + 40);
  DeepepTraffic independent(TopologyView{3, 1}, counts, 2, ExpertGroups{2, 2});  // not limited
  independent.add_instance(0, 1, 60, 0);
  independent.add_instance(0, 1, 60, 1);
  independent.add_instance(0, 2, 80, 2);
  EXPECT_EQ(independent.ib_sent(), 84 + 80);
}

// Group 0's four experts on four nodes, 30 of its 120 assignments each: the 60 tokens that
// chose it pick 2 of them each, so each expert, and its node, gets 30 of them. The estimate's
// conditioned picks (p_i = 0.456, none of the four picked 0.087) give 30.0 a node.
TEST(DeepepDispatch, AChosenGroupsPicksSpreadOverItsInstances) {
  const RoutingCounts counts(5, 8, {30, 30, 30, 30, 80, 0, 0, 0,  //
                                    0,  0,  0,  0,  0,  0, 0, 0,  //
                                    0,  0,  0,  0,  0,  0, 0, 0,  //
                                    0,  0,  0,  0,  0,  0, 0, 0,  //
                                    0,  0,  0,  0,  0,  0, 0, 0});
  DeepepTraffic traffic(TopologyView{5, 1}, counts, 2, ExpertGroups{2, 1});
  for (ExpertId e = 0; e < 4; ++e) traffic.add_instance(0, 1 + e, 30, e);
  EXPECT_EQ(traffic.ib_sent(), 4 * 30);
  EXPECT_THROW(DeepepTraffic(TopologyView{3, 1}, RoutingCounts(3, 3, std::vector<TokenCount>(9)), 2,
                             ExpertGroups{2, 1}),
               std::logic_error);
}

// What DeepEP truly sends for one token of `src` whose experts lie on `gpus_hit`: once over IB
// to each other node (to the GPU of its source's local index there), and over NVLink to each GPU
// that is not the relay of its node (in its own node, the source itself). Added to `ib` and
// `nvlink`.
void add_token_sends(const TopologyView& view, RankId src, const std::set<RankId>& gpus_hit,
                     double& ib, double& nvlink) {
  const int src_node = view.node_of(src);
  std::set<int> nodes_hit;
  for (const RankId dst : gpus_hit) {
    const int node = view.node_of(dst);
    const RankId relay =
        node == src_node ? src : node * view.gpus_per_node + (src - src_node * view.gpus_per_node);
    if (node != src_node) nodes_hit.insert(node);
    if (dst != relay) nvlink += 1;
  }
  ib += static_cast<double>(nodes_hit.size());
}

// A token-level gate of DeepSeek-V3's kind on 8 nodes of 8 GPUs: 256 experts in 8 groups of 32
// (group g homed on node g), top-8 from at most 4 groups. Each expert has a popularity (a
// normal draw, sigma `skew`); each token scores every expert by popularity plus unit normal
// noise, ranks the groups by their two best scores and picks the 8 best experts of the best 4.
// Returns {true sends, estimate with the groups, estimate without} over IB and over NVLink,
// with `replicated` experts each also served by a replica 3 nodes away that takes every other
// token's pick.
struct GateSends {
  double ib_true = 0, ib_limited = 0, ib_independent = 0;
  double nvlink_true = 0, nvlink_limited = 0, nvlink_independent = 0;
};

GateSends gate_sends(double skew, int replicated, std::uint64_t seed) {
  const int nodes = 8, gpus = 8, ranks = nodes * gpus, experts = 256, groups = 8, per_group = 32;
  const int top_k = 8, chosen_groups = 4, tokens = 256, per_gpu = experts / ranks;
  const TopologyView view{nodes, gpus};
  SplitMix64 random(seed);
  std::vector<double> popularity(experts);
  for (double& p : popularity) p = skew * random.normal();
  // The most popular experts get replicas.
  std::vector<ExpertId> by_popularity(experts);
  std::iota(by_popularity.begin(), by_popularity.end(), 0);
  std::sort(by_popularity.begin(), by_popularity.end(),
            [&](ExpertId a, ExpertId b) { return popularity[a] > popularity[b]; });
  std::vector<RankId> replica(experts, -1);
  for (int i = 0; i < replicated; ++i) {
    const ExpertId e = by_popularity[i];
    replica[e] = (e / per_gpu + 3 * gpus) % ranks;
  }
  GateSends sends;
  // Instance tokens per source: [src][expert] at home, and at the replica.
  std::vector<TokenCount> home(static_cast<std::size_t>(ranks) * experts, 0);
  std::vector<TokenCount> away(home.size(), 0);
  std::vector<double> score(experts);
  for (RankId src = 0; src < ranks; ++src) {
    for (int t = 0; t < tokens; ++t) {
      for (ExpertId e = 0; e < experts; ++e) score[e] = popularity[e] + random.normal();
      std::vector<std::pair<double, int>> group_score(groups);
      for (int g = 0; g < groups; ++g) {
        std::vector<double> in_group(score.begin() + g * per_group,
                                     score.begin() + (g + 1) * per_group);
        std::partial_sort(in_group.begin(), in_group.begin() + 2, in_group.end(),
                          std::greater<double>());
        group_score[g] = {in_group[0] + in_group[1], g};
      }
      std::sort(group_score.begin(), group_score.end(), std::greater<>());
      std::vector<std::pair<double, ExpertId>> candidates;
      for (int c = 0; c < chosen_groups; ++c) {
        const int g = group_score[c].second;
        for (ExpertId e = g * per_group; e < (g + 1) * per_group; ++e) {
          candidates.push_back({score[e], e});
        }
      }
      std::partial_sort(candidates.begin(), candidates.begin() + top_k, candidates.end(),
                        std::greater<>());
      std::set<RankId> gpus_hit;
      for (int k = 0; k < top_k; ++k) {
        const ExpertId e = candidates[k].second;
        const bool to_replica = replica[e] >= 0 && t % 2 == 1;
        const RankId dst = to_replica ? replica[e] : e / per_gpu;
        ++(to_replica ? away : home)[static_cast<std::size_t>(src) * experts + e];
        if (dst != src) gpus_hit.insert(dst);
      }
      add_token_sends(view, src, gpus_hit, sends.ib_true, sends.nvlink_true);
    }
  }
  std::vector<TokenCount> total(home.size());
  for (std::size_t i = 0; i < total.size(); ++i) total[i] = home[i] + away[i];
  const RoutingCounts counts(ranks, experts, total);
  for (const ExpertGroups limit : {ExpertGroups{groups, chosen_groups}, ExpertGroups{}}) {
    DeepepTraffic traffic(view, counts, top_k, limit);
    for (RankId src = 0; src < ranks; ++src) {
      for (ExpertId e = 0; e < experts; ++e) {
        const std::size_t i = static_cast<std::size_t>(src) * experts + e;
        // Canonical route order: by expert, then destination.
        std::vector<std::pair<RankId, TokenCount>> instances = {{e / per_gpu, home[i]}};
        if (replica[e] >= 0) instances.push_back({replica[e], away[i]});
        std::sort(instances.begin(), instances.end());
        for (const auto& [dst, n] : instances) traffic.add_instance(src, dst, n, e);
      }
    }
    const double ib = static_cast<double>(traffic.ib_sent());
    const double nvlink = static_cast<double>(traffic.nvlink_sent());
    (limit.limited() ? sends.ib_limited : sends.ib_independent) = ib;
    (limit.limited() ? sends.nvlink_limited : sends.nvlink_independent) = nvlink;
  }
  return sends;
}

// Measured 2026-12-05 (the test prints them): the estimate with the groups is 1.005-1.010x the
// true IB sends at home (1.000-1.044x with the replicas, whose every-other-token split the
// estimate takes for independent) and 0.990-0.994x the NVLink sends; independent picks give
// 1.16-1.30x and 1.003-1.021x.
TEST(DeepepDispatch, GroupLimitedEstimateFollowsATokenLevelGate) {
  for (const double skew : {0.0, 0.5, 1.0}) {
    for (const int replicated : {0, 32}) {
      const GateSends s = gate_sends(skew, replicated, 7);
      const double ib = s.ib_limited / s.ib_true, nvlink = s.nvlink_limited / s.nvlink_true;
      std::cout << "skew " << skew << ", " << replicated
                << " replicated: estimate / true sends, IB " << ib << " (independent picks "
                << s.ib_independent / s.ib_true << "), NVLink " << nvlink << " ("
                << s.nvlink_independent / s.nvlink_true << ")\n";
      EXPECT_NEAR(ib, 1.0, 0.06) << skew << " " << replicated;
      EXPECT_NEAR(nvlink, 1.0, 0.03) << skew << " " << replicated;
      EXPECT_LT(std::abs(ib - 1.0), std::abs(s.ib_independent / s.ib_true - 1.0));
    }
  }
}

// What DeepEP truly sends for tokens packed onto ranks, each token's experts known, against
// the estimate from the counts alone. Contiguous homes, E / R experts a GPU.
struct Sends {
  double nvlink_true = 0, ib_true = 0, nvlink_estimate = 0, ib_estimate = 0;
};

void add_microbatch(const std::vector<ExpertId>& ids, std::size_t first_token, int top_k,
                    int experts, const TopologyView& view, int tokens_per_rank, Sends& sends) {
  const int ranks = view.num_ranks();
  const int per_gpu = experts / ranks;
  DeepepTraffic traffic(view, std::vector<TokenCount>(ranks, tokens_per_rank));
  for (RankId src = 0; src < ranks; ++src) {
    std::vector<TokenCount> counts(experts, 0);
    for (int t = 0; t < tokens_per_rank; ++t) {
      const ExpertId* picks = &ids[(first_token + src * tokens_per_rank + t) * top_k];
      std::set<RankId> gpus_hit;
      for (int k = 0; k < top_k; ++k) {
        ++counts[picks[k]];
        gpus_hit.insert(picks[k] / per_gpu);
      }
      add_token_sends(view, src, gpus_hit, sends.ib_true, sends.nvlink_true);
    }
    for (ExpertId e = 0; e < experts; ++e) traffic.add_instance(src, e / per_gpu, counts[e]);
  }
  sends.nvlink_estimate += static_cast<double>(traffic.nvlink_sent());
  sends.ib_estimate += static_cast<double>(traffic.ib_sent());
}

// ESFT (DeepSeek-V2-Lite, 64 experts, top-6; every task and layer) and FLAME-MoE-290M (64
// experts, top-6; the encoder dump's layers), tokens in file order packed 64 a GPU onto
// 16 to 64 GPUs of 4 or 8 a node. Measured 2026-12-02: the estimate is 0.95-0.97 of the true
// IB sends and 0.98-1.00 of the NVLink sends (it is below: a token's k experts are distinct,
// so they spread over more nodes than independent picks would).
TEST(DeepepDispatchRealRouting, EstimateIsWithinSevenPercentOfTheTrueSends) {
  const char* shared = std::getenv("TOPOEP_SHARED_DIR");
  if (shared == nullptr) GTEST_SKIP() << "TOPOEP_SHARED_DIR is not set (tools/test sets it)";
  const std::filesystem::path traces = std::filesystem::path(shared) / "traces";
  std::vector<std::vector<ExpertId>> layers;  // token ids, top-6, 64 experts
  for (const auto& task : std::filesystem::directory_iterator(traces / "esft-deepseek-v2-lite")) {
    for (int layer = 1; layer <= 26; ++layer) {
      const auto file = task.path() / ("expert_weights_" + std::to_string(layer) + ".txt");
      if (!std::filesystem::exists(file)) continue;
      std::vector<ExpertId> ids;
      for (const auto& sequence : read_esft_layer(file.string(), 64, 6).sequences) {
        ids.insert(ids.end(), sequence.begin(), sequence.end());
      }
      layers.push_back(std::move(ids));
    }
  }
  for (const auto& file :
       std::filesystem::directory_iterator(traces / "flame-moe-290m" / "encoder_32seqs_64tok")) {
    layers.push_back(read_flame_csv(file.path().string(), 64, 6).experts);
  }
  ASSERT_GE(layers.size(), 27u) << "the shared ESFT and FLAME dumps";
  const int tokens_per_rank = 64;
  for (const TopologyView view :
       {TopologyView{2, 8}, TopologyView{4, 8}, TopologyView{8, 8}, TopologyView{8, 4}}) {
    Sends sends;
    const std::size_t tokens_per_microbatch =
        static_cast<std::size_t>(view.num_ranks()) * tokens_per_rank;
    for (const auto& ids : layers) {
      const std::size_t tokens = ids.size() / 6;
      for (std::size_t first = 0; first + tokens_per_microbatch <= tokens;
           first += tokens_per_microbatch) {
        add_microbatch(ids, first, 6, 64, view, tokens_per_rank, sends);
      }
    }
    const double ib = sends.ib_estimate / sends.ib_true;
    const double nvlink = sends.nvlink_estimate / sends.nvlink_true;
    std::cout << view.num_nodes << " x " << view.gpus_per_node << ": estimate / true sends, IB "
              << ib << ", NVLink " << nvlink << "\n";
    EXPECT_GT(sends.ib_true, 0);
    EXPECT_GE(ib, 0.93) << view.num_nodes << " x " << view.gpus_per_node;
    EXPECT_LE(ib, 1.01) << view.num_nodes << " x " << view.gpus_per_node;
    EXPECT_GE(nvlink, 0.93) << view.num_nodes << " x " << view.gpus_per_node;
    EXPECT_LE(nvlink, 1.01) << view.num_nodes << " x " << view.gpus_per_node;
  }
}

}  // namespace
}  // namespace topoep
