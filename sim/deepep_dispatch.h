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
// Group-limited routing (ModelSpec::expert_groups, expert_groups_per_token; DeepSeek-V3 picks
// its 8 experts from at most 4 of 8 groups of 32, one group a node under its home layout)
// concentrates a token's picks: independent picks spread them over more nodes than it may use
// (up to 1.3x the true IB sends on DeepSeek-V3-style routing). The estimate then conditions on
// the groups a token chooses. Of a source's T tokens, T_g = min(T, A_g x M / k) choose group g
// (A_g its assignments to the group's experts, M the groups a token may use, k top-k: a choosing
// token puts k / M of its picks there where the limit binds), q_g = T_g / T. A token that chose
// g picks each of g's instances independently with chance p_i = c_i s_g / T_g, conditioned on
// picking at least one (the group was chosen for its best experts), s_g set so that it picks
// A_g / T_g of them on average: s_g = 1 - P0_g, P0_g = PRODUCT over g's instances (1 - p_i),
// a fixed point (Newton's method, at most 8 steps). Then
//   P(a token misses dst) = PRODUCT over groups g with instances at dst of
//                           (1 - q_g + q_g x (PRODUCT over them (1 - p_i) - P0_g) / (1 - P0_g)),
// the same over a node's instances for the node, so that a node holding all of a group's
// instances gets every token that chose it. Without a limit, the product above, as before. On
// DeepSeek-V3-style routing (bench/deepep_group_limited_check.py; sim/README.md, "Dispatchers")
// it gives 0.93-1.01 of the true IB sends and 0.94-1.00 of the NVLink sends, where independent
// picks give 1.00-1.29 and 1.00-1.11.
//
// Deterministic: products of doubles in route order (with a limit, at most 8 Newton steps per
// group, stopping on a test of the same doubles), rounded to whole tokens once.

#include <algorithm>
#include <vector>

#include "models/model.h"
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

// A model's group-limited routing: a token picks its experts from at most `per_token` of
// `groups` equal groups of consecutive expert ids. Not limited below 2 groups or where a token
// may use them all.
struct ExpertGroups {
  int groups = 0;
  int per_token = 0;
  bool limited() const { return groups > 1 && per_token > 0 && per_token < groups; }
};
inline ExpertGroups expert_groups(const ModelSpec& model) {
  return {model.expert_groups, model.expert_groups_per_token};
}

// The link counters DeepEP's kernels induce for one plan, from its assignments source by
// source. Memory O(num_ranks); time O(routes + the sources' destinations).
class DeepepTraffic {
 public:
  // `source_tokens` ([num_ranks]): the tokens of each source rank (T_src above); picks not
  // group-limited.
  DeepepTraffic(const TopologyView& topology, std::vector<TokenCount> source_tokens);
  // The sources' tokens from `counts` (tokens_per_source()), and with `groups` limited the
  // tokens of each source that choose each group (T_g above). Throws std::logic_error where the
  // groups do not divide the counts' experts.
  DeepepTraffic(const TopologyView& topology, const RoutingCounts& counts, int top_k,
                ExpertGroups groups);

  // `tokens` of `src`'s assignments go to one instance of `expert` on `dst` (a route; the
  // expert only matters with groups). Sources come in non-decreasing order (a plan's canonical
  // routes; counts row by row): a source met again after another would have its sends counted
  // twice, so start_source() refuses it (std::logic_error). Inline: the replay calls it for
  // every route of every record.
  void add_instance(RankId src, RankId dst, TokenCount tokens, ExpertId expert = 0) {
    if (src != source_) start_source(src);
    if (tokens <= 0) return;
    // With a limit, the source's own instances count too: a token that picks one there has
    // picked in its group.
    if (groups_ > 1) instances_.push_back({dst, expert / experts_per_group_, tokens});
    if (dst == src) return;  // stays on its GPU: crosses no link
    if (!fed_[dst]) {
      fed_[dst] = 1;
      destinations_.push_back(dst);
    }
    if (groups_ > 1) return;  // priced when the source ends (finish_source())
    // More assignments than the source has tokens (counts that break top-k) reach every token.
    const double share = std::min(1.0, static_cast<double>(tokens) * inverse_tokens_);
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
  // With a limit: the current source's p_i and P0_g, each destination's products over its
  // instances of each group, from instances_.
  void price_groups();
  // P(a token misses destination GPU `dst`): its product without a limit, else the header's
  // product over groups.
  double miss_of(RankId dst) const;
  // With a limit: the header's product over groups for the products `product` ([groups_]).
  double miss_over_groups(const double* product) const;

  TopologyView topology_;
  std::vector<TokenCount> source_tokens_;
  std::vector<TokenCount> nvlink_out_, nvlink_in_, ib_out_, ib_in_;

  RankId source_ = -1;
  RankId last_source_ = -1;      // the latest source finished
  double inverse_tokens_ = 1.0;  // 1 / T of the current source (1 for none: every token hit)
  // For the current source, per destination GPU: the product of (1 - c_i / T_src) over the
  // instances fed there (1 where none), and the GPUs it feeds. Without a limit only.
  std::vector<double> miss_;
  // With a limit (groups_ > 1): the tokens of each source that choose each group
  // ([num_ranks x groups_]: T_g); the current source's instances in route order; per group its
  // q_g, its s_g / T_g and P0_g; per destination GPU and group the product of (1 - p_i) over
  // the instances there (1 where none), and a node's (scratch).
  struct Instance {
    RankId dst;
    int group;
    TokenCount tokens;
  };
  int groups_ = 1;
  int experts_per_group_ = 1;
  std::vector<double> group_tokens_;
  std::vector<Instance> instances_;
  std::vector<std::size_t> group_begin_, group_next_;  // scratch: instances_ bucketed by group
  std::vector<double> ratios_;
  std::vector<double> chosen_, pick_scale_, none_picked_;
  std::vector<double> group_miss_, node_miss_;
  std::vector<char> fed_;
  std::vector<RankId> destinations_;
};

}  // namespace topoep
