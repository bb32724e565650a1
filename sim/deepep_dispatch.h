#pragma once
// DeepEP's dispatch traffic (SimOptions::dispatcher = kDeepEP), estimated from routing counts.
//
// DeepEP's internode kernels send a token once over IB to each other node that holds any of
// its experts, to the GPU there with the source's local index, which forwards it over NVLink
// once to each GPU of its node that holds any of them; inside the source's node the token goes
// once to each such GPU. Combine runs the same paths back (partial sums reduced on the way).
// Counting that needs, per source rank, how many of its tokens have at least one assignment at
// a destination (a GPU or a node): a trace holds counts[src][expert], not which experts each
// token chose together. The estimate takes each instance's share of the source's tokens as the
// chance that a token picked it, independently of the token's other picks:
//   distinct(src, dst) = T_src x (1 - PRODUCT over instances i at dst of (1 - c_i / T_src)),
// c_i the source's assignments to instance i, T_src = ceil(source's assignments / top-k). It is
// exact for one instance (every token picks an expert at most once) and when each token picks
// k experts independently; on the shared real routing (ESFT and FLAME-MoE top-6, tokens packed
// onto 16 to 64 GPUs) it gives 0.95-0.97 of the true count per node and 0.98-1.00 per GPU
// (sim/README.md, "Dispatchers"; tests/deepep_dispatch_test.cc holds it within 7%).
//
// Deterministic: products of doubles in route order, rounded to whole tokens once.

#include <algorithm>
#include <vector>

#include "solver/cost_params.h"
#include "solver/plan_cost.h"
#include "solver/routing_counts.h"
#include "solver/topology_view.h"
#include "solver/types.h"

namespace topoep {

// The tokens of a source with `source_tokens` tokens that reach a destination none of whose
// instances a token misses with probability `miss` (the product above), rounded to the nearest.
TokenCount expected_distinct_tokens(TokenCount source_tokens, double miss);

// T_src of every source rank: its assignments in `counts` over `top_k`, rounded up.
std::vector<TokenCount> tokens_per_source(const RoutingCounts& counts, int top_k);

// The link counters DeepEP's kernels induce for one plan, from its assignments source by
// source. Memory O(num_ranks); time O(routes + the sources' destinations).
class DeepepTraffic {
 public:
  // `source_tokens` ([num_ranks]): the tokens of each source rank (T_src above).
  DeepepTraffic(const TopologyView& topology, std::vector<TokenCount> source_tokens);

  // `tokens` of `src`'s assignments go to one expert instance on `dst` (a route). Sources come
  // in non-decreasing order (a plan's canonical routes; counts row by row): a source met again
  // after another would have its sends counted twice, so start_source() refuses it
  // (std::logic_error). Inline: the replay calls it for every route of every record.
  void add_instance(RankId src, RankId dst, TokenCount tokens) {
    if (src != source_) start_source(src);
    if (dst == src || tokens <= 0) return;  // stays on its GPU: crosses no link
    // More assignments than the source has tokens (counts that break top-k) reach every token.
    const double share = std::min(1.0, static_cast<double>(tokens) * inverse_tokens_);
    if (!fed_[dst]) {
      fed_[dst] = 1;
      destinations_.push_back(dst);
    }
    miss_[dst] *= 1.0 - share;
  }

  // Replaces `cost`'s token link counters ([num_ranks] each), its dispatch bytes and its token
  // phase times (dispatch, combine, backward transfers; the total follows) by DeepEP's, priced
  // with `params`. Loads, compute, weights and gradients are left as they are.
  void apply(const CostParams& params, PlanCost& cost);

  // The tokens all GPUs send over NVLink and over IB, each summed over GPUs.
  TokenCount nvlink_sent();
  TokenCount ib_sent();

 private:
  // Counts the current source's sends and forwards, and clears its destinations.
  void finish_source();
  // finish_source(), then `src` becomes the current source; throws std::logic_error for a
  // source before the last one.
  void start_source(RankId src);

  TopologyView topology_;
  std::vector<TokenCount> source_tokens_;
  std::vector<TokenCount> nvlink_out_, nvlink_in_, ib_out_, ib_in_;
  RankId source_ = -1;
  RankId last_source_ = -1;      // the latest source finished
  double inverse_tokens_ = 1.0;  // 1 / T of the current source (1 for none: every token hit)
  // For the current source, per destination GPU: the product of (1 - c_i / T_src) over the
  // instances fed there (1 where none), and the GPUs it feeds.
  std::vector<double> miss_;
  std::vector<char> fed_;
  std::vector<RankId> destinations_;
};

}  // namespace topoep
