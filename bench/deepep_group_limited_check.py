#!/usr/bin/env python3
"""How far the simulator's DeepEP estimate (sim/deepep_dispatch.h) is from the true sends on
synthetic DeepSeek-V3-style routing, with and without its group limit (each token's 8 experts
in at most 4 of 8 groups of 32, groups ranked by the sum of their two best scores), which the
shared token-level data (DeepSeek-V2-Lite, FLAME-MoE: no group limit) cannot show.

One source GPU's 4,096 tokens over 256 experts homed contiguously; scores are standard normal
plus a per-expert popularity bias (standard deviation SKEW). For every other node (IB) and GPU
(NVLink) it compares DeepEP's true distinct sends with the estimate from the counts alone:
T (1 - PRODUCT over the destination's experts of (1 - c_e / T)). Seeded: the same table on
every machine. Usage: bench/deepep_group_limited_check.py (Debian's python3 with numpy).
"""
import numpy as np

EXPERTS, TOP_K, GROUPS, TOPK_GROUP, TOKENS = 256, 8, 8, 4, 4096


def picks(rng, group_limited, skew):
    """[TOKENS, TOP_K] expert ids."""
    scores = rng.normal(0, 1, (TOKENS, EXPERTS)) + rng.normal(0, skew, EXPERTS)
    if group_limited:
        grouped = scores.reshape(TOKENS, GROUPS, EXPERTS // GROUPS)
        group_score = np.sort(grouped, axis=2)[:, :, -2:].sum(axis=2)
        kept = np.argsort(-group_score, axis=1)[:, :TOPK_GROUP]
        mask = np.full((TOKENS, GROUPS), -np.inf)
        np.put_along_axis(mask, kept, 0.0, axis=1)
        scores = (grouped + mask[:, :, None]).reshape(TOKENS, EXPERTS)
    return np.argsort(-scores, axis=1)[:, :TOP_K]


def estimate_over_true(chosen, nodes, gpus_per_node):
    """Estimate / true sends from GPU 0: (to other nodes, to other GPUs)."""
    ranks = nodes * gpus_per_node
    per_gpu = EXPERTS // ranks
    share = np.bincount(chosen.ravel(), minlength=EXPERTS) / TOKENS
    ratios = []
    for unit in (per_gpu * gpus_per_node, per_gpu):  # a node's experts, a GPU's
        destination = chosen // unit
        true = estimate = 0.0
        for d in range(1, EXPERTS // unit):
            true += np.any(destination == d, axis=1).sum()
            estimate += TOKENS * (1 - np.prod(1 - share[d * unit:(d + 1) * unit]))
        ratios.append(estimate / true)
    return ratios


def main():
    rng = np.random.default_rng(2026)
    print("| routing | skew | cluster | estimate / true, per node (IB) | per GPU (NVLink) |")
    print("| --- | --- | --- | --- | --- |")
    for group_limited in (False, True):
        for skew in (0.5, 1.0):
            for nodes, gpus in ((4, 8), (8, 8), (8, 4)):
                ib, nvlink = estimate_over_true(picks(rng, group_limited, skew), nodes, gpus)
                routing = "4 of 8 groups" if group_limited else "no group limit"
                print(f"| {routing} | {skew} | {nodes} x {gpus} | {ib:.3f} | {nvlink:.3f} |")


if __name__ == "__main__":
    main()
