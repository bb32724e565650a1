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
    ...
    recorder.close()  # when the run ends: writes what is pending

Counts the framework already keeps (Megatron's tokens per expert, say) go in with
record_counts(). It needs numpy only (Debian's python3-numpy); torch only through the
tensors you pass. A torch tensor is counted where it lives, with tensor operations that do
not wait for the GPU: its counts stay on the device until every `flush_every` records (and
flush(), close()), which copy them to the host in one transfer, the only point where the
training loop waits. Bad ids or counts in a tensor are refused then, naming the record;
everything recorded before them is written.
"""
import json
import os

import numpy as np


def _is_tensor(values):
    return hasattr(values, "detach")  # a torch tensor, wherever it lives


def _is_integer_tensor(tensor):
    return not (tensor.is_floating_point() or tensor.is_complex() or str(tensor.dtype) == "torch.bool")


def _key(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= value <= 2**30:
        raise ValueError(f"{name} must be an integer from 0 to 2^30, got {value!r}")
    return int(value)


class RoutingRecorder:
    """One rank's routing, as JSON lines in `path` (replaced unless append=True). Records of
    tensors are written every `flush_every` of them, at flush() and at close()."""

    def __init__(self, path, num_experts, rank, append=False, top_k=None, flush_every=256):
        if isinstance(num_experts, bool) or not isinstance(num_experts, (int, np.integer)) or num_experts < 1:
            raise ValueError(f"num_experts must be a positive integer, got {num_experts!r}")
        if isinstance(flush_every, bool) or not isinstance(flush_every, (int, np.integer)) or flush_every < 1:
            raise ValueError(f"flush_every must be a positive integer, got {flush_every!r}")
        self.flush_every = int(flush_every)
        # Tensors' records not yet written: ((step, microbatch, layer), top_k, counts), the counts
        # on the device as [ids below 0, expert 0, ..., expert E - 1, ids from E on].
        self._pending = []
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
        key = self._keys(step, microbatch, layer)
        if not _is_tensor(expert_ids):
            expert_ids = np.asarray(expert_ids)
        top_k = self.top_k
        if expert_ids.ndim >= 2:  # [tokens, top_k], or [batch, sequence, top_k]: a token's ids last
            if top_k is not None and expert_ids.shape[-1] != top_k:
                raise ValueError(f"expert ids have {expert_ids.shape[-1]} a token, the recorder's top_k is {top_k}")
            top_k = int(expert_ids.shape[-1])
        if _is_tensor(expert_ids):
            ids = expert_ids.detach().reshape(-1)
            if not _is_integer_tensor(ids):
                raise ValueError(f"expert ids must be integers, got dtype {ids.dtype}")
            # Ids outside [0, E) land in the first or the last bucket, checked on the host.
            buckets = ids.long().clamp(-1, self.num_experts) + 1
            counts = buckets.new_zeros(self.num_experts + 2)
            self._defer(key, top_k, counts.scatter_add_(0, buckets, buckets.new_ones(buckets.shape)))
            return
        ids = np.asarray(expert_ids).reshape(-1)
        if ids.size and not np.issubdtype(ids.dtype, np.integer):
            raise ValueError(f"expert ids must be integers, got dtype {ids.dtype}")
        if ids.size and (ids.min() < 0 or ids.max() >= self.num_experts):
            bad = ids[(ids < 0) | (ids >= self.num_experts)][0]
            raise ValueError(f"expert id {bad} is outside [0, {self.num_experts})")
        self._write(key, np.bincount(ids.astype(np.int64), minlength=self.num_experts), top_k)

    def record_counts(self, step, microbatch, layer, counts):
        """The same from per-expert counts (num_experts non-negative integers)."""
        key = self._keys(step, microbatch, layer)
        size = counts.numel() if _is_tensor(counts) else np.asarray(counts).size
        if size != self.num_experts:
            raise ValueError(f"counts has {size} experts, the recorder {self.num_experts}")
        if _is_tensor(counts):
            counts = counts.detach().reshape(-1)
            if not _is_integer_tensor(counts):
                raise ValueError(f"counts must be non-negative integers, got dtype {counts.dtype}")
            padded = counts.long().new_zeros(self.num_experts + 2)  # no ids out of range
            padded[1:-1] = counts
            self._defer(key, self.top_k, padded)
            return
        counts = np.asarray(counts).reshape(-1)
        if not np.issubdtype(counts.dtype, np.integer) or (counts < 0).any():
            raise ValueError("counts must be non-negative integers")
        self._write(key, counts, self.top_k)

    def flush(self):
        """Copies the tensors' pending counts to the host in one transfer and writes their lines.
        A record whose ids were out of range, or whose counts were negative, is refused here
        (ValueError naming the first), after the others are written."""
        if not self._pending:
            return
        import torch  # only tensors are pending

        pending, self._pending = self._pending, []
        device = pending[0][2].device
        rows = torch.stack([counts.to(device) for _, _, counts in pending]).cpu().numpy()
        refused = []
        for (key, top_k, _), row in zip(pending, rows):
            if row[0] or row[-1] or (row[1:-1] < 0).any():
                refused.append("step {}, microbatch {}, layer {}".format(*key))
            else:
                self._write(key, row[1:-1], top_k)
        if refused:
            raise ValueError(f"{len(refused)} record(s) held expert ids outside [0, {self.num_experts}) or "
                             f"negative counts, the first at {refused[0]}; the other records were written")

    def _keys(self, step, microbatch, layer):
        return _key("step", step), _key("microbatch", microbatch), _key("layer", layer)

    def _defer(self, key, top_k, counts):
        self._pending.append((key, top_k, counts))
        if len(self._pending) >= self.flush_every:
            self.flush()

    def _write(self, key, counts, top_k):
        try:
            self.flush()  # the tensors' lines first: lines in the order they were recorded
        finally:  # this record is good whatever the flush refused
            step, microbatch, layer = key
            line = {"step": step, "microbatch": microbatch, "layer": layer, "rank": self.rank}
            if top_k is not None:
                line["top_k"] = top_k
            line["counts"] = [int(c) for c in counts]
            self._file.write(json.dumps(line, separators=(",", ":")) + "\n")

    def close(self):
        try:
            self.flush()
        finally:
            self._file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
