#!/usr/bin/env python3
"""Times DeepSeek's reference EPLB (Python + PyTorch; not shipped here) on the same seeded
weights as bench/eplb_bench.cc and checks topoep's C++ EPLB against its outputs.

Usage: eplb_reference_compare.py DIR_WITH_REFERENCE_eplb.py PATH_TO_topoep
Run it in the same command as `bazel run //bench:eplb_bench` so both are measured side by side.
"""
import json
import statistics
import subprocess
import sys
import tempfile
import time

import torch

sys.path.insert(0, sys.argv[1])
from eplb import rebalance_experts  # noqa: E402  (the reference, from the user's checkout)

MASK = (1 << 64) - 1


class SplitMix64:
    """Bit-identical to traces/splitmix64.h."""

    def __init__(self, seed):
        self.state = seed

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def below(self, bound):
        limit = MASK - (MASK % bound)
        while True:
            value = self.next()
            if value < limit:
                return value % bound


def zipf_weights(layers, experts):
    """The weights of bench/eplb_bench.cc: 1e6 / (1 + draw) + draw, rounded to float32."""
    random = SplitMix64(7)
    rows = []
    for _ in range(layers):
        row = []
        for _ in range(experts):
            rank = 1.0 + random.below(experts)
            row.append(float(torch.tensor(1e6 / rank + random.below(1000), dtype=torch.float32)))
        rows.append(row)
    return rows


def main():
    topoep = sys.argv[2]
    for layers, replicas, nodes, gpus in [(1, 288, 4, 32), (1, 320, 8, 64), (58, 288, 4, 32), (58, 320, 8, 64)]:
        weights = zipf_weights(layers, 256)
        tensor = torch.tensor(weights, dtype=torch.float32)
        times = []
        for _ in range(5):
            start = time.perf_counter()
            reference = rebalance_experts(tensor, replicas, 8, nodes, gpus)
            times.append(time.perf_counter() - start)
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as file:
            json.dump({"weight": weights}, file)
        ours = json.loads(subprocess.check_output(
            [topoep, "eplb", "--weights", file.name, "--replicas", str(replicas), "--groups", "8",
             "--nodes", str(nodes), "--gpus", str(gpus), "--json"]))
        same = [ours[key] == value.tolist() for key, value in
                zip(("phy2log", "log2phy", "logcnt"), reference)]
        print(f"reference {layers} layers, {replicas} slots, {nodes} nodes, {gpus} GPUs: "
              f"median {statistics.median(times) * 1e6:.0f} us; identical phy2log {same[0]}, "
              f"log2phy {same[1]}, logcnt {same[2]}")


if __name__ == "__main__":
    main()
