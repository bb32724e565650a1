#!/usr/bin/env python3
"""Writes tests/golden/eplb_reference_long_rows.json: the exact outputs of DeepSeek's reference
EPLB (rebalance_experts, Python + PyTorch; not shipped here) on rows longer than 16 items, where
the order PyTorch's CPU sort leaves tied weights in (replicas of one expert always tie) is no
longer a stable sort's. Same schema as ../shared/conformance/eplb_reference_vectors.json.

Usage: eplb_long_rows_generate.py DIR_WITH_REFERENCE_eplb.py OUT.json
Generated with PyTorch 1.13 (Debian's python3-torch), whose CPU sort is std::sort over (value,
index) pairs; builds that sort floats with x86-simd-sort (from 2025, x86) order ties by vector width.
"""
import json
import sys

import torch

sys.path.insert(0, sys.argv[1])
from eplb import rebalance_experts  # noqa: E402  (the reference, from the user's checkout)


def lcg_weights(seed, layers, experts, spread):
    """Integer loads, seeded, with a hot head: reproducible without numpy."""
    state = seed
    rows = []
    for _ in range(layers):
        row = []
        for e in range(experts):
            state = (state * 6364136223846793005 + 1442695040888963407) % (1 << 64)
            row.append(int((state >> 33) % spread) + (spread * 4 if e % 17 == 0 else 0))
        rows.append(row)
    return rows


CASES = [
    # DeepSeek-V3 on the paper's 4 x 8 H800: 8 groups packed onto 4 nodes, 72 slots a node.
    ("deepseek-v3-h800-4x8", lcg_weights(1, 2, 256, 1000), 288, 8, 4, 32),
    # One group on 4 nodes: the global policy, all 96 slots in one row.
    ("global-64-on-32", lcg_weights(2, 2, 64, 50), 96, 1, 4, 32),
    # Every weight equal: every comparison a tie.
    ("uniform-32-on-16", [[1000] * 32, [7] * 32], 64, 4, 2, 16),
    # 288 experts over two 72-GPU domains, 216 slots a node.
    ("nvl72-2x72", lcg_weights(3, 1, 288, 100), 432, 8, 2, 144),
]

cases = []
for name, weight, replicas, groups, nodes, gpus in CASES:
    phy2log, log2phy, logcnt = rebalance_experts(torch.tensor(weight), replicas, groups, nodes, gpus)
    cases.append({"name": name, "weight": weight, "num_replicas": replicas, "num_groups": groups,
                  "num_nodes": nodes, "num_gpus": gpus,
                  "policy": "hierarchical" if groups % nodes == 0 else "global",
                  "phy2log": phy2log.tolist(), "logcnt": logcnt.tolist(),
                  "log2phy": log2phy.tolist()})
with open(sys.argv[2], "w") as out:
    json.dump(cases, out, separators=(",", ":"))
    out.write("\n")
