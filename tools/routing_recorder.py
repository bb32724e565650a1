#!/usr/bin/env python3
"""Records a training run's MoE routing as JSON lines that `topoep trace import --format jsonl`
reads (traces/README.md).

Each rank records its own tokens: when a router has chosen the top-k experts of this rank's
tokens for one (step, microbatch, MoE layer), pass those expert ids to record(). The recorder
counts them per expert and appends one line to this rank's file:

    {"step": 3, "microbatch": 0, "layer": 7, "rank": 5, "top_k": 8, "counts": [...one per expert...]}

("top_k" is what record()'s [tokens, top_k] ids say, or the recorder's top_k=; record_counts()
lines carry it only when the recorder was given it.) Then import the directory of every rank's
file (lines in any order, files in natural order):

    topoep trace import --format jsonl --input routing/ --out run.trace --gpus-per-node 8

In PyTorch, for instance, with a forward hook on each MoE layer's router (where the ids are in
the router's output depends on the model):

    recorder = RoutingRecorder(f"routing/rank{rank}.jsonl", num_experts=256, rank=rank)
    def record_layer(layer):
        def hook(module, inputs, output):
            recorder.record(state.step, state.microbatch, layer, output.topk_ids)
        return hook
    for layer, gate in enumerate(moe_gates):
        gate.register_forward_hook(record_layer(layer))

Counts the framework already keeps (Megatron's tokens per expert, say) go in with
record_counts(). numpy only (Debian's python3-numpy); a torch tensor is read through
.detach().cpu().numpy(), a copy to the host per call: record what you replay, not every step
of a long run, if that copy shows.
"""
import json
import os

import numpy as np


def _host_array(values):
    if hasattr(values, "detach"):  # a torch tensor, wherever it lives
        values = values.detach().cpu().numpy()
    return np.asarray(values)


def _key(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= value <= 2**30:
        raise ValueError(f"{name} must be an integer from 0 to 2^30, got {value!r}")
    return int(value)


class RoutingRecorder:
    """One rank's routing, as JSON lines in `path` (replaced unless append=True)."""

    def __init__(self, path, num_experts, rank, append=False, top_k=None):
        if isinstance(num_experts, bool) or not isinstance(num_experts, (int, np.integer)) or num_experts < 1:
            raise ValueError(f"num_experts must be a positive integer, got {num_experts!r}")
        self.num_experts = int(num_experts)
        self.rank = _key("rank", rank)
        # Experts a token picks: written on each line so that the import needs no --top-k. Taken
        # from record()'s [tokens, top_k] ids when not given; record_counts() cannot tell it.
        if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer))
                                  or not 1 <= top_k <= self.num_experts):
            raise ValueError(f"top_k must be an integer from 1 to num_experts, got {top_k!r}")
        self.top_k = None if top_k is None else int(top_k)
        directory = os.path.dirname(path)
        if directory:
            os.makedirs(directory, exist_ok=True)
        self._file = open(path, "a" if append else "w")

    def record(self, step, microbatch, layer, expert_ids):
        """Counts one (step, microbatch, layer) of this rank's tokens: `expert_ids` holds the
        experts each token was routed to ([tokens, top_k], [batch, sequence, top_k], or flat),
        integers in [0, num_experts)."""
        ids = _host_array(expert_ids)
        top_k = self.top_k
        if ids.ndim >= 2:  # [tokens, top_k], or [batch, sequence, top_k]: a token's ids last
            if top_k is not None and ids.shape[-1] != top_k:
                raise ValueError(f"expert ids have {ids.shape[-1]} a token, the recorder's top_k is {top_k}")
            top_k = int(ids.shape[-1])
        ids = ids.reshape(-1)
        if ids.size and not np.issubdtype(ids.dtype, np.integer):
            raise ValueError(f"expert ids must be integers, got dtype {ids.dtype}")
        if ids.size and (ids.min() < 0 or ids.max() >= self.num_experts):
            bad = ids[(ids < 0) | (ids >= self.num_experts)][0]
            raise ValueError(f"expert id {bad} is outside [0, {self.num_experts})")
        counts = np.bincount(ids.astype(np.int64), minlength=self.num_experts)
        self._write(step, microbatch, layer, counts, top_k)

    def record_counts(self, step, microbatch, layer, counts):
        """The same from per-expert counts (num_experts non-negative integers)."""
        counts = _host_array(counts).reshape(-1)
        if counts.size != self.num_experts:
            raise ValueError(f"counts has {counts.size} experts, the recorder {self.num_experts}")
        if not np.issubdtype(counts.dtype, np.integer) or (counts < 0).any():
            raise ValueError("counts must be non-negative integers")
        self._write(step, microbatch, layer, counts, self.top_k)

    def _write(self, step, microbatch, layer, counts, top_k):
        line = {"step": _key("step", step), "microbatch": _key("microbatch", microbatch),
                "layer": _key("layer", layer), "rank": self.rank}
        if top_k is not None:
            line["top_k"] = top_k
        line["counts"] = [int(c) for c in counts]
        self._file.write(json.dumps(line, separators=(",", ":")) + "\n")

    def close(self):
        self._file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
