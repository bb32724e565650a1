#!/usr/bin/env python3
"""Random differential check of `topoep eplb` against DeepSeek's reference EPLB (Python +
PyTorch; not shipped here): seeded shapes of both policies (hierarchical where the nodes divide
the groups, global otherwise) and seeded weights, tie-heavy on purpose (small integers, zeros,
all equal), compared output for output. Exit 1 on any difference, naming the case.

Usage: eplb_reference_fuzz.py DIR_WITH_REFERENCE_eplb.py PATH_TO_topoep [CASES] [SEED]
It checks against the PyTorch it runs on: builds that sort floats with x86-simd-sort (from 2025,
x86) leave ties in an order of their own (solver/README.md, "DeepSeek EPLB").
"""
import json
import os
import random
import subprocess
import sys
import tempfile

import torch

sys.path.insert(0, sys.argv[1])
from eplb import rebalance_experts  # noqa: E402  (the reference, from the user's checkout)

topoep = sys.argv[2]
cases = int(sys.argv[3]) if len(sys.argv) > 3 else 200
rng = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 1)

WEIGHTS = {
    "small integers": lambda: rng.randint(0, 5),
    "mostly zero": lambda: rng.choice([0, 0, 0, 1]),
    "decimals": lambda: round(rng.random() * 100, 3),
    "large integers": lambda: rng.randint(0, 10**7),
    "all equal": lambda: 7,
}


def random_case():
    """A shape both the reference and topoep accept."""
    while True:
        nodes = rng.choice([1, 2, 4, 8])
        gpus = nodes * rng.choice([1, 2, 4, 8, 9])
        groups = rng.choice([1, 2, 3, 4, 8, 16])
        experts = groups * rng.choice([1, 2, 4, 8, 32])
        replicas = gpus * rng.randint(1, 4)
        if replicas < experts:
            continue
        kind = rng.choice(sorted(WEIGHTS))
        weight = [[WEIGHTS[kind]() for _ in range(experts)] for _ in range(rng.randint(1, 3))]
        return kind, weight, replicas, groups, nodes, gpus


failures = 0
with tempfile.TemporaryDirectory() as scratch:
    path = os.path.join(scratch, "weights.json")
    for index in range(cases):
        kind, weight, replicas, groups, nodes, gpus = random_case()
        dtype = torch.float64 if kind == "decimals" else torch.int64
        phy2log, log2phy, logcnt = rebalance_experts(
            torch.tensor(weight, dtype=dtype), replicas, groups, nodes, gpus)
        with open(path, "w") as out:
            json.dump({"weight": weight}, out)
        run = subprocess.run(
            [topoep, "eplb", "--weights", path, "--replicas", str(replicas), "--groups",
             str(groups), "--nodes", str(nodes), "--gpus", str(gpus), "--json"],
            capture_output=True, text=True)
        case = (f"case {index} ({kind} weights, {len(weight)} layers x {len(weight[0])} experts, "
                f"replicas {replicas}, groups {groups}, nodes {nodes}, GPUs {gpus})")
        if run.returncode != 0:
            print(f"{case}: topoep eplb failed: {run.stderr.strip()}")
            failures += 1
            continue
        ours = json.loads(run.stdout)
        for name, reference in (("phy2log", phy2log), ("log2phy", log2phy), ("logcnt", logcnt)):
            if ours[name] != reference.tolist():
                print(f"{case}: {name} differs")
                failures += 1
print(f"{cases} cases against the reference on PyTorch {torch.__version__}: "
      f"{failures} difference(s)")
sys.exit(1 if failures else 0)
