#!/usr/bin/env bash
# tools/routing_recorder.py as a training run would use it: every rank records its tokens'
# top-k expert ids to its own file, the directory imports with `topoep trace import --format
# jsonl`, and the trace holds each rank's bincount of the ids it was given, in trace order.
# Bad ids and keys are refused by the recorder; a rank that two files claim, by the import.
# Usage: routing_recorder_test.sh TOPOEP RECORDER_PY READ_TRACE_PY
set -euo pipefail
topoep=$1 recorder=$2 reader=$3
work=${TEST_TMPDIR:-$(mktemp -d)}
python=python3
for candidate in /usr/bin/python3 python3; do
  if "$candidate" -c "import numpy" 2>/dev/null; then python=$candidate; break; fi
done
rm -rf "$work/routing" "$work/run.trace" "$work/clash" "$work/clash.trace"
"$python" - "$recorder" "$work/routing" <<'PY'
import importlib.util, sys
import numpy as np
spec = importlib.util.spec_from_file_location("routing_recorder", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
directory = sys.argv[2]
random = np.random.default_rng(7)
# 4 ranks x 2 steps x 2 microbatches x 3 layers, 16 experts, top-2, 50 tokens a rank; each
# rank's lines written in its own order (layers last to first), rank 3 from counts.
expected = {}
for rank in range(4):
    top_k = 2 if rank == 3 else None
    with module.RoutingRecorder(f"{directory}/rank{rank}.jsonl", 16, rank, top_k=top_k) as recorder:
        for step in range(2):
            for microbatch in range(2):
                for layer in reversed(range(3)):
                    ids = random.integers(0, 16, size=(50, 2), dtype=np.int64)
                    counts = np.bincount(ids.reshape(-1), minlength=16)
                    if rank == 3:
                        recorder.record_counts(step, microbatch, layer, counts)
                    else:
                        # rank 1 as [batch, sequence, top_k], as some routers give them
                        shaped = ids.reshape(5, 10, 2) if rank == 1 else ids
                        recorder.record(step, microbatch, layer, shaped.astype(np.int32))
                    expected[(step, microbatch, layer, rank)] = counts
np.save(f"{directory}/../expected.npy", np.array(
    [[expected[(s, m, l, r)] for r in range(4)] for s in range(2) for m in range(2) for l in range(3)]))
with module.RoutingRecorder(f"{directory}/../refused.jsonl", 16, 0) as recorder:
    for bad in (lambda: recorder.record(0, 0, 0, np.array([[1, 16]])),
                lambda: recorder.record(0, 0, 0, np.array([[1.0, 2.0]])),
                lambda: recorder.record(-1, 0, 0, np.array([[1, 2]])),
                lambda: recorder.record_counts(0, 0, 0, np.zeros(15, dtype=int)),
                lambda: module.RoutingRecorder(f"{directory}/../refused.jsonl", 16, 0, top_k=17),
                lambda: module.RoutingRecorder(f"{directory}/../k3.jsonl", 16, 0, top_k=3).record(
                    0, 0, 0, np.array([[1, 2]]))):
        try:
            bad()
        except ValueError as error:
            print("refused:", error)
        else:
            raise AssertionError("accepted a bad record")
# Torch tensors are counted where they live and written at flushes: the same lines as numpy's.
try:
    import torch
except ImportError:
    torch = None
    print("torch: not installed here (python3-torch), the recorder's tensor path not run")
if torch is not None:
    work = f"{directory}/.."
    random = np.random.default_rng(11)
    ids = [random.integers(0, 16, size=(40, 4)) for _ in range(12)]
    with module.RoutingRecorder(f"{work}/numpy.jsonl", 16, 2) as recorder:
        for i, chosen in enumerate(ids):
            recorder.record(i // 6, i // 3 % 2, i % 3, chosen)
    # Flushes every 5 tensors, with a numpy record and tensors' counts between them.
    with module.RoutingRecorder(f"{work}/torch.jsonl", 16, 2, top_k=4, flush_every=5) as recorder:
        for i, chosen in enumerate(ids):
            if i == 7:
                recorder.record(1, 0, 1, chosen)
            elif i == 9:
                recorder.record_counts(1, 1, 0, torch.from_numpy(np.bincount(chosen.reshape(-1), minlength=16)))
            else:
                recorder.record(i // 6, i // 3 % 2, i % 3, torch.from_numpy(chosen.astype(np.int32)).reshape(4, 10, 4))
            assert len(recorder._pending) < 5
        assert len(recorder._pending) == 4, "the last four tensors wait for close()"
    assert open(f"{work}/torch.jsonl").read() == open(f"{work}/numpy.jsonl").read()
    print("ok: 12 records from tensors, flushed every 5, as numpy's")
    # Ids out of range and negative counts are refused at the flush, naming the first record; the
    # good ones are written. Bad types and sizes are refused at once.
    recorder = module.RoutingRecorder(f"{work}/bad.jsonl", 16, 0, flush_every=100)
    recorder.record(0, 0, 0, torch.tensor([[1, 2], [3, 4]]))
    recorder.record(0, 0, 1, torch.tensor([[1, 16]]))
    recorder.record_counts(0, 0, 2, torch.tensor([-1] + [0] * 15))
    recorder.record(0, 1, 0, torch.tensor([[-3, 2]]))
    for bad in (lambda: recorder.record(0, 1, 1, torch.tensor([[1.0, 2.0]])),
                lambda: recorder.record_counts(0, 1, 1, torch.zeros(15, dtype=torch.long)),
                lambda: recorder.record_counts(0, 1, 1, torch.zeros(16))):
        try:
            bad()
        except ValueError as error:
            print("refused at once:", error)
        else:
            raise AssertionError("accepted a bad tensor")
    try:
        recorder.close()
    except ValueError as error:
        assert "3 record(s)" in str(error) and "the first at step 0, microbatch 0, layer 1" in str(error), error
        print("refused at the flush:", error)
    else:
        raise AssertionError("accepted ids out of range")
    lines = open(f"{work}/bad.jsonl").read().splitlines()
    assert lines == ['{"step":0,"microbatch":0,"layer":0,"rank":0,"top_k":2,"counts":[0,1,1,1,1,0,0,0,0,0,0,0,0,0,0,0]}'], lines
    print("ok: the good record written, the bad ones named")
PY
test ! -s "$work/refused.jsonl" || { echo "FAIL: a refused record was written"; exit 1; }
# No --top-k: the lines of record() carry their ids' top_k (rank 3's, from counts, carry the
# recorder's top_k=).
"$topoep" trace import --format jsonl --input "$work/routing" --out "$work/run.trace" --gpus-per-node 2
"$python" - "$reader" "$work/run.trace" "$work/expected.npy" <<'PY'
import importlib.util, sys
import numpy as np
spec = importlib.util.spec_from_file_location("read_trace", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
metadata, records = module.read_trace(sys.argv[2])
expected = np.load(sys.argv[3])
assert (metadata["num_ranks"], metadata["num_experts"], metadata["num_layers"],
        metadata["microbatches"], metadata["steps"], metadata["top_k"]) == (4, 16, 3, 2, 2, 2), metadata
got = np.array([counts for _, _, _, counts in records])
assert got.shape == expected.shape, (got.shape, expected.shape)
assert (got == expected).all()
print("ok: 12 records of 4 ranks, each the bincount of the ids its rank recorded")
PY
# Two files claiming rank 0 (a rank id left at its default): the import names both.
mkdir -p "$work/clash"
cp "$work/routing/rank0.jsonl" "$work/clash/a.jsonl"
cp "$work/routing/rank0.jsonl" "$work/clash/b.jsonl"
if "$topoep" trace import --format jsonl --input "$work/clash" --out "$work/clash.trace" --top-k 2 >"$work/out" 2>&1; then
  echo "FAIL: two files with the same rank imported"; exit 1
fi
grep -q "clash/b.jsonl: field 'line 1': repeats step .*(first given in .*clash/a.jsonl on line 1)" "$work/out" || { cat "$work/out"; echo "FAIL: the clash is not named"; exit 1; }
test ! -e "$work/clash.trace" || { echo "FAIL: a failed import left a trace"; exit 1; }
echo "ok: a rank two files claim is named with both files"
