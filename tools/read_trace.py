#!/usr/bin/env python3
"""Reads a TopoEP routing trace (traces/trace_format.h) with numpy only, chunk by chunk.

    from read_trace import read_trace
    metadata, records = read_trace("my.trace")
    for step, microbatch, layer, counts in records:   # counts: [ranks][experts] int64
        ...

Run as a script to print a summary: read_trace.py TRACE
"""
import json
import os
import struct
import sys

import numpy as np

_DTYPES = {"U16": "<u2", "I32": "<i4"}


def _read_chunk(path):
    with open(path, "rb") as file:
        (length,) = struct.unpack("<Q", file.read(8))
        header = json.loads(file.read(length))
        data = file.read()
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        if end > len(data):
            raise ValueError(f"{path}: tensor {name} ends past the file: truncated")
        tensors[name] = np.frombuffer(data[begin:end], dtype=_DTYPES.get(info["dtype"], "<i4")).reshape(info["shape"])
    return tensors


def read_trace(path):
    """Returns (metadata dict, generator of (step, microbatch, layer, counts))."""
    if not os.path.isfile(os.path.join(path, "index.json")):
        # Recorded routing data handed over as a trace: `topoep trace info` names its importer.
        raise ValueError(
            f"{path}: not a TopoEP trace (no index.json); `topoep trace info {path}` names the "
            "`topoep trace import` command that converts recorded routing data")
    with open(os.path.join(path, "index.json")) as file:
        index = json.load(file)
    if index.get("format") != "topoep-trace":
        raise ValueError(f"{path}: not a topoep trace")

    def records():
        for chunk in index["chunks"]:
            tensors = _read_chunk(os.path.join(path, chunk["file"]))
            for ids, counts in zip(tensors["records"], tensors["counts"]):
                yield int(ids[0]), int(ids[1]), int(ids[2]), counts.astype(np.int64)

    return index["metadata"], records()


def _main(argv):
    """Prints the trace's summary as JSON; a bad trace is one line on stderr and exit 2."""
    if len(argv) != 2:
        print("usage: read_trace.py TRACE", file=sys.stderr)
        return 2
    try:
        metadata, records = read_trace(argv[1])
        total = 0
        count = 0
        for _, _, _, counts in records:
            total += int(counts.sum())
            count += 1
    except (OSError, ValueError, KeyError) as error:
        # A library caller gets the exception; a shell user the message, not a traceback.
        print(f"read_trace.py: error: {error}", file=sys.stderr)
        return 2
    print(json.dumps({"records": count, "assignments": total, "num_ranks": metadata["num_ranks"],
                      "num_experts": metadata["num_experts"]}))
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv))
