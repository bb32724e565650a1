#!/usr/bin/env python3
"""How far the simulator's DeepEP estimates (sim/deepep_dispatch.h) are from the true sends on
synthetic DeepSeek-V3-style routing (each token's 8 experts in at most 4 of 8 groups of 32,
groups ranked by the sum of their two best scores), which the shared token-level data
(DeepSeek-V2-Lite, FLAME-MoE: no group limit) cannot show.

One source GPU's 4,096 tokens over 256 experts homed contiguously; scores are standard normal
plus a per-expert popularity bias (standard deviation SKEW). For every other node (IB) and GPU
(NVLink) it compares DeepEP's true distinct sends with two estimates from the counts alone:
  independent picks (a model without groups): T (1 - PRODUCT over the destination's experts of
    (1 - c_e / T));
  the groups' (a model with them): T_g = min(T, A_g M / k) tokens choose group g, each picking
    each of its experts with chance p_e = c_e s_g / T_g given at least one, s_g = 1 - P0_g the
    fixed point; T (1 - PRODUCT over groups at the destination of
    (1 - q_g + q_g (PRODUCT (1 - p_e) - P0_g) / (1 - P0_g))).
Seeded: the same table on every machine. Usage: bench/deepep_group_limited_check.py (Debian's
python3 with numpy).
"""
import numpy as np

EXPERTS, TOP_K, GROUPS, TOPK_GROUP, TOKENS = 256, 8, 8, 4, 4096
GROUP = EXPERTS // GROUPS


def picks(rng, group_limited, skew):
    """[TOKENS, TOP_K] expert ids."""
    scores = rng.normal(0, 1, (TOKENS, EXPERTS)) + rng.normal(0, skew, EXPERTS)
    if group_limited:
        grouped = scores.reshape(TOKENS, GROUPS, GROUP)
        group_score = np.sort(grouped, axis=2)[:, :, -2:].sum(axis=2)
        kept = np.argsort(-group_score, axis=1)[:, :TOPK_GROUP]
        mask = np.full((TOKENS, GROUPS), -np.inf)
        np.put_along_axis(mask, kept, 0.0, axis=1)
        scores = (grouped + mask[:, :, None]).reshape(TOKENS, EXPERTS)
    return np.argsort(-scores, axis=1)[:, :TOP_K]


def group_model(counts):
    """Per group q_g and P0_g, and per expert p_e."""
    assignments = counts.reshape(GROUPS, GROUP).sum(axis=1)
    tokens = np.minimum(TOKENS, assignments * TOPK_GROUP / TOP_K)
    chosen = tokens / TOKENS
    p = np.zeros(EXPERTS)
    none = np.ones(GROUPS)
    for g in range(GROUPS):
        if tokens[g] <= 0:
            continue
        base = counts[g * GROUP:(g + 1) * GROUP] / tokens[g]
        scale = 1.0
        for _ in range(16):
            scale = 1 - np.prod(1 - np.minimum(1, base * scale))
        p[g * GROUP:(g + 1) * GROUP] = np.minimum(1, base * scale)
        none[g] = np.prod(1 - p[g * GROUP:(g + 1) * GROUP])
    return chosen, none, p


def estimate_over_true(chosen_experts, nodes, gpus_per_node):
    """Estimate / true sends from GPU 0, independent picks and the groups': ((IB, NVLink), ...)."""
    ranks = nodes * gpus_per_node
    per_gpu = EXPERTS // ranks
    counts = np.bincount(chosen_experts.ravel(), minlength=EXPERTS).astype(float)
    share = counts / TOKENS
    chosen, none, p = group_model(counts)
    independent, grouped = [], []
    for unit in (per_gpu * gpus_per_node, per_gpu):  # a node's experts, a GPU's
        destination = chosen_experts // unit
        true = plain = limited = 0.0
        for d in range(1, EXPERTS // unit):
            true += np.any(destination == d, axis=1).sum()
            plain += TOKENS * (1 - np.prod(1 - share[d * unit:(d + 1) * unit]))
            miss = 1.0
            for g in range(GROUPS):
                low, high = max(d * unit, g * GROUP), min((d + 1) * unit, (g + 1) * GROUP)
                if low >= high or counts[low:high].sum() == 0:
                    continue
                conditional = (np.prod(1 - p[low:high]) - none[g]) / (1 - none[g])
                miss *= 1 - chosen[g] + chosen[g] * max(0.0, conditional)
            limited += TOKENS * (1 - miss)
        independent.append(plain / true)
        grouped.append(limited / true)
    return independent, grouped


def main():
    rng = np.random.default_rng(2026)
    print("| routing | skew | cluster | independent picks, per node (IB) | per GPU (NVLink) "
          "| the groups', per node | per GPU |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for group_limited in (False, True):
        for skew in (0.5, 1.0, 2.0):
            for nodes, gpus in ((2, 8), (4, 8), (8, 8), (8, 4), (16, 8)):
                chosen = picks(rng, group_limited, skew)
                (ib, nvlink), (group_ib, group_nvlink) = estimate_over_true(chosen, nodes, gpus)
                routing = "4 of 8 groups" if group_limited else "no group limit"
                grouped = (f"{group_ib:.3f} | {group_nvlink:.3f}" if group_limited else "- | -")
                print(f"| {routing} | {skew} | {nodes} x {gpus} | {ib:.3f} | {nvlink:.3f} | "
                      f"{grouped} |")


if __name__ == "__main__":
    main()
